package reuse

import (
	"math"

	"github.com/dpstat/dpstat/query/dpplan"
)

// term is n independent noises of one law, each weighted by coef, in a
// derived value.
type term struct {
	law  dpplan.NoiseLaw
	coef float64
	n    float64
}

// variance returns the variance of the derived value's noise.
func variance(ts []term) float64 {
	v := 0.0
	for _, t := range ts {
		v += t.n * t.coef * t.coef * t.law.Variance()
	}
	return v
}

// bias bounds the derived value's deterministic rounding error.
func bias(ts []term) float64 {
	b := 0.0
	for _, t := range ts {
		b += t.n * math.Abs(t.coef) * t.law.Bias
	}
	return b
}

// halfWidth returns h with P(|derived − exact| > h) ≤ 1 − confidence. One
// measurement used as it is keeps its own exact interval; a weighted sum
// of several gets the Chernoff bound P(|Y| > x) ≤ 2·min over s of
// exp(−s·x)·E[exp(s·Y)], with the exact generating functions of the
// discrete Laplace noises (and the bound on the discrete Gaussian's),
// plus the rounding bias. Any s gives a valid bound, so the numerical
// minimization can only widen the interval; the bound holds for every
// data set.
func halfWidth(ts []term, confidence float64) float64 {
	if len(ts) == 1 && ts[0].n == 1 && ts[0].coef == 1 {
		return ts[0].law.HalfWidth(confidence)
	}
	alpha := 1 - confidence
	if !(alpha > 0 && alpha < 1) {
		return math.Inf(1)
	}
	v := variance(ts)
	if !(v > 0) || math.IsInf(v, 0) {
		return bias(ts)
	}
	smax := math.Inf(1)
	for _, t := range ts {
		if t.coef != 0 {
			smax = math.Min(smax, t.law.MaxT()/math.Abs(t.coef))
		}
	}
	logK := func(s float64) float64 {
		k := 0.0
		for _, t := range ts {
			k += t.n * t.law.LogMGF(t.coef*s)
		}
		return k
	}
	target := math.Log(alpha / 2)
	// ok(x): the Chernoff bound at x is at most α/2 per side.
	ok := func(x float64) bool {
		// The minimizer lies below x/v (the log-MGF is at least v·s²/2
		// with a derivative at least v·s), and below smax.
		lo, hi := 0.0, math.Min(x/v, smax*(1-1e-9))
		best := math.Inf(1)
		const phi = 0.6180339887498949
		a, b := hi-phi*(hi-lo), lo+phi*(hi-lo)
		fa, fb := logK(a)-a*x, logK(b)-b*x
		for i := 0; i < 80; i++ {
			if fa < fb {
				hi, b, fb = b, a, fa
				a = hi - phi*(hi-lo)
				fa = logK(a) - a*x
			} else {
				lo, a, fa = a, b, fb
				b = lo + phi*(hi-lo)
				fb = logK(b) - b*x
			}
			best = math.Min(best, math.Min(fa, fb))
			if best <= target {
				return true
			}
		}
		return best <= target
	}
	hi := math.Sqrt(v)
	for i := 0; i < 64 && !ok(hi); i++ {
		hi *= 2
	}
	lo := 0.0
	for i := 0; i < 50; i++ {
		mid := (lo + hi) / 2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi + bias(ts)
}
