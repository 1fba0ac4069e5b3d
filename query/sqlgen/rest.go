package sqlgen

import (
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/dpplan"
)

// restCells writes the statement of an unbounded plan that also measures
// the rows outside its GROUP BY columns' value lists (dpplan.Plan.Hidden,
// MeasureRest) in two levels: the statistics per value of the keys as
// read (g0, g1, …: no row is filtered out for its key), then the sums of
// those per key, each value outside its column's list becoming NULL, the
// hidden cell of the rest. Aggregating the raw keys first keeps the
// engine's fast grouping by a column (with its statistics) that a
// computed key would lose; the partial statistics add up exactly (counts,
// exact sums, and grid sums whose every partial sum is a part of the
// cell's). exact are the statistics' aggregates over the rows, named s0,
// s1, … (with a Nested dialect, over the table itself, the per-row inputs
// written inside them).
func (g *sqlGen) restCells(rows *selectStmt, exact []item) (string, error) {
	p := g.p
	nk := len(p.Query.GroupBy)
	raw := make([]string, nk)
	for i := range raw {
		raw[i] = rawKeyName(i)
	}
	var inner *selectStmt
	st := &statement{}
	if _, nested := g.d.(engine.Nested); nested {
		// One SELECT over the table, as for a plan without hidden cells:
		// a distributed engine aggregates it on each shard.
		items := make([]item, 0, nk+len(exact))
		for i, it := range rows.items[:nk] {
			items = append(items, as(it.expr, raw[i]))
		}
		inner = &selectStmt{items: append(items, exact...), from: rows.from, where: rows.where, groupBy: raw}
	} else {
		keys := g.keyNames()
		items := make([]item, 0, nk+len(exact))
		for i, k := range keys {
			items = append(items, as(k, raw[i]))
		}
		st.stages = append(st.stages, stage{name: rowsStage, body: rows})
		inner = &selectStmt{items: append(items, exact...), from: stageRef(rowsStage), groupBy: keys}
	}
	st.stages = append(st.stages, stage{name: cellsStage, body: inner})
	outer := &selectStmt{from: stageRef(cellsStage), groupBy: g.keyNames()}
	for i, k := range p.Query.GroupBy {
		e := raw[i]
		if p.RestColumn(i) {
			in, err := g.inValues(e, p.KeyValues(k))
			if err != nil {
				return "", err
			}
			e = "CASE WHEN " + in + " THEN " + e + " END"
		}
		outer.items = append(outer.items, as(e, keyName(i)))
	}
	for i := range p.Statistics {
		outer.items = append(outer.items, as(g.resumCells(i), statName(i)))
	}
	st.body = outer
	return g.render(st), nil
}

// resumCells spells the sum of statistic i's partial values per raw key:
// a grid-summed double in the double forms (every partial sum is a part
// of the cell's, exact as the cell's is), otherwise a plain sum of the
// engine's exact partial sums, in their own type (PostgreSQL's numeric,
// DuckDB's HUGEINT, ClickHouse's Decimal128): cast back to a 64-bit
// integer, a partial sum above 2^63 would fail the statement.
func (g *sqlGen) resumCells(i int) string {
	if g.form != dpplan.IntegerForm && g.p.GridSummed(i) {
		return g.d.GridSum(statName(i))
	}
	return "sum(" + statName(i) + ")"
}
