package dpplan

import (
	"math"

	"github.com/dpstat/dpstat/query/ir"
)

// countAgg is COUNT(*) and COUNT(col): one noisy count of the group's rows
// (of its non-NULL values), each row adding 1.
type countAgg struct{}

func init() { register(countAgg{}, ir.CountStar, ir.Count) }

func (countAgg) plan(p *Plan, ap *AggregatePlan, share float64) {
	s := Summand{Kind: RowCount}
	if ap.Aggregate.Func == ir.Count {
		s = Summand{Kind: NonNullCount, Column: ap.Aggregate.Column}
	}
	ap.Releases = []int{p.release(NoisyCount, p.statistic(s), -1, 1, share)}
}

func (countAgg) release(n *Noise, _ *Exact, _ int, ap AggregatePlan, noisy []float64, confidence float64) (any, Interval, error) {
	return noisyCount(n, ap.Releases[0], noisy, confidence)
}

func (countAgg) halfWidth(n *Noise, ap AggregatePlan, confidence float64) (float64, string) {
	return n.Counts[ap.Releases[0]].Interval(confidence), ""
}

func (countAgg) selectingCount(ir.Aggregate, *ir.Table) (int, bool) { return 0, true }

func (countAgg) note(AggregatePlan) string { return "" }

// noisyCount is release i as a count: an integer, with its interval
// intersected with the counts' range [0, ∞).
func noisyCount(n *Noise, i int, noisy []float64, confidence float64) (any, Interval, error) {
	h := n.Counts[i].Interval(confidence)
	return int64(noisy[i]), feasible(Interval{noisy[i] - h, noisy[i] + h}, 0, math.Inf(1)), nil
}
