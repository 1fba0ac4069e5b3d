package collector

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// AdminTokenMatches reports whether token is the curator's token (compared
// in constant time through its SHA-256).
func (s *Store) AdminTokenMatches(token string) bool {
	var stored []byte
	_ = s.db.View(func(tx *bolt.Tx) error {
		if mb := tx.Bucket(bucketMeta); mb != nil {
			stored = append(stored, mb.Get(keyAdmin)...)
		}
		return nil
	})
	if len(stored) != sha256.Size || token == "" {
		return false
	}
	h := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(h[:], stored) == 1
}

// HasAdminToken reports whether a curator token is set.
func (s *Store) HasAdminToken() bool {
	var ok bool
	_ = s.db.View(func(tx *bolt.Tx) error {
		if mb := tx.Bucket(bucketMeta); mb != nil {
			ok = mb.Get(keyAdmin) != nil
		}
		return nil
	})
	return ok
}

// SetAdminToken stores the SHA-256 of the curator's token (the token itself
// is never stored).
func (s *Store) SetAdminToken(token string) error {
	if len(token) < 16 {
		return fmt.Errorf("admin token has %d characters: want at least 16", len(token))
	}
	h := sha256.Sum256([]byte(token))
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyAdmin, h[:]) })
}

// NewToken returns a random 256-bit token in hex.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}
