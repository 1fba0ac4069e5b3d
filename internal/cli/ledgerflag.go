package cli

import (
	"github.com/spf13/cobra"

	"github.com/dpstat/dpstat/ledger"
)

// addLedgerFlag adds --ledger to cmd, storing the path in p. The default is
// ledger.DefaultPath() as it is when the command tree is built.
func addLedgerFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "ledger", ledger.DefaultPath(),
		"privacy-budget ledger: a file, or a PostgreSQL database postgres://USER:PASSWORD@HOST:PORT/DB[?schema=NAME] shared by several servers (docs/scaling.md); the default is $DPSTAT_LEDGER if set, else $XDG_DATA_HOME/dpstat/ledger.db, else ~/.local/share/dpstat/ledger.db")
}

// openLedger opens the ledger at path for reading and writing, with the key
// named by $DPSTAT_LEDGER_KEY_FILE if set, creating it
// if needed and waiting up to ledger.DefaultTimeout for another dpstat
// process that has it open. The caller must Close it when its command is
// done, so that other processes can use the ledger.
func openLedger(path string) (*ledger.Ledger, error) {
	key, err := ledger.KeyFromEnv()
	if err != nil {
		return nil, err
	}
	return ledger.Open(path, ledger.Options{Key: key})
}

// openLedgerReadOnly opens the ledger at path for reading only; several
// readers may have it open at once. A missing file is an error wrapping
// os.ErrNotExist.
func openLedgerReadOnly(path string) (*ledger.Ledger, error) {
	key, err := ledger.KeyFromEnv()
	if err != nil {
		return nil, err
	}
	return ledger.Open(path, ledger.Options{ReadOnly: true, Key: key})
}

// withLedger opens the ledger at path, runs f on it and closes it.
func withLedger(path string, f func(*ledger.Ledger) error) error {
	l, err := openLedger(path)
	if err != nil {
		return err
	}
	defer l.Close()
	return f(l)
}
