package dpplan

import (
	"math"
	"testing"

	"github.com/dpstat/dpstat/query/internal/stagetest"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/query/parse"
	"github.com/dpstat/dpstat/random"
)

// The stage tests' table visits (stagetest): each person contributes to at
// most l0 groups and linf rows per group; age is declared in [18, 90].
const (
	l0, linf       = 2, 3
	ageLo, ageHi   = 18.0, 90.0
	aggTestEpsilon = 1.0
)

// aggPlan plans sql over the stage tests' catalog at ε = 1, δ = 1e-6, with
// seeded noise.
func aggPlan(t *testing.T, sql string) (*Plan, *Noise) {
	t.Helper()
	return aggPlanEps(t, sql, aggTestEpsilon)
}

// aggPlanEps is aggPlan at ε = eps.
func aggPlanEps(t *testing.T, sql string, eps float64) (*Plan, *Noise) {
	t.Helper()
	cat := stagetest.Catalog(t)
	q, err := parse.Parse(sql, cat)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlanDelta(q, q.Base, eps, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	n, err := p.NewNoise(random.NewInsecureSeeded(1))
	if err != nil {
		t.Fatal(err)
	}
	return p, n
}

// sensitivities lists the sensitivity of each release of the plan's first
// aggregate.
func sensitivities(p *Plan) []float64 {
	var out []float64
	for _, r := range p.Aggregates[0].Releases {
		out = append(out, p.Releases[r].Sensitivity)
	}
	return out
}

// TestEveryFunctionHasAnAggregator: each function of the registry
// (query/ir/aggregates.go) has registered its aggregator.
func TestEveryFunctionHasAnAggregator(t *testing.T) {
	for _, f := range ir.Funcs() {
		if _, err := aggregatorOf(ir.Aggregate{Func: f}); err != nil {
			t.Errorf("%v: %v", f, err)
		}
	}
}

// noisyValues is a vector of noisy values, one per release of p, with the
// first aggregate's releases set to vs in order.
func noisyValues(p *Plan, vs ...float64) []float64 {
	out := make([]float64, len(p.Releases))
	for i, r := range p.Aggregates[0].Releases {
		out[r] = vs[i]
	}
	return out
}

// near reports whether a and b agree to a relative 1e-3 (or 1e-9
// absolutely).
func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-3*math.Max(math.Abs(a), math.Abs(b))+1e-9
}
