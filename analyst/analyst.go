// Package analyst keeps the people who may query a dpstat server: their
// names, roles and access tokens.
//
// A token is 32 bytes from crypto/rand, shown once when it is made (as
// "dps_" followed by its base64url text) and stored only as its SHA-256
// hash. Tokens are checked by hashing what the client sent and comparing
// hashes in constant time; a revoked token stops working at once, without a
// restart, because every check goes through the Registry that revocation
// updates. Records are kept durably in a Store, normally the ledger file.
package analyst

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dpstat/dpstat/ledger"
)

// Role says what an analyst may do.
type Role string

const (
	// RoleAnalyst may query the tables granted to it and read its own
	// budgets and history.
	RoleAnalyst Role = "analyst"
	// RoleAdmin may also manage analysts and grants and read every
	// release. An admin queries like an analyst, with its own budgets.
	RoleAdmin Role = "admin"
)

// ParseRole parses "analyst" or "admin".
func ParseRole(s string) (Role, error) {
	switch Role(s) {
	case RoleAnalyst, RoleAdmin:
		return Role(s), nil
	}
	return "", fmt.Errorf("role %q: want %q or %q", s, RoleAnalyst, RoleAdmin)
}

// TokenPrefix starts every token, so that a leaked one is easy to recognise.
const TokenPrefix = "dps_"

// tokenBytes is the number of random bytes in a token.
const tokenBytes = 32

// MaxTokenLen bounds what a client may send as a token; anything longer is
// refused before it is hashed.
const MaxTokenLen = 256

// MaxNameLen bounds an analyst name.
const MaxNameLen = 64

// Errors that callers test with errors.Is.
var (
	// ErrBadToken: the token is not one the registry issued (or is
	// malformed). The message never says which part was wrong.
	ErrBadToken = errors.New("invalid token")
	// ErrRevoked: the token was issued but its analyst has been revoked.
	ErrRevoked = errors.New("token revoked")
	// ErrExists: an analyst with that name already exists.
	ErrExists = errors.New("analyst already exists")
	// ErrUnknown: no analyst has that name.
	ErrUnknown = errors.New("no such analyst")
	// ErrRotated: the token a session logged in with has been replaced
	// by a new one.
	ErrRotated = errors.New("token rotated")
)

// Credential identifies the token a session logged in with (its hash),
// so that a long-lived session can be ended when that token is rotated or
// revoked; see Registry.CheckCredential.
type Credential struct {
	name string
	hash [sha256.Size]byte
}

// Name is the analyst the credential belongs to.
func (c Credential) Name() string { return c.name }

// Analyst is one person who may query, as the registry reports it. It never
// holds the token or its hash.
type Analyst struct {
	Name      string     `json:"name"`
	Role      Role       `json:"role"`
	Created   time.Time  `json:"created"`
	Revoked   bool       `json:"revoked"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// IsAdmin reports whether a has the admin role.
func (a Analyst) IsAdmin() bool { return a.Role == RoleAdmin }

// record is what the store keeps.
type record struct {
	Analyst
	// TokenHash is the hex SHA-256 of the token text.
	TokenHash string `json:"token_sha256"`
	// SCRAM is the token's salted SCRAM-SHA-256 verifier, for logins over
	// the PostgreSQL protocol (see scram.go); empty for records made
	// before it existed.
	SCRAM string `json:"scram_sha256,omitempty"`
	hash  [sha256.Size]byte
}

// Store keeps analyst records durably. *ledger.Ledger implements it.
type Store interface {
	PutAnalystRecord(name string, data []byte) error
	AnalystRecords() ([]ledger.AnalystRecord, error)
}

// Registry is the set of analysts with their token hashes. Its methods are
// safe for concurrent use. Where several processes share the store, each
// sees the others' changes on Reload.
type Registry struct {
	store Store
	now   func() time.Time

	mu     sync.RWMutex
	byName map[string]*record
	byHash map[[sha256.Size]byte]*record
}

// NewRegistry loads every analyst from store.
func NewRegistry(store Store) (*Registry, error) {
	if store == nil {
		return nil, errors.New("analyst registry: store is nil")
	}
	r := &Registry{
		store:  store,
		now:    time.Now,
		byName: map[string]*record{},
		byHash: map[[sha256.Size]byte]*record{},
	}
	if err := r.Reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// Reload reads every analyst from the store again, so that analysts added,
// rotated or revoked by another process sharing the store (a server
// replica on a PostgreSQL ledger) take effect here. On an error the
// registry keeps what it had.
func (r *Registry) Reload() error {
	// Held across the read, so that a change made here meanwhile is not
	// lost from memory.
	r.mu.Lock()
	defer r.mu.Unlock()
	recs, err := r.store.AnalystRecords()
	if err != nil {
		return fmt.Errorf("loading analysts: %w", err)
	}
	byName := map[string]*record{}
	byHash := map[[sha256.Size]byte]*record{}
	for _, sr := range recs {
		rec := new(record)
		if err := json.Unmarshal(sr.Data, rec); err != nil {
			return fmt.Errorf("stored analyst %q is damaged: %w", sr.Name, err)
		}
		h, err := decodeHash(rec.TokenHash)
		if err != nil {
			return fmt.Errorf("stored analyst %q: %w", sr.Name, err)
		}
		rec.hash = h
		byName[rec.Name] = rec
		byHash[h] = rec
	}
	r.byName, r.byHash = byName, byHash
	return nil
}

func decodeHash(s string) ([sha256.Size]byte, error) {
	var h [sha256.Size]byte
	if len(s) != 2*sha256.Size {
		return h, fmt.Errorf("token hash has %d hex digits: want %d", len(s), 2*sha256.Size)
	}
	for i := range h {
		hi, ok1 := unhex(s[2*i])
		lo, ok2 := unhex(s[2*i+1])
		if !ok1 || !ok2 {
			return h, fmt.Errorf("token hash %q is not hexadecimal", s)
		}
		h[i] = hi<<4 | lo
	}
	return h, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// ValidateName reports whether name may name an analyst: 1 to MaxNameLen
// characters among ASCII letters, digits, '_', '-' and '.', starting with a
// letter or digit. The restriction keeps names safe in URLs, PostgreSQL user
// names and ledger keys.
func ValidateName(name string) error {
	if name == "" {
		return errors.New("analyst name is empty: want 1 to 64 characters among letters, digits, '_', '-' and '.'")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("analyst name is %d characters long: want at most %d", len(name), MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			i > 0 && (c == '_' || c == '-' || c == '.')
		if !ok {
			return fmt.Errorf("analyst name %q has %q at position %d: want letters, digits, '_', '-' and '.', starting with a letter or digit", name, c, i+1)
		}
	}
	return nil
}

// NewToken returns a fresh token: TokenPrefix and the base64url text of 32
// bytes from crypto/rand.
func NewToken() (string, error) {
	var b [tokenBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("reading random bytes for a token: %w", err)
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// HashToken returns the SHA-256 hash of a token's text.
func HashToken(token string) [sha256.Size]byte {
	return sha256.Sum256([]byte(token))
}

func (r *Registry) save(rec *record) error {
	rec.TokenHash = fmt.Sprintf("%x", rec.hash[:])
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return r.store.PutAnalystRecord(rec.Name, data)
}

// Add creates an analyst with role and returns it with its token, which is
// shown only this once: the registry keeps only its hash.
func (r *Registry) Add(name string, role Role) (Analyst, string, error) {
	if err := ValidateName(name); err != nil {
		return Analyst{}, "", err
	}
	if _, err := ParseRole(string(role)); err != nil {
		return Analyst{}, "", err
	}
	token, err := NewToken()
	if err != nil {
		return Analyst{}, "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byName[name]; ok {
		return Analyst{}, "", fmt.Errorf("analyst %q: %w (revoke it or choose another name)", name, ErrExists)
	}
	ver, err := NewSCRAMVerifier(token)
	if err != nil {
		return Analyst{}, "", err
	}
	rec := &record{
		Analyst: Analyst{Name: name, Role: role, Created: r.now().UTC()},
		SCRAM:   ver,
		hash:    HashToken(token),
	}
	if err := r.save(rec); err != nil {
		return Analyst{}, "", err
	}
	r.byName[name] = rec
	r.byHash[rec.hash] = rec
	return rec.Analyst, token, nil
}

// Rotate gives an analyst a new token and returns it; the old token stops
// working at once. A revoked analyst is reinstated.
func (r *Registry) Rotate(name string) (Analyst, string, error) {
	token, err := NewToken()
	if err != nil {
		return Analyst{}, "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok := r.byName[name]
	if !ok {
		return Analyst{}, "", fmt.Errorf("analyst %q: %w", name, ErrUnknown)
	}
	ver, err := NewSCRAMVerifier(token)
	if err != nil {
		return Analyst{}, "", err
	}
	rec := &record{Analyst: old.Analyst, SCRAM: ver, hash: HashToken(token)}
	rec.Revoked, rec.RevokedAt = false, nil
	if err := r.save(rec); err != nil {
		return Analyst{}, "", err
	}
	delete(r.byHash, old.hash)
	r.byName[name] = rec
	r.byHash[rec.hash] = rec
	return rec.Analyst, token, nil
}

// Revoke revokes an analyst's token. Requests that present it afterwards
// fail with ErrRevoked; the analyst's budgets and releases stay in the
// ledger. Revoking twice is not an error.
func (r *Registry) Revoke(name string) (Analyst, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok := r.byName[name]
	if !ok {
		return Analyst{}, fmt.Errorf("analyst %q: %w", name, ErrUnknown)
	}
	if old.Revoked {
		return old.Analyst, nil
	}
	rec := &record{Analyst: old.Analyst, SCRAM: old.SCRAM, hash: old.hash}
	t := r.now().UTC()
	rec.Revoked, rec.RevokedAt = true, &t
	if err := r.save(rec); err != nil {
		return Analyst{}, err
	}
	r.byName[name] = rec
	r.byHash[rec.hash] = rec
	return rec.Analyst, nil
}

// Get returns the analyst called name.
func (r *Registry) Get(name string) (Analyst, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rec, ok := r.byName[name]
	if !ok {
		return Analyst{}, false
	}
	return rec.Analyst, true
}

// List returns every analyst, sorted by name.
func (r *Registry) List() []Analyst {
	r.mu.RLock()
	out := make([]Analyst, 0, len(r.byName))
	for _, rec := range r.byName {
		out = append(out, rec.Analyst)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Authenticate returns the analyst whose token this is. It fails with
// ErrBadToken for a token the registry did not issue and ErrRevoked for a
// revoked one.
//
// The token is hashed first and the registry is searched by hash, so the
// time taken depends only on the hash, which reveals nothing usable about
// the secret; the final check compares the full hashes in constant time.
func (r *Registry) Authenticate(token string) (Analyst, error) {
	if len(token) > MaxTokenLen || !strings.HasPrefix(token, TokenPrefix) {
		return Analyst{}, ErrBadToken
	}
	h := HashToken(token)
	r.mu.RLock()
	rec, ok := r.byHash[h]
	r.mu.RUnlock()
	if !ok || subtle.ConstantTimeCompare(h[:], rec.hash[:]) != 1 {
		return Analyst{}, ErrBadToken
	}
	if rec.Revoked {
		return Analyst{}, ErrRevoked
	}
	return rec.Analyst, nil
}

// CredentialOf returns the credential of a token that authenticated as
// analyst name (see CheckCredential).
func CredentialOf(name, token string) Credential {
	return Credential{name: name, hash: HashToken(token)}
}

// CheckCredential reports whether a session that logged in with cred may
// go on: nil while cred is its analyst's current token, ErrRevoked once the
// analyst is revoked, ErrRotated once the token has been replaced (also by
// a rotation that reinstated a revoked analyst: the old session stays
// ended), ErrUnknown if the analyst is gone.
func (r *Registry) CheckCredential(cred Credential) error {
	r.mu.RLock()
	rec, ok := r.byName[cred.name]
	r.mu.RUnlock()
	switch {
	case !ok:
		return fmt.Errorf("analyst %q: %w", cred.name, ErrUnknown)
	case subtle.ConstantTimeCompare(rec.hash[:], cred.hash[:]) != 1:
		return fmt.Errorf("analyst %q: %w", cred.name, ErrRotated)
	case rec.Revoked:
		return fmt.Errorf("analyst %q: %w", cred.name, ErrRevoked)
	}
	return nil
}

// AuthenticateName checks that token belongs to the analyst called name, as
// a PostgreSQL client presents them (user name and password). The hashes are
// compared in constant time; an unknown name is compared against a dummy
// hash so that it takes the same time as a wrong token.
func (r *Registry) AuthenticateName(name, token string) (Analyst, error) {
	if len(token) > MaxTokenLen {
		return Analyst{}, ErrBadToken
	}
	h := HashToken(token)
	r.mu.RLock()
	rec, ok := r.byName[name]
	r.mu.RUnlock()
	want := [sha256.Size]byte{}
	if ok {
		want = rec.hash
	}
	match := subtle.ConstantTimeCompare(h[:], want[:]) == 1
	if !ok || !match {
		return Analyst{}, ErrBadToken
	}
	if rec.Revoked {
		return Analyst{}, ErrRevoked
	}
	return rec.Analyst, nil
}
