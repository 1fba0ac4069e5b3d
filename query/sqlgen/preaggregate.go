package sqlgen

import (
	"math"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// preSQL builds the pre-aggregation, read as a subquery. Its columns are
// named by their place (preColumnName), never by the query's names for
// them: on ClickHouse, `max("u") AS "u"` would read its own alias.
func (g *sqlGen) preSQL(pre *ir.PreAggregate) (*selectStmt, error) {
	// On a table with epochs the inner query reads the plan's epochs:
	// a private join inside is capped per (person, epoch) and each joined
	// occurrence reads only its rows of those epochs (occurrenceEpoch).
	ig := newSQLGen(g.d, &dpplan.Plan{Query: pre.Query, Table: pre.Relation, Bounded: true,
		Epochs: g.p.Epochs, EpochColumn: g.p.EpochColumn, EpochEvery: g.p.EpochEvery}, dpplan.CleanForm)
	// A private join inside is capped per person (and epoch) by the first
	// table's declared bounds (see joinCap).
	ig.preCap = max(pre.Relation.MaxGroupsPerUnit*pre.Relation.MaxRowsPerGroup, 1)
	var items []item
	for i, c := range pre.Columns {
		if c.Key != "" {
			items = append(items, as(ig.colRef(c.Key), preColumnName(i)))
			continue
		}
		e, err := ig.preAggregate(c.Agg)
		if err != nil {
			return nil, err
		}
		items = append(items, as(e, preColumnName(i)))
	}
	conds := []string{ig.colRef(pre.Unit) + " IS NOT NULL"}
	if pre.Query.Where != nil {
		c, err := ig.expr(pre.Query.Where)
		if err != nil {
			return nil, err
		}
		conds = append(conds, c)
	}
	keys := make([]string, len(pre.Keys))
	for i, k := range pre.Keys {
		keys[i] = ig.colRef(k)
	}
	if start, ok, err := preEpoch(ig, g.p); err != nil {
		return nil, err
	} else if ok {
		items = append(items, as(start, preEpochName))
		keys = append(keys, start)
	}
	source, err := ig.fromClause(pre.Relation.Name)
	if err != nil {
		return nil, err
	}
	g.caps = append(g.caps, ig.caps...)
	return &selectStmt{items: items, from: source, where: conds, groupBy: keys}, nil
}

// preAggregate spells one per-person aggregate over the clamped values of
// its column: totals in doubles (exact for whole numbers below 2^53 and
// never failing), a minimum or maximum of whole numbers, dates or
// timestamps cast back to a 64-bit integer (within ±2^53: the cast cannot
// fail), counts cast to a 64-bit integer. Each is cast to the type the
// plan gives its column, so that the engine never meets two types where
// the plan has one (ClickHouse's count is a UInt64, which its least and
// greatest refuse beside a Float64).
func (g *sqlGen) preAggregate(a *ir.Aggregate) (string, error) {
	big := g.d.TypeName(engine.Integer)
	if a.Func == ir.CountStar {
		return "CAST(count(*) AS " + big + ")", nil
	}
	var arg string
	var err error
	if dv := g.p.Query.Derived[a.Column]; dv != nil {
		arg, err = g.scalarSQL(dv.Expr)
	} else {
		arg, err = g.scalarSQL(ir.ColumnValue{Column: a.Column})
	}
	if err != nil {
		return "", err
	}
	switch {
	case a.Func == ir.Count:
		return "CAST(count(" + arg + ") AS " + big + ")", nil
	case a.Func == ir.Sum:
		return "sum(" + arg + ")", nil
	case a.Func == ir.Avg:
		return "avg(" + arg + ")", nil
	}
	f := "min"
	if a.Extreme > 0 {
		f = "max"
	}
	e := f + "(" + arg + ")"
	if c := g.p.Table.Column(a.Column); c != nil && (c.Type == schema.Int || c.Type.Temporal()) && c.Bounded() && math.Abs(*c.Lower) <= ir.MaxExact && math.Abs(*c.Upper) <= ir.MaxExact {
		e = "CAST(" + e + " AS " + big + ")"
	}
	return e, nil
}

// preColumn returns the name the pre-aggregation pre gives its column
// name (preColumnName), or false when it has none of that name.
func preColumn(pre *ir.PreAggregate, name string) (string, bool) {
	for i, c := range pre.Columns {
		if c.Name == name {
			return preColumnName(i), true
		}
	}
	return "", false
}
