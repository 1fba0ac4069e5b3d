package enginetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/dpstat/dpstat/engine/postgres/pgtest"
)

// The suite's PostgreSQL server is package pgtest's; these names keep the
// suite's API in one place for engine tests.

// Postgres is an isolated PostgreSQL server started for tests.
type Postgres = pgtest.Server

// ReaderRole is the role the engine under test connects as.
const ReaderRole = pgtest.ReaderRole

// Unavailable is called when a server cannot start: in CI (CI=true) the
// test fails with the reason; elsewhere it is skipped with it.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	pgtest.Unavailable(t, format, args...)
}

// StartPostgres starts a PostgreSQL server of its own for a test.
func StartPostgres() (*Postgres, error) { return pgtest.Start() }

// SharedPostgres returns the test binary's PostgreSQL server, starting it
// on first use (see pgtest.Shared).
func SharedPostgres(t testing.TB) *Postgres {
	t.Helper()
	return pgtest.Shared(t)
}

// StopShared stops the shared servers that were started.
func StopShared() {
	pgtest.StopShared()
	if sharedCH.ch != nil {
		sharedCH.ch.Stop()
	}
}

// freePort asks the system for a free TCP port on loopback.
func freePort() (int, error) { return pgtest.FreePort() }

// ParseCSV reads CSV rows with a header into typed values (see
// pgtest.ParseCSV).
func ParseCSV(body []byte, cols []Column) ([][]any, error) {
	return pgtest.ParseCSV(body, pgColumns(cols))
}

// PostgresBackend is the suite's backend for the server p: each table is created
// as public.dp_<name> (so that the catalog's name and the server's differ),
// filled from its CSV file, and granted to ReaderRole alone; the engine
// connects as ReaderRole.
func PostgresBackend(p *Postgres) Backend {
	return Backend{
		Name:   "postgres",
		Engine: fmt.Sprintf("{kind: postgres, dsn: %q, statement_timeout: 60s, max_connections: 4}", p.ReaderDSN()),
		Load: func(t testing.TB, tables []Table) map[string]string {
			t.Helper()
			out := map[string]string{}
			for _, tb := range tables {
				if err := LoadTable(context.Background(), p, "dp_"+tb.Name, tb); err != nil {
					t.Fatalf("loading %s into PostgreSQL: %v", tb.Name, err)
				}
				out[tb.Name] = "public.dp_" + tb.Name
			}
			return out
		},
	}
}

// LoadTable loads a fixture table into the server p as public.<name>
// (its Rows when set, else its CSV text).
func LoadTable(ctx context.Context, p *Postgres, name string, tb Table) error {
	if tb.Rows != nil {
		return p.LoadRows(ctx, name, pgColumns(tb.Columns), tb.Rows)
	}
	body, err := tb.CSV()
	if err != nil {
		return err
	}
	if err := p.LoadTable(ctx, name, pgColumns(tb.Columns), body); err != nil {
		return fmt.Errorf("%s: %w", tb.File, err)
	}
	return nil
}
