package duckdb

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/engine"
)

// TestRegisterDates checks that date and timestamp columns read as days
// and microseconds since 1970, from CSV text and typed Parquet columns,
// with malformed values and infinities as NULL.
func TestRegisterDates(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	dcols := []engine.Column{{Name: "d", Type: engine.Date}, {Name: "ts", Type: engine.Timestamp}}
	path := write(t, "d.csv", "d,ts\n1970-01-02,1970-01-01 00:00:01.5\n1969-12-31,1969-12-31 23:59:59\ninfinity,-infinity\n2024-02-30,noon\n,\n")
	if err := e.RegisterFile(ctx, "d", path, "csv", dcols); err != nil {
		t.Fatal(err)
	}
	pq := filepath.Join(t.TempDir(), "d.parquet")
	if _, err := e.Query(ctx, "COPY (SELECT DATE '1970-01-02' AS d, TIMESTAMP '1970-01-01 00:00:01.5' AS ts UNION ALL SELECT CAST('infinity' AS DATE), CAST('-infinity' AS TIMESTAMP)) TO "+Dialect.QuoteString(pq)+" (FORMAT parquet)"); err != nil {
		t.Fatal(err)
	}
	if err := e.RegisterFile(ctx, "p", pq, "parquet", dcols); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ sql, want string }{
		{`SELECT list(d ORDER BY d NULLS LAST), list(ts ORDER BY ts NULLS LAST), typeof(any_value(d)), typeof(any_value(ts)) FROM "d"`, "[-1 1 <nil> <nil> <nil>] [-1000000 1500000 <nil> <nil> <nil>] BIGINT BIGINT"},
		{`SELECT list(d ORDER BY d NULLS LAST), list(ts ORDER BY ts NULLS LAST), typeof(any_value(d)), typeof(any_value(ts)) FROM "p"`, "[1 <nil>] [1500000 <nil>] BIGINT BIGINT"},
	} {
		rows, err := e.Query(ctx, tc.sql)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(fmt.Sprintln(rows.Rows[0]...)); got != tc.want {
			t.Errorf("%s\n got %s\nwant %s", tc.sql, got, tc.want)
		}
	}
}
