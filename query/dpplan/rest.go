package dpplan

import (
	"slices"

	"github.com/dpstat/dpstat/query/ir"
)

// MeasureRest makes the plan also measure, for each GROUP BY column in
// cols, the rows whose value is NULL or outside the column's declared list:
// hidden cells (Hidden, Rest) whose key holds nil for such a column. A
// GROUP BY releases the listed values only, so without them the released
// cells of a GROUP BY do not add up to the table's total; with them, the
// measurements kept for reuse do, and a roll-up (a coarser GROUP BY, a
// total) is a sum of measured cells.
//
// The hidden cells cost nothing: the plan's cells, hidden or not, are
// disjoint, and each person (one row, Contribution.Groups = 1) falls in
// exactly one of them, so every statistic's sensitivity is the one of a
// single cell, as before. Their noise is drawn like every other cell's,
// and the answer never shows them (Released).
//
// It applies to plans over public value lists whose persons are rows
// (not bounded, no key selection, no top-k, no quantile histogram); for
// any other plan, or a column that is not a plain listed GROUP BY column,
// it does nothing and returns false. The choice depends on the plan only.
func (p *Plan) MeasureRest(cols []string) bool {
	q := p.Query
	if p.Bounded || p.Selection != nil || p.TopK != nil || len(p.Histograms) > 0 || len(p.Statistics) == 0 ||
		p.Contribution.Groups != 1 || p.Hidden > 0 || len(q.GroupBy) == 0 {
		return false
	}
	rest := make([]bool, len(q.GroupBy))
	some := false
	for i, g := range q.GroupBy {
		if !slices.Contains(cols, g) || q.Buckets[g] != nil {
			continue
		}
		if c := p.Table.Column(g); c == nil || len(c.Values) == 0 {
			continue
		}
		rest[i], some = true, true
	}
	if !some {
		return false
	}
	// Every cell of the cross product of the lists, each rest column's
	// list followed by nil; the released cells keep their order, the
	// others follow.
	lists := make([][]any, len(q.GroupBy))
	for i, g := range q.GroupBy {
		lists[i] = p.KeyValues(g)
		if rest[i] {
			lists[i] = append(slices.Clip(lists[i]), nil)
		}
	}
	all, ok := crossProduct(lists)
	if !ok {
		return false
	}
	var hidden [][]any
	for _, k := range all {
		if slices.Contains(k, nil) {
			hidden = append(hidden, k)
		}
	}
	p.Keys = append(slices.Clip(p.Keys), hidden...)
	p.Hidden, p.Rest = len(hidden), rest
	return true
}

// Released returns the groups the answer shows: Keys without the hidden
// cells of MeasureRest.
func (p *Plan) Released() [][]any {
	return p.Keys[:len(p.Keys)-p.Hidden]
}

// RestColumn reports whether GROUP BY column i has hidden cells for the
// rows outside its list (MeasureRest).
func (p *Plan) RestColumn(i int) bool {
	return i < len(p.Rest) && p.Rest[i]
}

// crossProduct lists every key of the cross product of lists, the last
// list varying fastest (one empty key without lists), or false when there
// would be more than ir.MaxGroups: the count is checked before each list
// is multiplied in, so the loop is bounded before it runs.
func crossProduct(lists [][]any) ([][]any, bool) {
	keys := [][]any{{}}
	for _, vals := range lists {
		if len(keys)*len(vals) > ir.MaxGroups {
			return nil, false
		}
		next := make([][]any, 0, len(keys)*len(vals))
		for _, k := range keys {
			for _, v := range vals {
				next = append(next, append(append([]any{}, k...), v))
			}
		}
		keys = next
	}
	return keys, true
}
