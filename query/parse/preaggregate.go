package parse

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/query/ir"
)

// preaggregate answers the outer query s over the per-person
// pre-aggregation sq: it sets the parser's relation to the pre-aggregated
// one and replaces s's FROM so that from() reads nothing more.
func (p *parser) preaggregate(s *pg.SelectStmt, sq *subquery) error {
	sel := sq.pre
	ip := &parser{cat: p.cat, public: p.public}
	if err := ip.from(sel.FromClause); err != nil {
		return err
	}
	base := ip.table
	if !base.HasPrivacyUnit() {
		return ir.Refuse("subquery %s aggregates table %s, which declares no privacy unit: only a per-person pre-aggregation (GROUP BY the privacy unit) keeps rows one person's; without a privacy unit every row is a person already", sq.alias, base.Name)
	}
	ip.q = &ir.Query{Table: base.Name, Base: ip.base, Limit: -1}
	if len(ip.joins) > 0 {
		ip.q.Joins, ip.q.Relation = ip.joins, base
		ip.q.JoinRows = ip.joinRows()
	}
	if sel.HavingClause != nil {
		return ir.Refuse("subquery %s: HAVING in a per-person pre-aggregation is not supported; filter its rows in the outer query's WHERE", sq.alias)
	}
	if sel.GroupDistinct {
		return ir.Refuse("subquery %s: GROUP BY DISTINCT is not supported", sq.alias)
	}
	pre := &ir.PreAggregate{Query: ip.q, Unit: base.PrivacyUnit}
	for _, g := range sel.GroupClause {
		cr := g.GetColumnRef()
		if cr == nil {
			return ir.Refuse("subquery %s groups by %s: a per-person pre-aggregation groups by the privacy unit %s and other columns, not expressions", sq.alias, deparseExpr(g), base.PrivacyUnit)
		}
		col, err := ip.columnRef(cr)
		if err != nil {
			return err
		}
		for _, k := range pre.Keys {
			if k == col.Name {
				return ir.Refuse("subquery %s lists column %s twice in GROUP BY", sq.alias, col.Name)
			}
		}
		pre.Keys = append(pre.Keys, col.Name)
	}
	unitKey := false
	for _, k := range pre.Keys {
		unitKey = unitKey || k == base.PrivacyUnit
	}
	if !unitKey {
		return ir.Refuse("subquery %s aggregates over several people: a subquery may aggregate only per person, with GROUP BY %s (the privacy unit of %s) among its keys", sq.alias, base.PrivacyUnit, base.Name)
	}
	if sel.WhereClause != nil {
		e, err := ip.expr(sel.WhereClause, false)
		if err != nil {
			return err
		}
		ip.q.Where = e
	}
	// The select list: keys and per-person aggregates.
	var aggs []*ir.Aggregate
	for _, t := range sel.TargetList {
		rt := t.GetResTarget()
		if rt == nil || rt.Val == nil {
			return ir.Refuse("subquery %s: unsupported select-list item", sq.alias)
		}
		if cr := rt.Val.GetColumnRef(); cr != nil {
			col, err := ip.columnRef(cr)
			if err != nil {
				return err
			}
			isKey := false
			for _, k := range pre.Keys {
				isKey = isKey || k == col.Name
			}
			if !isKey {
				return ir.Refuse("subquery %s selects column %s, which is not in its GROUP BY: aggregate it (e.g. MAX(%s)) or group by it", sq.alias, col.Name, col.Name)
			}
			name := rt.Name
			if name == "" {
				name = cr.Fields[len(cr.Fields)-1].GetString_().GetSval()
			}
			pre.Columns = append(pre.Columns, ir.PreColumn{Name: name, Key: col.Name})
			continue
		}
		fc := rt.Val.GetFuncCall()
		if fc == nil {
			return ir.Refuse("subquery %s selects %s: a per-person pre-aggregation selects its GROUP BY columns and aggregates (COUNT, SUM, AVG, MIN, MAX) of them; compute expressions of them in the outer query", sq.alias, deparseExpr(rt.Val))
		}
		a, err := ip.aggregate(fc)
		if err != nil {
			return err
		}
		switch {
		case a.Func == ir.CountStar, a.Func == ir.Count, a.Func == ir.Sum, a.Func == ir.Avg:
		case a.Func == ir.Quantile && a.Extreme != 0:
		default:
			return ir.Refuse("subquery %s: %s per person is not supported; per-person aggregates are COUNT, SUM, AVG, MIN and MAX", sq.alias, a)
		}
		name := rt.Name
		if name == "" {
			name = funcName(fc)
		}
		aggs = append(aggs, &a)
		pre.Columns = append(pre.Columns, ir.PreColumn{Name: name, Agg: &a})
	}
	rel, err := ir.Relation(ip.q, base)
	if err != nil {
		return err
	}
	pre.Relation = rel
	out, err := pre.AsTable(sq.alias, base, rel)
	if err != nil {
		return err
	}
	p.pre, p.table, p.base, p.alias = pre, out, ip.base, sq.alias
	s.FromClause = nil
	return nil
}
