package query

import (
	"fmt"
	"math"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
)

// Per-person pre-aggregation: a subquery (or common table expression) that
// groups a private table by its privacy unit, possibly with other columns,
// and computes per-person aggregates:
//
//	WITH per_person AS (SELECT pid, COUNT(*) AS visits, SUM(euros) AS spent FROM visits GROUP BY pid)
//	SELECT AVG(LEAST(visits, 20)), SUM(LEAST(spent, 500)) FROM per_person
//
// Each of its rows is one person's (one row per person and inner group),
// so the outer query reads a relation whose privacy unit is the same
// person's. Removing a person removes exactly that person's rows of the
// relation, so the outer query's contribution bounding and sensitivities
// hold as for a table: with the privacy unit as the only inner key, each
// person has one row (one group, one row per group, tighter than the
// table's declaration): the relation is read as a table whose every row is
// a person, with no bounding stage; with other keys, the table's declared
// bounds apply and the outer plan enforces them.
//
// The outputs' bounds come from the plan, never from the data: a count is
// at least 0 (COUNT(*): 1) and has no upper bound, a sum of values in [lo, hi] is at
// least lo when lo ≥ 0 and at most hi when hi ≤ 0, an average, a minimum
// and a maximum lie in [lo, hi]. An outer aggregate over an output without
// both bounds is refused, naming what to clamp (LEAST/GREATEST).

// PreAggregate is a per-person pre-aggregation the query reads instead of
// a table.
type PreAggregate struct {
	// Query holds the inner query's table, joins, row filter (Where) and
	// derived columns; its Outputs are unused.
	Query *Query
	// Relation is the inner relation the aggregates read (the table or
	// joined relation, with bounds narrowed by Where and the derived
	// columns).
	Relation *catalog.Table
	// Unit is the inner relation's privacy unit column; Keys lists the
	// inner GROUP BY columns (the unit among them).
	Unit string
	Keys []string
	// Columns lists the relation the outer query reads, in order: for
	// each, the inner column it shows (keys) or the aggregate it computes.
	Columns []PreColumn
}

// PreColumn is one column of a pre-aggregation.
type PreColumn struct {
	// Name is the column's name in the outer query.
	Name string
	// Key is the inner key column it shows; empty for aggregates.
	Key string
	// Agg is the per-person aggregate it computes; nil for keys.
	Agg *Aggregate
}

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
		return refuse("subquery %s aggregates table %s, which declares no privacy unit: only a per-person pre-aggregation (GROUP BY the privacy unit) keeps rows one person's; without a privacy unit every row is a person already", sq.alias, base.Name)
	}
	ip.q = &Query{Table: base.Name, Limit: -1}
	if len(ip.joins) > 0 {
		ip.q.Joins, ip.q.Relation = ip.joins, base
		ip.q.JoinRows = ip.joinRows()
	}
	if sel.HavingClause != nil {
		return refuse("subquery %s: HAVING in a per-person pre-aggregation is not supported; filter its rows in the outer query's WHERE", sq.alias)
	}
	if sel.GroupDistinct {
		return refuse("subquery %s: GROUP BY DISTINCT is not supported", sq.alias)
	}
	pre := &PreAggregate{Query: ip.q, Unit: base.PrivacyUnit}
	for _, g := range sel.GroupClause {
		cr := g.GetColumnRef()
		if cr == nil {
			return refuse("subquery %s groups by %s: a per-person pre-aggregation groups by the privacy unit %s and other columns, not expressions", sq.alias, deparseExpr(g), base.PrivacyUnit)
		}
		col, err := ip.columnRef(cr)
		if err != nil {
			return err
		}
		for _, k := range pre.Keys {
			if k == col.Name {
				return refuse("subquery %s lists column %s twice in GROUP BY", sq.alias, col.Name)
			}
		}
		pre.Keys = append(pre.Keys, col.Name)
	}
	unitKey := false
	for _, k := range pre.Keys {
		unitKey = unitKey || k == base.PrivacyUnit
	}
	if !unitKey {
		return refuse("subquery %s aggregates over several people: a subquery may aggregate only per person, with GROUP BY %s (the privacy unit of %s) among its keys", sq.alias, base.PrivacyUnit, base.Name)
	}
	if sel.WhereClause != nil {
		e, err := ip.expr(sel.WhereClause, false)
		if err != nil {
			return err
		}
		ip.q.Where = e
	}
	// The select list: keys and per-person aggregates.
	var aggs []*Aggregate
	for _, t := range sel.TargetList {
		rt := t.GetResTarget()
		if rt == nil || rt.Val == nil {
			return refuse("subquery %s: unsupported select-list item", sq.alias)
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
				return refuse("subquery %s selects column %s, which is not in its GROUP BY: aggregate it (e.g. MAX(%s)) or group by it", sq.alias, col.Name, col.Name)
			}
			name := rt.Name
			if name == "" {
				name = cr.Fields[len(cr.Fields)-1].GetString_().GetSval()
			}
			pre.Columns = append(pre.Columns, PreColumn{Name: name, Key: col.Name})
			continue
		}
		fc := rt.Val.GetFuncCall()
		if fc == nil {
			return refuse("subquery %s selects %s: a per-person pre-aggregation selects its GROUP BY columns and aggregates (COUNT, SUM, AVG, MIN, MAX) of them; compute expressions of them in the outer query", sq.alias, deparseExpr(rt.Val))
		}
		a, err := ip.aggregate(fc)
		if err != nil {
			return err
		}
		switch {
		case a.Func == CountStar, a.Func == Count, a.Func == Sum, a.Func == Avg:
		case a.Func == Quantile && a.Extreme != 0:
		default:
			return refuse("subquery %s: %s per person is not supported; per-person aggregates are COUNT, SUM, AVG, MIN and MAX", sq.alias, a)
		}
		name := rt.Name
		if name == "" {
			name = funcName(fc)
		}
		aggs = append(aggs, &a)
		pre.Columns = append(pre.Columns, PreColumn{Name: name, Agg: &a})
	}
	rel, err := relation(ip.q, base)
	if err != nil {
		return err
	}
	pre.Relation = rel
	out, err := pre.relation(sq.alias, base, rel)
	if err != nil {
		return err
	}
	p.pre, p.table, p.alias = pre, out, sq.alias
	s.FromClause = nil
	return nil
}

// relation builds the relation the outer query reads: one column per
// output, with the bounds the pre-aggregation implies, the privacy unit
// and the contribution bounds that hold for it.
func (pre *PreAggregate) relation(alias string, base, rel *catalog.Table) (*catalog.Table, error) {
	out := *base
	out.Columns = nil
	unitName := ""
	seen := map[string]bool{}
	for _, c := range pre.Columns {
		if seen[strings.ToLower(c.Name)] {
			return nil, refuse("subquery %s has two columns named %s; give them different names with AS", alias, c.Name)
		}
		seen[strings.ToLower(c.Name)] = true
		if c.Key != "" {
			cc := *rel.Column(c.Key)
			cc.Name = c.Name
			if c.Key == pre.Unit && unitName == "" {
				unitName = c.Name
			}
			out.Columns = append(out.Columns, &cc)
			continue
		}
		col, err := pre.outputColumn(c, rel)
		if err != nil {
			return nil, err
		}
		out.Columns = append(out.Columns, col)
	}
	if unitName == "" {
		// The privacy unit is not selected: the relation still carries it,
		// under its own name, for the outer contribution bounding.
		unitName = pre.Unit
		if seen[strings.ToLower(unitName)] {
			return nil, refuse("subquery %s names a column %s but does not select the privacy unit %s; select it or rename the column", alias, unitName, pre.Unit)
		}
		cc := *rel.Column(pre.Unit)
		out.Columns = append(out.Columns, &cc)
		pre.Columns = append(pre.Columns, PreColumn{Name: unitName, Key: pre.Unit})
	}
	out.PrivacyUnit = unitName
	if len(pre.Keys) == 1 {
		// One row per person: each row is a person, as in a table
		// without a privacy unit, so the outer plan needs no bounding
		// (one row in one group per person) and none is run.
		out.PrivacyUnit, out.MaxGroupsPerUnit, out.MaxRowsPerGroup = "", 0, 0
	}
	return &out, nil
}

// outputColumn is the column of a per-person aggregate, with its bounds.
func (pre *PreAggregate) outputColumn(c PreColumn, rel *catalog.Table) (*catalog.Column, error) {
	a := c.Agg
	col := &catalog.Column{Name: c.Name, Type: catalog.Float, Nullable: true}
	if a.Func == CountStar || a.Func == Count {
		// A group of the pre-aggregation has at least one row.
		lo := 0.0
		if a.Func == CountStar {
			lo = 1
		}
		col.Type, col.Lower, col.Nullable = catalog.Int, &lo, false
		return col, nil
	}
	arg := rel.Column(a.Column)
	if arg == nil || !arg.Bounded() {
		return nil, fmt.Errorf("query: pre-aggregate %s reads an unbounded column", a)
	}
	lo, hi := *arg.Lower, *arg.Upper
	switch a.Func {
	case Sum:
		// At least one value when the sum is not NULL.
		if lo >= 0 {
			col.Lower = &lo
		}
		if hi <= 0 {
			col.Upper = &hi
		}
	default: // AVG, MIN, MAX
		col.Lower, col.Upper = &lo, &hi
		if a.Func != Avg && (arg.Type == catalog.Int || arg.Type.Temporal()) {
			col.Type = arg.Type // a person's MIN or MAX of a date is a date
		}
	}
	return col, nil
}

// preSQL renders the pre-aggregation as a subquery of the engine.
func (g *sqlGen) preSQL(pre *PreAggregate) (string, error) {
	ig := newSQLGen(g.d, &Plan{Query: pre.Query, Table: pre.Relation, Bounded: true}, CleanForm)
	var cols []string
	for _, c := range pre.Columns {
		if c.Key != "" {
			cols = append(cols, ig.colRef(c.Key)+" AS "+g.ident(c.Name))
			continue
		}
		e, err := ig.preAggregate(c.Agg)
		if err != nil {
			return "", err
		}
		cols = append(cols, e+" AS "+g.ident(c.Name))
	}
	conds := []string{ig.colRef(pre.Unit) + " IS NOT NULL"}
	if pre.Query.Where != nil {
		c, err := ig.expr(pre.Query.Where)
		if err != nil {
			return "", err
		}
		conds = append(conds, c)
	}
	keys := make([]string, len(pre.Keys))
	for i, k := range pre.Keys {
		keys[i] = ig.colRef(k)
	}
	source, err := ig.fromClause(pre.Relation.Name)
	if err != nil {
		return "", err
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM " + source +
		" WHERE " + strings.Join(conds, " AND ") + " GROUP BY " + strings.Join(keys, ", "), nil
}

// preAggregate spells one per-person aggregate over the clamped values of
// its column: totals in doubles (exact for whole numbers below 2^53 and
// never failing), a minimum or maximum of whole numbers cast back to a
// 64-bit integer (within ±2^53: the cast cannot fail).
func (g *sqlGen) preAggregate(a *Aggregate) (string, error) {
	if a.Func == CountStar {
		return "count(*)", nil
	}
	var arg string
	var err error
	if dv := g.p.Query.Derived[a.Column]; dv != nil {
		arg, err = g.scalarSQL(dv.Expr)
	} else {
		arg, err = g.scalarSQL(ColumnValue{Column: a.Column})
	}
	if err != nil {
		return "", err
	}
	switch {
	case a.Func == Count:
		return "count(" + arg + ")", nil
	case a.Func == Sum:
		return "sum(" + arg + ")", nil
	case a.Func == Avg:
		return "avg(" + arg + ")", nil
	}
	f := "min"
	if a.Extreme > 0 {
		f = "max"
	}
	e := f + "(" + arg + ")"
	if c := g.p.Table.Column(a.Column); c != nil && c.Type == catalog.Int && c.Bounded() && math.Abs(*c.Lower) <= maxExact && math.Abs(*c.Upper) <= maxExact {
		e = "CAST(" + e + " AS " + g.d.TypeName(engine.Integer) + ")"
	}
	return e, nil
}
