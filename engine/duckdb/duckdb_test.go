package duckdb

import (
	"context"
	"errors"
	"fmt"
	"math"
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
	tests := []struct {
		name, header string
		cols         []engine.Column
		want         string
	}{
		{"names each missing column and lists the file's", "a,x\n1,2\n", cols,
			`table d: declared column "s" is not in d.csv; table d: declared column "b" is not in d.csv; the file's columns are "a", "x"; to read a column under another name, declare its header with from:`},
		{"suggests the header that looks alike", "Age,Hours per week\n1,2\n", []engine.Column{{Name: "hours_per_week", Type: engine.Integer}},
			`declared column "hours_per_week" is not in d.csv (did you mean "Hours per week"?)`},
		{"a from: header that is not there", "Age\n1\n", []engine.Column{{Name: "age", Source: "AGE", Type: engine.Integer}},
			`declared column "AGE" is not in d.csv (did you mean "Age"?); the file's columns are "Age"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := open(t)
			path := write(t, "d.csv", tc.header)
			err := e.RegisterFile(context.Background(), "d", path, "csv", tc.cols)
			var me *MissingColumnError
			if !errors.As(err, &me) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "Binder") {
				t.Fatalf("the engine's text reached the message: %v", err)
			}
		})
	}
}

func TestRegisterFromHeader(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	path := write(t, "d.csv", "Age,Hours per week\n30,40\n50,35\n")
	cols := []engine.Column{{Name: "age", Source: "Age", Type: engine.Integer}, {Name: "hours", Source: "Hours per week", Type: engine.Integer}}
	if err := e.RegisterFile(ctx, "d", path, "csv", cols); err != nil {
		t.Fatal(err)
	}
	rows, err := e.Query(ctx, `SELECT sum(age), sum(hours) FROM "d"`)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rows.Rows[0]) != "[80 75]" {
		t.Fatalf("sums = %v, want [80 75]", rows.Rows[0])
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

// TestRoundToGrid checks that DuckDB evaluates RoundToGrid as written: each
// value lands on the nearest multiple of 2^exp (ties to even), exactly as
// IEEE 754 arithmetic in Go computes it, and a sum of such values is exact.
func TestRoundToGrid(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	tests := []struct {
		x   float64
		exp int
	}{
		{0.1, -3}, {0.1, -23}, {-0.1, -23}, {12.34, -23}, {99.99, -23}, {100, -23},
		{0.0625, -3}, {0.1875, -3}, {-2.7, -27}, {5.3, -27}, {1e-300, -20}, {-1e-300, -20},
		{3.5, 0}, {4.5, 0}, {-3.5, 0}, {1234567.891, -10}, {60, -24},
	}
	for _, tt := range tests {
		lit, err := engine.Literal(Dialect, tt.x)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := e.Query(ctx, "SELECT "+Dialect.RoundToGrid(lit, tt.exp))
		if err != nil {
			t.Fatal(err)
		}
		got := rows.Rows[0][0].(float64)
		want := math.Ldexp(math.RoundToEven(math.Ldexp(tt.x, -tt.exp)), tt.exp)
		if got != want {
			t.Errorf("RoundToGrid(%v, %d) = %v, want %v", tt.x, tt.exp, got, want)
		}
	}
	// 100,000 values of 0.01 are not exactly summable as doubles; rounded
	// onto the grid of 2^-23 they are, and the sum is 100,000 grid values.
	rows, err := e.Query(ctx, "SELECT "+Dialect.GridSum(Dialect.RoundToGrid("CAST(0.01 AS DOUBLE)", -23))+" FROM range(100000)")
	if err != nil {
		t.Fatal(err)
	}
	want := 100000 * math.Ldexp(math.RoundToEven(math.Ldexp(0.01, 23)), -23)
	if got := rows.Rows[0][0].(float64); got != want {
		t.Errorf("grid sum = %v, want %v exactly", got, want)
	}
}

// TestHasNaN: HasNaN sees NaN only in KeepNaN columns, and reads the file
// as it is now.
func TestHasNaN(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	path := write(t, "t.csv", "a,x\n1,2.5\n2,\n3,inf\n")
	cols := []engine.Column{{Name: "a", Type: engine.Integer}, {Name: "x", Type: engine.Double, KeepNaN: true}}
	if err := e.RegisterFile(ctx, "t", path, "csv", cols); err != nil {
		t.Fatal(err)
	}
	if nan, err := e.HasNaN(ctx, "t"); err != nil || nan {
		t.Fatalf("HasNaN = %v, %v; want false", nan, err)
	}
	if err := os.WriteFile(path, []byte("a,x\n1,2.5\n2,nan\n3,inf\n4,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if nan, err := e.HasNaN(ctx, "t"); err != nil || !nan {
		t.Fatalf("after the file changed: HasNaN = %v, %v; want true", nan, err)
	}
	// The clean view of the same file reads NaN as NULL.
	if err := e.RegisterFile(ctx, "clean", path, "csv", cols[:1]); err != nil {
		t.Fatal(err)
	}
	if nan, err := e.HasNaN(ctx, "clean"); err != nil || nan {
		t.Fatalf("view without KeepNaN columns: HasNaN = %v, %v; want false", nan, err)
	}
	rows, err := e.Query(ctx, `SELECT count(*) FROM "t" WHERE isnan(x)`)
	if err != nil || rows.Rows[0][0] != int64(1) {
		t.Fatalf("KeepNaN view: %v %v, want one NaN", rows, err)
	}
}

// TestLoad: after Load, every registered view is an in-memory table that
// no longer follows its file, and HasNaN reads the copy.
func TestLoad(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	path := write(t, "t.csv", "a,x\n1,2.5\n2,nan\n")
	clean := []engine.Column{{Name: "a", Type: engine.Integer}, {Name: "x", Type: engine.Double}}
	raw := []engine.Column{{Name: "a", Type: engine.Integer}, {Name: "x", Type: engine.Double, KeepNaN: true}}
	if err := e.RegisterFile(ctx, "t", path, "csv", clean); err != nil {
		t.Fatal(err)
	}
	if err := e.RegisterFile(ctx, "t raw", path, "csv", raw); err != nil {
		t.Fatal(err)
	}
	if err := e.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("a,x\n1,2.5\n2,3\n3,4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ sql, want string }{
		{`SELECT count(*), count(x) FROM "t"`, "[[2 1]]"},
		{`SELECT count(*), count(x) FROM "t raw"`, "[[2 2]]"},
	} {
		rows, err := e.Query(ctx, tt.sql)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(rows.Rows); got != tt.want {
			t.Errorf("%s = %s, want %s (the loaded copy)", tt.sql, got, tt.want)
		}
	}
	if nan, err := e.HasNaN(ctx, "t raw"); err != nil || !nan {
		t.Errorf("HasNaN of the loaded copy = %v, %v; want true", nan, err)
	}
}

// TestSpillDirectory checks that an engine spills to a directory of its
// own by default, removed when it closes, and to the one given otherwise.
func TestSpillDirectory(t *testing.T) {
	setting := func(e *Engine) string {
		rows, err := e.Query(context.Background(), "SELECT current_setting('temp_directory')")
		if err != nil {
			t.Fatal(err)
		}
		s, _ := rows.Rows[0][0].(string)
		return s
	}
	e, err := Open(Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	dir := setting(e)
	if dir == "" || !strings.Contains(dir, "dpstat-duckdb-") {
		t.Fatalf("spill directory %q, want a new one", dir)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("spill directory %s left behind (%v)", dir, err)
	}
	own := t.TempDir()
	e, err = Open(Options{Threads: 1, SpillDir: own})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := setting(e); got != own {
		t.Errorf("spill directory %q, want %q", got, own)
	}
}
