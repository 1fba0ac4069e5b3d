package reuse

import (
	"math"
	"testing"

	"github.com/dpstat/dpstat/query/dpplan"
)

// TestHalfWidths checks the derived intervals against closed forms: one
// law keeps its own interval; the sum of two iid Laplace noises of scale b
// has P(|S| > x) = e^(−x/b)(2 + x/b)/2, which the characteristic-function
// inversion must reproduce (to 0.5%, the quadrature's margin and the
// discreteness of a scale of 10^6 steps); the Chernoff bound is valid, so
// never narrower; the discrete Laplace's variance is 2p/(1−p)².
func TestHalfWidths(t *testing.T) {
	one := dpplan.NoiseLaw{Kind: dpplan.LawDiscreteLaplace, Step: 1, Scale: 3}
	if h, w := halfWidth([]term{{one, 1, 1}}, 0.95), one.HalfWidth(0.95); h != w {
		t.Errorf("one law: %v, want its own %v", h, w)
	}
	wide := dpplan.NoiseLaw{Kind: dpplan.LawDiscreteLaplace, Step: 1e-6, Scale: 1e6} // b = 1
	two := []term{{wide, 1, 2}}
	tail := func(u float64) float64 { return math.Exp(-u) * (2 + u) / 2 }
	lo, hi := 0.0, 50.0
	for i := 0; i < 100; i++ {
		if mid := (lo + hi) / 2; tail(mid) > 0.05 {
			lo = mid
		} else {
			hi = mid
		}
	}
	got := halfWidth(two, 0.95)
	if math.Abs(got/hi-1) > 0.005 {
		t.Errorf("two Laplace noises: half-width %v, want %v", got, hi)
	}
	if c := chernoffHalfWidth(two, 0.95); c < hi {
		t.Errorf("Chernoff half-width %v below the exact %v", c, hi)
	}
	for _, b := range []float64{0.5, 1, 3, 100} {
		l := dpplan.NoiseLaw{Kind: dpplan.LawDiscreteLaplace, Step: 1, Scale: b}
		p := math.Exp(-1 / b)
		sum, norm := 0.0, 0.0
		for k := -20000.0; k <= 20000; k++ {
			w := math.Pow(p, math.Abs(k))
			sum += k * k * w
			norm += w
		}
		if v := l.Variance(); math.Abs(v/(sum/norm)-1) > 1e-9 {
			t.Errorf("b = %v: variance %v, want %v", b, v, sum/norm)
		}
	}
	g := dpplan.NoiseLaw{Kind: dpplan.LawDiscreteGaussian, Step: 1, Scale: 30}
	if v := g.Variance(); math.Abs(v/900-1) > 1e-6 {
		t.Errorf("discrete Gaussian σ = 30: variance %v, want 900", v)
	}
}
