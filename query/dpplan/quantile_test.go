package dpplan

import (
	"strings"
	"testing"
)

// TestQuantileAggregator checks MEDIAN, MIN and MAX: one rank selection
// whose sensitivity is L0·L∞ (a person moves a rank by at most L∞ in each
// of L0 groups); the planned width depends on the values (a note, no
// number); at ε = 1e20 the released value is the exact quantile of a
// histogram, its interval the declared range.
func TestQuantileAggregator(t *testing.T) {
	for _, tc := range []struct {
		fn   string
		want float64
	}{
		{"MEDIAN", 50},
		{"MIN", 30},
		{"MAX", 70},
	} {
		t.Run(tc.fn, func(t *testing.T) {
			sql := "SELECT day, " + tc.fn + "(age) FROM visits GROUP BY day"
			p, n := aggPlan(t, sql)
			ap := p.Aggregates[0]
			if got := sensitivities(p); len(got) != 1 || got[0] != l0*linf {
				t.Fatalf("sensitivities %v, want [%v]", got, l0*linf)
			}
			if h, note := ap.agg.halfWidth(n, ap, 0.95); h != 0 || !strings.Contains(note, "the interval shown is the declared range") {
				t.Errorf("half-width %v (%q), want 0 and a note", h, note)
			}
			p, n = aggPlanEps(t, sql, 1e20)
			ap = p.Aggregates[0]
			r := p.Releases[ap.Releases[0]]
			h := p.Histograms[r.Histogram]
			// One value at 30, at 50 and at 70 in group 0.
			counts := make([]int64, h.Bins+1)
			for _, x := range []float64{30, 50, 70} {
				for i := 0; i <= h.Bins; i++ {
					if h.Candidate(i) == x {
						counts[i] = 1
					}
				}
			}
			hist := make([][][]int64, len(p.Histograms))
			hist[r.Histogram] = [][]int64{counts}
			v, iv, err := ap.agg.release(n, &Exact{Hist: hist}, 0, ap, noisyValues(p, 0), 0.95)
			if err != nil || v != tc.want || iv != (Interval{ageLo, ageHi}) {
				t.Errorf("released %v %v %v, want %v [%v, %v]", v, iv, err, tc.want, ageLo, ageHi)
			}
		})
	}
}
