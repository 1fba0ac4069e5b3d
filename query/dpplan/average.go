package dpplan

import (
	"fmt"
	"math"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/mechanism"
	"github.com/dpstat/dpstat/query/ir"
)

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
	s, ok1 := n.Sums[sumRelease].(*mechanism.Laplace)
	c, ok2 := n.Counts[countRelease].(*mechanism.Geometric)
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

// laplaceMix holds what LaplaceMixTail computes once per pair of scales.
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

// LaplaceMixTail returns P(X + mu·Y > t) for t ≥ 0, mu ≥ 0, X continuous
// Laplace of scale b and Y discrete Laplace of scale bn, independent.
//
// With a = e^(−1/bn), P(Y = k) = c0·a^|k|, c0 = (1 − a)/(1 + a), and
// K = ⌊t/mu⌋: for k ≤ K the Laplace tail is ½e^(−(t−mu·k)/b), for k > K it
// is 1 − ½e^((t−mu·k)/b), and each part is a geometric series.
func LaplaceMixTail(t, mu, b, bn float64) float64 {
	return newLaplaceMix(b, bn).tail(t, mu)
}

// tail is LaplaceMixTail for the mix's scales.
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

// avgAgg is AVG(col): a noisy centred sum over a noisy count, each with
// half of the aggregate's ε, post-processed into a mean clamped to the
// relation's bounds. Its count can select keys.
type avgAgg struct{}

func init() { register(avgAgg{}, ir.Avg) }

func (avgAgg) plan(p *Plan, ap *AggregatePlan, share float64) {
	a := ap.Aggregate
	sm := fixedPointSummand(p.Table.Column(a.Column))
	st := p.sumStatistic(sm)
	cnt := p.statistic(Summand{Kind: NonNullCount, Column: a.Column})
	ap.Lower, ap.Upper = sm.LowerValue, sm.UpperValue
	ap.Releases = []int{
		p.release(NoisyCentredSum, st, cnt, sm.CentredPerRow(), share/2),
		p.release(NoisyCount, cnt, -1, 1, share/2),
	}
}

func (avgAgg) release(n *Noise, ex *Exact, _ int, ap AggregatePlan, noisy []float64, confidence float64) (any, Interval, error) {
	si, ci := ap.Releases[0], ap.Releases[1]
	// A count that selected its key is released only above the threshold,
	// so its noise no longer has the law the test inversion assumes: such
	// an AVG keeps the box interval.
	selected := n.plan.Selection != nil && n.plan.Selection.Release == ci && ex.Selected != nil
	if b, gr, bn, ok := n.exactAverageNoise(si, ci); ok && !selected {
		v, iv := averageExact(noisy[si], noisy[ci], b, gr, bn, 1-confidence, ap.Lower, ap.Upper)
		return v, iv, nil
	}
	tail := 1 - (1-confidence)/2 // each half gets half the miss probability
	v, iv := average(noisy[si], noisy[ci], n.Sums[si].Interval(tail), n.Counts[ci].Interval(tail), ap.Lower, ap.Upper)
	return v, iv, nil
}

func (avgAgg) halfWidth(n *Noise, a AggregatePlan, confidence float64) (float64, string) {
	selected := n.plan.Selection != nil && n.plan.Selection.Release == a.Releases[1]
	if b, g, bn, ok := n.exactAverageNoise(a.Releases[0], a.Releases[1]); ok && !selected {
		r := (a.Upper - a.Lower) / 2
		h0 := averageQuantile(0, b, bn, 1-confidence) + 2*g
		h1 := averageQuantile(r, b, bn, 1-confidence) + 2*g
		return h0, fmt.Sprintf("for a group of n rows about ±h/n, h from %s (a mean at the midpoint) to %s (a mean at an end of the range): the test-inversion interval of the noisy sum over the noisy count, never wider than [%g, %g]; half_width is h at the midpoint",
			fmtG(h0), fmtG(h1), a.Lower, a.Upper)
	}
	tail := 1 - (1-confidence)/2
	hs := n.Sums[a.Releases[0]].Interval(tail)
	hc := n.Counts[a.Releases[1]].Interval(tail)
	return hs, fmt.Sprintf("for a group of n rows about ±(%s + %s·%s)/n, never wider than [%g, %g]; half_width is the centred sum's",
		fmtG(hs), fmtG((a.Upper-a.Lower)/2), fmtG(hc), a.Lower, a.Upper)
}

// selectingCount: AVG's count (a key only one person has counts at most
// L∞ of their rows).
func (avgAgg) selectingCount(ir.Aggregate, *ir.Table) (int, bool) { return 1, true }

func (avgAgg) note(ap AggregatePlan) string {
	return fmt.Sprintf("%s: noisy centred sum / noisy count, values clamped to [%g, %g]; the midpoint %s is reported where the noisy count is not positive",
		ap.Aggregate, ap.Lower, ap.Upper, accounting.Num(ap.Lower+(ap.Upper-ap.Lower)/2))
}
