package dpplan

import (
	"fmt"
	"math"

	"github.com/dpstat/dpstat/query/ir"
)

// planVariance plans VAR_POP, VAR_SAMP, STDDEV_POP and STDDEV_SAMP from
// three releases sharing the aggregate's ε in thirds: the noisy centred sum
// Σ(x − m), the noisy centred sum of squares Σ((x − m)² − r²/2) (r the
// half-width of the declared range, so each row's summand is within ±r²/2),
// and the noisy count of non-NULL values.
func (p *Plan) planVariance(ap *AggregatePlan, share float64) {
	col := p.Table.Column(ap.Aggregate.Column)
	sm := fixedPointSummand(col)
	sq := squareSummand(col)
	st := p.sumStatistic(sm)
	sqs := p.sumStatistic(sq)
	cnt := p.statistic(Summand{Kind: NonNullCount, Column: col.Name})
	ap.Lower, ap.Upper = sm.LowerValue, sm.UpperValue
	thirds := SplitEpsilon(share, 3)
	ap.Releases = []int{
		p.release(NoisyCentredSum, st, cnt, sm.CentredPerRow(), thirds[0]),
		p.release(NoisyCentredSum, sqs, cnt, sq.CentredPerRow(), thirds[1]),
		p.release(NoisyCount, cnt, -1, 1, thirds[2]),
	}
}

// squareSummand is the clamping stage of a sum of squares: (x − m)² with x
// clamped to the declared bounds, scaled to an integer number of steps of
// 2^Exp with r² below 2^fixedPointBits steps. The engine computes the square
// in floating point and rounds, so the bound has one step of slack.
func squareSummand(col *ir.Column) Summand {
	lo, hi := *col.Lower, *col.Upper
	r := (hi - lo) / 2
	s := Summand{Kind: CentredSquareSum, Column: col.Name, LowerValue: lo, UpperValue: hi}
	r2 := r * r
	if r2 == 0 || math.IsInf(r2, 0) {
		s.Exp = -fixedPointBits
	} else {
		_, e := math.Frexp(r2)
		s.Exp = max(e-fixedPointBits, minGridExp)
	}
	s.Upper = int64(math.Ceil(math.Ldexp(r2, -s.Exp))) + 1
	return s
}

// variance post-processes a variance aggregate's three noisy releases (the
// centred sum s, the centred sum of squares q, the count n, with interval
// half-widths hs, hq, hn, each covering with probability 1 − α/3) into the
// released value and its (1 − α) interval, clamped into the feasible range.
func (p *Plan) variance(a AggregatePlan, s, q, n, hs, hq, hn float64) (float64, Interval) {
	sq := p.Statistics[p.Releases[a.Releases[1]].Stat].Summand
	qmid := math.Ldexp(float64(sq.Lower+sq.Upper)/2, sq.Exp) // the centre of the squares' summands
	r := (a.Upper - a.Lower) / 2
	maxVar := r * r
	sample := a.Aggregate.Func == ir.VarSamp || a.Aggregate.Func == ir.StddevSamp
	root := a.Aggregate.Func == ir.StddevPop || a.Aggregate.Func == ir.StddevSamp
	pop := func(q, s, n float64) float64 { return q/n + qmid - (s/n)*(s/n) }
	feasible := func(n float64) float64 {
		if sample && n > 1 {
			return maxVar * n / (n - 1)
		}
		return maxVar
	}
	finish := func(v, n float64) float64 {
		if sample {
			if n > 1 {
				v *= n / (n - 1)
			}
		}
		v = math.Min(feasible(n), math.Max(0, v))
		if root {
			v = math.Sqrt(v)
		}
		return v
	}
	full := func() Interval {
		hi := maxVar
		if sample {
			hi = 2 * maxVar // the most a sample variance of n ≥ 2 values can be
		}
		if root {
			hi = math.Sqrt(hi)
		}
		return Interval{0, hi}
	}
	var v float64
	if n >= 1 {
		v = finish(pop(q, s, n), n)
	} else {
		v = finish(maxVar/2, 0)
	}
	nLow := n - hn
	if nLow < 1 || (sample && nLow < 2) {
		return v, full()
	}
	nHigh := n + hn
	// The population variance q/n + c − s²/n² is increasing in q and
	// decreasing in |s|; in t = 1/n it is concave, so its minimum over the
	// box is at a corner and its maximum at a corner or at t* = q/(2s²).
	sMinAbs := 0.0
	if s-hs > 0 {
		sMinAbs = s - hs
	} else if s+hs < 0 {
		sMinAbs = -(s + hs)
	}
	sMaxAbs := math.Max(math.Abs(s-hs), math.Abs(s+hs))
	lowV := math.Min(pop(q-hq, sMaxAbs, nLow), pop(q-hq, sMaxAbs, nHigh))
	highV := math.Max(pop(q+hq, sMinAbs, nLow), pop(q+hq, sMinAbs, nHigh))
	if sMinAbs > 0 && q+hq > 0 {
		if t := (q + hq) / (2 * sMinAbs * sMinAbs); t > 1/nHigh && t < 1/nLow {
			highV = math.Max(highV, pop(q+hq, sMinAbs, 1/t))
		}
	}
	lo := finishBound(lowV, nHigh, sample, feasible, root)
	hi := finishBound(highV, nLow, sample, feasible, root)
	if v < lo {
		lo = v
	}
	if v > hi {
		hi = v
	}
	return v, Interval{lo, hi}
}

// FeasibleRange is the range a released value of ap can take whatever the
// data, as its declared bounds allow, when its interval is clipped to it:
// an average's or a quantile's [Lower, Upper]; a variance's [0, r²] (r half
// the declared range: the largest population variance) and a standard
// deviation's [0, r]. An interval that covers it says nothing about the
// data. ok is false for counts and sums, whose intervals are not clipped.
func (ap AggregatePlan) FeasibleRange() (iv Interval, ok bool) {
	switch ap.Aggregate.Func {
	case ir.Avg, ir.Quantile:
		return Interval{ap.Lower, ap.Upper}, true
	case ir.VarPop, ir.VarSamp:
		r := (ap.Upper - ap.Lower) / 2
		return Interval{0, r * r}, true
	case ir.StddevPop, ir.StddevSamp:
		return Interval{0, (ap.Upper - ap.Lower) / 2}, true
	}
	return Interval{}, false
}

// finishBound maps a bound on the population variance to a bound on the
// released statistic: the sample correction n/(n − 1) is largest for the
// smallest count.
func finishBound(x, n float64, sample bool, feasible func(float64) float64, root bool) float64 {
	if sample {
		x *= n / (n - 1)
	}
	x = math.Min(feasible(n), math.Max(0, x))
	if root {
		x = math.Sqrt(x)
	}
	return x
}

// varianceAgg is VAR_POP, VAR_SAMP, STDDEV_POP and STDDEV_SAMP
// (planVariance, variance).
type varianceAgg struct{}

func init() { register(varianceAgg{}, ir.VarPop, ir.VarSamp, ir.StddevPop, ir.StddevSamp) }

func (varianceAgg) plan(p *Plan, ap *AggregatePlan, share float64) { p.planVariance(ap, share) }

func (varianceAgg) release(n *Noise, _ *Exact, _ int, a AggregatePlan, noisy []float64, confidence float64) (any, Interval, error) {
	t3 := 1 - (1-confidence)/3
	si, qi, ni := a.Releases[0], a.Releases[1], a.Releases[2]
	v, iv := n.plan.variance(a, noisy[si], noisy[qi], noisy[ni],
		n.Sums[si].Interval(t3), n.Sums[qi].Interval(t3), n.Counts[ni].Interval(t3))
	return v, iv, nil
}

func (varianceAgg) halfWidth(n *Noise, a AggregatePlan, confidence float64) (float64, string) {
	t3 := 1 - (1-confidence)/3
	hs := n.Sums[a.Releases[0]].Interval(t3)
	hq := n.Sums[a.Releases[1]].Interval(t3)
	hc := n.Counts[a.Releases[2]].Interval(t3)
	return 0, fmt.Sprintf("depends on the group's size n: centred sum ±%s, centred sum of squares ±%s, count ±%s (each at 1 − α/3), combined and clamped to the feasible range",
		fmtG(hs), fmtG(hq), fmtG(hc))
}

func (varianceAgg) selectingCount(ir.Aggregate, *ir.Table) (int, bool) { return 0, false }

func (varianceAgg) note(AggregatePlan) string { return "" }
