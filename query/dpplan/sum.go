package dpplan

import (
	"fmt"
	"math"

	"github.com/dpstat/dpstat/query/ir"
)

// sumAgg is SUM(col): one noisy exact sum of the values clamped to the
// relation's bounds, on the column's grid (fixedPointSummand); a row adds
// at most the larger bound's magnitude.
type sumAgg struct{}

func init() { register(sumAgg{}, ir.Sum) }

func (sumAgg) plan(p *Plan, ap *AggregatePlan, share float64) {
	sm := fixedPointSummand(p.Table.Column(ap.Aggregate.Column))
	st := p.sumStatistic(sm)
	ap.Lower, ap.Upper = sm.LowerValue, sm.UpperValue
	ap.Releases = []int{p.release(NoisySum, st, -1, sm.PerRow(), share)}
}

func (sumAgg) release(n *Noise, _ *Exact, _ int, ap AggregatePlan, noisy []float64, confidence float64) (any, Interval, error) {
	i := ap.Releases[0]
	h := n.Sums[i].Interval(confidence)
	ci := Interval{noisy[i] - h, noisy[i] + h}
	if ap.Lower >= 0 {
		ci = feasible(ci, 0, math.Inf(1))
	} else if ap.Upper <= 0 {
		ci = feasible(ci, math.Inf(-1), 0)
	}
	return noisy[i], ci, nil
}

func (sumAgg) halfWidth(n *Noise, ap AggregatePlan, confidence float64) (float64, string) {
	return n.Sums[ap.Releases[0]].Interval(confidence), ""
}

func (sumAgg) selectingCount(ir.Aggregate, *ir.Table) (int, bool) { return 0, false }

func (sumAgg) note(ap AggregatePlan) string {
	return fmt.Sprintf("%s: values clamped to [%g, %g], missing values excluded", ap.Aggregate, ap.Lower, ap.Upper)
}
