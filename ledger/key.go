package ledger

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
)

// KeyFileEnv names the environment variable that gives the path of the
// ledger's key file (see Options.Key).
const KeyFileEnv = "DPSTAT_LEDGER_KEY_FILE"

// KeyFromFile reads a ledger key: the file's contents without surrounding
// white space, at least MinKeyLen bytes (e.g. `head -c 32 /dev/urandom |
// base64 > ledger.key`). The file must not be readable by group or others,
// and should not sit next to the ledger: whoever can rewrite the ledger
// and read the key can forge its seal.
func KeyFromFile(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("ledger key file: %w", err)
	}
	if info.IsDir() {
		return nil, fmt.Errorf("ledger key file %s is a directory: want a file holding the key", path)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("ledger key file %s has mode %#o: want it readable by its owner only (chmod 600 %s)", path, perm, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ledger key file: %w", err)
	}
	key := bytes.TrimSpace(b)
	if len(key) < MinKeyLen {
		return nil, fmt.Errorf("ledger key file %s holds %d bytes: want at least %d (e.g. head -c 32 /dev/urandom | base64)", path, len(key), MinKeyLen)
	}
	return key, nil
}

// KeyFromEnv reads the key file named by $DPSTAT_LEDGER_KEY_FILE; with the
// variable unset or empty it returns nil (no key) and no error.
func KeyFromEnv() ([]byte, error) {
	p := os.Getenv(KeyFileEnv)
	if p == "" {
		return nil, nil
	}
	k, err := KeyFromFile(p)
	if err != nil {
		return nil, fmt.Errorf("$%s: %w", KeyFileEnv, err)
	}
	return k, nil
}
