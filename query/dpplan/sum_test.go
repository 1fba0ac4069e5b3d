package dpplan

import (
	"math"
	"testing"
)

// TestSumAggregator checks SUM(col): the sensitivity is L0·L∞·max(|lo|,
// |hi|), the planned half-width is Laplace's at 95% (Δ·ln 20 at ε = 1, up
// to the grid), and the noisy sum is released as it is, its interval cut
// at 0 when the declared values are ≥ 0.
func TestSumAggregator(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		sens float64
	}{
		{"SELECT day, SUM(age) FROM visits GROUP BY day", l0 * linf * ageHi},
		{"SELECT day, SUM(euros) FROM visits GROUP BY day", l0 * linf * 60},
		{"SELECT SUM(age) FROM visits", linf * ageHi},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			p, n := aggPlan(t, tc.sql)
			ap := p.Aggregates[0]
			if got := sensitivities(p); len(got) != 1 || !near(got[0], tc.sens) {
				t.Fatalf("sensitivities %v, want [%v]", got, tc.sens)
			}
			h, note := ap.agg.halfWidth(n, ap, 0.95)
			if !near(h, tc.sens*math.Log(20)) || note != "" {
				t.Errorf("half-width %v (%q), want about %v", h, note, tc.sens*math.Log(20))
			}
			for _, c := range []struct {
				noisy  float64
				lo, hi float64
			}{
				{5000, 5000 - h, 5000 + h},
				{10, 0, 10 + h},
				{-h - 1, 0, 0},
			} {
				v, iv, err := ap.agg.release(n, nil, 0, ap, noisyValues(p, c.noisy), 0.95)
				if err != nil || v != c.noisy || iv != (Interval{c.lo, c.hi}) {
					t.Errorf("noisy %v: released %v %v %v, want %v [%v, %v]", c.noisy, v, iv, err, c.noisy, c.lo, c.hi)
				}
			}
		})
	}
}
