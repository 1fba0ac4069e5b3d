package query

import (
	"context"
	"math"
	"testing"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/random"
)

// TestExactNewAggregates checks variances, standard deviations and
// quantiles at ε = 1e20 on people.csv: non-NULL ages 20, 30, 100 (150
// clamped), 40; scores 1.5, 2.5, 0 (−10 clamped), 3.25. Variances are exact
// up to the fixed-point rounding of squares (relative 2^-30); a quantile
// lands between the two values that bracket the true percentile (any
// candidate there has the best utility).
func TestExactNewAggregates(t *testing.T) {
	svc, _, _ := newTestService(t, "testdata/catalog.yaml")
	tests := []struct {
		name, sql string
		lo, hi    float64
	}{
		{"var_pop int", "SELECT VAR_POP(age) FROM people", 968.75, 968.75},
		{"var_samp int", "SELECT VAR_SAMP(age) FROM people", 968.75 * 4 / 3, 968.75 * 4 / 3},
		{"variance is var_samp", "SELECT VARIANCE(age) FROM people", 968.75 * 4 / 3, 968.75 * 4 / 3},
		{"stddev_pop int", "SELECT STDDEV_POP(age) FROM people", math.Sqrt(968.75), math.Sqrt(968.75)},
		{"stddev is stddev_samp", "SELECT STDDEV(age) FROM people", math.Sqrt(968.75 * 4 / 3), math.Sqrt(968.75 * 4 / 3)},
		{"var_pop float", "SELECT VAR_POP(score) FROM people", 1.48046875, 1.48046875},
		{"median int", "SELECT MEDIAN(age) FROM people", 30, 40},
		{"percentile 0.25", "SELECT percentile_cont(0.25) WITHIN GROUP (ORDER BY age) FROM people", 20, 30},
		{"percentile 0 is the grid's low end", "SELECT percentile_cont(0) WITHIN GROUP (ORDER BY age) FROM people", 18, 20},
		{"median float", "SELECT MEDIAN(score) FROM people", 1.5, 2.5},
		{"median where", "SELECT MEDIAN(age) FROM people WHERE city = 'A'", 20, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := svc.Answer(context.Background(), tt.sql, exactOpts())
			if err != nil {
				t.Fatal(err)
			}
			v := res.Rows[0][0].(float64)
			tol := 1e-6 * math.Max(1, math.Abs(tt.hi))
			if v < tt.lo-tol || v > tt.hi+tol {
				t.Errorf("%s = %v, want in [%v, %v]", tt.sql, v, tt.lo, tt.hi)
			}
			iv := res.CI[0][0]
			if iv == nil || iv.Low > v || iv.High < v {
				t.Errorf("interval %v does not hold the value %v", iv, v)
			}
		})
	}
}

// TestExactGroupedVarianceAndMedian checks per-group values, with the
// empty group D released at the midpoint of the feasible range.
func TestExactGroupedVarianceAndMedian(t *testing.T) {
	svc, _, _ := newTestService(t, "testdata/catalog.yaml")
	res, err := svc.Answer(context.Background(), "SELECT city, VAR_POP(age), MEDIAN(age) FROM people GROUP BY city", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	// A: ages 20, 100 (NULL excluded): variance 1600, median in [20, 100].
	// B: age 30: variance 0, median 30.
	if v := res.Rows[0][1].(float64); math.Abs(v-1600) > 1e-3 {
		t.Errorf("VAR_POP for A = %v, want 1600", v)
	}
	if v := res.Rows[1][1].(float64); math.Abs(v) > 1e-3 {
		t.Errorf("VAR_POP for B = %v, want 0", v)
	}
	if v := res.Rows[1][2].(float64); v != 30 {
		t.Errorf("MEDIAN for B = %v, want 30", v)
	}
	if v := res.Rows[2][1].(float64); v < 0 || v > 41*41 {
		t.Errorf("VAR_POP for the empty group = %v, want in the feasible range", v)
	}
}

// TestExactCountDistinct checks COUNT(DISTINCT visitor_id) against DuckDB's
// own distinct count (no GROUP BY: one group, so no person loses rows to
// bounding that the count could see), and that per-day distinct counts
// after bounding each visitor to 3 days add up to at most 3 per visitor.
func TestExactCountDistinct(t *testing.T) {
	svc, eng, _ := newTestService(t, "../examples/catalog.yaml")
	ctx := context.Background()
	res, err := svc.Answer(ctx, "SELECT COUNT(DISTINCT visitor_id) AS people, COUNT(*) FROM visits", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	truth, err := eng.Engine.Query(ctx, "SELECT count(DISTINCT visitor_id) FROM visits")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ir.ToBig(truth.Rows[0][0])
	if got := res.Rows[0][0].(int64); got != want.Int64() {
		t.Fatalf("COUNT(DISTINCT visitor_id) = %d, want %d", got, want.Int64())
	}
	if res.Split[0].Mechanisms[0].Sensitivity != 1 {
		t.Errorf("ungrouped distinct count has sensitivity %v, want 1", res.Split[0].Mechanisms[0].Sensitivity)
	}
	res, err = svc.Answer(ctx, "SELECT day, COUNT(DISTINCT visitor_id) FROM visits GROUP BY day", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, r := range res.Rows {
		total += r[1].(int64)
	}
	if total > 3*want.Int64() || total < want.Int64() {
		t.Errorf("per-day distinct counts add up to %d for %d visitors bounded to 3 days", total, want.Int64())
	}
	if s := res.Split[0].Mechanisms[0].Sensitivity; s != 3 {
		t.Errorf("grouped distinct count has sensitivity %v, want L0 = 3", s)
	}
}

// TestQuantileUtilityBound checks that the released median's rank is within
// the exponential mechanism's utility bound of n/2 at the promised rate:
// over 400 releases at ε = 0.5 with failure probability β = 0.05 per
// release, the number of misses is Binomial(400, ≤ 0.05); more than 40
// misses has probability below 1e-6 (Chernoff), the test's false-failure
// probability.
func TestQuantileUtilityBound(t *testing.T) {
	svc, eng, _ := newTestService(t, "../examples/catalog.yaml")
	ctx := context.Background()
	opts := Options{Epsilon: 0.5, Confidence: 0.95, Analyst: "a", Source: random.NewInsecureSeeded(7)}
	p, err := svc.Prepare("SELECT MEDIAN(age) FROM adult", opts)
	if err != nil {
		t.Fatal(err)
	}
	if p.SQL != "" {
		t.Fatalf("a median alone runs a main statement: %s", p.SQL)
	}
	exact, err := p.Plan.ReadExact(&engine.Rows{Columns: make([]string, len(p.Plan.Statistics))})
	if err != nil {
		t.Fatal(err)
	}
	hrows, err := eng.Query(ctx, p.HistogramSQL[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Plan.ReadHistogram(exact, 0, hrows); err != nil {
		t.Fatal(err)
	}
	counts := exact.Hist[0][0]
	h := p.Plan.Histograms[0]
	scores := dpplan.QuantileScores(counts, h.Bins, 0.5)
	bound := p.Noise.Selects[0].UtilityBound(h.Bins+1, 0.05)
	misses := 0
	const runs = 400
	for range runs {
		res, err := p.Release(exact)
		if err != nil {
			t.Fatal(err)
		}
		v := res.Rows[0][0].(float64)
		i := int(math.Round((v - h.Lower) / h.Step))
		if -scores[i] > bound {
			misses++
		}
	}
	if misses > 40 {
		t.Fatalf("%d of %d medians missed the utility bound %v", misses, runs, bound)
	}
}
