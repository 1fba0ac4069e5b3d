package query

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query/reuse"
)

// TestReconciledAnswers: overlapping releases (a table by sex and race,
// and its total) are reconciled by least squares, so that answers derived
// from them agree (the total is the sum of its parts), name both
// releases, carry the least-squares variance, and are exact at ε = 1e20.
func TestReconciledAnswers(t *testing.T) {
	ctx := context.Background()
	rows := reuseRows(400)
	fine := "SELECT sex, race, COUNT(*) AS n, SUM(hours) AS h FROM adult GROUP BY sex, race"
	// The queries restrict sex and race to their lists: the total release
	// (release 2) holds only those rows.
	total := "SELECT COUNT(*) AS n, SUM(hours) AS h FROM adult WHERE sex IN ('F', 'M') AND race IN ('a', 'b', 'c')"
	bySex := "SELECT sex, SUM(hours) AS h, COUNT(*) AS n FROM adult WHERE race IN ('a', 'b', 'c') GROUP BY sex"
	rollUp := "SELECT SUM(hours) AS h, COUNT(*) AS n FROM adult WHERE race IN ('c', 'b', 'a') AND sex IN ('M', 'F')"
	for _, eps := range []float64{1e20, 1} {
		svc, _, led, _ := reuseService(t, rows, "")
		for _, sql := range []string{fine, total} {
			if _, err := svc.Answer(ctx, sql, Options{Epsilon: eps, Confidence: 0.95, Analyst: "ann", Fresh: true}); err != nil {
				t.Fatal(err)
			}
		}
		charged := releases(t, led)
		parts, err := svc.Answer(ctx, bySex, accuracyOpts("ann", 1e6))
		if err != nil {
			t.Fatal(err)
		}
		whole, err := svc.Answer(ctx, rollUp, accuracyOpts("ann", 1e6))
		if err != nil {
			t.Fatal(err)
		}
		if parts.Derived == nil || whole.Derived == nil || releases(t, led) != charged {
			t.Fatalf("ε=%g: not derived at no cost: %v %v", eps, parts.Derived, whole.Derived)
		}
		n, s := reuseTruth(rows, reuseRow.listed)
		if eps == 1e20 {
			if whole.Rows[0][1] != n || whole.Rows[0][0].(float64) != s {
				t.Errorf("ε=1e20: total %v, want %d, %v", whole.Rows[0], n, s)
			}
			for _, row := range parts.Rows {
				pn, ps := reuseTruth(rows, func(r reuseRow) bool { return r.sex == row[0] && r.listed() })
				if row[2] != pn || row[1].(float64) != ps {
					t.Errorf("ε=1e20: %v, want %d, %v", row, pn, ps)
				}
			}
			continue
		}
		if !whole.Derived.Reconciled || !strings.Contains(strings.Join(whole.Notes, "\n"), "releases 1, 2 overlap: reconciled by least squares") {
			t.Errorf("the reconciliation not said: %v %q", whole.Derived.Reconciled, whole.Notes)
		}
		if want := []uint64{1, 2}; !reflect.DeepEqual(whole.Derived.Releases, want) || !reflect.DeepEqual(parts.Derived.Releases, want) {
			t.Errorf("derived from %v and %v, want %v", parts.Derived.Releases, whole.Derived.Releases, want)
		}
		sum := 0.0
		for _, row := range parts.Rows {
			sum += row[1].(float64)
		}
		if h := whole.Rows[0][0].(float64); math.Abs(sum-h) > 1e-9*math.Abs(h) {
			t.Errorf("the parts sum to %v, the total is %v", sum, h)
		}
		// The total's variance is below the fresh total's (release 2)
		// and the sum of the fine cells', and its interval is at least
		// 1.96 standard deviations wide.
		v := whole.Derived.Variances[0][0]
		ci := whole.CI[0][0]
		if !(v > 0) || (ci.High-ci.Low)/2 < 1.96*math.Sqrt(v)*(1-1e-9) {
			t.Errorf("variance %v, interval %v", v, *ci)
		}
		alone, err := svc.Answer(ctx, total, Options{Epsilon: eps, Confidence: 0.95, Analyst: "ann", Fresh: true})
		if err != nil {
			t.Fatal(err)
		}
		if aci := alone.CI[0][1]; !((ci.High - ci.Low) < (aci.High - aci.Low)) {
			t.Errorf("the reconciled total's interval %v is not narrower than the release's %v", *ci, *aci)
		}
	}
}

// TestDerivedRanges: a query over a union of disjoint ranges of a bounded
// int column is derived from releases of the ranges (exactly at
// ε = 1e20, naming both releases); a range that cuts a released range, or
// that is open (it keeps values outside the declared bounds), is answered
// afresh.
func TestDerivedRanges(t *testing.T) {
	ctx := context.Background()
	rows := reuseRows(400)
	for _, eps := range []float64{1e20, 1} {
		svc, _, led, _ := reuseService(t, rows, "")
		for _, sql := range []string{
			"SELECT sex, COUNT(*) AS n, SUM(hours) AS h FROM adult WHERE age BETWEEN 18 AND 39 GROUP BY sex",
			"SELECT sex, COUNT(*) AS n, SUM(hours) AS h FROM adult WHERE age >= 40 AND age <= 90 GROUP BY sex",
		} {
			if _, err := svc.Answer(ctx, sql, Options{Epsilon: eps, Confidence: 0.95, Analyst: "ann", Fresh: true}); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			sql     string
			derived bool
			keep    func(row []any) func(reuseRow) bool
		}{
			{"SELECT COUNT(*) AS n, SUM(hours) AS h FROM adult WHERE age BETWEEN 18 AND 90 AND sex IN ('F', 'M')", true,
				func([]any) func(reuseRow) bool { return func(r reuseRow) bool { return r.sex == "F" || r.sex == "M" } }},
			{"SELECT sex, COUNT(*) AS n, SUM(hours) AS h FROM adult WHERE 18 <= age AND age <= 90 GROUP BY sex", true,
				func(row []any) func(reuseRow) bool { return func(r reuseRow) bool { return r.sex == row[0] } }},
			{"SELECT COUNT(*) AS n, SUM(hours) AS h FROM adult WHERE age BETWEEN 40 AND 90 AND sex = 'F'", true,
				func([]any) func(reuseRow) bool { return func(r reuseRow) bool { return r.age >= 40 && r.sex == "F" } }},
			{"SELECT COUNT(*) AS n, SUM(hours) AS h FROM adult WHERE age >= 18", false, nil},
			{"SELECT COUNT(*) AS n, SUM(hours) AS h FROM adult WHERE age BETWEEN 18 AND 50", false, nil},
			{"SELECT COUNT(*) AS n, SUM(hours) AS h FROM adult", false, nil},
		} {
			charged := releases(t, led)
			res, err := svc.Answer(ctx, tc.sql, accuracyOpts("ann", 1e6))
			if err != nil {
				t.Fatal(err)
			}
			if derived := res.Derived != nil && res.Derived.TopUp == 0 && releases(t, led) == charged; derived != tc.derived {
				t.Errorf("ε=%g %s: derived %v, want %v", eps, tc.sql, derived, tc.derived)
				continue
			}
			if !tc.derived {
				continue
			}
			want := []uint64{1, 2}
			if strings.Contains(tc.sql, "40 AND 90") {
				want = want[1:] // release 1 covers no row of it
			}
			if eps == 1 && !reflect.DeepEqual(res.Derived.Releases, want) {
				t.Errorf("%s: derived from %v, want %v", tc.sql, res.Derived.Releases, want)
			}
			if eps != 1e20 {
				continue
			}
			for _, row := range res.Rows {
				n, s := reuseTruth(rows, tc.keep(row))
				if row[len(row)-2] != n || row[len(row)-1].(float64) != s {
					t.Errorf("%s: %v, want %d, %v", tc.sql, row, n, s)
				}
			}
		}
	}
}

// TestRangeShapes: which WHERE conditions on a bounded int column are a
// cell's range (moved out of the filter, so that releases of other
// ranges share the context) and which stay in the filter.
func TestRangeShapes(t *testing.T) {
	svc, _, _, _ := reuseService(t, reuseRows(10), "")
	shape := func(where string) *reuse.Shape {
		t.Helper()
		p, err := svc.Prepare("SELECT COUNT(*) AS n FROM adult WHERE "+where, Options{Epsilon: 1, Confidence: 0.95, Analyst: "ann"})
		if err != nil {
			t.Fatal(err)
		}
		s, why := reuse.ShapeOf(p.Plan, svc.declared(p), tableSource(p.decl))
		if why != "" {
			t.Fatalf("%s: %s", where, why)
		}
		return s
	}
	ref := shape("age BETWEEN 20 AND 29")
	if len(ref.Restrict["age"]) != 10 || ref.Restrict["age"][0] != 2 || ref.Where != "" {
		t.Fatalf("BETWEEN 20 AND 29: restrict %v, filter %q", ref.Restrict, ref.Where)
	}
	for _, tc := range []struct {
		where string
		same  bool // the same cell as BETWEEN 20 AND 29
		rng   bool // a range (not in the filter)
	}{
		{"age >= 20 AND age <= 29", true, true},
		{"age > 19 AND age < 30", true, true},
		{"20 <= age AND 29 >= age", true, true},
		{"age BETWEEN 15 AND 29 AND age >= 20", true, true},
		{"age = 20", false, true},
		{"age BETWEEN 18 AND 90", false, true},
		{"age >= 20", false, false},             // keeps ages above the declared bound
		{"age BETWEEN 10 AND 29", false, false}, // reaches below it
		{"age BETWEEN 20.5 AND 29", false, false},
		{"age NOT BETWEEN 20 AND 29", false, false},
		{"hours BETWEEN 1 AND 10", false, true},
	} {
		s := shape(tc.where)
		if same := s.Context == ref.Context && reflect.DeepEqual(s.Restrict, ref.Restrict); same != tc.same {
			t.Errorf("%s: the same cell as BETWEEN 20 AND 29: %v, want %v (%v, %q)", tc.where, same, tc.same, s.Restrict, s.Where)
		}
		if rng := s.Where == ""; rng != tc.rng {
			t.Errorf("%s: a range %v, want %v (filter %q)", tc.where, rng, tc.rng, s.Where)
		}
		if tc.rng && s.Context != ref.Context {
			t.Errorf("%s: another context than BETWEEN 20 AND 29", tc.where)
		}
	}
}

// TestDerivedBins: wider bins of a bounded int column (floor(age / 20) *
// 20) and ranges are derived from a release of narrower bins whose unions
// they are (exactly at ε = 1e20), the first and last bins holding the
// values the engine clamps into them; bins that are not unions, and a
// total (which also counts the rows without an age), are answered afresh.
func TestDerivedBins(t *testing.T) {
	ctx := context.Background()
	// Two people outside the declared bounds of age, clamped into the
	// first and last bins.
	rows := append(reuseRows(400), reuseRow{sex: "F", race: "a", age: 5, hours: 40}, reuseRow{sex: "M", race: "b", age: 120, hours: 60})
	clamp := func(a int64) int64 { return min(max(a, 18), 90) }
	for _, eps := range []float64{1e20, 1} {
		svc, rec, led, _ := reuseService(t, rows, "")
		if _, err := svc.Answer(ctx, "SELECT floor(age / 10) * 10 AS decade, COUNT(*) AS n, SUM(hours) AS h FROM adult GROUP BY floor(age / 10) * 10",
			Options{Epsilon: eps, Confidence: 0.95, Analyst: "ann"}); err != nil {
			t.Fatal(err)
		}
		checkDerived(t, svc, rec, led, rows, eps, []derivedCase{
			{"SELECT floor(age / 20) * 20 AS b, COUNT(*) AS n, SUM(hours) AS h FROM adult GROUP BY floor(age / 20) * 20", true,
				func(row []any) func(reuseRow) bool {
					return func(r reuseRow) bool { return fmt.Sprint(clamp(r.age)/20*20) == fmt.Sprint(row[0]) }
				}},
			{"SELECT COUNT(*) AS n, SUM(hours) AS h FROM adult WHERE age BETWEEN 20 AND 39", true,
				func([]any) func(reuseRow) bool { return func(r reuseRow) bool { return r.age >= 20 && r.age <= 39 } }},
			{"SELECT floor(age / 20) * 20 AS b, COUNT(*) AS n, SUM(hours) AS h FROM adult WHERE age BETWEEN 20 AND 59 GROUP BY floor(age / 20) * 20", false, nil},
			{"SELECT floor(age / 15) * 15 AS b, COUNT(*) AS n FROM adult GROUP BY floor(age / 15) * 15", false, nil},
			{"SELECT COUNT(*) AS n FROM adult", false, nil},
		})
	}
}

// derivedCase is a query checkDerived asks: whether it must be derived
// at no cost, and which rows each answer row sums (its truth).
type derivedCase struct {
	sql     string
	derived bool
	keep    func(row []any) func(reuseRow) bool
}

// checkDerived asks each case of svc, over rows, at an accuracy any
// release meets: derived means nothing charged and no data read; at
// ε = 1e20 a derived answer's last two columns (a count and a sum) must
// equal the truth.
func checkDerived(t *testing.T, svc *Service, rec *recordingEngine, led *ledger.Ledger, rows []reuseRow, eps float64, cases []derivedCase) {
	t.Helper()
	for _, tc := range cases {
		charged, calls := releases(t, led), rec.calls()
		res, err := svc.Answer(context.Background(), tc.sql, accuracyOpts("ann", 1e6))
		if err != nil {
			t.Fatal(err)
		}
		if derived := res.Derived != nil && res.Derived.TopUp == 0 && releases(t, led) == charged && rec.calls() == calls; derived != tc.derived {
			t.Errorf("ε=%g %s: derived %v, want %v (notes %q)", eps, tc.sql, derived, tc.derived, res.Notes)
			continue
		}
		if !tc.derived || eps != 1e20 {
			continue
		}
		for _, row := range res.Rows {
			n, s := reuseTruth(rows, tc.keep(row))
			if row[len(row)-2] != n || row[len(row)-1].(float64) != s {
				t.Errorf("%s: %v, want %d, %v", tc.sql, row, n, s)
			}
		}
	}
}

// TestDerivedDateBuckets: date_trunc buckets of a bounded date column
// (2024-01-01 to 2024-06-30) are derived from a release of finer buckets
// whose unions they are (quarters and the half year from months, a range
// of whole months), exactly at ε = 1e20, the first and last buckets
// holding the rows the engine clamps into them; buckets that are not
// unions (weeks) and a total (which also counts rows without a day) are
// answered afresh.
func TestDerivedDateBuckets(t *testing.T) {
	ctx := context.Background()
	rows := reuseRows(400)
	quarter := func(d time.Time) string {
		return time.Date(d.Year(), (d.Month()-1)/3*3+1, 1, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
	}
	clamped := func(r reuseRow) time.Time { return time.Date(2024, 1, 1+min(max(r.day, 0), 181), 0, 0, 0, 0, time.UTC) }
	for _, eps := range []float64{1e20, 1} {
		svc, rec, led, _ := reuseService(t, rows, "")
		if _, err := svc.Answer(ctx, "SELECT date_trunc('month', day) AS m, COUNT(*) AS n, SUM(hours) AS h FROM adult GROUP BY m",
			Options{Epsilon: eps, Confidence: 0.95, Analyst: "ann"}); err != nil {
			t.Fatal(err)
		}
		checkDerived(t, svc, rec, led, rows, eps, []derivedCase{
			{"SELECT date_trunc('quarter', day) AS q, COUNT(*) AS n, SUM(hours) AS h FROM adult GROUP BY q", true,
				func(row []any) func(reuseRow) bool {
					return func(r reuseRow) bool { return quarter(clamped(r)) == fmt.Sprint(row[0]) }
				}},
			{"SELECT date_trunc('year', day) AS y, COUNT(*) AS n, SUM(hours) AS h FROM adult GROUP BY y", true,
				func([]any) func(reuseRow) bool { return func(reuseRow) bool { return true } }},
			{"SELECT COUNT(*) AS n, SUM(hours) AS h FROM adult WHERE day BETWEEN '2024-02-01' AND '2024-04-30'", true,
				func([]any) func(reuseRow) bool { return func(r reuseRow) bool { return r.day >= 31 && r.day <= 120 } }},
			{"SELECT date_trunc('week', day) AS w, COUNT(*) AS n FROM adult GROUP BY w", false, nil},
			{"SELECT COUNT(*) AS n FROM adult", false, nil},
		})
	}
}
