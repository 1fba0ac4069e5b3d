package dpplan

import (
	"fmt"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/query/ir"
)

// Split lists each aggregate's share and mechanisms.
func (n *Noise) Split() []Share {
	var out []Share
	mi := 0
	for _, a := range n.plan.Aggregates {
		sh := Share{Column: n.plan.Query.Outputs[a.Output].Name, Epsilon: a.Epsilon}
		for range a.Releases {
			sh.Mechanisms = append(sh.Mechanisms, n.Mechanisms[mi])
			mi++
		}
		out = append(out, sh)
	}
	if n.Topk != nil {
		t := n.plan.TopK
		out = append(out, Share{Column: "(most common values)", Epsilon: t.Epsilon,
			Mechanisms: []MechanismInfo{{"permute-and-flip", t.Round, t.Sensitivity, 2 * t.Sensitivity / t.Round}}})
	}
	if n.Sel != nil {
		ks := n.plan.Selection
		if ks.Release >= 0 {
			// The count's noisy value selects: its ε is the count's share.
			out = append(out, Share{Column: "(key selection)", Delta: ks.Delta,
				Mechanisms: []MechanismInfo{{"threshold on the query's count", 0, n.plan.Releases[ks.Release].Sensitivity, n.Sel.M.Scale()}}})
		} else {
			out = append(out, Share{Column: "(key selection)", Epsilon: ks.Epsilon, Delta: ks.Delta,
				Mechanisms: []MechanismInfo{{"geometric threshold", ks.Epsilon, float64(ks.Sensitivity), n.Sel.M.Scale()}}})
		}
	}
	return out
}

// HalfWidth returns the data-independent interval half-width of aggregate
// j, or a note on how it depends on the data.
func (n *Noise) HalfWidth(j int, confidence float64) (float64, string) {
	a := n.plan.Aggregates[j]
	return a.agg.halfWidth(n, a, confidence)
}

func fmtG(x float64) string { return accounting.Note(x) }

// DescribeKeys says how the answer's groups are chosen.
func (p *Plan) DescribeKeys() string {
	if len(p.Query.GroupBy) == 0 {
		return "no GROUP BY: one group, the whole table"
	}
	source := "declared in the catalog"
	for _, b := range p.Query.Buckets {
		if b.Kind == ir.DateBucket || b.Kind == ir.TextBucket {
			source = "computed from the query and the catalog's bounds and value lists"
		}
	}
	out := fmt.Sprintf("public value lists of %s (%s): %d group(s), all released, including empty ones; no data decides which",
		p.Query.KeyNames(), source, len(p.Released()))
	if p.Hidden > 0 {
		out += fmt.Sprintf("; %d more cell(s) hold the rows whose value is NULL or outside the lists: measured with the same noise at no extra cost (every row falls in one cell) and kept for reuse only: never shown on their own, sums of them answer later roll-ups and totals", p.Hidden)
	}
	return out
}
