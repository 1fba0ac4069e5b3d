package dpplan

import (
	"math"
	"testing"
)

// TestCountAggregator checks COUNT(*) and COUNT(col): the sensitivity is
// L0·L∞ (L∞ without GROUP BY, one group), the planned half-width is the
// geometric mechanism's at 95% (about Δ·ln 20 at ε = 1), and a noisy count
// is released as an integer with its interval cut at 0.
func TestCountAggregator(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		sens float64
	}{
		{"SELECT day, COUNT(*) FROM visits GROUP BY day", l0 * linf},
		{"SELECT day, COUNT(euros) FROM visits GROUP BY day", l0 * linf},
		{"SELECT COUNT(*) FROM visits", linf},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			p, n := aggPlan(t, tc.sql)
			ap := p.Aggregates[0]
			if got := sensitivities(p); len(got) != 1 || got[0] != tc.sens {
				t.Fatalf("sensitivities %v, want [%v]", got, tc.sens)
			}
			h, note := ap.agg.halfWidth(n, ap, 0.95)
			if math.Abs(h-tc.sens*math.Log(20)) > 1 || note != "" {
				t.Errorf("half-width %v (%q), want about %v", h, note, tc.sens*math.Log(20))
			}
			for _, c := range []struct {
				noisy  float64
				lo, hi float64
			}{
				{40, 40 - h, 40 + h},
				{3, 0, 3 + h},
				{-h - 5, 0, 0},
			} {
				v, iv, err := ap.agg.release(n, nil, 0, ap, noisyValues(p, c.noisy), 0.95)
				if err != nil || v != int64(c.noisy) || iv != (Interval{c.lo, c.hi}) {
					t.Errorf("noisy %v: released %v %v %v, want %v [%v, %v]", c.noisy, v, iv, err, int64(c.noisy), c.lo, c.hi)
				}
			}
		})
	}
}
