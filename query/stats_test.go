package query

import (
	"context"
	"math"
	"math/big"
	"testing"

	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/random"
)

// prepareWithExact prepares a query over the examples at ε and runs the
// engine once, returning the prepared query and the exact statistics, so
// that tests can re-noise one engine result many times.
func prepareWithExact(t *testing.T, sql string, eps float64, src random.Source) (*Prepared, *dpplan.Exact) {
	t.Helper()
	svc, rec, _ := newTestService(t, "../examples/catalog.yaml")
	p, err := svc.Prepare(sql, Options{Epsilon: eps, Confidence: 0.95, Analyst: "a", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := rec.Query(context.Background(), p.SQL)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := p.Plan.ReadExact(rows)
	if err != nil {
		t.Fatal(err)
	}
	return p, ex
}

// truth returns the exact (noise-free) value of aggregate j for group g.
func truth(p *Prepared, ex *dpplan.Exact, g, j int) float64 {
	a := p.Plan.Aggregates[j]
	st := func(i int) *big.Int { return ex.Stats[g][i] }
	r := p.Plan.Releases[a.Releases[0]]
	switch a.Aggregate.Func {
	case ir.CountStar, ir.Count:
		f, _ := new(big.Float).SetInt(st(r.Stat)).Float64()
		return f
	case ir.Sum:
		f, _ := new(big.Float).SetMantExp(new(big.Float).SetInt(st(r.Stat)), p.Plan.Statistics[r.Stat].Summand.Exp).Float64()
		return f
	}
	// AVG: sum/count, clamped (the count is never zero in these tests).
	sum, _ := new(big.Float).SetMantExp(new(big.Float).SetInt(st(r.Stat)), p.Plan.Statistics[r.Stat].Summand.Exp).Float64()
	n, _ := new(big.Float).SetInt(st(r.CountStat)).Float64()
	return math.Min(a.Upper, math.Max(a.Lower, sum/n))
}

// TestIntervalsCover re-noises one engine result 1,000 times and checks that
// the 95% intervals of COUNT, SUM and AVG each cover the truth at least 95%
// of the time over 7,000 intervals. With a true coverage of at least 95%,
// misses are at most Binomial(7000, 0.05) (mean 350, sd 18.2); the test
// fails above 350 + 5.3 sd = 447, which has probability below 1e-6
// (Bernstein's inequality gives 5e-7). The seed is fixed.
func TestIntervalsCover(t *testing.T) {
	src := random.NewInsecureSeeded(20261122)
	p, ex := prepareWithExact(t, "SELECT day, COUNT(*), SUM(euros_spent), AVG(minutes_spent) FROM visits GROUP BY day", 1, src)
	const runs = 1000
	misses := make([]int, len(p.Plan.Aggregates))
	total := 0
	for run := 0; run < runs; run++ {
		vals, cis, err := p.Noise.Apply(ex, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		for g := range vals {
			for j := range p.Plan.Aggregates {
				x := truth(p, ex, g, j)
				if x < cis[g][j].Low || x > cis[g][j].High {
					misses[j]++
				}
			}
		}
		total += len(vals)
	}
	for j, m := range misses {
		t.Logf("%s: %d misses in %d intervals (%.2f%%)", p.Plan.Aggregates[j].Aggregate, m, total, 100*float64(m)/float64(total))
		if m > 447 {
			t.Errorf("%s: %d of %d 95%% intervals missed the truth", p.Plan.Aggregates[j].Aggregate, m, total)
		}
	}
}

// dlapVariance is the variance of the discrete Laplace distribution with
// scale b (in steps): 2p/(1−p)², p = exp(−1/b).
func dlapVariance(b float64) float64 {
	p := math.Exp(-1 / b)
	return 2 * p / ((1 - p) * (1 - p))
}

// TestNoiseMatchesCost checks that each release's noise has the scale its
// cost implies (Δ/ε, with Δ derived from the plan: L0·L∞ for counts,
// L0·L∞·max|bound| for sums) and that the sampled variance matches that
// scale: no more noise, no less. 20,000 samples each: the sample variance
// of discrete Laplace noise (kurtosis 6) has a relative standard deviation
// of sqrt(5/20000) = 1.6%, so a 10% tolerance is over 6 standard deviations
// (false-failure probability below 1e-6). The seed is fixed.
func TestNoiseMatchesCost(t *testing.T) {
	src := random.NewInsecureSeeded(7)
	p, _ := prepareWithExact(t, "SELECT day, COUNT(*), SUM(euros_spent) FROM visits GROUP BY day", 0.5, src)
	// visits: L0 = 3, L∞ = 1, euros in [0, 60]; each aggregate gets ε/2.
	eps := 0.25
	if p.Noise.Cost.Epsilon != 0.5 {
		t.Errorf("cost ε = %v, want 0.5", p.Noise.Cost.Epsilon)
	}
	const n = 20000
	sampleVar := func(draw func() float64) float64 {
		var sum, sq float64
		for i := 0; i < n; i++ {
			x := draw()
			sum += x
			sq += x * x
		}
		m := sum / n
		return sq/n - m*m
	}
	for i, r := range p.Plan.Releases {
		switch r.Kind {
		case dpplan.NoisyCount:
			m := p.Noise.Counts[i]
			wantScale := 3.0 / eps
			if rel := m.Scale()/wantScale - 1; rel < 0 || rel > 1e-9 {
				t.Errorf("count scale %v, want %v", m.Scale(), wantScale)
			}
			v := sampleVar(func() float64 { return float64(m.Release(1000) - 1000) })
			want := dlapVariance(m.Scale())
			if math.Abs(v/want-1) > 0.10 {
				t.Errorf("count noise variance %v, want %v", v, want)
			}
		case dpplan.NoisySum:
			m := p.Noise.Sums[i]
			wantScale := 3 * 60 / eps
			if rel := m.Scale()/wantScale - 1; rel < 0 || rel > 1e-4 {
				t.Errorf("sum scale %v, want %v (plus at most a few grid steps)", m.Scale(), wantScale)
			}
			g := m.Granularity()
			v := sampleVar(func() float64 {
				x, err := m.Release(1024)
				if err != nil {
					t.Fatal(err)
				}
				return x - 1024
			})
			want := dlapVariance(m.Scale()/g) * g * g
			if math.Abs(v/want-1) > 0.10 {
				t.Errorf("sum noise variance %v, want %v (2b² = %v)", v, want, 2*m.Scale()*m.Scale())
			}
		}
	}
}
