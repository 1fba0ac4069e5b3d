package sqlgen

import (
	cryptorand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
)

// RawView names the view of a table whose float columns keep their NaNs.
// "$" cannot occur in a catalog's table names, so it names no other table.
func RawView(table string) string { return table + "$raw" }

// SQL generates the engine statement that computes the plan's exact
// statistics per group in its first form, from the model only: identifiers
// are quoted and literals rendered by the dialect. Its result has one row
// per non-empty group: the key columns _dp_k0, _dp_k1, … then the statistics _dp_s0,
// s1, … (counts; sums, see Form; a sum of no values is NULL).
func SQL(p *dpplan.Plan, d engine.Dialect) (string, error) {
	return FormSQL(p, d, p.FirstForm())
}

// FormSQL is SQL in the given form.
func FormSQL(p *dpplan.Plan, d engine.Dialect, f dpplan.Form) (string, error) {
	g := newSQLGen(d, p, f)
	return g.generate()
}

type sqlGen struct {
	d    engine.Dialect
	p    *dpplan.Plan
	form dpplan.Form
	// salt keys the row hashes of a LimitBy dialect; drawn afresh for
	// every statement.
	salt uint64
	// preCap, when positive, is joinCap for the inner query of a
	// pre-aggregation, whose plan has no contribution bounds of its own.
	preCap int64
	// caps are the stages that capped adds: the private occurrences of a
	// private join, capped per person, computed once (see capped); g.render
	// puts them first in the statement.
	caps []stage
	// unitRange, when set, restricts the statement to the persons whose
	// unit lies in it (RangeSQL).
	unitRange *UnitRange
}

// newSQLGen starts the generation of one statement.
func newSQLGen(d engine.Dialect, p *dpplan.Plan, f dpplan.Form) *sqlGen {
	g := &sqlGen{d: d, p: p, form: f}
	if _, ok := d.(engine.LimitBy); ok {
		g.salt = newSalt()
	}
	return g
}

// newSalt draws a fresh secret salt for a statement's row hashes.
func newSalt() uint64 {
	var b [8]byte
	if _, err := cryptorand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; a fixed salt
		// would still bound every contribution (see engine.LimitBy).
		return 0x9e3779b97f4a7c15
	}
	return binary.LittleEndian.Uint64(b[:])
}

func (g *sqlGen) ident(s string) string { return g.d.QuoteIdent(s) }

// keyNames are the key columns _dp_k0, _dp_k1, … of the plan's groups.
func (g *sqlGen) keyNames() []string {
	keys := make([]string, len(g.p.Query.GroupBy))
	for i := range keys {
		keys[i] = keyName(i)
	}
	return keys
}

// rowStage builds the row stage that the main statement and the histogram
// statements read: u (the person, in a bounded plan) and the keys k0, k1,
// … read from table (or the plan's joins or pre-aggregation), then the
// per-row values that values returns, filtered by the plan's conditions
// and the conjuncts values adds. values is called after the keys are
// spelled, so that a refusal names the first part that cannot be spelled.
func (g *sqlGen) rowStage(table string, values func() ([]item, []string, error)) (*selectStmt, error) {
	p := g.p
	var items []item
	if p.Bounded {
		u, err := g.unitExpr()
		if err != nil {
			return nil, err
		}
		items = append(items, as(u, unitName))
	}
	for i, k := range p.Query.GroupBy {
		e, err := g.keyExpr(k)
		if err != nil {
			return nil, err
		}
		items = append(items, as(g.typedKey(k, e), keyName(i)))
	}
	vals, extra, err := values()
	if err != nil {
		return nil, err
	}
	items = append(items, vals...)
	conds, err := g.conditions()
	if err != nil {
		return nil, err
	}
	conds = append(conds, extra...)
	if len(items) == 0 {
		items = append(items, as("1", oneName))
	}
	if err := g.checkJoins(); err != nil {
		return nil, err
	}
	from, err := g.fromClause(table)
	if err != nil {
		return nil, err
	}
	return &selectStmt{items: items, from: from, where: conds}, nil
}

// concat is list followed by more, in a new slice.
func concat(list []string, more ...string) []string {
	return append(append([]string{}, list...), more...)
}

func (g *sqlGen) generate() (string, error) {
	p := g.p
	nk := len(p.Query.GroupBy)
	keys := g.keyNames()

	// The row stage: filter, project keys and clamped summands.
	rowExprs := make([]string, len(p.Statistics)) // per-row input of each statistic ("" for COUNT(*))
	exprOf := map[string]string{}                 // the expression of each per-row input
	table := p.Table.Name
	if g.form == dpplan.FastForm {
		table = RawView(table)
	}
	rows, err := g.rowStage(table, func() ([]item, []string, error) {
		vals, err := g.rowValues(rowExprs, exprOf)
		return vals, nil, err
	})
	if err != nil {
		return "", err
	}
	// With a Sampler dialect, each row's random key for keeping at most L∞
	// values per (person, group) (see sampled).
	_, sampler := g.d.(engine.Sampler)
	if p.Bounded && sampler && p.SamplesValues() {
		rows.items = append(rows.items, as(g.d.Random(), rkName))
	}

	aggs := func(inputs func(i int) string) []item {
		out := make([]item, len(p.Statistics))
		for i := range p.Statistics {
			out[i] = as(inputs(i), statName(i))
		}
		return out
	}
	exact := func(i int) string {
		switch p.Statistics[i].Summand.Kind {
		case dpplan.RowCount:
			return "count(*)"
		case dpplan.NonNullCount:
			return "count(" + rowExprs[i] + ")"
		case dpplan.DistinctUnits:
			if p.Bounded {
				return g.intConst(1) // per (person, group): the person is there once
			}
			return "count(*)"
		case dpplan.DistinctValues:
			return g.intConst(0) // computed by its own statement (HistogramSQL)
		default:
			return g.sum(i, rowExprs[i])
		}
	}
	// perGroup sums the per-person (or per-row) items of from per group.
	perGroup := func(from relation, sums func(int) string) *selectStmt {
		return &selectStmt{items: append(cols(keys...), aggs(sums)...), from: from, groupBy: keys}
	}

	_, nested := g.d.(engine.Nested)
	if !p.Bounded && nested {
		// One SELECT over the table, the per-row inputs written inside
		// the aggregates: a distributed engine then aggregates on each
		// shard and merges the partial aggregates.
		for i, e := range rowExprs {
			if e != "" {
				rowExprs[i] = "(" + exprOf[e] + ")"
			}
		}
	}
	if !p.Bounded && p.Hidden > 0 {
		return g.restCells(rows, aggs(exact))
	}
	if !p.Bounded && nested {
		one := &selectStmt{items: append(rows.items[:nk:nk], aggs(exact)...), from: rows.from, where: rows.where, groupBy: keys}
		return g.render(one), nil
	}
	st := &statement{stages: []stage{{name: rowsStage, body: rows}}}
	if !p.Bounded {
		st.body = perGroup(stageRef(rowsStage), exact)
		return g.render(st), nil
	}

	// Bounded: keep at most RowsPerGroup rows per (person, group), sum per
	// (person, group), keep at most Groups groups per person, then sum.
	if len(p.Statistics) == 0 {
		return "", fmt.Errorf("query: plan without statistics")
	}
	if sm, ok := g.d.(engine.Sampler); ok {
		return g.sampled(sm, rows, keys, rowExprs, aggs), nil
	}
	if sb, ok := g.d.(engine.ShardBounder); ok && g.perShard(rows.from) {
		return g.shardBounded(sb, rows, rowExprs, exprOf, aggs, keys), nil
	}
	unitKeys := append([]string{unitName}, keys...)
	rowsFrom := rowsStage
	if !p.OnlyDistinctUnits() {
		// Distinct units do not depend on how many rows a person has in a
		// group, so only other statistics need the rows bounded.
		rowCols := concat(unitKeys)
		for _, e := range rowExprs {
			if e != "" && !slices.Contains(rowCols, e) {
				rowCols = append(rowCols, e)
			}
		}
		st.stages = append(st.stages, stage{name: rowsBoundedStage, body: g.keepRandom(stageRef(rowsStage), unitKeys, rowCols, p.Contribution.RowsPerGroup)})
		rowsFrom = rowsBoundedStage
	}
	st.stages = append(st.stages, stage{name: perUnitStage, body: &selectStmt{
		items: append(cols(unitKeys...), aggs(exact)...), from: stageRef(rowsFrom), groupBy: unitKeys}})
	from := perUnitStage
	if p.BoundGroups {
		st.stages = append(st.stages, stage{name: perUnitBoundedStage, body: g.keepRandom(stageRef(perUnitStage), []string{unitName}, unitKeys, p.Contribution.Groups)})
		from = perUnitBoundedStage
	}
	st.body = perGroup(stageRef(from), g.resum)
	return g.render(st), nil
}

// checkJoins refuses, before anything runs, a join the dialect cannot
// spell: a dialect with one JOIN per SELECT (engine.Nested) runs a query
// joining at most one table, in the query itself and in the per-person
// pre-aggregation it reads.
func (g *sqlGen) checkJoins() error {
	n, ok := g.d.(engine.Nested)
	if !ok || !n.OneJoin() {
		return nil
	}
	joins, where := len(g.p.Query.Joins), g.p.Table.Name
	if pre := g.p.Query.Pre; pre != nil && pre.Query != nil && len(pre.Query.Joins) > joins {
		joins, where = len(pre.Query.Joins), "the per-person pre-aggregation's "+pre.Query.Table
	}
	if joins > 1 {
		return ir.Refuse("the %s engine joins one table per SELECT, and this query joins %d to %s; join one table (or ask the data owner for a view that joins the others)", g.d.Name(), joins, where)
	}
	return nil
}

// conditions renders the row filter: a known privacy unit, keys in their
// public lists (but for the columns whose rest the plan measures), and the
// query's WHERE.
func (g *sqlGen) conditions() ([]string, error) {
	p := g.p
	var conds []string
	if p.Bounded {
		conds = append(conds, g.colRef(p.Table.PrivacyUnit)+" IS NOT NULL")
		conds = append(conds, g.rangeConditions()...)
	}
	for i, k := range p.Query.GroupBy {
		if p.RestColumn(i) {
			continue // every row is kept: outside the list, in the rest's cell
		}
		if p.Query.Buckets[k] != nil {
			// A computed key takes only its listed values, or NULL.
			e, err := g.keyExpr(k)
			if err != nil {
				return nil, err
			}
			conds = append(conds, e+" IS NOT NULL")
			continue
		}
		vals := p.KeyValues(k)
		if vals == nil {
			continue // chosen by key selection
		}
		c, err := g.inList(k, vals)
		if err != nil {
			return nil, err
		}
		conds = append(conds, c)
	}
	if p.Query.Where != nil {
		c, err := g.expr(p.Query.Where)
		if err != nil {
			return nil, err
		}
		conds = append(conds, "("+c+")")
	}
	return conds, nil
}

// nullsClamped reports whether sums let a NULL become the lower bound
// (Plan.NullsClamped).
func (g *sqlGen) nullsClamped() bool { return g.p.NullsClamped(g.form) }

// sum spells the aggregate of statistic i's per-row values expr: doubles
// in the double forms for grid-summed statistics, integers otherwise.
func (g *sqlGen) sum(i int, expr string) string {
	if g.form != dpplan.IntegerForm && g.p.GridSummed(i) {
		return g.d.GridSum(expr)
	}
	return g.d.ExactSum(expr)
}

// summand renders the clamping stage for one statistic: the per-row value
// the engine aggregates, or "" for COUNT(*).
func (g *sqlGen) summand(s dpplan.Summand) (string, error) {
	switch s.Kind {
	case dpplan.RowCount, dpplan.DistinctUnits, dpplan.DistinctValues:
		return "", nil
	case dpplan.NonNullCount:
		return g.column(s.Column)
	case dpplan.CentredSquareSum:
		return g.squareSummand(s)
	}
	// greatest and least skip NULLs (greatest(NULL, 0) is 0). The integer
	// form and bounded plans keep a NULL NULL explicitly, so that it is
	// excluded from the sum (and the count of values can reuse the
	// summand); the double forms of unbounded plans let it become the lower
	// bound, which costs nothing per row, and ReadExact takes the lower
	// bound's grid value back out once per NULL (Statistic.Values counts
	// the others).
	col, err := g.column(s.Column)
	if err != nil {
		return "", err
	}
	nullable := func(e string) string {
		if g.nullsClamped() {
			return e
		}
		return fmt.Sprintf("CASE WHEN %s IS NULL THEN NULL ELSE %s END", col, e)
	}
	if g.p.IntColumn(s) {
		// Typed 64-bit integers, as the column is: an engine types a bare
		// literal by its value (ClickHouse reads 9007199254740992 as
		// UInt64, which has no common type with Int64).
		lo, hi := g.intConst(s.Lower), g.intConst(s.Upper)
		if g.form != dpplan.IntegerForm {
			return nullable(g.clamp(col, lo, hi)), nil
		}
		return fmt.Sprintf("CASE WHEN %s IS NULL THEN NULL ELSE least(greatest(%s, %s), %s) END", col, col, lo, hi), nil
	}
	lo, err := engine.Literal(g.d, s.LowerValue)
	if err != nil {
		return "", err
	}
	hi, err := engine.Literal(g.d, s.UpperValue)
	if err != nil {
		return "", err
	}
	if g.form != dpplan.IntegerForm {
		// Rounded onto the grid of 2^Exp in floating point (nearest, ties
		// to even); scaled to grid steps in ReadExact.
		return nullable(g.d.RoundToGrid(g.clamp(col, lo, hi), s.Exp)), nil
	}
	// The cast to an integer rounds to nearest; plan.go bounds the result by
	// the floor and ceiling of the scaled bounds, whatever the tie rule.
	scaled, err := engine.Scale(g.d, g.clamp(col, lo, hi), math.Ldexp(1, -s.Exp))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("CASE WHEN %s IS NULL THEN NULL ELSE %s END", col, engine.CastInt(g.d, scaled, engine.Integer32)), nil
}

// clamp spells col clamped to [lo, hi] where a NULL becomes lo, as
// DuckDB's NULL-skipping greatest and least do (engine.Greatest).
func (g *sqlGen) clamp(col, lo, hi string) string {
	return engine.Least(g.d, engine.Greatest(g.d, col, lo), hi)
}

func (g *sqlGen) inList(col string, values []any) (string, error) {
	e, err := g.keyExpr(col)
	if err != nil {
		return "", err
	}
	return g.inValues(e, values)
}

// inValues spells e IN (values), each value a literal of the dialect.
func (g *sqlGen) inValues(e string, values []any) (string, error) {
	lits := make([]string, len(values))
	for i, v := range values {
		l, err := engine.Literal(g.d, v)
		if err != nil {
			return "", err
		}
		lits[i] = l
	}
	return e + " IN (" + strings.Join(lits, ", ") + ")", nil
}

func (g *sqlGen) operand(o ir.Operand) (string, error) {
	switch o.Kind {
	case ir.ColumnRef:
		return g.colRef(o.Column), nil
	case ir.Literal:
		return engine.Literal(g.d, o.Value)
	case ir.Computed:
		if o.Part != nil {
			return g.dateSQL(*o.Part)
		}
		if o.Num != nil {
			return g.scalarSQL(o.Num)
		}
		return g.textSQL(o.Fn)
	}
	return "", fmt.Errorf("query: output reference in a row predicate")
}

func (g *sqlGen) expr(e ir.Expr) (string, error) {
	switch x := e.(type) {
	case ir.Compare:
		l, err := g.operand(x.Left)
		if err != nil {
			return "", err
		}
		if x.Op == "ILIKE" || x.Op == "NOT ILIKE" {
			return g.ilike(x, l)
		}
		if x.Op == "LIKE" || x.Op == "NOT LIKE" {
			if err := g.require(engine.Like); err != nil {
				return "", err
			}
		}
		r, err := g.operand(x.Right)
		if err != nil {
			return "", err
		}
		return l + " " + x.Op + " " + r, nil
	case ir.And, ir.Or:
		var args []ir.Expr
		sep := " AND "
		if a, ok := x.(ir.And); ok {
			args = a.Args
		} else {
			args = x.(ir.Or).Args
			sep = " OR "
		}
		parts := make([]string, len(args))
		for i, a := range args {
			s, err := g.expr(a)
			if err != nil {
				return "", err
			}
			parts[i] = "(" + s + ")"
		}
		return strings.Join(parts, sep), nil
	case ir.Not:
		// NOT NOT p is p in SQL's three-valued logic. The pair is
		// folded here because ClickHouse rewrites it on the shards but
		// not on the initiator, which then misses the aggregate's
		// column after the charge.
		if inner, ok := x.Arg.(ir.Not); ok {
			return g.expr(inner.Arg)
		}
		s, err := g.expr(x.Arg)
		if err != nil {
			return "", err
		}
		return "NOT (" + s + ")", nil
	case ir.In:
		a, err := g.operand(x.Arg)
		if err != nil {
			return "", err
		}
		parts := make([]string, len(x.Values))
		for i, v := range x.Values {
			if parts[i], err = g.operand(v); err != nil {
				return "", err
			}
		}
		not := ""
		if x.Negate {
			not = "NOT "
		}
		return a + " " + not + "IN (" + strings.Join(parts, ", ") + ")", nil
	case ir.IsNull:
		a, err := g.operand(x.Arg)
		if err != nil {
			return "", err
		}
		if x.Negate {
			return a + " IS NOT NULL", nil
		}
		return a + " IS NULL", nil
	case ir.Between:
		a, err := g.operand(x.Arg)
		if err != nil {
			return "", err
		}
		lo, err := g.operand(x.Low)
		if err != nil {
			return "", err
		}
		hi, err := g.operand(x.High)
		if err != nil {
			return "", err
		}
		if _, ok := g.d.(engine.NoNotBetween); ok && x.Negate {
			return "NOT (" + a + " BETWEEN " + lo + " AND " + hi + ")", nil
		}
		not := ""
		if x.Negate {
			not = "NOT "
		}
		return a + " " + not + "BETWEEN " + lo + " AND " + hi, nil
	}
	return "", fmt.Errorf("query: unknown expression %T", e)
}

// squareSummand renders (x − m)², x clamped to the declared bounds and m
// their midpoint, scaled to an integer number of 2^Exp steps.
func (g *sqlGen) squareSummand(s dpplan.Summand) (string, error) {
	col, err := g.column(s.Column)
	if err != nil {
		return "", err
	}
	lits := make([]string, 4)
	for i, v := range []float64{s.LowerValue, s.UpperValue, s.LowerValue + (s.UpperValue-s.LowerValue)/2, math.Ldexp(1, -s.Exp)} {
		l, err := engine.Literal(g.d, v)
		if err != nil {
			return "", err
		}
		lits[i] = l
	}
	d := "(" + g.clamp(col, lits[0], lits[1]) + " - " + lits[2] + ")"
	if g.form != dpplan.IntegerForm {
		return fmt.Sprintf("CASE WHEN %s IS NULL THEN NULL ELSE %s END", col, g.d.RoundToGrid(engine.Square(g.d, d), s.Exp)), nil
	}
	scaled, err := engine.Scale(g.d, engine.Square(g.d, d), math.Ldexp(1, -s.Exp))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("CASE WHEN %s IS NULL THEN NULL ELSE %s END", col, engine.CastInt(g.d, scaled, engine.Integer32)), nil
}
