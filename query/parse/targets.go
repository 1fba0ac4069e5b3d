package parse

import (
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

func (p *parser) groupKey(n *pg.Node, targets []*pg.Node) (string, error) {
	if c := n.GetAConst(); c != nil {
		// GROUP BY 1 refers to the first select-list item.
		iv, ok := c.Val.(*pg.A_Const_Ival)
		if !ok || iv.Ival.Ival < 1 || int(iv.Ival.Ival) > len(targets) {
			return "", ir.Refuse("GROUP BY position must be a select-list position from 1 to %d", len(targets))
		}
		rt := targets[iv.Ival.Ival-1].GetResTarget()
		if rt == nil || (rt.Val.GetColumnRef() == nil && !isBucketExpr(rt.Val)) {
			return "", ir.Refuse("GROUP BY %d does not refer to a column or a computed bin", iv.Ival.Ival)
		}
		n = rt.Val
	}
	if cr := n.GetColumnRef(); cr != nil && len(cr.Fields) == 1 && cr.Fields[0].GetString_() != nil {
		// GROUP BY alias of a computed bin in the select list.
		name := cr.Fields[0].GetString_().Sval
		if p.table.Column(name) == nil {
			for _, t := range targets {
				if rt := t.GetResTarget(); rt != nil && rt.Name == name && isBucketExpr(rt.Val) {
					n = rt.Val
				}
			}
		}
	}
	if isBucketExpr(n) {
		b, err := p.bucket(n)
		if err != nil {
			return "", err
		}
		return p.addBucket(b)
	}
	cr := n.GetColumnRef()
	if cr == nil {
		if n.GetGroupingSet() != nil {
			return "", ir.Refuse("GROUPING SETS, ROLLUP and CUBE are not supported yet")
		}
		return "", ir.Refuse("GROUP BY expressions other than width_bucket(col, lo, hi, n), floor(col / w) * w and CASE bins are not supported")
	}
	col, err := p.columnRef(cr)
	if err != nil {
		return "", err
	}
	// A column without a public value list is grouped by DP key selection
	// (planned with the query's δ).
	return col.Name, nil
}

func (p *parser) target(n *pg.Node) error {
	rt := n.GetResTarget()
	if rt == nil || rt.Val == nil {
		return ir.Refuse("unsupported select-list item")
	}
	if cr := rt.Val.GetColumnRef(); cr != nil {
		col, err := p.columnRef(cr)
		if err != nil {
			return err
		}
		grouped := false
		for _, g := range p.q.GroupBy {
			grouped = grouped || g == col.Name
		}
		if !grouped {
			return ir.Refuse("column %s is neither aggregated nor in GROUP BY; dpstat releases aggregates only", col.Name)
		}
		name := rt.Name
		if name == "" {
			name = col.Name
		}
		p.q.Outputs = append(p.q.Outputs, ir.Output{Name: name, Key: col.Name})
		return nil
	}
	if fc := rt.Val.GetFuncCall(); (containsAggregate(rt.Val) && (fc == nil || !ir.IsAggregate(funcName(fc)))) || isConstantItem(rt.Val) {
		// An expression over released values: post-processing.
		e, err := p.post(rt.Val)
		if err != nil {
			return err
		}
		name := rt.Name
		if name == "" {
			name = "?column?"
			if fc != nil {
				name = funcName(fc)
			}
			base := name
			for i := 2; p.outputNamed(name); i++ {
				name = base + "_" + strconv.Itoa(i)
			}
		}
		p.q.Outputs = append(p.q.Outputs, ir.Output{Name: name, Post: e})
		return nil
	}
	if isBucketExpr(rt.Val) {
		key, err := p.bucketOutput(rt.Val)
		if err != nil {
			return err
		}
		name := rt.Name
		if name == "" {
			name = "bin"
			if fc := rt.Val.GetFuncCall(); fc != nil && (ir.IsDateFunc(funcName(fc)) || isTextFunc(rt.Val)) {
				name = funcName(fc)
				for i := 2; p.outputNamed(name); i++ {
					name = funcName(fc) + "_" + strconv.Itoa(i)
				}
			}
		}
		p.q.Outputs = append(p.q.Outputs, ir.Output{Name: name, Key: key})
		return nil
	}
	fc := rt.Val.GetFuncCall()
	if fc == nil {
		if rt.Val.GetSubLink() != nil {
			return ir.Refuse("a subquery in WHERE or in the select list is not supported: subqueries are read in FROM or WITH, e.g. WITH s AS (SELECT … FROM t WHERE …) SELECT COUNT(*) FROM s")
		}
		return ir.Refuse("select-list expression at position %d is not supported; select COUNT, SUM or AVG of a column, or a grouped column", rt.Location+1)
	}
	agg, err := p.aggregate(fc)
	if err != nil {
		return err
	}
	name := rt.Name
	if name == "" {
		name = strings.ToLower(agg.Func.String())
		switch {
		case agg.Func == ir.CountDistinct:
			name = "count_distinct"
		default:
			if sp, _ := ir.LookupAggregate(funcName(fc)); sp.OwnName {
				name = sp.Name
			}
		}
		if agg.Column != "" && agg.Expr == "" {
			name += "_" + agg.Column
		}
		// Unnamed outputs of the same name are numbered: sum, sum_2, …
		base := name
		for i := 2; p.outputNamed(name); i++ {
			name = base + "_" + strconv.Itoa(i)
		}
	}
	p.q.Outputs = append(p.q.Outputs, ir.Output{Name: name, Agg: &agg})
	return nil
}

func funcName(fc *pg.FuncCall) string {
	var parts []string
	for _, n := range fc.Funcname {
		if s := n.GetString_(); s != nil {
			parts = append(parts, s.Sval)
		}
	}
	if len(parts) == 2 && parts[0] == "pg_catalog" {
		parts = parts[1:]
	}
	return strings.ToLower(strings.Join(parts, "."))
}

var laterAggregates = map[string]string{
	"percentile_cont": "write percentile_cont(q) WITHIN GROUP (ORDER BY col)",
	"percentile_disc": "use percentile_cont(q) WITHIN GROUP (ORDER BY col)",
	"quantile":        "use percentile_cont(q) WITHIN GROUP (ORDER BY col) or MEDIAN(col)",
}

func (p *parser) aggregate(fc *pg.FuncCall) (ir.Aggregate, error) {
	name := funcName(fc)
	switch {
	case fc.Over != nil:
		return ir.Aggregate{}, ir.Refuse("window functions (%s ... OVER) are not supported", strings.ToUpper(name))
	case fc.AggDistinct && name == "count" && fc.AggFilter == nil:
		return p.countDistinct(fc)
	case fc.AggDistinct && name == "count":
		return ir.Aggregate{}, ir.Refuse("COUNT(DISTINCT ...) FILTER (WHERE ...) is not supported; filter with WHERE")
	case fc.AggDistinct:
		return ir.Aggregate{}, ir.Refuse("%s(DISTINCT ...) is not supported; the only DISTINCT aggregate is COUNT(DISTINCT %s)", strings.ToUpper(name), p.unitName())
	case fc.AggWithinGroup && name == "percentile_cont":
		return p.percentile(fc)
	case len(fc.AggOrder) > 0 || fc.AggWithinGroup:
		return ir.Aggregate{}, ir.Refuse("ordered aggregates other than percentile_cont(q) WITHIN GROUP (ORDER BY col) are not supported")
	case fc.FuncVariadic:
		return ir.Aggregate{}, ir.Refuse("VARIADIC arguments are not supported")
	}
	spelling, ok := ir.LookupAggregate(name)
	if !ok || spelling.Ordered {
		if why, ok := laterAggregates[name]; ok {
			return ir.Aggregate{}, ir.Refuse("%s is not supported: %s; supported: %s", strings.ToUpper(name), why, ir.AggregateList())
		}
		return ir.Aggregate{}, ir.Refuse("function %s is not supported in the select list; supported aggregates: %s", name, ir.AggregateList())
	}
	f, extreme := spelling.Func, spelling.Extreme
	if f == ir.Count && fc.AggStar {
		if fc.AggFilter != nil {
			// COUNT(*) FILTER (WHERE c) counts CASE WHEN c THEN 1 END.
			return p.filtered(fc, ir.Count, ir.Constant{Value: 1, Int: true}, 0)
		}
		return ir.Aggregate{Func: ir.CountStar}, nil
	}
	if fc.AggStar {
		return ir.Aggregate{}, ir.Refuse("%s(*) is not valid; name a column", strings.ToUpper(name))
	}
	if n := f.Info().Arity; len(fc.Args) != n {
		what := "one column or expression"
		if n != 1 {
			what = strconv.Itoa(n) + " columns or expressions"
		}
		return ir.Aggregate{}, ir.Refuse("%s takes exactly %s, got %d arguments", strings.ToUpper(name), what, len(fc.Args))
	}
	arg := fc.Args[0]
	if c := arg.GetAConst(); c != nil && f == ir.Count && !c.Isnull {
		// COUNT(1) counts rows, as COUNT(*) does.
		if fc.AggFilter != nil {
			return p.filtered(fc, ir.Count, ir.Constant{Value: 1, Int: true}, 0)
		}
		return ir.Aggregate{Func: ir.CountStar}, nil
	}
	cr := arg.GetColumnRef()
	if f == ir.Quantile && (cr == nil || fc.AggFilter != nil) {
		// A date or timestamp, or one shifted by an INTERVAL (dates.go).
		if s, ok, err := p.quantileArg(arg); ok {
			if err != nil {
				return ir.Aggregate{}, err
			}
			return p.filtered(fc, f, s, extreme)
		}
	}
	if cr == nil || fc.AggFilter != nil {
		// An expression, or a column under FILTER: a derived column.
		if f == ir.Count && cr != nil {
			col, err := p.columnRef(cr)
			if err != nil {
				return ir.Aggregate{}, err
			}
			if col.Type != schema.Int && col.Type != schema.Float {
				// COUNT(text) FILTER (WHERE c) counts the rows where c
				// holds and the column is not NULL.
				return p.filteredWhen(fc, ir.Count, ir.Constant{Value: 1, Int: true}, 0,
					ir.IsNull{Arg: ir.Operand{Kind: ir.ColumnRef, Column: col.Name}, Negate: true})
			}
		}
		s, err := p.scalar(arg)
		if err != nil {
			return ir.Aggregate{}, err
		}
		if err := p.checkTemporalArg(f, name, s); err != nil {
			return ir.Aggregate{}, err
		}
		return p.filtered(fc, f, s, extreme)
	}
	col, err := p.columnRef(cr)
	if err != nil {
		return ir.Aggregate{}, err
	}
	if f != ir.Count {
		if col.Type != schema.Int && col.Type != schema.Float && !(f == ir.Quantile && col.Type.Temporal()) {
			return ir.Aggregate{}, ir.Refuse("%s(%s): column %s is %s; %s needs an int or float column (MIN, MAX and MEDIAN also take date and timestamp columns)", strings.ToUpper(name), col.Name, col.Name, col.Type, strings.ToUpper(name))
		}
		if !col.Bounded() {
			return ir.Aggregate{}, ir.Refuse("%s(%s) needs declared bounds: declare `lower:` and `upper:` for column %s in the catalog, or clamp it: %s(LEAST(GREATEST(%s, low), high))", strings.ToUpper(name), col.Name, col.Name, strings.ToUpper(name), col.Name)
		}
	}
	a := ir.Aggregate{Func: f, Column: col.Name, Extreme: extreme}
	if f == ir.Quantile {
		a.Q = 0.5
	}
	return a, nil
}

// filtered builds the aggregate f of the expression s, under the call's
// FILTER (WHERE …) clause if it has one: AGG(x) FILTER (WHERE c) aggregates
// CASE WHEN c THEN x END, whose NULLs every aggregate skips.
func (p *parser) filtered(fc *pg.FuncCall, f ir.AggFunc, s ir.Scalar, extreme int) (ir.Aggregate, error) {
	return p.filteredWhen(fc, f, s, extreme, nil)
}

// filteredWhen is filtered with an extra condition ANDed to the filter.
func (p *parser) filteredWhen(fc *pg.FuncCall, f ir.AggFunc, s ir.Scalar, extreme int, extra ir.Expr) (ir.Aggregate, error) {
	var conds []ir.Expr
	if fc.AggFilter != nil {
		c, err := p.expr(fc.AggFilter, false)
		if err != nil {
			return ir.Aggregate{}, err
		}
		conds = append(conds, c)
	}
	if extra != nil {
		conds = append(conds, extra)
	}
	switch len(conds) {
	case 0:
	case 1:
		s = ir.Cond{Whens: conds, Thens: []ir.Scalar{s}}
	default:
		s = ir.Cond{Whens: []ir.Expr{ir.And{Args: conds}}, Thens: []ir.Scalar{s}}
	}
	name := p.derive(s)
	a := ir.Aggregate{Func: f, Column: name, Extreme: extreme, Expr: p.q.Derived[name].Text}
	if fc.AggFilter != nil {
		a.Expr = scalarStringFiltered(s)
	}
	if f == ir.Quantile && extreme == 0 {
		a.Q = 0.5
	}
	return a, nil
}

// scalarStringFiltered spells a filtered argument the way it was written:
// x FILTER (WHERE c) for CASE WHEN c THEN x END.
func scalarStringFiltered(s ir.Scalar) string {
	if c, ok := s.(ir.Cond); ok && len(c.Whens) == 1 && c.Else == nil {
		return ir.ScalarString(c.Thens[0]) + ") FILTER (WHERE " + ir.ExprString(c.Whens[0], nil)
	}
	return ir.ScalarString(s)
}

// isConstantItem reports whether a select-list item is a constant
// expression: a number, PI(), or arithmetic of those.
func isConstantItem(n *pg.Node) bool {
	switch {
	case n == nil:
		return false
	case n.GetAConst() != nil:
		c := n.GetAConst()
		_, i := c.Val.(*pg.A_Const_Ival)
		_, f := c.Val.(*pg.A_Const_Fval)
		return i || f
	case n.GetFuncCall() != nil:
		fc := n.GetFuncCall()
		return funcName(fc) == "pi" && len(fc.Args) == 0
	case n.GetAExpr() != nil:
		a := n.GetAExpr()
		return a.Kind == pg.A_Expr_Kind_AEXPR_OP && (a.Lexpr == nil || isConstantItem(a.Lexpr)) && isConstantItem(a.Rexpr)
	}
	return false
}

// plainDistinct reports whether s is SELECT DISTINCT over expressions
// without aggregates or GROUP BY (not DISTINCT ON): the keys alone.
func plainDistinct(s *pg.SelectStmt) bool {
	if len(s.DistinctClause) != 1 || s.DistinctClause[0].GetNode() != nil || len(s.GroupClause) > 0 || s.HavingClause != nil {
		return false
	}
	for _, t := range s.TargetList {
		rt := t.GetResTarget()
		if rt == nil || rt.Val == nil || containsAggregate(rt.Val) {
			return false
		}
		if cr := rt.Val.GetColumnRef(); cr != nil && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
			return false
		}
	}
	return true
}

// distinctKeys is the GROUP BY of SELECT DISTINCT: the positions of its
// select-list items.
func distinctKeys(targets []*pg.Node) []*pg.Node {
	out := make([]*pg.Node, len(targets))
	for i := range targets {
		out[i] = pg.MakeAConstIntNode(int64(i+1), 0)
	}
	return out
}
