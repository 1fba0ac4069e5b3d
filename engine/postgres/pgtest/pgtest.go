// Package pgtest starts isolated PostgreSQL servers for tests: a data
// directory of its own in a temporary directory, listening on loopback
// only, with a reader role that may read only what a test grants it. The
// engine conformance suite, the PostgreSQL engine's tests and the query
// package's neighbouring-table harness share it.
package pgtest

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpstat/dpstat/schema"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// BinDir is where the tests look for PostgreSQL's server programs
// (initdb, pg_ctl) unless DPSTAT_PG_BIN names another directory.
const BinDir = "/usr/lib/postgresql/15/bin"

// ReaderRole is the role the engine under test connects as: it may log in
// and read the tables the loader grants it, nothing more.
const ReaderRole = "dpstat_reader"

// Server is an isolated PostgreSQL server started for tests: its own
// data directory in a temporary directory, listening on loopback only, with
// trust authentication, stopped by Stop.
type Server struct {
	// Port is the server's TCP port on 127.0.0.1.
	Port int
	dir  string
	bin  string
	su   bool // run the server programs as the postgres user (we are root)

	mu     sync.Mutex
	loaded map[string]bool
}

// Unavailable is called when a server cannot start: in CI (CI=true) the
// test fails with the reason; elsewhere it is skipped with it.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: a server the tests need must start)", msg)
	}
	t.Skipf("%s; skipping (set CI=true to make this a failure)", msg)
}

// Start initializes and starts a PostgreSQL server in a new
// temporary directory. It returns an error saying why when the server
// programs are missing or the server does not start.
func Start() (*Server, error) {
	bin := BinDir
	if d := os.Getenv("DPSTAT_PG_BIN"); d != "" {
		bin = d
	}
	for _, prog := range []string{"initdb", "pg_ctl", "postgres"} {
		if _, err := os.Stat(filepath.Join(bin, prog)); err != nil {
			return nil, fmt.Errorf("PostgreSQL server program %s not found in %s (install postgresql-15, or set DPSTAT_PG_BIN to the directory holding initdb)", prog, bin)
		}
	}
	dir, err := os.MkdirTemp("", "dpstat-pg-")
	if err != nil {
		return nil, err
	}
	p := &Server{dir: dir, bin: bin, su: os.Geteuid() == 0, loaded: map[string]bool{}}
	if p.su {
		// initdb refuses to run as root: the server runs as postgres.
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root, the server must run as the user postgres, which does not exist: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	port, err := FreePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	p.Port = port
	data := filepath.Join(dir, "data")
	if out, err := p.run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb failed: %v: %s", err, out)
	}
	if err := p.start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.AdminDSN())
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("connecting to the test server: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE ROLE "+ReaderRole+" LOGIN"); err != nil {
		p.Stop()
		return nil, fmt.Errorf("creating the reader role: %w", err)
	}
	return p, nil
}

// run runs one of the server programs, as postgres when we are root.
func (p *Server) run(prog string, args ...string) ([]byte, error) {
	path := filepath.Join(p.bin, prog)
	if !p.su {
		return exec.Command(path, args...).CombinedOutput()
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return exec.Command("su", "postgres", "-c", path+" "+strings.Join(quoted, " ")).CombinedOutput()
}

// Stop stops the server at once and removes its directory.
func (p *Server) Stop() {
	p.Halt()
	os.RemoveAll(p.dir)
}

// Halt stops the server at once, keeping its data, as a crash would;
// Resume starts it again on the same port.
func (p *Server) Halt() error {
	if out, err := p.run("pg_ctl", "-D", filepath.Join(p.dir, "data"), "-m", "immediate", "-w", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	return nil
}

// Resume starts a halted server again on its port.
func (p *Server) Resume() error {
	return p.start()
}

func (p *Server) start() error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off", p.Port, p.dir)
	if out, err := p.run("pg_ctl", "-D", filepath.Join(p.dir, "data"), "-o", opts, "-l", filepath.Join(p.dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(p.dir, "log"))
		return fmt.Errorf("pg_ctl start failed: %v: %s %s", err, out, log)
	}
	return nil
}

// AdminDSN connects as the superuser, for loading data.
func (p *Server) AdminDSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.Port)
}

// ReaderDSN connects as ReaderRole, which may read only what it is granted.
func (p *Server) ReaderDSN() string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", ReaderRole, p.Port)
}

// Exec runs statements as the superuser.
func (p *Server) Exec(ctx context.Context, stmts ...string) error {
	conn, err := pgx.Connect(ctx, p.AdminDSN())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// FreePort asks the system for a free TCP port on loopback.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// shared is one server per test binary, started on first use.
var shared struct {
	once sync.Once
	pg   *Server
	err  error
}

// Shared returns the test binary's PostgreSQL server, starting it
// on first use; when it cannot start, the test fails in CI and is skipped
// elsewhere, with the reason. Call StopShared from TestMain after the
// tests have run.
func Shared(t testing.TB) *Server {
	t.Helper()
	shared.once.Do(func() { shared.pg, shared.err = Start() })
	if shared.err != nil {
		Unavailable(t, "PostgreSQL test server: %v", shared.err)
	}
	return shared.pg
}

// StopShared stops the shared server if one was started.
func StopShared() {
	if shared.pg != nil {
		shared.pg.Stop()
	}
}

// ParseCSV reads CSV rows with a header into typed values: int64,
// float64 (nan, inf and -inf included), string, bool, or a date or
// timestamp (time.Time, or infinity); an empty field is NULL (nil).
func ParseCSV(body []byte, cols []Column) ([][]any, error) {
	r := csv.NewReader(bytes.NewReader(body))
	recs, err := r.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 || len(recs[0]) != len(cols) {
		return nil, fmt.Errorf("want a header with the %d columns %v", len(cols), cols)
	}
	out := make([][]any, 0, len(recs)-1)
	for n, rec := range recs[1:] {
		row := make([]any, len(cols))
		for i, f := range rec {
			if f == "" {
				continue
			}
			var err error
			switch cols[i].Type {
			case schema.Int:
				row[i], err = strconv.ParseInt(f, 10, 64)
			case schema.Float:
				row[i], err = strconv.ParseFloat(f, 64)
			case schema.Bool:
				row[i], err = strconv.ParseBool(f)
			case schema.Date:
				if f == "infinity" {
					row[i] = pgtype.Date{InfinityModifier: pgtype.Infinity, Valid: true}
				} else {
					row[i], err = time.Parse("2006-01-02", f)
				}
			case schema.Timestamp:
				if f == "infinity" {
					row[i] = pgtype.Timestamp{InfinityModifier: pgtype.Infinity, Valid: true}
				} else {
					row[i], err = time.Parse("2006-01-02 15:04:05", f)
				}
			default:
				row[i] = f
			}
			if err != nil {
				return nil, fmt.Errorf("line %d, column %s: %w", n+2, cols[i].Name, err)
			}
		}
		out = append(out, row)
	}
	return out, nil
}

// Column is a column of a test table: its name and catalog type.
type Column struct {
	Name string
	Type schema.Type
}

// LoadTable creates the table public.<name> from CSV text (see ParseCSV)
// and grants SELECT on it to ReaderRole. It does nothing when the table was
// loaded before.
func (p *Server) LoadTable(ctx context.Context, name string, cols []Column, body []byte) error {
	rows, err := ParseCSV(body, cols)
	if err != nil {
		return err
	}
	return p.LoadRows(ctx, name, cols, rows)
}

// LoadRows creates the table public.<name> with the columns (int as
// bigint, float as double precision, text, bool as boolean), fills it with
// the rows (Go values as ParseCSV gives them, nil for NULL), grants SELECT
// on it to ReaderRole and analyzes it. It does nothing when the table was
// loaded before.
func (p *Server) LoadRows(ctx context.Context, name string, cols []Column, rows [][]any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.loaded[name] {
		return nil
	}
	conn, err := pgx.Connect(ctx, p.AdminDSN())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	defs := make([]string, len(cols))
	names := make([]string, len(cols))
	for i, c := range cols {
		defs[i] = pgx.Identifier{c.Name}.Sanitize() + " " + map[schema.Type]string{
			schema.Int: "bigint", schema.Float: "double precision", schema.Text: "text", schema.Bool: "boolean",
			schema.Date: "date", schema.Timestamp: "timestamp"}[c.Type]
		names[i] = c.Name
	}
	ident := pgx.Identifier{"public", name}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE TABLE "+ident+" ("+strings.Join(defs, ", ")+")"); err != nil {
		return err
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"public", name}, names, pgx.CopyFromRows(rows)); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "GRANT SELECT ON "+ident+" TO "+ReaderRole); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "ANALYZE "+ident); err != nil {
		return err
	}
	p.loaded[name] = true
	return nil
}
