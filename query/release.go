package query

import (
	"sort"

	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
)

// Release adds noise to exact statistics and post-processes the noisy
// values (AVG, HAVING, ORDER BY, LIMIT) into a Result. It must be called
// only after the cost has been charged; it is separate so that tests can
// re-noise one engine result many times.
func (p *Prepared) Release(exact *dpplan.Exact) (*Result, error) {
	plan, q := p.Plan, p.Plan.Query
	keys := plan.Released()
	if plan.Selection != nil {
		exact = p.Noise.SelectKeys(exact)
		keys = exact.Keys
	}
	if plan.TopK != nil {
		var err error
		if exact, keys, err = p.Noise.SelectTopK(exact, keys); err != nil {
			return nil, err
		}
	}
	values, cis, measured, err := p.Noise.ApplyMeasured(exact, p.Opts.Confidence)
	if err != nil {
		return nil, err
	}
	aggCol := map[int]int{} // output index → aggregate index
	for j, a := range plan.Aggregates {
		aggCol[a.Output] = j
	}
	keyCol := map[string]int{}
	for i, g := range q.GroupBy {
		keyCol[g] = i
	}
	res := &Result{Confidence: p.Opts.Confidence, Cost: p.Noise.Cost, measured: measured}
	for _, o := range q.Outputs {
		res.Columns = append(res.Columns, o.Name)
	}
	for g, key := range keys {
		row := make([]any, len(q.Outputs))
		ci := make([]*dpplan.Interval, len(q.Outputs))
		for i, o := range q.Outputs {
			switch {
			case o.Post != nil:
				continue // below, from the released values
			case o.IsKey():
				row[i] = key[keyCol[o.Key]]
				continue
			}
			j := aggCol[i]
			row[i] = values[g][j]
			iv := cis[g][j]
			ci[i] = &iv
		}
		for i, o := range q.Outputs {
			if o.Post != nil {
				v := dpplan.EvalPost(o.Post, row, ci)
				row[i], ci[i] = v.Value(), v.Interval()
			}
		}
		if q.Having != nil && !evalHaving(q.Having, row) {
			continue
		}
		res.Rows = append(res.Rows, row)
		res.CI = append(res.CI, ci)
	}
	if len(q.OrderBy) > 0 {
		idx := make([]int, len(res.Rows))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool {
			for _, t := range q.OrderBy {
				c := ir.CompareValues(res.Rows[idx[a]][t.Output], res.Rows[idx[b]][t.Output])
				if c != 0 {
					return (c < 0) != t.Desc
				}
			}
			return false
		})
		rows, ci := make([][]any, len(idx)), make([][]*dpplan.Interval, len(idx))
		for i, k := range idx {
			rows[i], ci[i] = res.Rows[k], res.CI[k]
		}
		res.Rows, res.CI = rows, ci
	}
	renderTemporalAggregates(plan, res)
	if q.Offset > 0 {
		off := min(q.Offset, int64(len(res.Rows)))
		res.Rows, res.CI = res.Rows[off:], res.CI[off:]
	}
	if q.Limit >= 0 && q.Limit < int64(len(res.Rows)) {
		res.Rows, res.CI = res.Rows[:q.Limit], res.CI[:q.Limit]
	}
	renderTemporalKeys(plan, res)
	uninformative := uninformativeNotes(plan, res)
	dropHidden(res, q)
	// Mechanisms are listed in release order, which follows the aggregates.
	res.Split = p.Noise.Split()
	res.Notes = plan.Notes()
	if p.Noise.Choice != "" {
		res.Notes = append(res.Notes, p.Noise.Choice)
	}
	if plan.Selection != nil {
		res.Notes = append(res.Notes, p.Noise.DescribeSelection())
	}
	if plan.TopK != nil {
		res.Notes = append(res.Notes, p.Noise.DescribeTopK(plan.Candidates()))
	}
	for _, o := range q.Outputs {
		if o.Post != nil {
			res.Notes = append(res.Notes, dpplan.DescribePost(o, q, p.Opts.Confidence))
		}
	}
	if p.Accuracy != nil {
		res.Notes = append(res.Notes, p.Accuracy.Lines()...)
	}
	res.Notes = append(res.Notes, uninformative...)
	return res, nil
}

// dropHidden removes the hidden outputs (aggregates only a computed output
// reads) from a result, once HAVING, ORDER BY and LIMIT have used them.
func dropHidden(res *Result, q *ir.Query) {
	var keep []int
	for i, o := range q.Outputs {
		if !o.Hidden {
			keep = append(keep, i)
		}
	}
	if len(keep) == len(q.Outputs) {
		return
	}
	cols := make([]string, 0, len(keep))
	for _, i := range keep {
		cols = append(cols, res.Columns[i])
	}
	res.Columns = cols
	for r := range res.Rows {
		row, ci := make([]any, 0, len(keep)), make([]*dpplan.Interval, 0, len(keep))
		for _, i := range keep {
			row, ci = append(row, res.Rows[r][i]), append(ci, res.CI[r][i])
		}
		res.Rows[r], res.CI[r] = row, ci
	}
}

// evalHaving evaluates a HAVING condition on a noisy answer row.
func evalHaving(e ir.Expr, row []any) bool {
	val := func(o ir.Operand) any {
		if o.Kind == ir.OutputRef {
			return row[o.Output]
		}
		return o.Value
	}
	switch x := e.(type) {
	case ir.Compare:
		c := ir.CompareValues(val(x.Left), val(x.Right))
		switch x.Op {
		case "=":
			return c == 0
		case "<>":
			return c != 0
		case "<":
			return c < 0
		case "<=":
			return c <= 0
		case ">":
			return c > 0
		case ">=":
			return c >= 0
		}
	case ir.And:
		for _, a := range x.Args {
			if !evalHaving(a, row) {
				return false
			}
		}
		return true
	case ir.Or:
		for _, a := range x.Args {
			if evalHaving(a, row) {
				return true
			}
		}
		return false
	case ir.Not:
		return !evalHaving(x.Arg, row)
	case ir.In:
		v := val(x.Arg)
		found := false
		for _, w := range x.Values {
			found = found || ir.CompareValues(v, val(w)) == 0
		}
		return found != x.Negate
	case ir.IsNull:
		return (val(x.Arg) == nil) != x.Negate
	case ir.Between:
		v := val(x.Arg)
		in := ir.CompareValues(v, val(x.Low)) >= 0 && ir.CompareValues(v, val(x.High)) <= 0
		return in != x.Negate
	}
	return false
}
