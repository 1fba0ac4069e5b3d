package analyst

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/ledger"
)

func openLedger(t *testing.T) (*ledger.Ledger, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := ledger.Open(path, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, path
}

func TestTokenLifecycle(t *testing.T) {
	l, path := openLedger(t)
	r, err := NewRegistry(l)
	if err != nil {
		t.Fatal(err)
	}
	alice, tok, err := r.Add("alice", RoleAnalyst)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, TokenPrefix) || len(tok) != len(TokenPrefix)+43 {
		t.Fatalf("token %q: want %s and 43 base64url characters", tok, TokenPrefix)
	}
	_, bobTok, err := r.Add("bob", RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Add("alice", RoleAnalyst); !errors.Is(err, ErrExists) {
		t.Fatalf("second add: got %v, want ErrExists", err)
	}
	tests := []struct {
		name, user, token string
		want              error
	}{
		{"right token", "alice", tok, nil},
		{"empty", "alice", "", ErrBadToken},
		{"no prefix", "alice", tok[len(TokenPrefix):], ErrBadToken},
		{"one character changed", "alice", changeLast(tok), ErrBadToken},
		{"too long", "alice", tok + strings.Repeat("x", MaxTokenLen), ErrBadToken},
		{"another analyst's token", "alice", bobTok, ErrBadToken},
		{"unknown user", "carol", tok, ErrBadToken},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := r.AuthenticateName(tc.user, tc.token)
			if !errors.Is(err, tc.want) {
				t.Fatalf("AuthenticateName: got %v, want %v", err, tc.want)
			}
			if tc.want == nil && a.Name != alice.Name {
				t.Fatalf("got analyst %q", a.Name)
			}
			if tc.user == "alice" && tc.name != "another analyst's token" {
				if _, err := r.Authenticate(tc.token); !errors.Is(err, tc.want) {
					t.Fatalf("Authenticate: got %v, want %v", err, tc.want)
				}
			}
		})
	}
	if a, err := r.Authenticate(bobTok); err != nil || !a.IsAdmin() {
		t.Fatalf("bob: %+v %v", a, err)
	}
	if _, err := r.Revoke("alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Authenticate(tok); !errors.Is(err, ErrRevoked) {
		t.Fatalf("after revoke: got %v, want ErrRevoked", err)
	}
	if _, err := r.Revoke("nobody"); !errors.Is(err, ErrUnknown) {
		t.Fatalf("revoke unknown: %v", err)
	}
	// Reopen: revocation and roles survive, the token text is nowhere in the file.
	l.Close()
	l2, err := ledger.Open(path, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	recs, err := l2.AnalystRecords()
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if strings.Contains(string(rec.Data), tok[len(TokenPrefix):]) || strings.Contains(string(rec.Data), bobTok[len(TokenPrefix):]) {
			t.Fatalf("record %s holds a token in clear", rec.Name)
		}
	}
	r2, err := NewRegistry(l2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r2.Authenticate(tok); !errors.Is(err, ErrRevoked) {
		t.Fatalf("after reopen: got %v, want ErrRevoked", err)
	}
	if a, err := r2.Authenticate(bobTok); err != nil || a.Name != "bob" || !a.IsAdmin() {
		t.Fatalf("bob after reopen: %+v %v", a, err)
	}
	_, newTok, err := r2.Rotate("alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r2.Authenticate(newTok); err != nil {
		t.Fatalf("rotated token: %v", err)
	}
	if _, err := r2.Authenticate(tok); !errors.Is(err, ErrBadToken) {
		t.Fatalf("old token after rotate: %v", err)
	}
}

func TestValidateName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"alice", true}, {"a.b-c_d9", true}, {"", false}, {"-x", false}, {"a b", false},
		{"a'; DROP TABLE x;--", false}, {strings.Repeat("a", MaxNameLen+1), false}, {"é", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := ValidateName(tc.name); (err == nil) != tc.ok {
				t.Fatalf("ValidateName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
			}
		})
	}
}

// changeLast returns tok with its last character replaced by another one.
func changeLast(tok string) string {
	c := byte('A')
	if tok[len(tok)-1] == c {
		c = 'B'
	}
	return tok[:len(tok)-1] + string(c)
}
