package dpplan

import (
	"math"
	"strings"
	"testing"
)

// TestVarianceAggregator checks VAR_POP, VAR_SAMP, STDDEV_POP and
// STDDEV_SAMP: three releases, the centred sum (L0·L∞·(hi − lo)/2), the
// centred sum of squares (L0·L∞·((hi − lo)/2)²/2: squares in [0, r²]
// centred at r²/2) and the count (L0·L∞); the planned width depends on the
// group's size (a note, no number); a released value is clamped to its
// feasible range ([0, r²] for a variance, [0, r] for a deviation) and, for
// a large group, is the variance the noisy sums give.
func TestVarianceAggregator(t *testing.T) {
	r := (ageHi - ageLo) / 2
	const count, variance = 1e7, 100.0
	for _, tc := range []struct {
		fn   string
		want float64
		max  float64
	}{
		{"VAR_POP", variance, r * r},
		{"VAR_SAMP", variance * count / (count - 1), r * r},
		{"STDDEV_POP", math.Sqrt(variance), r},
		{"STDDEV", math.Sqrt(variance * count / (count - 1)), r},
	} {
		t.Run(tc.fn, func(t *testing.T) {
			p, n := aggPlan(t, "SELECT day, "+tc.fn+"(age) FROM visits GROUP BY day")
			ap := p.Aggregates[0]
			got := sensitivities(p)
			want := []float64{l0 * linf * r, l0 * linf * r * r / 2, l0 * linf}
			if len(got) != 3 || !near(got[0], want[0]) || !near(got[1], want[1]) || got[2] != want[2] {
				t.Fatalf("sensitivities %v, want %v", got, want)
			}
			if h, note := ap.agg.halfWidth(n, ap, 0.95); h != 0 || !strings.Contains(note, "depends on the group's size") {
				t.Errorf("half-width %v (%q), want 0 and a note", h, note)
			}
			// Values of mean the midpoint and the variance: centred sum
			// 0, squares centred at r²/2 summing to count·(variance −
			// r²/2).
			v, iv, err := ap.agg.release(n, nil, 0, ap, noisyValues(p, 0, count*(variance-r*r/2), count), 0.95)
			x, _ := v.(float64)
			if err != nil || !near(x, tc.want) || iv.Low > x || iv.High < x || iv.Low < 0 || iv.High > tc.max {
				t.Errorf("released %v %v %v, want %v in [0, %v]", v, iv, err, tc.want, tc.max)
			}
			// A noisy sum of squares below what any data gives is clamped.
			v, iv, _ = ap.agg.release(n, nil, 0, ap, noisyValues(p, 0, -count*r*r, count), 0.95)
			if x, _ := v.(float64); x < 0 || iv.Low < 0 || iv.High > tc.max {
				t.Errorf("released %v %v, want it in [0, %v]", v, iv, tc.max)
			}
		})
	}
}
