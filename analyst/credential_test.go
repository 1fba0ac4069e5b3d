package analyst

import (
	"errors"
	"testing"
)

// TestCheckCredential: a session's credential holds until its token is
// revoked or rotated; a rotation that reinstates a revoked analyst does
// not revive the old credential.
func TestCheckCredential(t *testing.T) {
	l, _ := openLedger(t)
	r, err := NewRegistry(l)
	if err != nil {
		t.Fatal(err)
	}
	_, tok, err := r.Add("alice", RoleAnalyst)
	if err != nil {
		t.Fatal(err)
	}
	first := CredentialOf("alice", tok)
	steps := []struct {
		name string
		do   func() error
		cred func() Credential
		want error
	}{
		{"fresh", func() error { return nil }, func() Credential { return first }, nil},
		{"unknown analyst", func() error { return nil }, func() Credential { return CredentialOf("bob", tok) }, ErrUnknown},
		{"revoked", func() error { _, err := r.Revoke("alice"); return err }, func() Credential { return first }, ErrRevoked},
		{"revoked then rotated", func() error { _, tok, err = r.Rotate("alice"); return err }, func() Credential { return first }, ErrRotated},
		{"the new token", func() error { return nil }, func() Credential { return CredentialOf("alice", tok) }, nil},
		{"rotated again", func() error { _, _, err := r.Rotate("alice"); return err }, func() Credential { return CredentialOf("alice", tok) }, ErrRotated},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got := r.CheckCredential(s.cred())
		if (s.want == nil) != (got == nil) || (s.want != nil && !errors.Is(got, s.want)) {
			t.Fatalf("%s: CheckCredential = %v, want %v", s.name, got, s.want)
		}
	}
}
