package parse

import (
	"strconv"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

func (p *parser) unitName() string {
	if p.table.HasPrivacyUnit() {
		return p.table.PrivacyUnit
	}
	return "privacy_unit"
}

// countDistinct parses COUNT(DISTINCT col): the privacy unit's distinct
// count (people per group), or the distinct values of any other column,
// whose sensitivity is that of COUNT(*) (see dpplan.distinctAgg).
func (p *parser) countDistinct(fc *pg.FuncCall) (ir.Aggregate, error) {
	if len(fc.Args) != 1 || fc.Args[0].GetColumnRef() == nil {
		return ir.Aggregate{}, ir.Refuse("COUNT(DISTINCT ...) takes one column, e.g. COUNT(DISTINCT %s)", p.unitName())
	}
	col, err := p.columnRef(fc.Args[0].GetColumnRef())
	if err != nil {
		return ir.Aggregate{}, err
	}
	return ir.Aggregate{Func: ir.CountDistinct, Column: col.Name}, nil
}

// percentile parses percentile_cont(q) WITHIN GROUP (ORDER BY col).
func (p *parser) percentile(fc *pg.FuncCall) (ir.Aggregate, error) {
	if len(fc.Args) != 1 || len(fc.AggOrder) != 1 {
		return ir.Aggregate{}, ir.Refuse("write percentile_cont(q) WITHIN GROUP (ORDER BY col) with one fraction q and one column")
	}
	q, ok := fraction(fc.Args[0])
	if !ok {
		return ir.Aggregate{}, ir.Refuse("percentile_cont takes one literal fraction between 0 and 1, e.g. percentile_cont(0.9)")
	}
	sb := fc.AggOrder[0].GetSortBy()
	if sb == nil {
		return ir.Aggregate{}, ir.Refuse("percentile_cont orders by one column or expression: WITHIN GROUP (ORDER BY col)")
	}
	if sb.SortbyDir == pg.SortByDir_SORTBY_DESC || sb.SortbyDir == pg.SortByDir_SORTBY_USING {
		return ir.Aggregate{}, ir.Refuse("percentile_cont ... (ORDER BY col DESC) is not supported; use percentile_cont(1 − q) with ascending order")
	}
	if sb.Node.GetColumnRef() == nil || fc.AggFilter != nil {
		s, ok, err := p.quantileArg(sb.Node)
		if !ok {
			s, err = p.scalar(sb.Node)
		}
		if err != nil {
			return ir.Aggregate{}, err
		}
		a, err := p.filtered(fc, ir.Quantile, s, 0)
		a.Q = q
		return a, err
	}
	col, err := p.columnRef(sb.Node.GetColumnRef())
	if err != nil {
		return ir.Aggregate{}, err
	}
	if col.Type != schema.Int && col.Type != schema.Float && !col.Type.Temporal() {
		return ir.Aggregate{}, ir.Refuse("percentile_cont over column %s (%s): want an int, float, date or timestamp column", col.Name, col.Type)
	}
	if !col.Bounded() {
		return ir.Aggregate{}, ir.Refuse("percentile_cont over %s needs declared bounds: declare `lower:` and `upper:` for column %s in the catalog", col.Name, col.Name)
	}
	return ir.Aggregate{Func: ir.Quantile, Column: col.Name, Q: q}, nil
}

// fraction reads a numeric literal in [0, 1].
func fraction(n *pg.Node) (float64, bool) {
	c := n.GetAConst()
	if c == nil || c.Isnull {
		return 0, false
	}
	var f float64
	switch v := c.Val.(type) {
	case *pg.A_Const_Ival:
		f = float64(v.Ival.Ival)
	case *pg.A_Const_Fval:
		x, err := strconv.ParseFloat(v.Fval.Fval, 64)
		if err != nil {
			return 0, false
		}
		f = x
	default:
		return 0, false
	}
	return f, f >= 0 && f <= 1
}
