package pgwire_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/answer/answertest"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/pgwire"
	"github.com/dpstat/dpstat/server"
)

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func TestPgxSimpleAndExtended(t *testing.T) {
	e := newEnv(t, pgwire.Options{})
	ctx := context.Background()
	for _, mode := range []struct {
		name string
		mode pgx.QueryExecMode
	}{
		{"extended, cached statement", pgx.QueryExecModeCacheStatement},
		{"extended, describe each", pgx.QueryExecModeDescribeExec},
		{"simple protocol", pgx.QueryExecModeSimpleProtocol},
	} {
		t.Run(mode.name, func(t *testing.T) {
			cfg, err := pgx.ParseConfig(e.dsn("alice", e.alice))
			if err != nil {
				t.Fatal(err)
			}
			cfg.DefaultQueryExecMode = mode.mode
			var notices []string
			cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Message) }
			c, err := pgx.ConnectConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			if _, err := c.Exec(ctx, "SET dpstat.epsilon = 0.25"); err != nil {
				t.Fatal(err)
			}
			before := e.releases(t)
			rows, err := c.Query(ctx, "SELECT sex, COUNT(*) FROM adult WHERE age > $1 AND sex = $2 GROUP BY sex", 30, "Female")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for rows.Next() {
				var sex string
				var n float64
				if err := rows.Scan(&sex, &n); err != nil {
					t.Fatal(err)
				}
				got = append(got, sex)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, ",") != "Female,Male" {
				t.Fatalf("rows %v", got)
			}
			if e.releases(t) != before+1 {
				t.Fatalf("want one charge, got %d", e.releases(t)-before)
			}
			if len(notices) == 0 || !strings.Contains(strings.Join(notices, "\n"), "epsilon=0.25") {
				t.Fatalf("notices %q", notices)
			}
			var eps string
			if err := c.QueryRow(ctx, "SHOW dpstat.epsilon").Scan(&eps); err != nil || eps != "0.25" {
				t.Fatalf("SHOW: %q %v", eps, err)
			}
			// Intervals as columns.
			if _, err := c.Exec(ctx, "SET dpstat.intervals = on"); err != nil {
				t.Fatal(err)
			}
			rows, err = c.Query(ctx, "SELECT sex, COUNT(*) FROM adult GROUP BY sex")
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range rows.FieldDescriptions() {
				names = append(names, f.Name)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if strings.Join(names, ",") != "sex,count,count_low,count_high" {
				t.Fatalf("columns %v", names)
			}
			for _, s := range []string{"BEGIN", "COMMIT", "ROLLBACK", "SET client_encoding = 'UTF8'", "SET application_name = 'x'"} {
				if _, err := c.Exec(ctx, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			var v string
			if err := c.QueryRow(ctx, "SELECT version()").Scan(&v); err != nil || !strings.Contains(v, "dpstat") {
				t.Fatalf("version(): %q %v", v, err)
			}
			var one int
			if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
				t.Fatalf("SELECT 1: %d %v", one, err)
			}
			var pid int32
			if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				t.Fatalf("pg_backend_pid(): %v", err)
			}
			if err := c.Ping(ctx); err != nil {
				t.Fatalf("ping: %v", err)
			}
		})
	}
}

func TestPgxPreparedStatement(t *testing.T) {
	e := newEnv(t, pgwire.Options{})
	ctx := context.Background()
	c := connect(t, e.dsn("alice", e.alice))
	if _, err := c.Prepare(ctx, "bysex", "SELECT sex, COUNT(*) FROM adult WHERE age >= $1 GROUP BY sex"); err != nil {
		t.Fatal(err)
	}
	for _, age := range []int{20, 40} {
		rows, err := c.Query(ctx, "bysex", age)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		if rows.Err() != nil || n != 2 {
			t.Fatalf("age %d: %d rows, %v", age, n, rows.Err())
		}
	}
	if got := e.releases(t); got != 2 {
		t.Fatalf("%d releases, want 2", got)
	}
}

func TestErrorsAndAttacks(t *testing.T) {
	e := newEnv(t, pgwire.Options{})
	ctx := context.Background()
	connTests := []struct {
		name, user, token, code string
	}{
		{"wrong token", "alice", "dps_wrong", "28P01"},
		{"another analyst's token", "alice", "BOB", "28P01"},
		{"revoked token", "mallory", "REVOKED", "28P01"},
		{"unknown user", "eve", "ALICE", "28P01"},
		{"injection in user name", "alice' OR '1'='1", "ALICE", "28P01"},
	}
	for _, tc := range connTests {
		t.Run(tc.name, func(t *testing.T) {
			tok := map[string]string{"BOB": e.bob, "REVOKED": e.revokedTok, "ALICE": e.alice}[tc.token]
			if tok == "" {
				tok = tc.token
			}
			cfg, err := pgx.ParseConfig(e.dsn("x", "x"))
			if err != nil {
				t.Fatal(err)
			}
			cfg.User, cfg.Password = tc.user, tok
			_, err = pgx.ConnectConfig(ctx, cfg)
			if sqlState(err) != tc.code {
				t.Fatalf("got %v, want SQLSTATE %s", err, tc.code)
			}
		})
	}
	c := connect(t, e.dsn("alice", e.alice))
	simple := pgx.QueryExecModeSimpleProtocol
	tests := []struct {
		name string
		sql  string
		args []any
		code string
	}{
		{"table not granted", "SELECT COUNT(*) FROM visits", nil, "42501"},
		{"unknown table", "SELECT COUNT(*) FROM secrets", nil, "42P01"},
		{"syntax error", "SELEKT 1", nil, "42601"},
		{"SELECT star refused", "SELECT * FROM adult", nil, "0A000"},
		{"DROP refused", "DROP TABLE adult", nil, "0A000"},
		{"budget exceeded", "SELECT COUNT(*) FROM adult /* big */", nil, ""},
		{"SET value injection", "SET dpstat.epsilon = '1; DROP TABLE x'", nil, "22023"},
		{"SET negative", "SET dpstat.epsilon = -1", nil, "22023"},
		{"SET delta one", "SET dpstat.delta = 1", nil, "22023"},
		{"SET NaN", "SET dpstat.epsilon = 'NaN'", nil, "22023"},
		{"SET unknown dpstat", "SET dpstat.budget = 100", nil, "42704"},
		{"SET intervals junk", "SET dpstat.intervals = maybe", nil, "22023"},
		{"SET fresh junk", "SET dpstat.fresh = maybe", nil, "22023"},
		{"SHOW unknown", "SHOW dpstat.secret", nil, "42704"},
		{"very long query", "SELECT COUNT(*) FROM adult /*" + strings.Repeat("x", 3000) + "*/", nil, "54000"},
		{"unterminated string", "SELECT COUNT(*) FROM adult WHERE sex = 'x", nil, "42601"},
		{"two statements, second refused", "SELECT COUNT(*) FROM adult WHERE sex = 'Male'; DROP TABLE adult", nil, "0A000"},
		{"parameter injection stays a literal", "SELECT COUNT(*) FROM adult WHERE sex = $1", []any{"x'; DROP TABLE adult; --"}, ""},
		{"parameter injection with number type", "SELECT COUNT(*) FROM adult WHERE age > $1", []any{"1) OR (1=1"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := e.releases(t)
			switch tc.name {
			case "budget exceeded":
				if _, err := c.Exec(ctx, "SET dpstat.epsilon = 100", simple); err != nil {
					t.Fatal(err)
				}
				_, err := c.Exec(ctx, tc.sql, simple)
				c.Exec(ctx, "RESET dpstat.epsilon", simple)
				if sqlState(err) != "53400" {
					t.Fatalf("got %v, want 53400", err)
				}
			case "parameter injection stays a literal", "parameter injection with number type":
				// The value arrives as one quoted literal; the fake answerer
				// sees a single statement, so nothing is refused for having
				// several; the query is answered once, as a plain filter.
				rows, err := c.Query(ctx, tc.sql, tc.args...)
				if err != nil {
					t.Fatal(err)
				}
				rows.Close()
				if rows.Err() != nil {
					t.Fatalf("got %v", rows.Err())
				}
				if e.releases(t) != before+1 {
					t.Fatal("want exactly one charge")
				}
				return
			default:
				args := append([]any{simple}, tc.args...)
				_, err := c.Exec(ctx, tc.sql, args...)
				if sqlState(err) != tc.code {
					t.Fatalf("got %v, want SQLSTATE %s", err, tc.code)
				}
				var pe *pgconn.PgError
				errors.As(err, &pe)
				if pe.Message == "" {
					t.Fatal("error without a message")
				}
			}
			if got := e.releases(t); got != before {
				t.Fatalf("charged %d releases", got-before)
			}
			// The session survives every error.
			var eps string
			if err := c.QueryRow(ctx, "SHOW dpstat.delta", simple).Scan(&eps); err != nil {
				t.Fatalf("session broken: %v", err)
			}
		})
	}
	// Same queries over the extended protocol keep their SQLSTATEs.
	for _, q := range []struct{ sql, code string }{
		{"SELECT COUNT(*) FROM visits", "42501"},
		{"SELECT * FROM adult", "0A000"},
		{"SELECT COUNT(*) FROM adult; DROP TABLE adult", "42601"},
	} {
		rows, err := c.Query(ctx, q.sql, pgx.QueryExecModeDescribeExec)
		if err == nil {
			rows.Close()
			err = rows.Err()
		}
		if sqlState(err) != q.code {
			t.Errorf("extended %q: got %v, want %s", q.sql, err, q.code)
		}
	}
	if got := e.releases(t); got != 2 {
		t.Fatalf("%d releases after the attacks, want the 2 parameter queries", got)
	}
}

func TestRevokedMidSession(t *testing.T) {
	e := newEnv(t, pgwire.Options{})
	ctx := context.Background()
	c := connect(t, e.dsn("alice", e.alice))
	if _, err := c.Exec(ctx, "SELECT COUNT(*) FROM adult"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reg.Revoke("alice"); err != nil {
		t.Fatal(err)
	}
	_, err := c.Exec(ctx, "SELECT COUNT(*) FROM adult")
	if sqlState(err) != "28P01" {
		t.Fatalf("after revoke: %v", err)
	}
	if n := e.releases(t); n != 1 {
		t.Fatalf("%d releases, want 1", n)
	}
}

func TestTooManyConnections(t *testing.T) {
	e := newEnv(t, pgwire.Options{MaxConns: 2})
	ctx := context.Background()
	connect(t, e.dsn("alice", e.alice))
	connect(t, e.dsn("alice", e.alice))
	_, err := pgx.Connect(ctx, e.dsn("alice", e.alice))
	if sqlState(err) != "53300" {
		t.Fatalf("third connection: %v, want 53300", err)
	}
}

func TestSlowClientsAreDisconnected(t *testing.T) {
	e := newEnv(t, pgwire.Options{StartupTimeout: 200 * time.Millisecond, IdleTimeout: 300 * time.Millisecond})
	// A client that connects and says nothing is dropped.
	nc, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 1)
	if _, err := nc.Read(buf); err == nil {
		t.Fatal("silent client got data")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("server did not close a silent client")
	}
	// An idle session is ended with 57P05.
	c := connect(t, e.dsn("alice", e.alice))
	time.Sleep(600 * time.Millisecond)
	_, err = c.Exec(context.Background(), "SHOW dpstat.epsilon")
	if err == nil {
		t.Fatal("idle session still open")
	}
	if n := e.releases(t); n != 0 {
		t.Fatalf("charged %d", n)
	}
}

func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
}

func TestTLS(t *testing.T) {
	e := newEnv(t, pgwire.Options{TLS: selfSigned(t)})
	ctx := context.Background()
	dsn := strings.Replace(e.dsn("alice", e.alice), "sslmode=disable", "sslmode=require", 1)
	c := connect(t, dsn)
	if _, err := c.Exec(ctx, "SELECT COUNT(*) FROM adult"); err != nil {
		t.Fatal(err)
	}
	if !c.PgConn().Conn().(*tls.Conn).ConnectionState().HandshakeComplete {
		t.Fatal("not TLS")
	}
	_, err := pgx.Connect(ctx, e.dsn("alice", e.alice))
	if sqlState(err) != "28000" {
		t.Fatalf("plaintext login: %v, want 28000", err)
	}
	if out, err := psql(t, dsn, "-c", "SELECT COUNT(*) FROM adult"); err != nil || !strings.Contains(out, "10771") {
		t.Fatalf("psql over TLS: %v\n%s", err, out)
	}
}

func TestPsql(t *testing.T) {
	e := newEnv(t, pgwire.Options{})
	dsn := e.dsn("alice", e.alice)
	tests := []struct {
		name    string
		args    []string
		want    []string
		wantErr string
	}{
		{"list tables", []string{"-c", `\d`}, []string{"public | adult    | table", "public | weekdays | table"}, ""},
		{"public tables say so", []string{"-c", `\dt+`}, []string{"weekdays | table", "public table: join it to a private table"}, ""},
		{"describe table", []string{"-c", `\d adult`}, []string{`Table "public.adult"`, "age            | bigint", "sex            | text"}, ""},
		{"describe table verbose", []string{"-c", `\d+ adult`}, []string{`Table "public.adult"`, "int in [17, 90]", "text in {Female, Male}", "Storage"}, ""},
		{"other meta-commands answer empty", []string{"-c", `\l`, "-c", `\dn`, "-c", `\du`, "-c", `\dt`}, []string{"List of databases", "List of schemas", "adult"}, ""},
		{"query with notices", []string{"-c", "SET dpstat.epsilon = 0.5", "-c", "SELECT sex, COUNT(*) FROM adult GROUP BY sex"},
			[]string{"Female | 10771", "NOTICE:  cost: epsilon=0.5", "remaining epsilon=2.5", "NOTICE:  intervals: Female: count ["}, ""},
		{"intervals as columns", []string{"-c", "SET dpstat.intervals = on", "-c", "SELECT sex, COUNT(*) FROM adult GROUP BY sex"}, []string{"count_low", "count_high"}, ""},
		{"show", []string{"-c", "SET dpstat.delta = 1e-7", "-c", "SHOW dpstat.delta"}, []string{"1e-07"}, ""},
		{"version", []string{"-c", "SELECT version()"}, []string{"dpstat"}, ""},
		{"transaction no-ops", []string{"-c", "BEGIN", "-c", "COMMIT", "-c", "ROLLBACK"}, []string{"BEGIN", "COMMIT", "ROLLBACK"}, ""},
		{"SET injection", []string{"-c", "SET dpstat.epsilon = '1; DROP TABLE x'"}, nil, "invalid value for dpstat.epsilon"},
		{"not granted", []string{"-c", "SELECT COUNT(*) FROM visits"}, nil, `no budget on table "visits"`},
		{"bad password", nil, nil, "password authentication failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := dsn
			if tc.name == "bad password" {
				d = e.dsn("alice", "dps_nope")
				tc.args = []string{"-c", "SELECT 1"}
			}
			out, err := psql(t, d, tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(out, tc.wantErr) {
					t.Fatalf("want an error with %q, got %v:\n%s", tc.wantErr, err, out)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	rels, _ := e.ledger.History(ledger.Key{}, 0)
	if len(rels) != 2 {
		t.Fatalf("%d releases, want 2 (the two answered queries)", len(rels))
	}
}

// TestCachedStatementAfterIntervalsChange checks that a statement described
// before SET dpstat.intervals changes its columns is refused with
// PostgreSQL's "cached plan must not change result type" (which makes pgx
// prepare it again) and is not charged.
func TestCachedStatementAfterIntervalsChange(t *testing.T) {
	e := newEnv(t, pgwire.Options{})
	ctx := context.Background()
	c := connect(t, e.dsn("alice", e.alice))
	const q = "SELECT sex, COUNT(*) FROM adult WHERE age > $1 GROUP BY sex"
	rows, err := c.Query(ctx, q, 20)
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if _, err := c.Exec(ctx, "SET dpstat.intervals = on"); err != nil {
		t.Fatal(err)
	}
	before := e.releases(t)
	rows, err = c.Query(ctx, q, 20)
	if err == nil {
		rows.Close()
		err = rows.Err()
	}
	if sqlState(err) != "0A000" {
		t.Fatalf("got %v, want 0A000", err)
	}
	if e.releases(t) != before {
		t.Fatal("the refused execution was charged")
	}
	// pgx has dropped its cached description; the retry gets the new columns.
	rows, err = c.Query(ctx, q, 20)
	if err != nil {
		t.Fatal(err)
	}
	n := len(rows.FieldDescriptions())
	rows.Close()
	if rows.Err() != nil || n != 4 {
		t.Fatalf("retry: %d columns, %v", n, rows.Err())
	}
}

// gate holds real answers (not dry runs) until it is opened.
type gate struct {
	answer.Answerer
	entered chan struct{}
	open    chan struct{}
}

func (g *gate) Answer(ctx context.Context, req answer.Request) (*answer.Response, error) {
	if !req.DryRun {
		g.entered <- struct{}{}
		<-g.open
	}
	return g.Answerer.Answer(ctx, req)
}

// TestGracefulShutdown checks that Shutdown lets a query in flight finish
// and deliver its charged answer, and tells an idle session the server is
// going away.
func TestGracefulShutdown(t *testing.T) {
	g := &gate{entered: make(chan struct{}, 1), open: make(chan struct{})}
	e := newEnvWrapped(t, pgwire.Options{}, func(a answer.Answerer) answer.Answerer { g.Answerer = a; return g })
	ctx := context.Background()
	busy := connect(t, e.dsn("alice", e.alice))
	idle := connect(t, e.dsn("alice", e.alice))
	result := make(chan error, 1)
	go func() {
		var sex string
		var n float64
		result <- busy.QueryRow(ctx, "SELECT sex, COUNT(*) FROM adult GROUP BY sex", pgx.QueryExecModeSimpleProtocol).Scan(&sex, &n)
	}()
	<-g.entered
	done := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		done <- e.srv.Shutdown(sctx)
	}()
	select {
	case <-done:
		t.Fatal("Shutdown returned with a query in flight")
	case <-time.After(200 * time.Millisecond):
	}
	close(g.open)
	if err := <-result; err != nil {
		t.Fatalf("query in flight: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n := e.releases(t); n != 1 {
		t.Fatalf("%d releases, want 1", n)
	}
	if _, err := idle.Exec(ctx, "SHOW dpstat.epsilon"); err == nil {
		t.Fatal("idle session still served after shutdown")
	}
	if _, err := net.DialTimeout("tcp", e.addr, time.Second); err == nil {
		t.Fatal("listener still accepting after shutdown")
	}
}

// TestRotationEndsSessions: a rotation ends every session opened with the
// old token (nothing more is charged to it), also after a revocation that
// the rotation lifts; the new token logs in.
func TestRotationEndsSessions(t *testing.T) {
	tests := []struct {
		name         string
		revokeFirst  bool
		wantFragment string
	}{
		{"rotate", false, "was rotated"},
		{"revoke then rotate", true, "was rotated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, pgwire.Options{})
			ctx := context.Background()
			old1 := connect(t, e.dsn("alice", e.alice))
			old2 := connect(t, e.dsn("alice", e.alice))
			if _, err := old1.Exec(ctx, "SELECT COUNT(*) FROM adult"); err != nil {
				t.Fatal(err)
			}
			if tt.revokeFirst {
				if _, err := e.reg.Revoke("alice"); err != nil {
					t.Fatal(err)
				}
			}
			_, tok, err := e.reg.Rotate("alice")
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range []*pgx.Conn{old1, old2} {
				_, err := c.Exec(ctx, "SELECT COUNT(*) FROM adult WHERE age > 30")
				if sqlState(err) != "28P01" || !strings.Contains(err.Error(), tt.wantFragment) {
					t.Fatalf("old session %d after the rotation: %v", i+1, err)
				}
			}
			if _, err := pgx.Connect(ctx, e.dsn("alice", e.alice)); sqlState(err) != "28P01" {
				t.Fatalf("login with the old token: %v", err)
			}
			c := connect(t, e.dsn("alice", tok))
			if _, err := c.Exec(ctx, "SELECT COUNT(*) FROM adult WHERE age > 40"); err != nil {
				t.Fatal(err)
			}
			if n := e.releases(t); n != 2 {
				t.Fatalf("%d releases, want 2 (one before the rotation, one with the new token)", n)
			}
		})
	}
}

// TestIdleUnauthenticatedConnections: sockets that never log in hold no
// session slot (before, MaxConns of them refused every login until they
// timed out), at most MaxPending of them wait (from one address, the
// next is refused), and they are dropped after StartupTimeout.
func TestIdleUnauthenticatedConnections(t *testing.T) {
	e := newEnv(t, pgwire.Options{MaxConns: 4, MaxPending: 6, StartupTimeout: time.Second})
	ctx := context.Background()
	var idle []net.Conn
	for range 5 {
		nc, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		idle = append(idle, nc)
	}
	time.Sleep(100 * time.Millisecond) // let the server accept them
	c := connect(t, e.dsn("alice", e.alice))
	if _, err := c.Exec(ctx, "SELECT COUNT(*) FROM adult"); err != nil {
		t.Fatalf("a login beside %d idle sockets: %v", len(idle), err)
	}
	// A sixth pending connection from the address fits; a seventh is
	// refused at once.
	nc6, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc6.Close()
	time.Sleep(100 * time.Millisecond)
	_, err = pgx.Connect(ctx, e.dsn("alice", e.alice))
	if sqlState(err) != "53300" || !strings.Contains(err.Error(), "have not logged in") {
		t.Fatalf("a seventh pending connection: %v", err)
	}
	// After the handshake deadline the idle sockets are closed.
	idle[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1)
	if _, err := idle[0].Read(buf); err == nil {
		t.Fatal("an idle socket got data")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("an idle socket was not closed after the startup timeout")
	}
	time.Sleep(100 * time.Millisecond)
	connect(t, e.dsn("alice", e.alice))
}

// TestLimitsSharedWithHTTP: statements over the PostgreSQL protocol count
// against the same per-analyst rate as the HTTP API (before, the port had
// no rate at all), and one analyst may hold only MaxSessionsPerAnalyst
// sessions.
func TestLimitsSharedWithHTTP(t *testing.T) {
	limits := &lateLimits{}
	e := newEnv(t, pgwire.Options{Limits: limits, MaxSessionsPerAnalyst: 2})
	api, err := server.New(server.Options{Answerer: &answertest.Answerer{Ledger: e.ledger}, Ledger: e.ledger, Analysts: e.reg, RatePerAnalyst: 0.001, Burst: 3})
	if err != nil {
		t.Fatal(err)
	}
	limits.s = api
	ctx := context.Background()
	c := connect(t, e.dsn("alice", e.alice))
	for i := range 2 {
		if _, err := c.Exec(ctx, "SHOW dpstat.epsilon"); err != nil {
			t.Fatalf("statement %d: %v", i+1, err)
		}
	}
	// The third request of the burst goes over HTTP...
	done, err := api.Admit("alice")
	if err != nil {
		t.Fatalf("HTTP request: %v", err)
	}
	done()
	// ...so the next statement is over the shared rate.
	_, err = c.Exec(ctx, "SELECT COUNT(*) FROM adult")
	if sqlState(err) != "53400" || !strings.Contains(err.Error(), "requests per second") {
		t.Fatalf("over the rate: %v", err)
	}
	if n := e.releases(t); n != 0 {
		t.Fatalf("%d releases charged over the rate", n)
	}
	// Bob has his own rate; his sessions are capped at 2.
	b1 := connect(t, e.dsn("bob", e.bob))
	connect(t, e.dsn("bob", e.bob))
	_, err = pgx.Connect(ctx, e.dsn("bob", e.bob))
	if sqlState(err) != "53300" || !strings.Contains(err.Error(), `too many sessions for analyst "bob"`) {
		t.Fatalf("third session of bob: %v", err)
	}
	b1.Close(ctx)
	time.Sleep(100 * time.Millisecond)
	connect(t, e.dsn("bob", e.bob))
}

// lateLimits forwards to a server built after the pgwire server.
type lateLimits struct{ s *server.Server }

func (l *lateLimits) Admit(name string) (func(), error) { return l.s.Admit(name) }
