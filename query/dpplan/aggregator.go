package dpplan

import (
	"fmt"

	"github.com/dpstat/dpstat/query/ir"
)

// An aggregator is everything the plan knows of one kind of aggregate:
// which exact statistics and noisy releases it needs (and so, through
// Plan.release and the plan's Contribution, its sensitivities), how the
// noisy values of a group become the released value and its interval, and
// what EXPLAIN says of it before any data is read. Each ir.AggFunc has
// one (aggregators, filled by register); a new kind of aggregate is a new aggregator, and no
// other part of the planner has a case for it.
type aggregator interface {
	// plan adds the statistics and releases of aggregate ap to p,
	// spending share of the query's ε.
	plan(p *Plan, ap *AggregatePlan, share float64)
	// release turns the noisy values of ap's releases in group g into the
	// released value and its confidence interval.
	release(n *Noise, ex *Exact, g int, ap AggregatePlan, noisy []float64, confidence float64) (any, Interval, error)
	// halfWidth is the interval's half-width before any data is read, or
	// 0 and a note on how it depends on the data.
	halfWidth(n *Noise, ap AggregatePlan, confidence float64) (float64, string)
	// selectingCount reports whether the aggregate has a noisy count that
	// can select keys (KeySelection), and its index among the aggregate's
	// releases.
	selectingCount(a ir.Aggregate, table *ir.Table) (int, bool)
	// note is EXPLAIN's note on the aggregate, "" for none.
	note(ap AggregatePlan) string
}

// aggregators maps each aggregate function to its aggregator. Each
// aggregator's file registers it (register), so that adding one touches
// its file and the functions' registry (query/ir/aggregates.go) only.
var aggregators = map[ir.AggFunc]aggregator{}

// register makes g the aggregator of the functions fs, at start-up. A
// function registered twice is a programming error.
func register(g aggregator, fs ...ir.AggFunc) {
	for _, f := range fs {
		if _, dup := aggregators[f]; dup {
			panic(fmt.Sprintf("dpplan: two aggregators for %v", f))
		}
		aggregators[f] = g
	}
}

// aggregatorOf returns the aggregator of a's function.
func aggregatorOf(a ir.Aggregate) (aggregator, error) {
	if g, ok := aggregators[a.Func]; ok {
		return g, nil
	}
	return nil, fmt.Errorf("query: no plan for aggregate %v", a)
}
