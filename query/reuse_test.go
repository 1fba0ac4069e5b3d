package query

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query/reuse"
)

// reuseRow is one person of the reuse tests' table.
type reuseRow struct {
	sex, race, work string // work "" is NULL
	age, hours          int64
}

// reuseRows returns n deterministic rows.
func reuseRows(n int) []reuseRow {
	var rows []reuseRow
	x := uint64(12345)
	next := func(m uint64) uint64 {
		x = x*6364136223846793005 + 1442695040888963407
		return (x >> 33) % m
	}
	for i := 0; i < n; i++ {
		r := reuseRow{sex: []string{"F", "M"}[next(2)], race: []string{"a", "b", "c"}[next(3)],
			age: 18 + int64(next(73)), hours: 1 + int64(next(99))}
		if w := next(3); w < 2 {
			r.work = []string{"x", "y"}[w]
		}
		rows = append(rows, r)
	}
	return rows
}

// writeReuseTable writes rows as adult.csv and a catalog declaring it in
// dir; extra is added to the table's declaration.
func writeReuseTable(t testing.TB, dir string, rows []reuseRow, extra string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("id,age,hours,sex,race,work\n")
	for i, r := range rows {
		fmt.Fprintf(&b, "%d,%d,%d,%s,%s,%s\n", i, r.age, r.hours, r.sex, r.race, r.work)
	}
	if err := os.WriteFile(filepath.Join(dir, "adult.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cat := `budget: {epsilon: 1e30}
tables:
  adult:
    source: adult.csv
` + extra + `    columns:
      id:    {type: int}
      age:   {type: int, lower: 18, upper: 90}
      hours: {type: int, lower: 1, upper: 99}
      sex:   {type: text, values: [F, M]}
      race:  {type: text, values: [a, b, c]}
      work:  {type: text, nullable: true, values: [x, y]}
`
	path := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(path, []byte(cat), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// reuseService answers over the reuse table with a real ledger.
func reuseService(t testing.TB, rows []reuseRow, extra string) (*Service, *recordingEngine, *ledger.Ledger, string) {
	t.Helper()
	dir := t.TempDir()
	cat := loadCatalog(t, writeReuseTable(t, dir, rows, extra))
	eng, err := duckdb.Open(duckdb.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	led, err := ledger.Open(filepath.Join(dir, "ledger.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	rec := &recordingEngine{Engine: eng}
	svc, err := NewService(context.Background(), cat, rec, led)
	if err != nil {
		t.Fatal(err)
	}
	return svc, rec, led, dir
}

// reuseTruth computes COUNT(*), SUM(hours) over the rows keep selects.
func reuseTruth(rows []reuseRow, keep func(reuseRow) bool) (int64, float64) {
	var n int64
	var s float64
	for _, r := range rows {
		if keep(r) {
			n++
			s += float64(r.hours)
		}
	}
	return n, s
}

func accuracyOpts(analyst string, h float64) Options {
	return Options{Accuracy: &Accuracy{All: h}, Confidence: 0.95, Analyst: analyst}
}

// TestDerivedAnswersExact: at ε = 1e20 an answer derived from a finer
// release equals the true value, costs nothing and runs nothing.
func TestDerivedAnswersExact(t *testing.T) {
	rows := reuseRows(300)
	svc, rec, led, _ := reuseService(t, rows, "")
	ctx := context.Background()
	fine := "SELECT sex, race, COUNT(*) AS n, SUM(hours) AS h, AVG(hours) AS a FROM adult GROUP BY sex, race"
	if _, err := svc.Answer(ctx, fine, Options{Epsilon: 1e20, Confidence: 0.95, Analyst: "ann"}); err != nil {
		t.Fatal(err)
	}
	charged := releases(t, led)
	all := func(reuseRow) bool { return true }
	cases := []struct {
		sql  string
		keep func(row []any) func(reuseRow) bool
	}{
		{"SELECT sex, COUNT(*) AS n, SUM(hours) AS h, AVG(hours) AS a FROM adult GROUP BY sex",
			func(row []any) func(reuseRow) bool { return func(r reuseRow) bool { return r.sex == row[0] } }},
		{"SELECT COUNT(*) AS n, SUM(hours) AS h, AVG(hours) AS a FROM adult",
			func([]any) func(reuseRow) bool { return all }},
		{"SELECT race, COUNT(*) AS n, SUM(hours) AS h FROM adult WHERE sex = 'F' GROUP BY race",
			func(row []any) func(reuseRow) bool {
				return func(r reuseRow) bool { return r.sex == "F" && r.race == row[0] }
			}},
		{"SELECT COUNT(*) AS n, SUM(hours) AS h FROM adult WHERE race IN ('a', 'c')",
			func([]any) func(reuseRow) bool { return func(r reuseRow) bool { return r.race != "b" } }},
		{"SELECT race, sex, COUNT(*) AS n FROM adult GROUP BY race, sex",
			func(row []any) func(reuseRow) bool {
				return func(r reuseRow) bool { return r.race == row[0] && r.sex == row[1] }
			}},
	}
	for _, c := range cases {
		t.Run(c.sql, func(t *testing.T) {
			before := rec.calls()
			res, err := svc.Answer(ctx, c.sql, accuracyOpts("ann", 1))
			if err != nil {
				t.Fatal(err)
			}
			if res.Derived == nil || res.Cost.Epsilon != 0 || rec.calls() != before || releases(t, led) != charged {
				t.Fatalf("not derived at no cost: derived %v, cost %v, engine calls %d, releases %d", res.Derived, res.Cost, rec.calls()-before, releases(t, led)-charged)
			}
			if !strings.HasPrefix(res.Notes[0], "derived from releases 1, cost 0") {
				t.Errorf("note %q", res.Notes[0])
			}
			for _, row := range res.Rows {
				n, s := reuseTruth(rows, c.keep(row))
				for i, col := range res.Columns {
					switch col {
					case "n":
						if row[i] != n {
							t.Errorf("%v: n = %v, want %d", row, row[i], n)
						}
					case "h":
						if math.Abs(row[i].(float64)-s) > 1e-6 {
							t.Errorf("%v: h = %v, want %v", row, row[i], s)
						}
					case "a":
						if math.Abs(row[i].(float64)-s/float64(n)) > 1e-9 {
							t.Errorf("%v: a = %v, want %v", row, row[i], s/float64(n))
						}
					}
				}
			}
		})
	}
}

// TestDerivedRefused: a query whose cells are not exactly unions of
// released cells (another filter, a roll-up over a nullable column, a
// computed summand), another analyst's release by default, and --fresh
// are answered afresh and charged.
func TestDerivedRefused(t *testing.T) {
	ctx := context.Background()
	fine := "SELECT sex, race, work, COUNT(*) AS n, SUM(hours) AS h FROM adult GROUP BY sex, race, work"
	cases := []struct {
		name, extra, sql string
		opts             Options
		derived          bool
	}{
		{"roll-up over a complete list", "", "SELECT sex, work, COUNT(*) AS n FROM adult GROUP BY sex, work", accuracyOpts("ann", 1e6), true},
		{"another filter", "", "SELECT sex, COUNT(*) AS n FROM adult WHERE age > 30 GROUP BY sex", accuracyOpts("ann", 1e6), false},
		{"roll-up over a nullable column", "", "SELECT sex, COUNT(*) AS n FROM adult GROUP BY sex", accuracyOpts("ann", 1e6), false},
		{"computed summand", "", "SELECT sex, work, SUM(LEAST(hours, 50)) AS h FROM adult GROUP BY sex, work", accuracyOpts("ann", 1e6), false},
		{"another analyst, own releases only", "", "SELECT sex, work, COUNT(*) AS n FROM adult GROUP BY sex, work", accuracyOpts("bob", 1e6), false},
		{"another analyst, shared releases", "    reuse_releases: shared\n", "SELECT sex, work, COUNT(*) AS n FROM adult GROUP BY sex, work", accuracyOpts("bob", 1e6), true},
		{"fresh asked", "", "SELECT sex, work, COUNT(*) AS n FROM adult GROUP BY sex, work", Options{Accuracy: &Accuracy{All: 1e6}, Confidence: 0.95, Analyst: "ann", Fresh: true}, false},
		{"tighter than the releases", "", "SELECT sex, work, COUNT(*) AS n FROM adult GROUP BY sex, work", accuracyOpts("ann", 1), false},
		{"epsilon tighter than the releases", "", "SELECT sex, work, COUNT(*) AS n FROM adult GROUP BY sex, work", Options{Epsilon: 1, Confidence: 0.95, Analyst: "ann"}, false},
		{"epsilon looser than the releases", "", "SELECT sex, race, work, COUNT(*) AS n FROM adult GROUP BY sex, race, work", Options{Epsilon: 0.5, Confidence: 0.95, Analyst: "ann"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			svc, _, led, _ := reuseService(t, reuseRows(100), c.extra)
			if _, err := svc.Answer(ctx, fine, Options{Epsilon: 1, Confidence: 0.95, Analyst: "ann"}); err != nil {
				t.Fatal(err)
			}
			res, err := svc.Answer(ctx, c.sql, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Derived != nil; got != c.derived {
				t.Fatalf("derived = %v, want %v (notes %q)", got, c.derived, res.Notes)
			}
			if want := map[bool]int{true: 1, false: 2}[c.derived]; releases(t, led) != want {
				t.Errorf("%d releases, want %d", releases(t, led), want)
			}
		})
	}
}

// TestDerivedBoundsDiffer: the same query over a table declared with other
// bounds is another context: its releases are not reused.
func TestDerivedBoundsDiffer(t *testing.T) {
	rows := reuseRows(50)
	dir := t.TempDir()
	cat1 := loadCatalog(t, writeReuseTable(t, dir, rows, ""))
	path := filepath.Join(dir, "catalog.yaml")
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), "upper: 99", "upper: 50", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cat2 := loadCatalog(t, path)
	sql := "SELECT sex, SUM(hours) AS h FROM adult GROUP BY sex"
	shape := func(cat *catalog.Catalog) *reuse.Shape {
		p, err := Prepare(cat, duckdb.Dialect, sql, Options{Epsilon: 1, Confidence: 0.95, Analyst: "a"})
		if err != nil {
			t.Fatal(err)
		}
		s, why := reuse.ShapeOf(p.Plan, tableSource(p.Plan.Table))
		if why != "" {
			t.Fatal(why)
		}
		return s
	}
	if shape(cat1).Context == shape(cat2).Context {
		t.Fatal("tables declared with different bounds share a reuse context")
	}
}

// TestDerivedReadsNoData: a derived answer is a function of the releases
// alone: after the table loses a person (a neighbouring table), it is
// unchanged and no engine runs, while a fresh answer sees the change.
func TestDerivedReadsNoData(t *testing.T) {
	rows := reuseRows(120)
	svc, rec, _, dir := reuseService(t, rows, "")
	ctx := context.Background()
	if _, err := svc.Answer(ctx, "SELECT sex, race, COUNT(*) AS n, SUM(hours) AS h, AVG(hours) AS a FROM adult GROUP BY sex, race", Options{Epsilon: 1, Confidence: 0.95, Analyst: "ann"}); err != nil {
		t.Fatal(err)
	}
	coarse := "SELECT sex, COUNT(*) AS n, SUM(hours) AS h, AVG(hours) AS a FROM adult GROUP BY sex"
	before, err := svc.Answer(ctx, coarse, accuracyOpts("ann", 1e6))
	if err != nil {
		t.Fatal(err)
	}
	writeReuseTable(t, dir, rows[1:], "") // D minus one person
	calls := rec.calls()
	after, err := svc.Answer(ctx, coarse, accuracyOpts("ann", 1e6))
	if err != nil {
		t.Fatal(err)
	}
	if before.Derived == nil || after.Derived == nil || rec.calls() != calls {
		t.Fatalf("not derived without the engine: %v %v, %d engine calls", before.Derived, after.Derived, rec.calls()-calls)
	}
	if fmt.Sprint(before.Rows, intervals(before)) != fmt.Sprint(after.Rows, intervals(after)) {
		t.Errorf("the derived answer changed with the table:\n%v\n%v", before.Rows, after.Rows)
	}
	fresh, err := svc.Answer(ctx, "SELECT COUNT(*) AS n FROM adult", Options{Epsilon: 1e20, Confidence: 0.95, Analyst: "ann", Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Rows[0][0] != int64(len(rows)-1) {
		t.Errorf("fresh count %v after the change, want %d", fresh.Rows[0][0], len(rows)-1)
	}
}

// intervals returns a result's intervals as values.
func intervals(r *Result) [][]string {
	var out [][]string
	for _, row := range r.CI {
		var s []string
		for _, iv := range row {
			if iv != nil {
				s = append(s, fmt.Sprint(*iv))
			}
		}
		out = append(out, s)
	}
	return out
}
