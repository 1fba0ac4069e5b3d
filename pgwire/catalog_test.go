package pgwire_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dpstat/dpstat/pgwire"
)

// queryAll runs sql in the simple protocol and returns its rows as text.
func queryAll(t *testing.T, c *pgx.Conn, sql string, args ...any) ([]string, error) {
	t.Helper()
	rows, err := c.Query(context.Background(), sql, append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out, rows.Err()
}

// TestCatalogQueries checks the catalog queries clients send: they are
// answered from the declarations of the tables the analyst may query, and
// never from data or files.
func TestCatalogQueries(t *testing.T) {
	e := newEnv(t, pgwire.Options{})
	c := connect(t, e.dsn("alice", e.alice))
	tests := []struct {
		name, sql string
		want      []string
	}{
		{"show isolation level", "SHOW TRANSACTION ISOLATION LEVEL", []string{"read committed"}},
		{"show standard_conforming_strings", "SHOW standard_conforming_strings", []string{"on"}},
		{"version and schema", "SELECT pg_catalog.version() LIKE '%dpstat%', current_schema(), current_user", []string{"true|public|alice"}},
		{"current_setting", "SELECT current_setting('server_version_num')", []string{"150000"}},
		{"granted tables and the public ones", "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' ORDER BY 1", []string{"adult", "weekdays"}},
		{"regclass", "SELECT count(*) FROM pg_attribute WHERE attrelid = 'adult'::regclass AND attnum > 0", []string{"4"}},
		{"information_schema columns", "SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = 'adult' ORDER BY ordinal_position",
			[]string{"age|bigint|NO", "hours_per_week|bigint|NO", "sex|text|NO", "education|text|NO"}},
		{"information_schema tables", "SELECT table_schema, table_name FROM information_schema.tables", []string{"public|adult", "public|weekdays"}},
		{"declarations as descriptions", "SELECT col_description('adult'::regclass, 1), obj_description('adult'::regclass, 'pg_class')", []string{"int in [17, 90]|one row per person"}},
		{"regular expression operator", "SELECT relname FROM pg_class WHERE relname ~ '^ad' AND relnamespace = 2200", []string{"adult"}},
		{"schemas as a database browser lists them", "SELECT n.nspname, d.description FROM pg_catalog.pg_namespace n LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid AND d.objsubid=0 AND d.classoid='pg_namespace'::regclass ORDER BY nspname",
			[]string{"information_schema|<nil>", "pg_catalog|<nil>", "public|<nil>"}},
		{"settings", "SELECT setting FROM pg_catalog.pg_settings WHERE name = 'standard_conforming_strings'", []string{"on"}},
		{"users", "SELECT usename FROM pg_user", []string{"alice"}},
		{"row counts are unknown", "SELECT reltuples FROM pg_class WHERE relname = 'adult'", []string{"-1"}},
		{"no file is read", "SELECT relname, (SELECT count(*) FROM read_text('/etc/passwd')) FROM pg_class", nil},
		{"no file is read by a bare function", "SELECT length(current_setting('server_version')) FROM pg_class WHERE relname = 'adult' AND EXISTS (SELECT * FROM read_csv('/etc/passwd'))", nil},
		{"a query the catalog cannot run is empty", "SELECT indexrelid, nonexistent FROM pg_index", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := queryAll(t, c, tc.sql)
			if err != nil {
				t.Fatalf("%s: %v", tc.sql, err)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("%s:\ngot  %q\nwant %q", tc.sql, got, tc.want)
			}
		})
	}
	if n := e.releases(t); n != 0 {
		t.Fatalf("catalog queries charged %d releases", n)
	}
}

// TestCountsAreIntegers checks that counts come back as int8 and other
// noisy values as float8.
func TestCountsAreIntegers(t *testing.T) {
	e := newEnv(t, pgwire.Options{})
	c := connect(t, e.dsn("alice", e.alice))
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeDescribeExec} {
		rows, err := c.Query(context.Background(), "SELECT sex, COUNT(*) AS n, AVG(age) AS a FROM adult GROUP BY sex", mode)
		if err != nil {
			t.Fatal(err)
		}
		var oids []uint32
		for _, f := range rows.FieldDescriptions() {
			oids = append(oids, f.DataTypeOID)
		}
		for rows.Next() {
			var sex string
			var n int64
			var a float64
			if err := rows.Scan(&sex, &n, &a); err != nil {
				t.Fatalf("mode %v: %v", mode, err)
			}
		}
		rows.Close()
		if fmt.Sprint(oids) != "[25 20 701]" {
			t.Fatalf("mode %v: column types %v, want text, int8, float8", mode, oids)
		}
	}
}

// TestOddStatements sends statements at the edges of what the front end
// reads; each gets an answer or an error, and the session goes on.
func TestOddStatements(t *testing.T) {
	e := newEnv(t, pgwire.Options{})
	c := connect(t, e.dsn("alice", e.alice))
	for _, sql := range []string{
		"SELECT", "SET", "SHOW", "RESET", "SET dpstat.epsilon TO DEFAULT", "SET search_path = a, b", "SET TIME ZONE 'UTC'",
		"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "SHOW ALL", "DISCARD ALL", "DEALLOCATE ALL", "SAVEPOINT s", "RELEASE s",
		"SELECT 1 UNION SELECT 2", "VALUES (1)", "SELECT (SELECT 1)", "WITH x AS (SELECT 1) SELECT * FROM x",
		"SELECT * FROM pg_catalog.pg_class c, LATERAL (SELECT 1) l", "SELECT 'a' COLLATE \"C\"", "SELECT 1::regclass",
		"SELECT $$;$$", "SELECT E'\\\\x'", "SELECT pg_catalog.format_type(20, NULL)", "COPY adult TO STDOUT", "EXPLAIN SELECT 1",
		"SELECT nextval('s')", "LISTEN x", "PREPARE p AS SELECT 1", "EXECUTE p",
	} {
		_, _ = queryAll(t, c, sql)
		got, err := queryAll(t, c, "SELECT 1")
		if err != nil || len(got) != 1 || got[0] != "1" {
			t.Fatalf("after %q the session answers SELECT 1 with %q, %v", sql, got, err)
		}
	}
}
