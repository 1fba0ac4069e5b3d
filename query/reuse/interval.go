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

// halfWidth returns the half-width of the derived value's interval at the
// confidence level. One measurement used as it is keeps its own exact
// interval. A weighted sum of several gets the quantile of the weighted sum
// with each discrete Laplace noise replaced by the continuous Laplace of
// the same scale (whose tail is the heavier one at every whole number of
// steps: P(|K| > k) = 2p^(k+1)/(1+p) ≤ p^k = P(|L| > k)), computed by
// inverting its characteristic function (mixtureHalfWidth), plus the
// rounding bias; when that integral would take too many steps, the
// Chernoff bound (chernoffHalfWidth), valid for every data set.
func halfWidth(ts []term, confidence float64) float64 {
	if len(ts) == 1 && ts[0].n == 1 && ts[0].coef == 1 {
		return ts[0].law.HalfWidth(confidence)
	}
	if len(ts) <= maxTerms {
		if h, ok := mixtureHalfWidth(ts, confidence); ok {
			return h + bias(ts)
		}
	}
	return chernoffHalfWidth(ts, confidence)
}

// mixtureHalfWidth returns the x with P(|Y| ≤ x) = confidence for Y the
// weighted sum of the terms' noises, each discrete Laplace noise taken as
// the continuous Laplace of its scale and each discrete Gaussian as the
// Gaussian of its σ, by the Gil-Pelaez inversion
// P(|Y| ≤ x) = (2/π)·∫_0^∞ sin(x·t)/t · φ(t) dt of the characteristic
// function φ(t) = Π (1 + s²t²)^(−n) · exp(−σ²t²/2), integrated by
// Simpson's rule until φ is below 1e-12. False when it would need more
// than maxSteps points.
func mixtureHalfWidth(ts []term, confidence float64) (float64, bool) {
	const maxSteps = 1 << 17
	type lap struct{ s, n float64 }
	var laps []lap
	gvar, v, smax := 0.0, 0.0, 0.0
	for _, t := range ts {
		if t.coef == 0 || t.n == 0 {
			continue
		}
		sc := math.Abs(t.coef) * t.law.Step * t.law.Scale
		switch t.law.Kind {
		case dpplan.LawDiscreteLaplace:
			laps = append(laps, lap{sc, t.n})
			v += 2 * sc * sc * t.n
			smax = math.Max(smax, sc)
		case dpplan.LawDiscreteGaussian:
			gvar += sc * sc * t.n
			v += sc * sc * t.n
			smax = math.Max(smax, sc)
		default:
			return 0, false
		}
	}
	if !(v > 0) || math.IsInf(v, 0) {
		return 0, false
	}
	// Single noises multiply into one product, whose logarithm is taken
	// once (and whenever it grows large): one logarithm per evaluation
	// instead of one per term.
	phi := func(t float64) float64 {
		t2 := t * t
		l, prod := -gvar*t2/2, 1.0
		for _, c := range laps {
			x := c.s * c.s * t2
			if c.n != 1 {
				l -= c.n * math.Log1p(x)
				continue
			}
			prod *= 1 + x
			if prod > 1e200 {
				l -= math.Log(prod)
				prod = 1
			}
		}
		return math.Exp(l - math.Log(prod))
	}
	// The end of the integral: φ decreases, below 1e-12 from T on.
	T := 1 / math.Sqrt(v)
	for i := 0; i < 200 && phi(T) > 1e-12; i++ {
		T *= 1.5
	}
	// The grid of Simpson's rule has a power-of-two number of steps, at
	// least T/h for h = min(0.25/x, 0.1/smax) (so that sin(x·t) and φ are
	// sampled finely): the bisection below evaluates many x on few grids,
	// and φ, the costly part (one logarithm per term), is computed once
	// per grid point.
	grids := map[int][]float64{}
	cdf := func(x float64) (float64, bool) {
		h := math.Min(0.25/x, 0.1/smax)
		n := 2
		for float64(n) < T/h {
			n *= 2
		}
		if n > maxSteps {
			return 0, false
		}
		h = T / float64(n)
		ph, ok := grids[n]
		if !ok {
			ph = make([]float64, n+1)
			for i := range ph {
				ph[i] = phi(float64(i) * h)
			}
			grids[n] = ph
		}
		f := func(i int) float64 {
			if i == 0 {
				return x
			}
			t := float64(i) * h
			return math.Sin(x*t) / t * ph[i]
		}
		sum := f(0) + f(n)
		for i := 1; i < n; i++ {
			w := 2.0
			if i%2 == 1 {
				w = 4
			}
			sum += w * f(i)
		}
		return 2 / math.Pi * sum * h / 3, true
	}
	// Bisection for P(|Y| ≤ x) ≥ confidence, with a margin of 1e-4 for the
	// quadrature.
	lo, hi := 0.0, 8*math.Sqrt(v)
	for i := 0; i < 8; i++ {
		c, ok := cdf(hi)
		if !ok {
			return 0, false
		}
		if c >= confidence+1e-4 {
			break
		}
		hi *= 2
	}
	for i := 0; i < 40; i++ {
		mid := (lo + hi) / 2
		c, ok := cdf(mid)
		if !ok {
			return 0, false
		}
		if c >= confidence+1e-4 {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}

// chernoffHalfWidth returns h with P(|derived − exact| > h) ≤ 1 −
// confidence by the Chernoff bound P(|Y| > x) ≤ 2·min over s of
// exp(−s·x)·E[exp(s·Y)], with the exact generating functions of the
// discrete Laplace noises (and the bound on the discrete Gaussian's),
// plus the rounding bias. Any s gives a valid bound, so the numerical
// minimization can only widen the interval; the bound holds for every
// data set.
func chernoffHalfWidth(ts []term, confidence float64) float64 {
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
