package dpplan

import (
	"math"
	"testing"
)

// TestDistinctAggregator checks COUNT(DISTINCT privacy unit): a person is
// one distinct unit in each of the at most L0 groups it touches, so the
// sensitivity is L0 whatever L∞; a noisy count is released as an integer
// with its interval cut at 0; it can select keys.
func TestDistinctAggregator(t *testing.T) {
	p, n := aggPlan(t, "SELECT day, COUNT(DISTINCT pid) FROM visits GROUP BY day")
	ap := p.Aggregates[0]
	if got := sensitivities(p); len(got) != 1 || got[0] != l0 {
		t.Fatalf("sensitivities %v, want [%v]", got, l0)
	}
	h, _ := ap.agg.halfWidth(n, ap, 0.95)
	if math.Abs(h-l0*math.Log(20)) > 1 {
		t.Errorf("half-width %v, want about %v", h, l0*math.Log(20))
	}
	v, iv, err := ap.agg.release(n, nil, 0, ap, noisyValues(p, 2), 0.95)
	if err != nil || v != int64(2) || iv != (Interval{0, 2 + h}) {
		t.Errorf("released %v %v %v, want 2 [0, %v]", v, iv, err, 2+h)
	}
	if _, ok := ap.agg.selectingCount(ap.Aggregate, p.Table); !ok {
		t.Error("the distinct people cannot select keys")
	}
}
