package dpplan

import (
	"github.com/dpstat/dpstat/query/ir"
)

// distinctAgg is COUNT(DISTINCT col). Of the privacy unit it counts
// people: one person is one distinct unit in each of the at most
// Contribution.Groups groups it touches, whatever its rows. Of any other
// column it counts the distinct values among each group's bounded rows,
// with the sensitivity of COUNT(*), computed by a statement of its own
// (planDistinctValues).
type distinctAgg struct{}

func init() { register(distinctAgg{}, ir.CountDistinct) }

func (distinctAgg) plan(p *Plan, ap *AggregatePlan, share float64) {
	a := ap.Aggregate
	if !p.Table.HasPrivacyUnit() || a.Column != p.Table.PrivacyUnit {
		p.planDistinctValues(ap, share)
		return
	}
	st := p.statistic(Summand{Kind: DistinctUnits, Column: a.Column})
	ap.Releases = []int{p.release(NoisyCount, st, -1, 1, share)}
}

func (distinctAgg) release(n *Noise, _ *Exact, _ int, ap AggregatePlan, noisy []float64, confidence float64) (any, Interval, error) {
	return noisyCount(n, ap.Releases[0], noisy, confidence)
}

func (distinctAgg) halfWidth(n *Noise, ap AggregatePlan, confidence float64) (float64, string) {
	return n.Counts[ap.Releases[0]].Interval(confidence), ""
}

// selectingCount: the distinct people can select keys (each person adds at
// most 1 to a key). The distinct values of another column cannot: the main
// statement does not compute them (HistogramSQL does).
func (distinctAgg) selectingCount(a ir.Aggregate, table *ir.Table) (int, bool) {
	return 0, table.HasPrivacyUnit() && a.Column == table.PrivacyUnit
}

func (distinctAgg) note(AggregatePlan) string { return "" }
