package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query/enginetest"
)

// smallTable writes a table of people with up to three rows each, and a
// catalog declaring it.
func smallTable(t *testing.T) (dir, cat string) {
	t.Helper()
	dir = t.TempDir()
	var b strings.Builder
	b.WriteString("pid,g,n,flag,note\n")
	for i := 0; i < 300; i++ {
		g := "a"
		if i%3 == 0 {
			g = "b"
		}
		flag := strconv.FormatBool(i%2 == 0)
		if i%7 == 0 {
			flag = ""
		}
		fmt.Fprintf(&b, "%d,%s,%d,%s,free text %d\n", i/3, g, i%10, flag, i)
	}
	b.WriteString("999,zzz,5,true,unlisted value\n")
	if err := os.WriteFile(filepath.Join(dir, "people.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cat = filepath.Join(dir, "catalog.yaml")
	yaml := `budget: {epsilon: 10, delta: 1e-5}
tables:
  people:
    source: people.csv
    privacy_unit: pid
    max_groups_per_unit: 1
    max_rows_per_group: 2
    columns:
      pid: {type: int}
      g: {type: text, values: [a, b]}
      n: {type: int, lower: 0, upper: 9}
      flag: {type: bool, nullable: true}
      note: {type: text}
`
	if err := os.WriteFile(cat, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, cat
}

func releases(t *testing.T, led string) []ledger.Release {
	t.Helper()
	if _, err := os.Stat(led); err != nil {
		return nil
	}
	l, err := ledger.Open(led, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	h, err := l.History(ledger.Key{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestSynthCLIEndToEnd(t *testing.T) {
	dir, cat := smallTable(t)
	led := filepath.Join(dir, "l.db")
	out := filepath.Join(dir, "syn.csv")
	stdout, stderr, code := runQueryCLI("synth", "--catalog", cat, "--table", "people", "--epsilon", "2", "--rows", "120",
		"--out", out, "--ledger", led, "--analyst", "ana")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"wrote 120 rows of 3 columns", "left out: pid (the privacy unit", "left out: note (a text column without a public values: list)",
		"cost ε=2 δ=1e-06; budget of ana on people: spent ε=2 δ=1e-06, left ε=8"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 121 || strings.Join(recs[0], ",") != "g,n,flag" {
		t.Fatalf("%d records, header %v", len(recs), recs[0])
	}
	for _, r := range recs[1:] {
		n, err := strconv.Atoi(r[1])
		if (r[0] != "a" && r[0] != "b") || err != nil || n < 0 || n > 9 || (r[2] != "true" && r[2] != "false" && r[2] != "") {
			t.Fatalf("row %v outside the declared domains", r)
		}
	}
	var side map[string]any
	b, err := os.ReadFile(out + SidecarSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &side); err != nil {
		t.Fatal(err)
	}
	cost := side["cost"].(map[string]any)
	lk := side["ledger"].(map[string]any)
	if side["format"] != "dpstat-synth/1" || cost["epsilon"] != 2.0 || cost["delta"] != 1e-6 || lk["release_id"] != 1.0 || lk["analyst"] != "ana" ||
		side["rows_per_person"] != 2.0 || side["rows"] != 120.0 {
		t.Errorf("sidecar %s", b)
	}
	h := releases(t, led)
	if len(h) != 1 || h[0].Cost.Epsilon != 2 || h[0].Cost.Delta != 1e-6 || h[0].Cost.Rho <= 0 || !strings.HasPrefix(h[0].Description, "synth people") {
		t.Errorf("ledger history %+v", h)
	}
}

// TestSynthCLIAdultRows: without --rows the table's size is a DP
// estimate, the inverse-variance weighted mean of 21 noisy sums (11 1-way
// marginals of 2 to 16 cells, 10 2-way marginals of up to 256 cells, σ ≈
// 25 per cell at ε = 1): its standard deviation is about 25 rows, and 500
// rows is 20 of them (false failure below 1e-80).
func TestSynthCLIAdultRows(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "adult.csv")
	stdout, stderr, code := runQueryCLI("synth", "--catalog", exampleCatalog, "--table", "adult", "--epsilon", "1",
		"--out", out, "--ledger", filepath.Join(dir, "l.db"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rows int
	if _, err := fmt.Sscanf(stdout, "wrote %d rows of 11 columns", &rows); err != nil || math.Abs(float64(rows)-32561) > 500 {
		t.Errorf("rows %d (%v):\n%s", rows, err, stdout)
	}
	if !strings.Contains(stdout, "2-way marginals measured:") {
		t.Errorf("no tree in the output:\n%s", stdout)
	}
}

// TestSynthCLIParquet: a .parquet output has the declared columns with
// their declared types.
func TestSynthCLIParquet(t *testing.T) {
	dir, cat := smallTable(t)
	out := filepath.Join(dir, "syn.parquet")
	if _, stderr, code := runQueryCLI("synth", "--catalog", cat, "--table", "people", "--epsilon", "1", "--rows", "50",
		"--out", out, "--ledger", filepath.Join(dir, "l.db")); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	eng, err := engine.Open(context.Background(), engine.Spec{Kind: "duckdb", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	rows, err := eng.Query(context.Background(), "SELECT typeof(g), typeof(n), typeof(flag), count(*) FROM read_parquet('"+out+"') GROUP BY ALL")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows.Rows) != 1 || fmt.Sprint(rows.Rows[0]) != "[VARCHAR BIGINT BOOLEAN 50]" {
		t.Errorf("parquet columns %v", rows.Rows)
	}
	if _, err := os.Stat(out + SidecarSuffix); err != nil {
		t.Error(err)
	}
}

func TestSynthCLIRefusalsChargeNothing(t *testing.T) {
	dir, cat := smallTable(t)
	led := filepath.Join(dir, "l.db")
	out := filepath.Join(dir, "syn.csv")
	base := []string{"synth", "--catalog", cat, "--ledger", led, "--analyst", "bob"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no table", []string{"--epsilon", "1", "--out", out}, "--table is required"},
		{"unknown table", []string{"--table", "nobody", "--epsilon", "1", "--out", out}, `--table "nobody": the catalog declares no such table; it declares people`},
		{"epsilon zero", []string{"--table", "people", "--out", out}, "--epsilon 0: want a finite number > 0"},
		{"delta zero", []string{"--table", "people", "--epsilon", "1", "--delta", "0", "--out", out}, "--delta 0: want a number in (0, 1)"},
		{"extension", []string{"--table", "people", "--epsilon", "1", "--out", filepath.Join(dir, "x.txt")}, "want a file name ending in .csv or .parquet"},
		{"no out", []string{"--table", "people", "--epsilon", "1"}, "--out is required"},
		{"no directory", []string{"--table", "people", "--epsilon", "1", "--out", filepath.Join(dir, "none", "x.csv")}, "does not exist"},
		{"over budget", []string{"--table", "people", "--epsilon", "11", "--out", out}, "synthetic release refused, nothing charged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runQueryCLI(append(append([]string{}, base...), tt.args...)...)
			if code == 0 || !strings.Contains(stderr, tt.want) || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want a failure mentioning %q", code, stdout, stderr, tt.want)
			}
		})
	}
	// A dry run prints the plan and charges nothing.
	stdout, stderr, code := runQueryCLI(append(append([]string{}, base...), "--table", "people", "--epsilon", "1", "--dry-run")...)
	if code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"nothing read, nothing charged", "cost ε=1 δ=1e-06", "at most 2 rows per pid", "column n: 10 values", "column flag: 3 values (public values, NULL its own value): true, false, NULL", "discrete Gaussian σ="} {
		if !strings.Contains(stdout, want) {
			t.Errorf("dry run lacks %q:\n%s", want, stdout)
		}
	}
	if h := releases(t, led); len(h) != 0 {
		t.Errorf("refusals or a dry run were charged: %+v", h)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused release wrote %s", out)
	}
	// Spending: 6 fits the budget of 10, a second 6 does not and costs
	// nothing.
	args := append(append([]string{}, base...), "--table", "people", "--epsilon", "6", "--out", out)
	if _, stderr, code := runQueryCLI(args...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, stderr, code := runQueryCLI(args...); code == 0 || !strings.Contains(stderr, "privacy budget exceeded") {
		t.Errorf("second release: exit %d, %s", code, stderr)
	}
	if h := releases(t, led); len(h) != 1 || h[0].Cost.Epsilon != 6 {
		t.Errorf("history %+v, want one release of ε=6", h)
	}
}

// TestPostgresSynthCLI runs dpstat synth over tables that stay in a
// PostgreSQL server started for the test: the SQL that bounds each
// person's rows without QUALIFY, and the domains' CASE expressions, run
// there. At ε = 1e6 the noise is far below one row, so the DP row count
// equals the number of rows the bounding keeps.
func TestPostgresSynthCLI(t *testing.T) {
	pg, err := enginetest.StartPostgres()
	if err != nil {
		enginetest.Unavailable(t, "PostgreSQL test server: %v", err)
	}
	t.Cleanup(pg.Stop)
	ctx := context.Background()
	dir := t.TempDir()
	body := fmt.Sprintf("budget: {epsilon: 1e30, delta: 0.1}\nengine: {kind: postgres, dsn: %q}\ntables:\n", pg.ReaderDSN())
	for _, tb := range enginetest.Tables {
		if tb.Name != "people" && tb.Name != "visits" {
			continue
		}
		if err := enginetest.LoadTable(ctx, pg, tb.Name+"_t", tb); err != nil {
			t.Fatal(err)
		}
		body += fmt.Sprintf("  %s:\n    source: public.%s_t\n%s", tb.Name, tb.Name, tb.Declaration)
	}
	cat := filepath.Join(dir, "pg.yaml")
	if err := os.WriteFile(cat, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"people", "visits"} {
		t.Run(table, func(t *testing.T) {
			out := filepath.Join(dir, table+".csv")
			stdout, stderr, code := runQueryCLI("synth", "--catalog", cat, "--table", table, "--epsilon", "1e6",
				"--out", out, "--ledger", filepath.Join(dir, "l.db"))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var rows int
			if _, err := fmt.Sscanf(stdout, "wrote %d rows", &rows); err != nil || rows == 0 {
				t.Errorf("rows %d (%v):\n%s", rows, err, stdout)
			}
		})
	}
}
