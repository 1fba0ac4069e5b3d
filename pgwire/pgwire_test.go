package pgwire_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/analyst"
	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/answer/answertest"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/pgwire"
)

type env struct {
	ledger      *ledger.Ledger
	reg         *analyst.Registry
	srv         *pgwire.Server
	addr        string
	alice, bob  string
	revokedName string
	revokedTok  string
}

func newEnv(t *testing.T, opts pgwire.Options) *env {
	return newEnvWrapped(t, opts, nil)
}

func newEnvWrapped(t *testing.T, opts pgwire.Options, wrap func(answer.Answerer) answer.Answerer) *env {
	t.Helper()
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	reg, err := analyst.NewRegistry(l)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{ledger: l, reg: reg}
	add := func(name, table string) string {
		_, tok, err := reg.Add(name, analyst.RoleAnalyst)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Grant(ledger.Key{Dataset: table, Analyst: name}, accounting.EpsDelta{Epsilon: 3, Delta: 1e-6}, accounting.Basic); err != nil {
			t.Fatal(err)
		}
		return tok
	}
	e.alice = add("alice", "adult")
	e.bob = add("bob", "visits")
	e.revokedTok = add("mallory", "adult")
	e.revokedName = "mallory"
	if _, err := reg.Revoke("mallory"); err != nil {
		t.Fatal(err)
	}
	var ans answer.Answerer = &answertest.Answerer{Ledger: l}
	if wrap != nil {
		ans = wrap(ans)
	}
	opts.Answerer = ans
	opts.Analysts = reg
	if opts.MaxQueryLen == 0 {
		opts.MaxQueryLen = 2048
	}
	e.srv, err = pgwire.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.addr = ln.Addr().String()
	go e.srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.srv.Shutdown(ctx)
	})
	return e
}

func (e *env) dsn(user, token string) string {
	host, port, _ := net.SplitHostPort(e.addr)
	return "host=" + host + " port=" + port + " user=" + user + " password=" + token + " dbname=dpstat sslmode=disable connect_timeout=5"
}

func (e *env) releases(t *testing.T) int {
	t.Helper()
	rels, err := e.ledger.History(ledger.Key{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(rels)
}

func psql(t *testing.T, dsn string, args ...string) (string, error) {
	t.Helper()
	// The Makefile sets DPSTAT_TEST_TOOLS to a fingerprint of the optional
	// tools installed; reading it makes go test's cache key depend on it,
	// so installing a tool reruns a test that skipped without it.
	os.Getenv("DPSTAT_TEST_TOOLS")
	if _, err := os.Stat("/usr/bin/psql"); err != nil {
		t.Skip("psql client not installed (/usr/bin/psql): install postgresql-client to run this test")
	}
	cmd := exec.Command("/usr/bin/psql", append([]string{dsn, "-X", "-v", "ON_ERROR_STOP=1"}, args...)...)
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=5", "PAGER=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}
