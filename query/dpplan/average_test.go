package dpplan

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/mechanism"
	"github.com/dpstat/dpstat/random"
)

// TestAverageExactCoverage releases AVGs of groups of 3 to 1,000 people with
// true means at the middle, near and at the ends of the declared range, at
// the ε of a third of ε = 1 (halved between sum and count), and checks that
// the 95% intervals cover the true mean at least 95% of the time, and that
// for the large group with a mean inside the range (where the accepted set
// is an interval inside the range) they are not conservative: at most
// 96.75%. At an end of the range the test can only reject on one side, so
// there coverage is about 97.5% by construction.
//
// 4,000 releases per case: with true coverage 95%, misses are Binomial(4000,
// 0.05), mean 200, sd 13.8. The test fails above 273 misses (5.3 sd; with
// coverage ≥ 95% this has probability below 1e-6) and, for the large group,
// below 130 (5 sd below 200: probability below 1e-6 at coverage 95%); 24
// cases, so a false failure has probability below 5e-5. The seed is fixed.
// It also checks that the intervals are on average narrower than the box
// of the sum's and count's own (1 − α/2) intervals.
func TestAverageExactCoverage(t *testing.T) {
	const runs = 4000
	src := random.NewInsecureSeeded(20261123)
	lo, hi := 17.0, 90.0
	r, mid := (hi-lo)/2, (hi+lo)/2
	eps := 1.0 / 6
	sumM, err := mechanism.NewLaplace(mechanism.LaplaceOptions{Epsilon: eps, Sensitivity: r, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	cntM, err := mechanism.NewGeometric(mechanism.GeometricOptions{Epsilon: eps, Sensitivity: 1, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	hs, hc := sumM.Interval(0.975), cntM.Interval(0.975)
	for _, n := range []int64{3, 12, 100, 1000} {
		for _, mean := range []float64{lo, lo + 3, 38.5, mid, hi - 1, hi} {
			t.Run(fmt.Sprintf("n=%d,mean=%g", n, mean), func(t *testing.T) {
				s := float64(n) * (mean - mid) // the exact centred sum
				misses := 0
				var width, boxWidth float64
				for range runs {
					c, err := sumM.Release(s)
					if err != nil {
						t.Fatal(err)
					}
					cnt := float64(cntM.Release(n))
					v, iv := averageExact(c, cnt, sumM.Scale(), sumM.Granularity(), cntM.Scale(), 0.05, lo, hi)
					if v < iv.Low || v > iv.High || iv.Low < lo || iv.High > hi {
						t.Fatalf("c=%v n=%v: estimate %v, interval %v, range [%v, %v]", c, cnt, v, iv, lo, hi)
					}
					if mean < iv.Low || mean > iv.High {
						misses++
					}
					width += iv.High - iv.Low
					_, box := average(c, cnt, hs, hc, lo, hi)
					boxWidth += box.High - box.Low
				}
				t.Logf("coverage %.4f, mean width %.4g (box %.4g)", 1-float64(misses)/runs, width/runs, boxWidth/runs)
				if misses > 273 {
					t.Errorf("%d of %d 95%% intervals missed the mean %v", misses, runs, mean)
				}
				if n == 1000 && mean > lo && mean < hi && misses < 130 {
					t.Errorf("only %d of %d 95%% intervals missed the mean %v: conservative", misses, runs, mean)
				}
				if width > boxWidth {
					t.Errorf("mean width %v above the box's %v", width/runs, boxWidth/runs)
				}
			})
		}
	}
}

// TestFeasible checks the intersection of an interval with the range its
// exact value lies in.
func TestFeasible(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		in, want Interval
		lo, hi   float64
	}{
		{Interval{Low: -3, High: 9}, Interval{Low: 0, High: 9}, 0, inf},
		{Interval{Low: 2, High: 9}, Interval{Low: 2, High: 9}, 0, inf},
		{Interval{Low: -9, High: -2}, Interval{Low: 0, High: 0}, 0, inf},
		{Interval{Low: -9, High: 4}, Interval{Low: -9, High: 0}, -inf, 0},
		{Interval{Low: 3, High: 9}, Interval{Low: 0, High: 0}, -inf, 0},
	} {
		if got := feasible(c.in, c.lo, c.hi); got != c.want {
			t.Errorf("feasible(%v, %v, %v) = %v, want %v", c.in, c.lo, c.hi, got, c.want)
		}
	}
}

// TestAverageAggregator checks AVG(col): two releases, the centred sum
// (L0·L∞·(hi − lo)/2) and the count (L0·L∞); the planned width is a note
// on how it shrinks with the group's size; a released mean and its interval
// lie in the declared range, and for a large group the mean is the noisy
// centred sum over the noisy count, shifted to the midpoint.
func TestAverageAggregator(t *testing.T) {
	p, n := aggPlan(t, "SELECT day, AVG(age) FROM visits GROUP BY day")
	ap := p.Aggregates[0]
	r, mid := (ageHi-ageLo)/2, (ageHi+ageLo)/2
	if got := sensitivities(p); len(got) != 2 || !near(got[0], l0*linf*r) || got[1] != l0*linf {
		t.Fatalf("sensitivities %v, want [%v %v]", got, l0*linf*r, l0*linf)
	}
	if h, note := ap.agg.halfWidth(n, ap, 0.95); h <= 0 || !strings.Contains(note, "for a group of n rows") {
		t.Errorf("half-width %v (%q), want h and a note on h/n", h, note)
	}
	for _, c := range []struct{ sum, count, want float64 }{
		{1e6 * 10, 1e6, mid + 10},
		{0, 1e6, mid},
		{1e6 * 1000, 1e6, ageHi},
		{5, -3, mid},
	} {
		v, iv, err := ap.agg.release(n, &Exact{}, 0, ap, noisyValues(p, c.sum, c.count), 0.95)
		x, _ := v.(float64)
		if err != nil || !near(x, c.want) || iv.Low < ageLo || iv.High > ageHi || x < iv.Low || x > iv.High {
			t.Errorf("sum %v count %v: released %v %v %v, want %v in [%v, %v]", c.sum, c.count, v, iv, err, c.want, ageLo, ageHi)
		}
	}
}
