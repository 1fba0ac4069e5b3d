package analyst

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// TestSCRAMVectors checks the proof and the server signature against the
// example exchange of RFC 7677, section 3.
func TestSCRAMVectors(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	keys, err := DeriveSCRAMKeys("pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	auth := "n=user,r=rOprNGfwEbeRWgbNEkqO," +
		"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096," +
		"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	proof, _ := base64.StdEncoding.DecodeString("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	sig, ok := VerifySCRAMProof(keys, auth, proof)
	if !ok || base64.StdEncoding.EncodeToString(sig) != "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=" {
		t.Fatalf("proof accepted = %v, server signature %s", ok, base64.StdEncoding.EncodeToString(sig))
	}
	proof[0] ^= 1
	if _, ok := VerifySCRAMProof(keys, auth, proof); ok {
		t.Fatal("an altered proof was accepted")
	}
	if _, ok := VerifySCRAMProof(keys, auth, proof[:31]); ok {
		t.Fatal("a short proof was accepted")
	}
}

func TestParseSCRAMVerifier(t *testing.T) {
	good, err := NewSCRAMVerifier("dps_token")
	if err != nil {
		t.Fatal(err)
	}
	k, err := ParseSCRAMVerifier(good)
	if err != nil || k.Iterations != SCRAMIterations || len(k.Salt) != 16 {
		t.Fatalf("ParseSCRAMVerifier(%q) = %+v, %v", good, k, err)
	}
	want, _ := DeriveSCRAMKeys("dps_token", k.Salt, SCRAMIterations)
	if want.StoredKey != k.StoredKey || want.ServerKey != k.ServerKey {
		t.Fatal("the stored keys are not the token's")
	}
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	for _, bad := range []struct{ v, want string }{
		{"md5abc", "not SCRAM-SHA-256"},
		{"SCRAM-SHA-256$4096:c2FsdA==", "no keys"},
		{"SCRAM-SHA-256$4096c2FsdA==$" + key + ":" + key, "missing ':'"},
		{"SCRAM-SHA-256$0:c2FsdA==$" + key + ":" + key, "iteration count"},
		{"SCRAM-SHA-256$4096:!!$" + key + ":" + key, "salt not base64"},
		{"SCRAM-SHA-256$4096:c2FsdA==$" + key + ":c2FsdA==", "not 32 bytes"},
	} {
		if _, err := ParseSCRAMVerifier(bad.v); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseSCRAMVerifier(%q) = %v, want an error saying %q", bad.v, err, bad.want)
		}
	}
}

// TestSCRAMLogin: new and rotated tokens get a verifier; a record from
// before verifiers has none until its token is rotated; a revoked analyst's
// keys come back with ErrRevoked.
func TestSCRAMLogin(t *testing.T) {
	l, _ := openLedger(t)
	r, err := NewRegistry(l)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Add("alice", RoleAnalyst); err != nil {
		t.Fatal(err)
	}
	if _, err := r.SCRAM("alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.SCRAM("nobody"); !errors.Is(err, ErrUnknown) {
		t.Fatalf("unknown: %v", err)
	}
	// A record as written before verifiers existed.
	old := `{"name":"old","role":"analyst","created":"2026-01-01T00:00:00Z","revoked":false,"token_sha256":"` + strings.Repeat("ab", 32) + `"}`
	if err := l.PutAnalystRecord("old", []byte(old)); err != nil {
		t.Fatal(err)
	}
	r, err = NewRegistry(l)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.SCRAM("old"); !errors.Is(err, ErrNoSCRAM) {
		t.Fatalf("a record without a verifier: %v", err)
	}
	if _, _, err := r.Rotate("old"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.SCRAM("old"); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	if _, err := r.Revoke("alice"); err != nil {
		t.Fatal(err)
	}
	if login, err := r.SCRAM("alice"); !errors.Is(err, ErrRevoked) || login.Keys.Iterations != SCRAMIterations {
		t.Fatalf("revoked: %+v, %v", login, err)
	}
}
