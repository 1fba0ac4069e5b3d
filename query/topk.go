package query

import (
	"fmt"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/mechanism"
	"github.com/dpstat/dpstat/random"
)

// TopKPlan answers the most common values: K rounds of report-noisy-max
// with exponential noise (permute-and-flip), each over the keys not chosen
// yet, scoring each key by its row count after bounding. One person changes
// each key's score by at most RowsPerGroup (in up to Groups keys, which does
// not matter to report-noisy-max: its sensitivity is the largest change of
// any one score), so each round is Epsilon/K-DP and the K rounds compose to
// Epsilon.
type TopKPlan struct {
	K int64
	// Epsilon is the selection's share of the query's ε.
	Epsilon float64
	// Round is each round's ε.
	Round float64
	// Stat indexes Plan.Statistics: the per-key row count.
	Stat int
	// Sensitivity is the largest change of one key's score.
	Sensitivity float64
}

// topKForm recognizes SELECT keys [, COUNT(*)] … GROUP BY keys ORDER BY
// COUNT(*) DESC LIMIT k and returns k, or 0 for any other query.
func (p *parser) topKForm(s *pg.SelectStmt) (int64, error) {
	if len(s.SortClause) != 1 || s.LimitCount == nil || s.LimitOffset != nil || s.HavingClause != nil || len(p.q.GroupBy) == 0 {
		return 0, nil
	}
	counts := 0
	for _, o := range p.q.Outputs {
		if o.Post != nil {
			return 0, nil
		}
		if o.Agg != nil {
			if o.Agg.Func != CountStar {
				return 0, nil
			}
			counts++
		}
	}
	if counts > 1 {
		return 0, nil
	}
	sb := s.SortClause[0].GetSortBy()
	if sb == nil || sb.SortbyDir != pg.SortByDir_SORTBY_DESC {
		return 0, nil
	}
	isCount := false
	if fc := sb.Node.GetFuncCall(); fc != nil && funcName(fc) == "count" && fc.AggFilter == nil && !fc.AggDistinct && fc.Over == nil {
		if fc.AggStar {
			isCount = true
		} else if len(fc.Args) == 1 {
			if c := fc.Args[0].GetAConst(); c != nil && !c.Isnull {
				isCount = true
			}
		}
	} else if counts == 1 {
		if t, err := p.orderTerm(s.SortClause[0]); err == nil {
			o := p.q.Outputs[t.Output]
			isCount = o.Agg != nil && o.Agg.Func == CountStar
		}
	}
	if !isCount {
		return 0, nil
	}
	k, null, err := nonNegativeInt(s.LimitCount, "LIMIT")
	if err != nil || null {
		return 0, err
	}
	if k < 1 {
		return 0, refuse("LIMIT 0 asks for no most common values; use LIMIT k with k ≥ 1")
	}
	if k > MaxTopK {
		return 0, refuse("LIMIT %d: the most common values are chosen one round at a time, each with a share of ε; want at most %d", k, MaxTopK)
	}
	return k, nil
}

// MaxTopK is the most keys a most-common-values query may choose.
const MaxTopK = 1000

// planTopK sets up the selection of the most common keys with share
// epsilon.
func (p *Plan) planTopK(epsilon float64) {
	st := p.statistic(Summand{Kind: RowCount})
	p.TopK = &TopKPlan{K: p.Query.TopK, Epsilon: epsilon, Round: splitEpsilon(epsilon, int(p.Query.TopK))[0],
		Stat: st, Sensitivity: float64(p.Contribution.People() * p.Contribution.RowsPerGroup)}
}

// newTopK calibrates the rounds' mechanism and returns the cost of all
// rounds.
func newTopK(t *TopKPlan, src random.Source) (*mechanism.ReportNoisyMax, accounting.Cost, error) {
	m, err := mechanism.NewReportNoisyMax(mechanism.NoisyMaxOptions{Epsilon: t.Round, Sensitivity: t.Sensitivity,
		Noise: mechanism.ExponentialNoise, Source: src})
	if err != nil {
		return nil, accounting.Cost{}, refuse("most common values: %v", err)
	}
	costs := make([]accounting.Cost, t.K)
	for i := range costs {
		costs[i] = m.Cost()
	}
	c, err := accounting.Sequential(costs...)
	if err != nil {
		return nil, accounting.Cost{}, refuse("%v", err)
	}
	return m, c, nil
}

// selectTopK keeps the K keys chosen by peeling, in the order chosen.
func (n *Noise) selectTopK(ex *Exact, keys [][]any) (*Exact, [][]any, error) {
	t := n.plan.TopK
	remaining := make([]int, len(ex.Stats))
	for i := range remaining {
		remaining[i] = i
	}
	out := &Exact{Hist: make([][][]int64, len(ex.Hist))}
	var outKeys [][]any
	for round := int64(0); round < t.K && len(remaining) > 0; round++ {
		scores := make([]float64, len(remaining))
		for i, g := range remaining {
			scores[i] = float64(saturatedInt64(ex.Stats[g][t.Stat]))
		}
		i, err := n.topk.Select(scores)
		if err != nil {
			return nil, nil, err
		}
		g := remaining[i]
		remaining = append(remaining[:i], remaining[i+1:]...)
		outKeys = append(outKeys, keys[g])
		out.Stats = append(out.Stats, ex.Stats[g])
		for h := range ex.Hist {
			var c []int64
			if ex.Hist[h] != nil {
				c = ex.Hist[h][g]
			}
			out.Hist[h] = append(out.Hist[h], c)
		}
	}
	out.Keys = outKeys
	return out, outKeys, nil
}

// describeTopK explains the most-common-values selection.
func (n *Noise) describeTopK(candidates string) string {
	t := n.plan.TopK
	return fmt.Sprintf("most common values of %s: %d round(s) of report-noisy-max with exponential noise (permute-and-flip), ε=%g each (%g in all), score sensitivity %g, over %s; the keys are released in the order chosen",
		n.plan.Query.keyNames(), t.K, t.Round, t.Epsilon, t.Sensitivity, candidates)
}

// candidates says which keys a most-common-values query chooses among.
func (p *Plan) candidates() string {
	if p.Selection != nil {
		return "the keys released by DP key selection"
	}
	return fmt.Sprintf("the %d keys of the public value lists", len(p.Keys))
}
