package query

import (
	"math"

	"github.com/dpstat/dpstat/mechanism"
)

// The interval of an AVG released with Laplace noise on its centred sum and
// geometric (discrete Laplace) noise on its count is found by inverting a
// test whose statistic has a known distribution (Fieller's construction),
// instead of combining the sum's and the count's own intervals.
//
// With S the exact centred sum, N ≥ 1 the exact count and d = S/N the true
// centred mean, the noisy values are c = S + X and n = N + Y, and for any
// candidate d′ the quantity c − d′·n equals X − d′·Y when d′ = d: a sum of
// the two mechanisms' noises whose law depends on d′ only. The interval is
// the hull of the candidates d′ in [−r, r] (r the half-width of the declared
// range) that a level-α test on |c − d′·n| does not reject; it covers the
// true mean with probability at least 1 − α for every group size (the hull
// search could only miss a kept piece narrower than a scan step beyond the
// outermost kept point), where the box of the two (1 − α/2) intervals
// covered about 99% of the time at 95% and was wider than needed. The box
// is still used with Gaussian noise and for an AVG whose own count selected
// its key (see Noise.Apply).

// averageScanPoints is the number of equal steps in which the hull search
// scans [−r, r] before refining its two ends.
const averageScanPoints = 16

// averageRefineSteps bounds the steps that refine each end of the hull
// (Illinois regula falsi, which keeps a bracket and usually needs 6 to 10).
const averageRefineSteps = 60

// exactAverageNoise returns the scales of an AVG's two releases when they
// are Laplace (sum) and geometric (count) mechanisms: the sum's scale b and
// grid step g, the count's scale bn. ok is false for other noise (the
// Gaussian plan), which keeps the box interval.
func (n *Noise) exactAverageNoise(sumRelease, countRelease int) (b, g, bn float64, ok bool) {
	s, ok1 := n.sums[sumRelease].(*mechanism.Laplace)
	c, ok2 := n.counts[countRelease].(*mechanism.Geometric)
	if !ok1 || !ok2 {
		return 0, 0, 0, false
	}
	return s.Scale(), s.Granularity(), c.Scale(), true
}

// averageExact returns the released mean of a noisy centred sum c and noisy
// count n (as average does) and its (1 − alpha) interval by test inversion:
// b is the sum's Laplace scale, g its grid step, bn the count's discrete
// Laplace scale, [lo, hi] the declared range.
func averageExact(c, n, b, g, bn, alpha, lo, hi float64) (float64, Interval) {
	mid := lo + (hi-lo)/2
	r := (hi - lo) / 2
	v := mid
	if n > 0 {
		v = math.Min(hi, math.Max(lo, mid+c/n))
	}
	if r == 0 {
		return v, Interval{lo, hi}
	}
	// score is the p-value of the test of the centred mean d minus alpha:
	// the test keeps d when it is ≥ 0. The p-value is that of |c − d·n|
	// under the law of |X − d·Y|, with two grid steps of slack for the
	// rounding of S onto the grid and the grid of X (see averagePValue).
	mix := newLaplaceMix(b, bn)
	score := func(d float64) float64 {
		return mix.pValue(math.Abs(c-d*n)-2*g, math.Abs(d)) - alpha
	}
	step := 2 * r / averageScanPoints
	first, last := -1, -1
	var firstScore, lastScore float64
	for i := 0; i <= averageScanPoints; i++ {
		if f := score(-r + float64(i)*step); f >= 0 {
			if first < 0 {
				first, firstScore = i, f
			}
			last, lastScore = i, f
		}
	}
	// The point estimate, when inside the range, is always kept (its
	// statistic is 0); it anchors the search when the kept set lies
	// between two scan points.
	lowD, highD := math.Inf(1), math.Inf(-1)
	var lowScore, highScore float64
	if n > 0 && math.Abs(c/n) <= r {
		lowD, highD = c/n, c/n
		lowScore, highScore = score(c/n), score(c/n)
	}
	if first >= 0 {
		if d := -r + float64(first)*step; d < lowD {
			lowD, lowScore = d, firstScore
		}
		if d := -r + float64(last)*step; d > highD {
			highD, highScore = d, lastScore
		}
	}
	if math.IsInf(lowD, 1) {
		// Nothing in the range passes the test (probability at most alpha
		// when the noise is as modelled): the interval is the estimate.
		return v, Interval{v, v}
	}
	// Refine each end between the kept point and the rejected point beyond
	// it (the scan point next to it, or the range's end).
	if lowD > -r {
		out := math.Max(-r, -r+math.Floor((lowD+r)/step-1e-9)*step)
		if f := score(out); f >= 0 {
			lowD = out
		} else {
			lowD = refineEnd(score, lowD, lowScore, out, f, 1e-9*r)
		}
	}
	if highD < r {
		out := math.Min(r, -r+math.Ceil((highD+r)/step+1e-9)*step)
		if f := score(out); f >= 0 {
			highD = out
		} else {
			highD = refineEnd(score, highD, highScore, out, f, 1e-9*r)
		}
	}
	iv := Interval{math.Max(lo, mid+lowD), math.Min(hi, mid+highD)}
	iv.Low, iv.High = math.Min(iv.Low, v), math.Max(iv.High, v)
	return v, iv
}

// refineEnd finds where score changes sign between in (score fin ≥ 0)
// and out (score fout < 0) by the Illinois variant of regula falsi, to
// within tol, and returns the end of the final bracket on out's side: the
// hull is never smaller than the kept set by more than tol.
func refineEnd(score func(float64) float64, in, fin, out, fout, tol float64) float64 {
	side := 0
	for range averageRefineSteps {
		if math.Abs(out-in) <= tol {
			break
		}
		x := (in*fout - out*fin) / (fout - fin)
		if !(x > math.Min(in, out) && x < math.Max(in, out)) {
			x = (in + out) / 2
		}
		if f := score(x); f >= 0 {
			in, fin = x, f
			if side == 1 {
				fout /= 2
			}
			side = 1
		} else {
			out, fout = x, f
			if side == -1 {
				fin /= 2
			}
			side = -1
		}
	}
	return out
}

// averagePValue returns an upper bound on P(|X + mu·Y| ≥ t) for the noise
// of an AVG: X the sum's noise, Laplace of scale b released on a grid, and
// Y the count's discrete Laplace noise of scale bn (P(y) ∝ exp(−|y|/bn)),
// independent, mu ≥ 0. The caller subtracts two grid steps g from t: the
// exact sum is rounded to the grid (|error| ≤ g/2) and the grid's discrete
// Laplace tail P(X ≥ s) is at most the continuous one at s − 3g/2, so the
// continuous-Laplace value at t − 2g bounds the released noise's tail. The
// value is computed in closed form (geometric series over y).
func averagePValue(t, mu, b, bn float64) float64 {
	return newLaplaceMix(b, bn).pValue(t, mu)
}

// laplaceMix holds what laplaceMixTail computes once per pair of scales.
type laplaceMix struct {
	b, bn         float64
	la, c0, inv1a float64 // ln a, (1 − a)/(1 + a), 1/(1 − a)
}

func newLaplaceMix(b, bn float64) laplaceMix {
	m := laplaceMix{b: b, bn: bn}
	if bn > 0 {
		m.la = -1 / bn
		a := math.Exp(m.la)
		m.inv1a = 1 / -math.Expm1(m.la)
		m.c0 = -math.Expm1(m.la) / (1 + a)
	}
	return m
}

// pValue is averagePValue for the mix's scales.
func (m laplaceMix) pValue(t, mu float64) float64 {
	if t <= 0 || math.IsNaN(t) {
		return 1
	}
	p := 2 * m.tail(t, mu)
	if math.IsNaN(p) || p > 1 {
		return 1
	}
	return math.Max(0, p)
}

// laplaceMixTail returns P(X + mu·Y > t) for t ≥ 0, mu ≥ 0, X continuous
// Laplace of scale b and Y discrete Laplace of scale bn, independent.
//
// With a = e^(−1/bn), P(Y = k) = c0·a^|k|, c0 = (1 − a)/(1 + a), and
// K = ⌊t/mu⌋: for k ≤ K the Laplace tail is ½e^(−(t−mu·k)/b), for k > K it
// is 1 − ½e^((t−mu·k)/b), and each part is a geometric series.
func laplaceMixTail(t, mu, b, bn float64) float64 {
	return newLaplaceMix(b, bn).tail(t, mu)
}

// tail is laplaceMixTail for the mix's scales.
func (m laplaceMix) tail(t, mu float64) float64 {
	b := m.b
	if mu == 0 || m.bn == 0 {
		return 0.5 * math.Exp(-t/b)
	}
	la, c0 := m.la, m.c0
	lnBeta := la - mu/b  // ln(a·e^(−mu/b)) < 0
	lnGamma := la + mu/b // ln(a·e^(mu/b))
	et := math.Exp(-t / b)
	k := math.Floor(t / mu)
	d := mu*(k+1) - t // in (0, mu]
	inv1b := 1 / -math.Expm1(lnBeta)
	// k < 0: Σ_{j≥1} a^j·½e^(−(t+mu·j)/b).
	total := 0.5 * c0 * et * math.Exp(lnBeta) * inv1b
	// 0 ≤ k ≤ K: ½·e^(−t/b)·Σ γ^k.
	switch {
	case lnGamma < 0:
		total += 0.5 * c0 * et * -math.Expm1((k+1)*lnGamma) / -math.Expm1(lnGamma)
	case lnGamma == 0:
		total += 0.5 * c0 * et * (k + 1)
	default:
		// e^(−t/b)·γ^(K+1) = exp((K+1)·ln a + d/b), without overflow.
		total += 0.5 * c0 * (math.Exp((k+1)*la+d/b) - et) / math.Expm1(lnGamma)
	}
	// k > K: Σ a^k·(1 − ½e^((t−mu·k)/b)).
	if aK := math.Exp((k + 1) * la); aK > 0 {
		total += c0 * aK * (m.inv1a - 0.5*math.Exp(-d/b)*inv1b)
	}
	return total
}

// averageQuantile returns the smallest t with averagePValue(t, mu, b, bn)
// ≤ alpha (by bisection): the half-width, in centred-sum units, that the
// test allows at centred mean mu. EXPLAIN uses it to describe the interval.
func averageQuantile(mu, b, bn, alpha float64) float64 {
	lo, hi := 0.0, b
	for averagePValue(hi, mu, b, bn) > alpha && hi < math.MaxFloat64/4 {
		lo, hi = hi, 2*hi
	}
	for range 60 {
		m := (lo + hi) / 2
		if averagePValue(m, mu, b, bn) > alpha {
			lo = m
		} else {
			hi = m
		}
	}
	return hi
}
