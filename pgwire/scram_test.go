package pgwire_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/dpstat/dpstat/auditlog"
	"github.com/dpstat/dpstat/pgwire"
)

// TestSCRAM: pgx and psql log in with SCRAM-SHA-256 (the only method
// offered, so the token never crosses the connection); the ledger keeps
// only the salted verifier; a client that answers with a cleartext
// password is refused; wrong tokens, revoked tokens and unknown names fail
// the same exchange.
func TestSCRAM(t *testing.T) {
	e := newEnv(t, pgwire.Options{})
	ctx := context.Background()
	// The server offers SCRAM-SHA-256 only, so a login that succeeds used
	// it.
	if out, err := psql(t, e.dsn("alice", e.alice), "-c", "SELECT COUNT(*) FROM adult"); err != nil || !strings.Contains(out, "10771") {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	if out, err := psql(t, e.dsn("alice", e.bob), "-c", "SELECT 1"); err == nil || !strings.Contains(out, "password authentication failed") {
		t.Fatalf("psql with a wrong token: %v\n%s", err, out)
	}
	c := connect(t, e.dsn("alice", e.alice))
	if !strings.Contains(c.PgConn().ParameterStatus("session_authorization"), "alice") {
		t.Fatalf("session_authorization = %q", c.PgConn().ParameterStatus("session_authorization"))
	}
	for _, bad := range []struct{ name, user, token, want string }{
		{"wrong token", "alice", e.bob, "must be the analyst's token"},
		{"unknown user", "nobody", e.alice, "must be the analyst's token"},
		{"revoked", e.revokedName, e.revokedTok, "revoked"},
		{"someone else's name", "bob", e.alice, "must be the analyst's token"},
	} {
		_, err := pgx.Connect(ctx, e.dsn(bad.user, bad.token))
		if sqlState(err) != "28P01" || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v", bad.name, err)
		}
	}
	recs, err := e.ledger.AnalystRecords()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		var rec map[string]any
		if err := json.Unmarshal(r.Data, &rec); err != nil {
			t.Fatal(err)
		}
		v, _ := rec["scram_sha256"].(string)
		if !strings.HasPrefix(v, "SCRAM-SHA-256$4096:") || strings.Contains(string(r.Data), e.alice) || strings.Contains(string(r.Data), e.bob) {
			t.Fatalf("stored record of %s: %s", r.Name, r.Data)
		}
	}

	// A raw client that answers the SASL request with a password message.
	nc, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "alice"}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	msg, err := fe.Receive()
	if sasl, ok := msg.(*pgproto3.AuthenticationSASL); err != nil || !ok || len(sasl.AuthMechanisms) != 1 || sasl.AuthMechanisms[0] != "SCRAM-SHA-256" {
		t.Fatalf("first message %#v, %v: want a SASL request for SCRAM-SHA-256 only", msg, err)
	}
	fe.Send(&pgproto3.PasswordMessage{Password: e.alice})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	msg, err = fe.Receive()
	if er, ok := msg.(*pgproto3.ErrorResponse); err != nil || !ok || er.Code != "08P01" && er.Code != "28000" {
		t.Fatalf("after a cleartext password: %#v, %v", msg, err)
	}
}

// TestAuditLogOverPG: logins, failed logins (with the address and the name
// given) and refusals over budget on the PostgreSQL port are audited.
func TestAuditLogOverPG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	audit, err := auditlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer audit.Close()
	e := newEnv(t, pgwire.Options{Audit: audit})
	ctx := context.Background()
	c := connect(t, e.dsn("alice", e.alice))
	if _, err := pgx.Connect(ctx, e.dsn("alice", e.bob)); sqlState(err) != "28P01" {
		t.Fatalf("wrong token: %v", err)
	}
	if _, err := c.Exec(ctx, "SET dpstat.epsilon = 5"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "SELECT COUNT(*) FROM adult"); sqlState(err) != "53400" {
		t.Fatalf("over budget: %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	want := []struct{ event, analyst string }{{auditlog.EventLogin, "alice"}, {auditlog.EventLoginFailed, "alice"}, {auditlog.EventRefusedBudget, "alice"}}
	if len(lines) != len(want) {
		t.Fatalf("audit log:\n%s", data)
	}
	for i, l := range lines {
		var ev auditlog.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Event != want[i].event || ev.Analyst != want[i].analyst || ev.Via != "pg" || !strings.HasPrefix(ev.Address, "127.0.0.1:") {
			t.Errorf("line %d: %s", i+1, l)
		}
	}
}
