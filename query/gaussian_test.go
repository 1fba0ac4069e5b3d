package query

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/random"
)

const manyAggregates = "SELECT day, COUNT(*), SUM(euros_spent), AVG(minutes_spent), COUNT(minutes_spent), SUM(minutes_spent), AVG(euros_spent), COUNT(euros_spent) FROM visits GROUP BY day"

// TestGaussianChoice checks that with δ > 0 and many aggregates over L0 = 3
// groups the Gaussian plan is chosen at the same cost, the choice is shown,
// the charge is the query's (ε, δ) and the zCDP total converts within it;
// and that with few aggregates the Laplace plan stays, also with a note.
func TestGaussianChoice(t *testing.T) {
	svc, _, led := newTestService(t, "../examples/catalog.yaml")
	opts := Options{Epsilon: 1, Delta: 1e-6, Confidence: 0.95, Analyst: "a"}
	p, err := svc.Prepare(manyAggregates, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Noise.Gaussian || !strings.Contains(p.Noise.Choice, "Gaussian") {
		t.Fatalf("Gaussian not chosen: %q", p.Noise.Choice)
	}
	c := p.Noise.Cost
	if c.Epsilon != 1 || c.Delta != 1e-6 || dpplan.ZcdpToEpsilon(c.Rho, 1e-6) > 1 {
		t.Fatalf("cost %v: ρ converts to ε=%v", c, dpplan.ZcdpToEpsilon(c.Rho, 1e-6))
	}
	found := false
	for _, n := range p.Explain().Notes {
		found = found || strings.HasPrefix(n, "noise: Gaussian")
	}
	if !found {
		t.Error("EXPLAIN does not show the choice")
	}
	if _, err := svc.Run(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if got := led.charges[0].Cost; got != c {
		t.Errorf("charged %v, planned %v", got, c)
	}
	few, err := svc.Prepare("SELECT sex, COUNT(*), AVG(age) FROM adult GROUP BY sex", opts)
	if err != nil {
		t.Fatal(err)
	}
	if few.Noise.Gaussian || !strings.Contains(few.Noise.Choice, "Laplace/geometric") {
		t.Errorf("few aggregates: gaussian %v, choice %q", few.Noise.Gaussian, few.Noise.Choice)
	}
	pure, err := svc.Prepare(manyAggregates, Options{Epsilon: 1, Confidence: 0.95, Analyst: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if pure.Noise.Gaussian || pure.Noise.Choice != "" {
		t.Errorf("δ = 0 must keep pure noise without a choice")
	}
}

// TestGaussianExact checks the Gaussian plan at ε = 1e20: exact answers.
func TestGaussianExact(t *testing.T) {
	_, eng, _ := newTestService(t, "../examples/catalog.yaml")
	cat := loadCatalog(t, "../examples/catalog.yaml")
	p, err := Prepare(cat, duckdb.Dialect, manyAggregates, Options{Epsilon: 1e20, Delta: 1e-6, Confidence: 0.95, Analyst: "a"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := p.Plan.NewGaussianNoise(nil, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	p.Noise = g
	rows, err := eng.Query(context.Background(), p.SQL)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := p.Plan.ReadExact(rows)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Release(ex)
	if err != nil {
		t.Fatal(err)
	}
	// The same exact statistics through the Laplace plan (ε = 1e20) give
	// the same values up to the sums' grids.
	lp, _ := Prepare(cat, duckdb.Dialect, manyAggregates, Options{Epsilon: 1e20, Confidence: 0.95, Analyst: "a"})
	want, err := lp.Release(ex)
	if err != nil {
		t.Fatal(err)
	}
	for i := range res.Rows {
		for j := range res.Rows[i] {
			a, _ := ir.Number(res.Rows[i][j])
			b, _ := ir.Number(want.Rows[i][j])
			if math.Abs(a-b) > 1e-6*math.Max(1, math.Abs(b)) {
				t.Errorf("row %d col %d: Gaussian %v, exact %v", i, j, res.Rows[i][j], want.Rows[i][j])
			}
		}
	}
}

// TestGaussianCountVariance checks that the Gaussian counts have the
// variance σ² the cost implies, and that their 95% intervals cover: over
// 2000 releases of 7 groups (14000 draws) the sample variance is within
// 10% of σ² (its standard deviation is σ²·√(2/14000) ≈ 1.2% of σ², so 10%
// is over 8 standard deviations: false-failure probability < 1e-15), and
// coverage is at least 94% (the exact coverage is ≥ 95%; falling below 94%
// has probability below 1e-9 by Chernoff).
func TestGaussianCountVariance(t *testing.T) {
	cat := loadCatalog(t, "../examples/catalog.yaml")
	_, eng, _ := newTestService(t, "../examples/catalog.yaml")
	opts := Options{Epsilon: 1, Delta: 1e-6, Confidence: 0.95, Analyst: "a", Source: random.NewInsecureSeeded(3)}
	p, err := Prepare(cat, duckdb.Dialect, manyAggregates, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Noise.Gaussian {
		t.Fatal("Gaussian not chosen")
	}
	rows, err := eng.Query(context.Background(), p.SQL)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := p.Plan.ReadExact(rows)
	if err != nil {
		t.Fatal(err)
	}
	ci := p.Plan.Aggregates[0].Releases[0]
	sigma := p.Noise.Counts[ci].Scale()
	st := p.Plan.Releases[ci].Stat
	var sum, sq float64
	n, covered := 0, 0
	for range 2000 {
		res, err := p.Release(ex)
		if err != nil {
			t.Fatal(err)
		}
		for g, row := range res.Rows {
			truth := float64(ex.Stats[g][st].Int64())
			d := float64(row[1].(int64)) - truth
			sum += d
			sq += d * d
			n++
			if iv := res.CI[g][1]; iv.Low <= truth && truth <= iv.High {
				covered++
			}
		}
	}
	v := sq/float64(n) - (sum/float64(n))*(sum/float64(n))
	// Rounding to an integer adds at most 1/12 to the variance.
	if v < 0.9*sigma*sigma || v > 1.1*(sigma*sigma+1.0/12) {
		t.Errorf("count noise variance %v, want σ² = %v", v, sigma*sigma)
	}
	if float64(covered)/float64(n) < 0.94 {
		t.Errorf("coverage %v", float64(covered)/float64(n))
	}
}
