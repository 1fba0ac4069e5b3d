package dpplan

import (
	"fmt"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/mechanism"
	"github.com/dpstat/dpstat/query/ir"
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

// planTopK sets up the selection of the most common keys with share
// epsilon.
func (p *Plan) planTopK(epsilon float64) {
	st := p.statistic(Summand{Kind: RowCount})
	p.TopK = &TopKPlan{K: p.Query.TopK, Epsilon: epsilon, Round: SplitEpsilon(epsilon, int(p.Query.TopK))[0],
		Stat: st, Sensitivity: float64(p.Contribution.KeyRows())}
}

// newTopK calibrates the rounds' mechanism and returns the cost of all
// rounds.
func newTopK(t *TopKPlan, src random.Source) (*mechanism.ReportNoisyMax, accounting.Cost, error) {
	m, err := mechanism.NewReportNoisyMax(mechanism.NoisyMaxOptions{Epsilon: t.Round, Sensitivity: t.Sensitivity,
		Noise: mechanism.ExponentialNoise, Source: src})
	if err != nil {
		return nil, accounting.Cost{}, ir.Refuse("most common values: %v", err)
	}
	costs := make([]accounting.Cost, t.K)
	for i := range costs {
		costs[i] = m.Cost()
	}
	c, err := accounting.Sequential(costs...)
	if err != nil {
		return nil, accounting.Cost{}, ir.Refuse("%v", err)
	}
	return m, c, nil
}

// SelectTopK keeps the K keys chosen by peeling, in the order chosen.
func (n *Noise) SelectTopK(ex *Exact, keys [][]any) (*Exact, [][]any, error) {
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
		i, err := n.Topk.Select(scores)
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

// DescribeTopK explains the most-common-values selection.
func (n *Noise) DescribeTopK(candidates string) string {
	t := n.plan.TopK
	order := "the keys are released in the order chosen"
	if len(n.plan.Query.OrderBy) > 0 {
		order = "the rows are sorted by their released counts, as ORDER BY asks"
	}
	return fmt.Sprintf("most common values of %s: %d round(s) of report-noisy-max with exponential noise (permute-and-flip), ε=%s each (%s in all), score sensitivity %s, over %s; %s",
		n.plan.Query.KeyNames(), t.K, accounting.Note(t.Round), accounting.Note(t.Epsilon), accounting.Note(t.Sensitivity), candidates, order)
}

// Candidates says which keys a most-common-values query chooses among.
func (p *Plan) Candidates() string {
	if p.Selection != nil {
		return "the keys released by DP key selection"
	}
	return fmt.Sprintf("the %d keys of the public value lists", len(p.Released()))
}
