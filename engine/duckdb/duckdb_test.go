package duckdb

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/engine"
)

func open(t *testing.T) *Engine {
	t.Helper()
	e, err := Open(Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func write(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var cols = []engine.Column{{Name: "a", Type: engine.Integer}, {Name: "x", Type: engine.Double}, {Name: "s", Type: engine.Text}, {Name: "b", Type: engine.Boolean}}

func TestRegisterCSVCastsAndNeverFails(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	path := write(t, "d.csv", "a,x,s,b,extra\n1,1.5,hi,true,z\nnot-a-number,nan,,maybe,z\n3,inf,o'k,false,z,too,many\n\"4,5,unterminated\n")
	if err := e.RegisterFile(ctx, "d", path, "csv", cols); err != nil {
		t.Fatal(err)
	}
	rows, err := e.Query(ctx, `SELECT count(*), count(a), count(x), count(s), count(b), sum(CASE WHEN isinf(x) THEN 1 ELSE 0 END) FROM "d"`)
	if err != nil {
		t.Fatal(err)
	}
	got := rows.Rows[0]
	// Malformed values are NULL; NaN is NULL; +Inf stays (it is clamped by
	// the query). Rows are never an error.
	if got[1].(int64) != 2 || got[2].(int64) != 2 {
		t.Errorf("counts = %v, want 2 valid ints and 2 non-NaN floats", got)
	}
	r2, err := e.Query(ctx, `SELECT "extra" FROM "d"`)
	if err == nil {
		t.Errorf("undeclared column readable: %v", r2)
	}
}

func TestRegisterMissingColumn(t *testing.T) {
	e := open(t)
	path := write(t, "d.csv", "a,x\n1,2\n")
	err := e.RegisterFile(context.Background(), "d", path, "csv", cols)
	if err == nil || !strings.Contains(err.Error(), "cannot read the source of table d") {
		t.Errorf("error = %v", err)
	}
}

func TestRegisterParquetAndSniff(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	dir := t.TempDir()
	pq := filepath.Join(dir, "d.parquet")
	if _, err := e.Query(ctx, "COPY (SELECT range AS a, range * 0.5 AS x, 'k' || range AS s, range % 2 = 0 AS b FROM range(10)) TO "+Dialect.QuoteString(pq)+" (FORMAT parquet)"); err != nil {
		t.Fatal(err)
	}
	if err := e.RegisterFile(ctx, "p", pq, "parquet", cols); err != nil {
		t.Fatal(err)
	}
	rows, err := e.Query(ctx, `SELECT sum(a), sum(x) FROM "p"`)
	if err != nil {
		t.Fatal(err)
	}
	if rows.Rows[0][1].(float64) != 22.5 {
		t.Errorf("sum(x) = %v", rows.Rows[0])
	}
	got, err := e.Sniff(ctx, pq)
	if err != nil {
		t.Fatal(err)
	}
	want := []engine.Type{engine.Integer, engine.Double, engine.Text, engine.Boolean}
	for i, c := range got {
		if c.Type != want[i] {
			t.Errorf("column %s type %v, want %v", c.Name, c.Type, want[i])
		}
	}
}

func TestDialect(t *testing.T) {
	if got := Dialect.QuoteIdent(`a"b`); got != `"a""b"` {
		t.Errorf("QuoteIdent = %s", got)
	}
	if got := Dialect.QuoteString(`it's`); got != `'it''s'` {
		t.Errorf("QuoteString = %s", got)
	}
	if got, _ := engine.Literal(Dialect, 2.0); got != "CAST(2.0 AS DOUBLE)" {
		t.Errorf("Literal(2.0) = %s", got)
	}
	if _, err := Open(Options{Threads: -1}); err == nil {
		t.Error("negative threads accepted")
	}
}
