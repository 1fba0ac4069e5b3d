package analyst

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SCRAM-SHA-256 (RFC 5802, RFC 7677) as PostgreSQL uses it: the registry
// keeps, per analyst, only a salted verifier of the token (the salt, the
// iteration count, StoredKey = H(HMAC(SaltedPassword, "Client Key")) and
// ServerKey = HMAC(SaltedPassword, "Server Key"), with SaltedPassword =
// PBKDF2-HMAC-SHA-256(token, salt, iterations)), in PostgreSQL's text form
// "SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>". A client
// proves it knows the token without sending it; the server proves it holds
// the verifier.

// SCRAMIterations is the PBKDF2 iteration count of new verifiers
// (PostgreSQL's default).
const SCRAMIterations = 4096

// ErrNoSCRAM: the analyst's record predates SCRAM verifiers; rotating the
// token makes one.
var ErrNoSCRAM = errors.New("no SCRAM verifier stored for this analyst (its token predates them): rotate the token")

// SCRAMKeys are a verifier's parts.
type SCRAMKeys struct {
	Salt       []byte
	Iterations int
	StoredKey  [sha256.Size]byte
	ServerKey  [sha256.Size]byte
}

func hmacSHA256(key []byte, parts ...[]byte) [sha256.Size]byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write(p)
	}
	var out [sha256.Size]byte
	copy(out[:], m.Sum(nil))
	return out
}

// DeriveSCRAMKeys computes the keys of password with salt and iterations.
func DeriveSCRAMKeys(password string, salt []byte, iterations int) (SCRAMKeys, error) {
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		return SCRAMKeys{}, fmt.Errorf("SCRAM key derivation: %w", err)
	}
	clientKey := hmacSHA256(salted, []byte("Client Key"))
	return SCRAMKeys{
		Salt: salt, Iterations: iterations,
		StoredKey: sha256.Sum256(clientKey[:]),
		ServerKey: hmacSHA256(salted, []byte("Server Key")),
	}, nil
}

// NewSCRAMVerifier makes the verifier of token with a fresh 16-byte salt.
func NewSCRAMVerifier(token string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("reading random bytes for a salt: %w", err)
	}
	k, err := DeriveSCRAMKeys(token, salt, SCRAMIterations)
	if err != nil {
		return "", err
	}
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", k.Iterations, b64(k.Salt), b64(k.StoredKey[:]), b64(k.ServerKey[:])), nil
}

// ParseSCRAMVerifier reads a verifier in PostgreSQL's text form.
func ParseSCRAMVerifier(v string) (SCRAMKeys, error) {
	bad := func(why string) (SCRAMKeys, error) {
		return SCRAMKeys{}, fmt.Errorf("SCRAM verifier %.24q…: %s; want SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>", v, why)
	}
	rest, ok := strings.CutPrefix(v, "SCRAM-SHA-256$")
	if !ok {
		return bad("not SCRAM-SHA-256")
	}
	head, keys, ok := strings.Cut(rest, "$")
	if !ok {
		return bad("no keys")
	}
	iterText, saltText, ok1 := strings.Cut(head, ":")
	storedText, serverText, ok2 := strings.Cut(keys, ":")
	if !ok1 || !ok2 {
		return bad("missing ':'")
	}
	it, err := strconv.Atoi(iterText)
	if err != nil || it < 1 || it > 1<<24 {
		return bad("iteration count not a number from 1 to 16777216")
	}
	var k SCRAMKeys
	k.Iterations = it
	if k.Salt, err = base64.StdEncoding.DecodeString(saltText); err != nil || len(k.Salt) == 0 {
		return bad("salt not base64")
	}
	for _, f := range []struct {
		text string
		dst  []byte
	}{{storedText, k.StoredKey[:]}, {serverText, k.ServerKey[:]}} {
		b, err := base64.StdEncoding.DecodeString(f.text)
		if err != nil || len(b) != sha256.Size {
			return bad("a key is not 32 bytes of base64")
		}
		copy(f.dst, b)
	}
	return k, nil
}

// SCRAMLogin is what a PostgreSQL SCRAM login needs of an analyst.
type SCRAMLogin struct {
	Analyst    Analyst
	Keys       SCRAMKeys
	Credential Credential
}

// SCRAM returns the verifier of the analyst called name, with the
// credential a session that logs in with it is bound to. Errors:
// ErrUnknown, ErrNoSCRAM, a damaged verifier, or ErrRevoked (with the
// login filled in).
func (r *Registry) SCRAM(name string) (SCRAMLogin, error) {
	r.mu.RLock()
	rec, ok := r.byName[name]
	r.mu.RUnlock()
	switch {
	case !ok:
		return SCRAMLogin{}, fmt.Errorf("analyst %q: %w", name, ErrUnknown)
	case rec.SCRAM == "":
		return SCRAMLogin{}, fmt.Errorf("analyst %q: %w", name, ErrNoSCRAM)
	}
	k, err := ParseSCRAMVerifier(rec.SCRAM)
	if err != nil {
		return SCRAMLogin{}, fmt.Errorf("analyst %q: %w", name, err)
	}
	login := SCRAMLogin{Analyst: rec.Analyst, Keys: k, Credential: Credential{name: name, hash: rec.hash}}
	if rec.Revoked {
		// The keys come back too, so that the caller says "revoked" only
		// to a client that proved it holds the token.
		return login, fmt.Errorf("analyst %q: %w", name, ErrRevoked)
	}
	return login, nil
}

// VerifySCRAMProof checks a client's proof against keys for authMessage
// (client-first-bare, server-first and client-final-without-proof joined
// by commas), and returns the server's signature to send back.
func VerifySCRAMProof(keys SCRAMKeys, authMessage string, proof []byte) ([]byte, bool) {
	sig := hmacSHA256(keys.StoredKey[:], []byte(authMessage))
	if len(proof) != sha256.Size {
		return nil, false
	}
	var clientKey [sha256.Size]byte
	for i := range clientKey {
		clientKey[i] = proof[i] ^ sig[i]
	}
	stored := sha256.Sum256(clientKey[:])
	if subtle.ConstantTimeCompare(stored[:], keys.StoredKey[:]) != 1 {
		return nil, false
	}
	server := hmacSHA256(keys.ServerKey[:], []byte(authMessage))
	return server[:], true
}
