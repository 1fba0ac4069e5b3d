package query

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/query/reuse"
	"github.com/dpstat/dpstat/query/sqlgen"
	"github.com/dpstat/dpstat/random"
)

// reuseRow is one person of the reuse tests' table.
type reuseRow struct {
	sex, race, work string // race and work "" are NULL
	age, hours      int64
	// day is the row's date, in days from 2024-01-01 (declared bounds
	// 2024-01-01 to 2024-06-30: days 0 to 181).
	day int
}

// date is the row's day as a date.
func (r reuseRow) date() time.Time {
	return time.Date(2024, 1, 1+r.day, 0, 0, 0, 0, time.UTC)
}

// listed says whether r's sex and race are in their declared lists.
func (r reuseRow) listed() bool {
	return (r.sex == "F" || r.sex == "M") && (r.race == "a" || r.race == "b" || r.race == "c")
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
		// Days spread over the declared half year, a few outside it.
		r.day = (i * 37) % 182
		switch {
		case i%29 == 5:
			r.day = -10
		case i%31 == 7:
			r.day = 190
		}
		// Some rows hold NULL or a value outside a declared list: no
		// GROUP BY releases them, and every total counts them.
		switch next(16) {
		case 0:
			r.race = "" // NULL
		case 1:
			r.race = "z"
		case 2:
			r.sex = "X"
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
	b.WriteString("id,age,hours,sex,race,work,day\n")
	for i, r := range rows {
		fmt.Fprintf(&b, "%d,%d,%d,%s,%s,%s,%s\n", i, r.age, r.hours, r.sex, r.race, r.work, r.date().Format(time.DateOnly))
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
      day:   {type: date, lower: 2024-01-01, upper: 2024-06-30}
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
		{"SELECT sex, COUNT(*) AS n, SUM(hours) AS h, AVG(hours) AS a FROM adult WHERE race IN ('a', 'b', 'c') GROUP BY sex",
			func(row []any) func(reuseRow) bool {
				return func(r reuseRow) bool { return r.sex == row[0] && (r.race == "a" || r.race == "b" || r.race == "c") }
			}},
		{"SELECT COUNT(*) AS n, SUM(hours) AS h, AVG(hours) AS a FROM adult WHERE sex IN ('F', 'M') AND race IN ('a', 'b', 'c')",
			func([]any) func(reuseRow) bool { return reuseRow.listed }},
		// Roll-ups: the release measured the rows outside the lists too
		// (in cells it did not show), so the rows with NULL or an
		// unlisted race or sex count.
		{"SELECT sex, COUNT(*) AS n, SUM(hours) AS h, AVG(hours) AS a FROM adult GROUP BY sex",
			func(row []any) func(reuseRow) bool { return func(r reuseRow) bool { return r.sex == row[0] } }},
		{"SELECT COUNT(*) AS n, SUM(hours) AS h, AVG(hours) AS a FROM adult",
			func([]any) func(reuseRow) bool { return all }},
		{"SELECT race, COUNT(*) AS n, SUM(hours) AS h FROM adult WHERE sex = 'F' GROUP BY race",
			func(row []any) func(reuseRow) bool {
				return func(r reuseRow) bool { return r.sex == "F" && r.race == row[0] }
			}},
		{"SELECT COUNT(*) AS n, SUM(hours) AS h FROM adult WHERE race IN ('a', 'c') AND sex = 'M'",
			func([]any) func(reuseRow) bool {
				return func(r reuseRow) bool { return (r.race == "a" || r.race == "c") && r.sex == "M" }
			}},
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
			ex, err := svc.Answer(ctx, "EXPLAIN "+c.sql, accuracyOpts("ann", 1))
			if err != nil || !strings.Contains(strings.Join(ex.Notes, "\n"), "derives its answer from releases 1 at no cost") {
				t.Errorf("EXPLAIN notes %q, %v", ex.Notes, err)
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
						if row[i].(float64) != s {
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
// released cells (another filter, a computed summand), another analyst's release by default, --fresh, and a
// derived interval wider than asked are not answered for free.
func TestDerivedRefused(t *testing.T) {
	ctx := context.Background()
	fine := "SELECT sex, race, work, COUNT(*) AS n, SUM(hours) AS h FROM adult GROUP BY sex, race, work"
	cases := []struct {
		name, extra, sql string
		opts             Options
		derived          bool
	}{
		{"over the whole value list", "", "SELECT sex, work, COUNT(*) AS n FROM adult WHERE race IN ('a', 'b', 'c') GROUP BY sex, work", accuracyOpts("ann", 1e6), true},
		// A row may hold NULL or a value outside a declared list, whatever
		// the declaration says of NULL: the release measured those rows
		// too, in cells it did not show, so the roll-up is their sum.
		{"roll-up over a value list", "", "SELECT sex, work, COUNT(*) AS n FROM adult GROUP BY sex, work", accuracyOpts("ann", 1e6), true},
		{"another filter", "", "SELECT sex, COUNT(*) AS n FROM adult WHERE age > 30 GROUP BY sex", accuracyOpts("ann", 1e6), false},
		{"roll-up over a nullable column", "", "SELECT sex, COUNT(*) AS n FROM adult GROUP BY sex", accuracyOpts("ann", 1e6), true},
		{"computed summand", "", "SELECT sex, work, SUM(LEAST(hours, 50)) AS h FROM adult GROUP BY sex, work", accuracyOpts("ann", 1e6), false},
		{"another analyst, own releases only", "", "SELECT sex, work, COUNT(*) AS n FROM adult WHERE race IN ('a', 'b', 'c') GROUP BY sex, work", accuracyOpts("bob", 1e6), false},
		{"another analyst, shared releases", "    reuse_releases: shared\n", "SELECT sex, work, COUNT(*) AS n FROM adult WHERE race IN ('a', 'b', 'c') GROUP BY sex, work", accuracyOpts("bob", 1e6), true},
		{"fresh asked", "", "SELECT sex, work, COUNT(*) AS n FROM adult WHERE race IN ('a', 'b', 'c') GROUP BY sex, work", Options{Accuracy: &Accuracy{All: 1e6}, Confidence: 0.95, Analyst: "ann", Fresh: true}, false},
		{"tighter than the releases", "", "SELECT sex, work, COUNT(*) AS n FROM adult WHERE race IN ('a', 'b', 'c') GROUP BY sex, work", accuracyOpts("ann", 1), false},
		{"epsilon tighter than the releases", "", "SELECT sex, work, COUNT(*) AS n FROM adult WHERE race IN ('a', 'b', 'c') GROUP BY sex, work", Options{Epsilon: 1, Confidence: 0.95, Analyst: "ann"}, false},
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
			if got := res.Derived != nil && res.Cost.Epsilon == 0; got != c.derived {
				t.Fatalf("derived at no cost = %v, want %v (notes %q)", got, c.derived, res.Notes)
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
		s, why := reuse.ShapeOf(p.Plan, cat.Table("adult"), tableSource(p.decl))
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
	// An overlapping release, reconciled with the first by least squares.
	if _, err := svc.Answer(ctx, "SELECT COUNT(*) AS n, SUM(hours) AS h, AVG(hours) AS a FROM adult WHERE sex IN ('F', 'M') AND race IN ('a', 'b', 'c')", Options{Epsilon: 1, Confidence: 0.95, Analyst: "ann"}); err != nil {
		t.Fatal(err)
	}
	coarse := "SELECT sex, COUNT(*) AS n, SUM(hours) AS h, AVG(hours) AS a FROM adult WHERE race IN ('a', 'b', 'c') GROUP BY sex"
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
	if len(before.Derived.Releases) != 2 {
		t.Errorf("derived from releases %v, want both", before.Derived.Releases)
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

// TestDerivedVarianceAndCoverage re-noises released measurements many
// times (fixed seed) and derives coarser answers from them: the empirical
// variance of derived COUNT and SUM matches the propagated one, and the
// 95% intervals of every derived shape cover the true value at ≥ 0.93.
// The variance check allows six standard errors of the sample variance
// (about sqrt((2 + κ)/runs) relatively, κ ≤ 3 the noises' excess
// kurtosis); the coverage check, with 1500 runs of intervals that cover at
// ≥ 0.95, fails with probability below 1e-4 (binomial tail). With the
// fixed seed the test is deterministic.
func TestDerivedVarianceAndCoverage(t *testing.T) {
	rows := reuseRows(400)
	svc, _, _, _ := reuseService(t, rows, "")
	ctx := context.Background()
	src := random.NewInsecureSeeded(25)
	release := func(sql string, eps float64, id uint64) (*Prepared, *dpplan.Exact, *reuse.Shape) {
		p, err := svc.Prepare(sql, Options{Epsilon: eps, Confidence: 0.95, Analyst: "ann", Source: src})
		if err != nil {
			t.Fatal(err)
		}
		ex, err := svc.exact(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		s, why := reuse.ShapeOf(p.Plan, svc.declared(p), tableSource(p.decl))
		if why != "" {
			t.Fatal(why)
		}
		return p, ex, s
	}
	fineP, fineEx, fineS := release("SELECT sex, race, COUNT(*) AS n, SUM(hours) AS h, AVG(hours) AS a FROM adult GROUP BY sex, race", 0.5, 1)
	sexP, sexEx, sexS := release("SELECT sex, COUNT(*) AS n, SUM(hours) AS h, AVG(hours) AS a FROM adult WHERE race IN ('a', 'b', 'c') GROUP BY sex", 0.3, 2)
	shapes := []struct {
		name, sql string
		two       bool // also derive from the second release
		keep      func(row []any) func(reuseRow) bool
	}{
		{"roll-up", "SELECT sex, COUNT(*) AS n, SUM(hours) AS h, AVG(hours) AS a FROM adult WHERE race IN ('a', 'b', 'c') GROUP BY sex", false,
			func(row []any) func(reuseRow) bool {
				return func(r reuseRow) bool { return r.sex == row[0] && r.listed() }
			}},
		{"total", "SELECT COUNT(*) AS n, SUM(hours) AS h, AVG(hours) AS a FROM adult WHERE sex IN ('F', 'M') AND race IN ('a', 'b', 'c')", false,
			func([]any) func(reuseRow) bool { return reuseRow.listed }},
		{"subset of keys", "SELECT sex, COUNT(*) AS n, SUM(hours) AS h FROM adult WHERE race IN ('a', 'b') GROUP BY sex", false,
			func(row []any) func(reuseRow) bool {
				return func(r reuseRow) bool { return r.sex == row[0] && (r.race == "a" || r.race == "b") }
			}},
		{"one cell", "SELECT COUNT(*) AS n, SUM(hours) AS h FROM adult WHERE sex = 'F' AND race = 'b'", false,
			func([]any) func(reuseRow) bool { return func(r reuseRow) bool { return r.sex == "F" && r.race == "b" } }},
		{"two releases combined", "SELECT sex, COUNT(*) AS n, SUM(hours) AS h, AVG(hours) AS a FROM adult WHERE race IN ('a', 'b', 'c') GROUP BY sex", true,
			func(row []any) func(reuseRow) bool {
				return func(r reuseRow) bool { return r.sex == row[0] && r.listed() }
			}},
		{"topped up", "SELECT race, COUNT(*) AS n, SUM(hours) AS h, AVG(hours) AS a FROM adult WHERE sex IN ('F', 'M') GROUP BY race", false,
			func(row []any) func(reuseRow) bool {
				return func(r reuseRow) bool { return r.race == row[0] && r.listed() }
			}},
	}
	const runs = 1500
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			// A tiny ε for the asking query: any derived interval is
			// tighter than its fresh one.
			p, err := svc.Prepare(sh.sql, Options{Epsilon: 1e-3, Confidence: 0.95, Analyst: "ann"})
			if err != nil {
				t.Fatal(err)
			}
			s, _ := reuse.ShapeOf(p.Plan, svc.declared(p), tableSource(p.decl))
			req := reuse.Request{Plan: p.Plan, Noise: p.Noise, Shape: s, Confidence: 0.95, Analyst: "ann"}
			// A fresh measurement of the asking query at ε = 0.2, which
			// "topped up" combines with the release.
			topP, topEx, _ := release(sh.sql, 0.2, 3)
			type acc struct{ sum, sq, pvar, n, covered float64 }
			stats := map[string]*acc{}
			for run := 0; run < runs; run++ {
				_, _, m, err := fineP.Noise.ApplyMeasured(fineEx, 0.95)
				if err != nil {
					t.Fatal(err)
				}
				recs := []*reuse.Record{reuse.NewRecord(fineS, fineP.Noise, m, 1, "ann")}
				if sh.two {
					_, _, m2, err := sexP.Noise.ApplyMeasured(sexEx, 0.95)
					if err != nil {
						t.Fatal(err)
					}
					recs = append(recs, reuse.NewRecord(sexS, sexP.Noise, m2, 2, "ann"))
				}
				ans, why := reuse.Derive(req, recs)
				if sh.name == "topped up" {
					prior, why := reuse.Gather(req, recs)
					if why != "" {
						t.Fatal(why)
					}
					_, _, m3, err := topP.Noise.ApplyMeasured(topEx, 0.95)
					if err != nil {
						t.Fatal(err)
					}
					ans, why = prior.Combine(req, topP.Noise, m3)
				}
				if why != "" {
					t.Fatal(why)
				}
				if want := map[bool]int{false: 1, true: 2}[sh.two]; len(ans.Releases) != want {
					t.Fatalf("derived from %v", ans.Releases)
				}
				res := derivedResult(p, ans)
				for g, row := range res.Rows {
					n, sum := reuseTruth(rows, sh.keep(row))
					for i, col := range res.Columns {
						var want float64
						switch col {
						case "n":
							want = float64(n)
						case "h":
							want = sum
						case "a":
							want = sum / float64(n)
						default:
							continue
						}
						k := fmt.Sprintf("%s/%d", col, g)
						a := stats[k]
						if a == nil {
							a = &acc{}
							stats[k] = a
						}
						v, _ := ir.Number(row[i])
						a.sum += v - want
						a.sq += (v - want) * (v - want)
						a.pvar = res.Derived.Variances[g][i]
						a.n++
						if iv := res.CI[g][i]; iv.Low <= want && want <= iv.High {
							a.covered++
						}
					}
				}
			}
			for k, a := range stats {
				if cov := a.covered / a.n; cov < 0.93 {
					t.Errorf("%s: coverage %.4f, want ≥ 0.93", k, cov)
				}
				if strings.HasPrefix(k, "a/") {
					continue // AVG: coverage only
				}
				mean := a.sum / a.n
				emp := a.sq/a.n - mean*mean
				if rel := math.Abs(emp/a.pvar - 1); rel > 6*math.Sqrt(5.0/runs) {
					t.Errorf("%s: empirical variance %.4g, propagated %.4g (relative error %.3f)", k, emp, a.pvar, rel)
				}
			}
		})
	}
}

// TestTopUpChargesWhatIsNeeded: a roll-up whose derived interval is wider
// than a fresh answer's is answered by a fresh measurement at a smaller ε
// combined with the release, and charged only that ε.
func TestTopUpChargesWhatIsNeeded(t *testing.T) {
	svc, rec, led, _ := reuseService(t, reuseRows(200), "")
	ctx := context.Background()
	if _, err := svc.Answer(ctx, "SELECT sex, race, work, COUNT(*) AS n FROM adult GROUP BY sex, race, work", Options{Epsilon: 1, Confidence: 0.95, Analyst: "ann"}); err != nil {
		t.Fatal(err)
	}
	sql := "SELECT sex, work, COUNT(*) AS n FROM adult WHERE race IN ('a', 'b', 'c') GROUP BY sex, work"
	fresh, err := svc.Prepare(sql, Options{Epsilon: 1, Confidence: 0.95, Analyst: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := fresh.Noise.HalfWidth(0, 0.95)
	calls := rec.calls()
	res, err := svc.Answer(ctx, sql, Options{Epsilon: 1, Confidence: 0.95, Analyst: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Derived
	if d == nil || !(d.TopUp > 0 && d.TopUp < 1) || res.Cost.Epsilon != d.TopUp {
		t.Fatalf("not topped up: derived %+v, cost %v", d, res.Cost)
	}
	if rec.calls() != calls+1 || releases(t, led) != 2 {
		t.Errorf("%d engine runs, %d releases; want 1 more run and 2 releases", rec.calls()-calls, releases(t, led))
	}
	if !strings.HasPrefix(res.Notes[0], "combined with releases 1:") {
		t.Errorf("note %q", res.Notes[0])
	}
	for _, row := range res.CI {
		if h := (row[2].High - row[2].Low) / 2; h > want+1e-9 && row[2].Low > 0 {
			t.Errorf("half-width %v, wider than the fresh answer's %v", h, want)
		}
	}
	h, err := led.History(ledger.Key{}, 1)
	if err != nil || len(h) != 1 || h[0].Cost.Epsilon != d.TopUp {
		t.Errorf("ledger's last release %+v, want a charge of ε=%v", h, d.TopUp)
	}
}

// TestRestCellsNeighbours: the hidden cells of the rows outside the lists
// (dpplan.Plan.MeasureRest) keep a GROUP BY's sensitivity. At ε = 1e20,
// on D and on D without one person, every row of D in exactly one cell
// of the measured values, the two differ in one cell only, by that
// person's row: 1 in the count, the clamped hours in the sum. The person
// is tried with a listed race, a NULL race, an unlisted race and an
// unlisted sex.
func TestRestCellsNeighbours(t *testing.T) {
	ctx := context.Background()
	rows := reuseRows(120)
	sql := "SELECT sex, race, COUNT(*) AS n, SUM(hours) AS h FROM adult GROUP BY sex, race"
	opts := Options{Epsilon: 1e20, Confidence: 0.95, Analyst: "ann", Fresh: true}
	measure := func(rs []reuseRow) [][]float64 {
		svc, _, _, _ := reuseService(t, rs, "")
		res, err := svc.Answer(ctx, sql, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != 6 || len(res.measured) != 12 {
			t.Fatalf("%d rows shown, %d cells measured; want 6 and 12", len(res.Rows), len(res.measured))
		}
		return res.measured
	}
	full := measure(rows)
	var n float64
	for _, c := range full {
		n += c[0]
	}
	if n != float64(len(rows)) {
		t.Fatalf("the cells count %v rows, want %d", n, len(rows))
	}
	for _, who := range []func(reuseRow) bool{
		func(r reuseRow) bool { return r.listed() },
		func(r reuseRow) bool { return r.race == "" },
		func(r reuseRow) bool { return r.race == "z" },
		func(r reuseRow) bool { return r.sex == "X" },
	} {
		i := slices.IndexFunc(rows, who)
		if i < 0 {
			t.Fatal("no such person in the rows")
		}
		minus := slices.Delete(slices.Clone(rows), i, i+1)
		got := measure(minus)
		changed := 0
		for g := range full {
			dn, dh := full[g][0]-got[g][0], full[g][1]-got[g][1]
			if dn == 0 && dh == 0 {
				continue
			}
			changed++
			if dn != 1 || dh != float64(rows[i].hours) {
				t.Errorf("without row %d (%+v): cell %d changed by %v, %v; want 1, %d", i, rows[i], g, dn, dh, rows[i].hours)
			}
		}
		if changed != 1 {
			t.Errorf("without row %d (%+v): %d cells changed, want 1", i, rows[i], changed)
		}
	}
}

// TestRestCellsKeepAnswerKey: measuring the rows outside the value lists
// changes the engine SQL but not the released statistic, so the stored
// answer's key is the one the same query had without the hidden cells
// (an answer stored before them is found again).
func TestRestCellsKeepAnswerKey(t *testing.T) {
	svc, _, _, _ := reuseService(t, reuseRows(10), "")
	p, err := svc.Prepare("SELECT sex, race, COUNT(*) AS n FROM adult GROUP BY sex, race", Options{Epsilon: 1, Confidence: 0.95, Analyst: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Plan.Hidden == 0 {
		t.Fatal("no hidden cells")
	}
	before := *p
	plan := *p.Plan
	plan.Keys, plan.Hidden, plan.Rest = plan.Released(), 0, nil
	text, err := sqlgen.SQL(&plan, p.dialect)
	if err != nil {
		t.Fatal(err)
	}
	before.Plan, before.SQL = &plan, text
	if text == p.SQL {
		t.Fatal("the statement did not change with the hidden cells")
	}
	if before.AnswerKey() != p.AnswerKey() {
		t.Error("the answer key changed with the hidden cells")
	}
}
