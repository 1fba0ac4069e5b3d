package query

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/internal/stattest"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/query/sqlgen"
)

// sumsCatalog writes a table with NULLs, NaN, infinities, values outside
// the declared bounds and bounds that are not on any power-of-two grid
// (x in [−2.7, 5.3], y in [−5, 7]), one row per person (flat) and with a
// privacy unit whose limits keep every row (so both forms see the same
// rows and must agree exactly).
func sumsCatalog(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 11))
	for _, file := range []string{"sums.csv", "finite.csv"} {
		var b strings.Builder
		b.WriteString("pid,g,x,y\n")
		for i := 0; i < 3000; i++ {
			x := fmt.Sprintf("%.3f", rng.Float64()*12-4)
			switch rng.IntN(20) {
			case 0:
				x = ""
			case 1, 2, 3:
				if file == "sums.csv" {
					x = []string{"nan", "inf", "-inf"}[rng.IntN(3)]
				}
			case 4:
				x = "0.1"
			}
			y := fmt.Sprint(rng.IntN(20) - 8)
			if rng.IntN(10) == 0 {
				y = ""
			}
			fmt.Fprintf(&b, "%d,%s,%s,%s\n", i/4, []string{"a", "b", "c"}[rng.IntN(3)], x, y)
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat := `budget: {epsilon: 1e30, delta: 1e-6}
tables:
  flat:
    source: sums.csv
    columns: &cols
      pid: {type: int}
      g:   {type: text, values: [a, b, c]}
      x:   {type: float, lower: -2.7, upper: 5.3, nullable: true}
      y:   {type: int, lower: -5, upper: 7, nullable: true}
  units:
    source: sums.csv
    privacy_unit: pid
    max_groups_per_unit: 3
    max_rows_per_group: 4
    columns: *cols
  finite:
    source: finite.csv
    columns: *cols
  finite_units:
    source: finite.csv
    privacy_unit: pid
    max_groups_per_unit: 3
    max_rows_per_group: 4
    columns: *cols
`
	path := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(path, []byte(cat), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// formSQL is p's statement in form f.
func formSQL(t testing.TB, p *Prepared, f dpplan.Form) string {
	t.Helper()
	text, err := p.FormSQL(f)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// sumsEngine opens DuckDB with sumsCatalog's tables registered.
func sumsEngine(t *testing.T) (*catalog.Catalog, *duckdb.Engine) {
	t.Helper()
	cat := loadCatalog(t, sumsCatalog(t))
	eng, err := duckdb.Open(duckdb.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	if err := Register(context.Background(), cat, eng); err != nil {
		t.Fatal(err)
	}
	return cat, eng
}

// TestFormsAgree runs every form of the same plans (double sums on the
// grid with NULLs corrected afterwards, over NaNs kept or read as NULL;
// integer sums) and requires identical exact statistics wherever the
// service would run them (FastForm only on tables without NaN).
func TestFormsAgree(t *testing.T) {
	cat, eng := sumsEngine(t)
	ctx := context.Background()
	tests := []struct {
		sql   string
		first dpplan.Form
	}{
		{"SELECT SUM(x) FROM flat", dpplan.FastForm},
		{"SELECT SUM(y), AVG(y) FROM flat", dpplan.CleanForm},
		{"SELECT g, COUNT(*), SUM(x), AVG(x), SUM(y) FROM flat GROUP BY g", dpplan.FastForm},
		{"SELECT g, VAR_POP(x), STDDEV(y) FROM flat GROUP BY g", dpplan.FastForm},
		{"SELECT COUNT(x) FROM flat", dpplan.FastForm},
		{"SELECT SUM(x) FROM flat WHERE y > 0", dpplan.FastForm},
		{"SELECT SUM(y) FROM flat WHERE x > 0", dpplan.CleanForm},
		{"SELECT g, SUM(x), AVG(y) FROM units GROUP BY g", dpplan.FastForm},
		{"SELECT SUM(x), VAR_SAMP(x) FROM units", dpplan.FastForm},
		{"SELECT y, COUNT(*), SUM(x) FROM flat GROUP BY y", dpplan.FastForm},
		{"SELECT g, COUNT(*), SUM(x), AVG(x), SUM(y) FROM finite GROUP BY g", dpplan.FastForm},
		{"SELECT SUM(x), VAR_SAMP(x), AVG(y) FROM finite_units", dpplan.FastForm},
		{"SELECT g, AVG(x) FROM finite_units WHERE y IS NULL OR y < 3 GROUP BY g", dpplan.FastForm},
		{"SELECT width_bucket(y, -5, 7, 3) AS b, SUM(x) FROM finite GROUP BY b", dpplan.CleanForm},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			p, err := Prepare(cat, duckdb.Dialect, tt.sql, Options{Epsilon: 1, Delta: 1e-6, Confidence: 0.95, Analyst: "a"})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Plan.FirstForm(); got != tt.first {
				t.Errorf("first form %v, want %v", got, tt.first)
			}
			if p.SQL != formSQL(t, p, tt.first) {
				t.Errorf("SQL is not the first form's statement")
			}
			read := func(f dpplan.Form) (*dpplan.Exact, error) {
				rows, err := eng.Query(ctx, formSQL(t, p, f))
				if err != nil {
					t.Fatal(err)
				}
				return p.Plan.ReadExactForm(rows, f)
			}
			want, err := read(dpplan.IntegerForm)
			if err != nil {
				t.Fatal(err)
			}
			finite := strings.HasPrefix(p.Plan.Table.Name, "finite")
			if nan, err := eng.HasNaN(ctx, sqlgen.RawView(p.Plan.Table.Name)); err != nil || nan == finite {
				t.Errorf("NaN check of %s: NaN %v (%v), want %v", p.Plan.Table.Name, nan, err, !finite)
			}
			for f := tt.first; f < dpplan.IntegerForm; f++ {
				if f == dpplan.FastForm && !finite {
					continue // the service does not run it on this table
				}
				got, err := read(f)
				if err != nil {
					t.Fatalf("%v form: %v", f, err)
				}
				// Key selection lists the keys in the engine's order.
				if a, b := byKey(got), byKey(want); a != b {
					t.Errorf("%v form: statistics by group\n%s\ninteger form\n%s", f, a, b)
				}
			}
		})
	}
}

// byKey renders exact statistics sorted by group.
func byKey(ex *dpplan.Exact) string {
	lines := make([]string, len(ex.Stats))
	for g, st := range ex.Stats {
		key := ""
		if ex.Keys != nil {
			key = fmt.Sprint(ex.Keys[g])
		} else {
			key = fmt.Sprint(g)
		}
		lines[g] = key + ": " + fmt.Sprint(st)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestLargeGroupsUseIntegerForm lowers the bound up to which double sums
// are exact, so that every group is "too large": the service must then
// answer from the integer form, exactly, and go straight to it for the next
// query on the table.
func TestLargeGroupsUseIntegerForm(t *testing.T) {
	saved := dpplan.ExactDoubleSum
	defer func() { dpplan.ExactDoubleSum = saved }()
	dpplan.ExactDoubleSum = big.NewInt(1 << 13)

	svc, rec, led := newTestService(t, "testdata/catalog.yaml")
	res, err := svc.Answer(context.Background(), "SELECT SUM(score), AVG(age) FROM people", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	if got := formatRows(res.Rows); got != "7.25 47.5" {
		t.Errorf("answer %s, want 7.25 47.5", got)
	}
	if rec.calls() != 2 || !strings.Contains(rec.queries[1], "AS INTEGER") {
		t.Fatalf("engine statements %d, want the fast form then the integer form: %q", rec.calls(), rec.queries)
	}
	if _, err := svc.Answer(context.Background(), "SELECT SUM(score) FROM people", exactOpts()); err != nil {
		t.Fatal(err)
	}
	if rec.calls() != 3 || !strings.Contains(rec.queries[2], "AS INTEGER") {
		t.Errorf("the next query on the table should go straight to the integer form: %q", rec.queries)
	}
	if led.count() != 2 {
		t.Errorf("%d charges, want 2", led.count())
	}
}

// TestNaNFreeDeclaration: the form comes from the owner's declaration
// alone. Without nan_free, every table is answered by the clean form (NaN
// is missing, ±Inf clamped), even when it holds no NaN; with
// it, by the fast form, even when the table holds NaN, which is then
// clamped (DuckDB orders NaN above every number: to the upper bound) and
// counted as a value, without an error.
func TestNaNFreeDeclaration(t *testing.T) {
	ctx := context.Background()
	svc, rec, _ := newTestService(t, "testdata/catalog.yaml")
	if nan, err := rec.Engine.HasNaN(ctx, sqlgen.RawView("people")); err != nil || nan {
		t.Fatalf("people holds NaN %v (%v); want none", nan, err)
	}
	// special.csv: scores NaN, +Inf (→ 10), −Inf (→ 0), 5, NaN, NULL.
	res, err := svc.Answer(ctx, "SELECT COUNT(score), SUM(score) FROM special", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	if got := formatRows(res.Rows); got != "3 15" {
		t.Errorf("answer %s, want 3 15", got)
	}
	if _, err := svc.Answer(ctx, "SELECT SUM(score) FROM people", exactOpts()); err != nil {
		t.Fatal(err)
	}
	if rec.calls() != 2 || strings.Contains(rec.queries[0], "$raw") || strings.Contains(rec.queries[1], "$raw") {
		t.Fatalf("without the declaration, want the clean form only: %q", rec.queries)
	}

	declared, rec2, _ := newTestService(t, "testdata/nanfree.yaml")
	res, err = declared.Answer(ctx, "SELECT SUM(score) FROM people", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	if got := formatRows(res.Rows); got != "7.25" {
		t.Errorf("answer %s, want 7.25", got)
	}
	// A NaN in a declared table: clamped to the upper bound, counted.
	res, err = declared.Answer(ctx, "SELECT COUNT(score), SUM(score) FROM special", exactOpts())
	if err != nil {
		t.Fatalf("a NaN in a table declared nan_free: %v", err)
	}
	if got := formatRows(res.Rows); got != "5 35" {
		t.Errorf("answer %s, want 5 35 (NaN counted at the upper bound)", got)
	}
	if rec2.calls() != 2 || !strings.Contains(rec2.queries[0], `"people$raw"`) || !strings.Contains(rec2.queries[1], `"special$raw"`) {
		t.Errorf("with the declaration, want the fast form over the raw views: %q", rec2.queries)
	}
}

// windowDialect is DuckDB's dialect without engine.Sampler: the generator
// then bounds contributions with row_number() windows, the path for
// engines that have no such aggregates.
type windowDialect struct{ engine.Dialect }

// TestWindowBoundingAgrees runs the window form of the bounding stages on
// tables whose limits keep every row, and requires the statistics of the
// aggregate form.
func TestWindowBoundingAgrees(t *testing.T) {
	cat, eng := sumsEngine(t)
	ctx := context.Background()
	for _, sql := range []string{
		"SELECT g, COUNT(*), SUM(x), AVG(x), SUM(y) FROM finite_units GROUP BY g",
		"SELECT SUM(x), VAR_SAMP(x), COUNT(y) FROM finite_units",
		"SELECT g, COUNT(DISTINCT pid) FROM finite_units GROUP BY g",
		"SELECT g, MEDIAN(x), COUNT(*) FROM finite_units GROUP BY g",
		"SELECT percentile_cont(0.9) WITHIN GROUP (ORDER BY y) FROM finite_units",
	} {
		t.Run(sql, func(t *testing.T) {
			var got [2]*dpplan.Exact
			for i, d := range []engine.Dialect{duckdb.Dialect, windowDialect{duckdb.Dialect}} {
				p, err := Prepare(cat, d, sql, Options{Epsilon: 1, Confidence: 0.95, Analyst: "a"})
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(p.SQL, "row_number()") != (i == 1) && strings.Contains(p.SQL, "min_by") != (i == 0) {
					t.Fatalf("dialect %d: unexpected bounding stages in %s", i, p.SQL)
				}
				rows := &engine.Rows{Columns: make([]string, len(p.Plan.Query.GroupBy)+len(p.Plan.Statistics))}
				if p.SQL != "" {
					if rows, err = eng.Query(ctx, formSQL(t, p, dpplan.CleanForm)); err != nil {
						t.Fatal(err)
					}
				}
				if got[i], err = p.Plan.ReadExactForm(rows, dpplan.CleanForm); err != nil {
					t.Fatal(err)
				}
				for h, hs := range p.HistogramSQL {
					rows, err := eng.Query(ctx, hs)
					if err != nil {
						t.Fatal(err)
					}
					if err := p.Plan.ReadHistogram(got[i], h, rows); err != nil {
						t.Fatal(err)
					}
				}
			}
			if fmt.Sprint(got[0].Stats, got[0].Hist) != fmt.Sprint(got[1].Stats, got[1].Hist) {
				t.Errorf("aggregate bounding %v %v, window bounding %v %v", got[0].Stats, got[0].Hist, got[1].Stats, got[1].Hist)
			}
		})
	}
}

// TestSampledBoundingIsUniform: one person with values 1, 2, 3, 4 in each
// of groups a, b, c, bounded to L0 = 1 group and L∞ = 1 value, must keep
// each group and each value with probability 1/3 and 1/4 (the aggregate
// form chooses with random keys, not by position). With ε = 1e20 the
// released sum is the kept value; 600 queries, false-failure probability
// 1e-6 for each chi-square test.
func TestSampledBoundingIsUniform(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("pid,g,v\n")
	for _, g := range []string{"a", "b", "c"} {
		for v := 1; v <= 4; v++ {
			fmt.Fprintf(&b, "1,%s,%d\n", g, v)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "one.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cat := `budget: {epsilon: 1e30}
tables:
  one:
    source: one.csv
    privacy_unit: pid
    max_groups_per_unit: 1
    max_rows_per_group: 1
    columns:
      pid: {type: int}
      g:   {type: text, values: [a, b, c]}
      v:   {type: int, lower: 0, upper: 10}
`
	if err := os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(cat), 0o644); err != nil {
		t.Fatal(err)
	}
	svc, _, _ := newTestService(t, filepath.Join(dir, "catalog.yaml"))
	const n = 600
	groups, values := make([]int, 3), make([]int, 4)
	for i := 0; i < n; i++ {
		res, err := svc.Answer(context.Background(), "SELECT g, SUM(v) FROM one GROUP BY g", exactOpts())
		if err != nil {
			t.Fatal(err)
		}
		kept := 0
		for g, row := range res.Rows {
			s, _ := ir.Number(row[1])
			if s := int(math.Round(s)); s != 0 {
				kept++
				groups[g]++
				values[s-1]++
			}
		}
		if kept != 1 {
			t.Fatalf("answer %v keeps %d groups, want 1", res.Rows, kept)
		}
	}
	// A median's histogram keeps the same: one value of one group.
	p, err := svc.Prepare("SELECT g, MEDIAN(v) FROM one GROUP BY g", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		rows, err := svc.eng.Query(context.Background(), p.HistogramSQL[0])
		if err != nil {
			t.Fatal(err)
		}
		if len(rows.Rows) != 1 || fmt.Sprint(rows.Rows[0][2]) != "1" {
			t.Fatalf("histogram rows %v, want one bin counted once", rows.Rows)
		}
	}
	stattest.ChiSquare(t, "kept group", groups, []float64{1. / 3, 1. / 3, 1. / 3}, n, 1e-6)
	stattest.ChiSquare(t, "kept value", values, []float64{.25, .25, .25, .25}, n, 1e-6)
}
