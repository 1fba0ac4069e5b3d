package analyst

import (
	"errors"
	"testing"
)

// TestReloadSeesOtherRegistries: two registries over one store (as two
// server replicas over one PostgreSQL ledger): an analyst added, rotated
// or revoked through one is known to the other after its Reload.
func TestReloadSeesOtherRegistries(t *testing.T) {
	l, _ := openLedger(t)
	a, err := NewRegistry(l)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewRegistry(l)
	if err != nil {
		t.Fatal(err)
	}
	_, tok, err := a.Add("alice", RoleAnalyst)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		change func() error
		check  func() error
	}{
		{"added", func() error { return nil }, func() error { _, err := b.Authenticate(tok); return err }},
		{"rotated", func() (err error) { _, tok, err = a.Rotate("alice"); return err }, func() error { _, err := b.Authenticate(tok); return err }},
		{"revoked", func() error { _, err := a.Revoke("alice"); return err }, func() error {
			if _, err := b.Authenticate(tok); !errors.Is(err, ErrRevoked) {
				return errors.New("the revoked token still authenticates")
			}
			return nil
		}},
	}
	for _, s := range steps {
		if err := s.change(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if err := b.Reload(); err != nil {
			t.Fatalf("%s: Reload: %v", s.name, err)
		}
		if err := s.check(); err != nil {
			t.Fatalf("%s: after Reload: %v", s.name, err)
		}
	}
}
