package sqlgen

import (
	"strconv"
	"strings"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/schema"
)

// The statements are built as a small syntax tree of SELECTs, relations
// and stages, and spelled by one renderer (render) through the engine's
// dialect. Expressions stay text: the dialect spells them as they are
// built (engine.Dialect), and the tree only places them.
//
// The names the generator gives to columns, stages, subqueries and
// table occurrences are fixed, because the engines' readers find the
// statistics by them and ClickHouse rewrites a statement per shard by
// them (see engine/clickhouse's generatorAlias). Every one of them
// begins with schema.ReservedPrefix (_dp_), which the catalog refuses,
// in any case, for a table or column name: a generated name can never be
// a data column's (nor a stage a table's). No name a query gives reaches
// the statement: keys, statistics, table aliases and a pre-aggregation's
// columns are all renamed. (ClickHouse makes an alias visible in every
// expression of its SELECT, where it wins over a column of the same
// name: `"k0" AS u, "grp" AS k0` read u as grp.) A new name takes the
// prefix, as a constant or function below. Their meaning, in one place,
// without the prefix:
//
//	u                 the person (the privacy unit) a row belongs to
//	k0, k1, …         the group keys, in the query's GROUP BY order
//	g0, g1, …         the group keys as read, before a value outside its
//	                  column's list becomes NULL (the hidden cells)
//	v0, v1, …         statistic i's clamped per-row value (the summand)
//	s0, s1, …         statistic i's aggregate: per person and group in
//	                  the bounding stages, per group in the result
//	one               a constant column, when a row stage has no other
//	rk                a row's random key, for sampling at most L∞ values
//	                  per (person, group) (engine.Sampler)
//	rn                a row's rank in its partition (keepRandom and a
//	                  capped occurrence without QUALIFY)
//	h, t              a (person, group)'s random key and its person's
//	                  threshold, for keeping at most L0 groups per person
//	n                 the number of rows of a (person, group)
//	b                 a histogram row's bin (or value, for a distinct
//	                  count); bs a list of them
//	c                 a histogram's count per (group, bin)
//	u_pair, k0_pair…  a kept pair's person and keys, renamed for a join
//	                  that matches NULL keys
//	t0, t1, …         the private table (or pre-aggregation) and the
//	                  tables it joins; t0_capped, … a capped occurrence
//	p0, p1, …         a pre-aggregation's columns, in its select list
//	m                 a (person, group)'s rows up to L∞ (DroppedSQL)
//	kept, dropped     a person's kept rows (at most L0·L∞) and rows
//	                  beyond them (at most a cap), then their sums
//
// Stages and subqueries: r (the row stage: filter, keys, clamped values),
// cells (the statistics per value of the keys as read, restCells),
// r_bounded (at most L∞ rows per person and group), per_unit (per person
// and group), per_unit_bounded (at most L0 groups per person),
// thresholds (t per person), kept and kept_pairs (the kept pairs, or
// their kept values), light and heavy (the kept pairs with at most and
// more than L∞ rows), sampled (the heavy pairs' sampled values),
// kept_values, unit_groups and unit_groups_bounded (a histogram's pairs),
// pairs, numbered (rows with rn), distinct_values, per_person (a
// person's kept and dropped rows, DroppedSQL), and per_shard
// (ClickHouse's per-shard sums; its per_group, kn0, kv0, … are the
// dialect's, with the same prefix; the dialect's lambdas name their
// parameter t, which only their own body reads).
const (
	unitName  = schema.ReservedPrefix + "u"
	oneName   = schema.ReservedPrefix + "one"
	rkName    = schema.ReservedPrefix + "rk"
	rnName    = schema.ReservedPrefix + "rn"
	hName     = schema.ReservedPrefix + "h"
	tName     = schema.ReservedPrefix + "t"
	nName     = schema.ReservedPrefix + "n"
	binName   = schema.ReservedPrefix + "b"
	binsName  = schema.ReservedPrefix + "bs"
	countName = schema.ReservedPrefix + "c"

	rowsStage              = schema.ReservedPrefix + "r"
	cellsStage             = schema.ReservedPrefix + "cells"
	rowsBoundedStage       = schema.ReservedPrefix + "r_bounded"
	perUnitStage           = schema.ReservedPrefix + "per_unit"
	perUnitBoundedStage    = schema.ReservedPrefix + "per_unit_bounded"
	thresholdsStage        = schema.ReservedPrefix + "thresholds"
	keptStage              = schema.ReservedPrefix + "kept"
	keptPairsStage         = schema.ReservedPrefix + "kept_pairs"
	lightStage             = schema.ReservedPrefix + "light"
	heavyStage             = schema.ReservedPrefix + "heavy"
	sampledStage           = schema.ReservedPrefix + "sampled"
	keptValuesStage        = schema.ReservedPrefix + "kept_values"
	unitGroupsStage        = schema.ReservedPrefix + "unit_groups"
	unitGroupsBoundedStage = schema.ReservedPrefix + "unit_groups_bounded"
	pairsStage             = schema.ReservedPrefix + "pairs"
	numberedStage          = schema.ReservedPrefix + "numbered"
	distinctValuesStage    = schema.ReservedPrefix + "distinct_values"
	perShardStage          = schema.ReservedPrefix + "per_shard"
	perPersonStage         = schema.ReservedPrefix + "per_person"
	mName                  = schema.ReservedPrefix + "m"
	keptName               = schema.ReservedPrefix + "kept"
	droppedName            = schema.ReservedPrefix + "dropped"
)

// keyName is group key i's column.
func keyName(i int) string { return schema.ReservedPrefix + "k" + strconv.Itoa(i) }

// KeyColumn is the name of the statement's i-th key column (keyName), for
// readers of the engine's rows.
func KeyColumn(i int) string { return keyName(i) }

// StatColumn is the name of the statement's i-th statistic column
// (statName).
func StatColumn(i int) string { return statName(i) }

// rawKeyName is group key i's column as read (restCells).
func rawKeyName(i int) string { return schema.ReservedPrefix + "g" + strconv.Itoa(i) }

// valueName is statistic i's per-row value.
func valueName(i int) string { return schema.ReservedPrefix + "v" + strconv.Itoa(i) }

// statName is statistic i's aggregate.
func statName(i int) string { return schema.ReservedPrefix + "s" + strconv.Itoa(i) }

// pairName is the name of a kept pair's column col (the person or a key)
// in the join that matches NULL keys.
func pairName(col string) string { return col + "_pair" }

// occurrenceName is the alias of table occurrence i: 0 for the private
// table (or its pre-aggregation), i for the i-th joined table.
func occurrenceName(i int) string { return schema.ReservedPrefix + "t" + strconv.Itoa(i) }

// preColumnName is the name of column i of a pre-aggregation's select
// list: never the name the query gives it, which may be a column's that
// its aggregate reads.
func preColumnName(i int) string { return schema.ReservedPrefix + "p" + strconv.Itoa(i) }

// sqlNode is a statement or a query that the renderer spells.
type sqlNode interface {
	render(r *renderer, b *strings.Builder)
}

// relation is what a FROM clause reads.
type relation interface {
	renderRel(r *renderer, b *strings.Builder)
}

// item is one select item: an expression and its alias ("" for none).
type item struct {
	expr, alias string
}

// as is the item expr AS alias.
func as(expr, alias string) item { return item{expr: expr, alias: alias} }

// cols are items that name columns (or * and rel.*) without an alias.
func cols(names ...string) []item {
	out := make([]item, len(names))
	for i, n := range names {
		out[i] = item{expr: n}
	}
	return out
}

// selectStmt is one SELECT: items FROM from WHERE the conjuncts of where
// GROUP BY groupBy, then QUALIFY qualify, then tail (a clause the dialect
// spells, such as ORDER BY … LIMIT n BY …) and settings (dialect text
// appended verbatim, such as ClickHouse's SETTINGS).
type selectStmt struct {
	items    []item
	from     relation
	where    []string
	groupBy  []string
	qualify  string
	tail     string
	settings string
}

// unionAll is its parts joined by UNION ALL, each on its own line when
// lines is set.
type unionAll struct {
	parts []sqlNode
	lines bool
}

// rawSQL is a query the dialect spelled whole (engine.ShardBounder).
type rawSQL string

// stage is a named query of a statement, read by the later ones; kw is a
// keyword between AS and its body ("" or MATERIALIZED).
type stage struct {
	name, kw string
	body     sqlNode
}

// statement is a query with the stages it reads (stageRef): WITH queries,
// or, for a dialect without them (engine.Nested), subqueries nested in the
// FROM of the query that reads them.
type statement struct {
	stages []stage
	body   sqlNode
}

// table reads a table: its name, quoted by the dialect when quote is set,
// and its alias ("" for none, quoted as the name is).
type table struct {
	name, alias string
	quote       bool
}

// stageRef reads a stage of the statement by its name.
type stageRef string

// subquery reads a query under an alias: (query) AS alias.
type subquery struct {
	query sqlNode
	alias string
}

// join is left joined with each of joins in turn.
type join struct {
	left  relation
	joins []joinClause
}

// joinClause is one JOIN of a join: kind is JOIN or LEFT JOIN; the
// condition is the conjuncts of on, or USING the columns of using.
type joinClause struct {
	kind  string
	right relation
	on    []string
	using []string
}

// renderer spells a statement through a dialect.
type renderer struct {
	d      engine.Dialect
	nested bool
	stages map[string]stage
}

// render spells n through the dialect d.
func render(d engine.Dialect, n sqlNode) string {
	_, nested := d.(engine.Nested)
	r := &renderer{d: d, nested: nested, stages: map[string]stage{}}
	var b strings.Builder
	n.render(r, &b)
	return b.String()
}

// render spells the stages as WITH queries before the body, or leaves
// them to the stageRefs that read them.
func (s *statement) render(r *renderer, b *strings.Builder) {
	for _, st := range s.stages {
		r.stages[st.name] = st
	}
	if r.nested || len(s.stages) == 0 {
		s.body.render(r, b)
		return
	}
	b.WriteString("WITH ")
	for i, st := range s.stages {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString(st.name + " AS ")
		if st.kw != "" {
			b.WriteString(st.kw + " ")
		}
		b.WriteString("(")
		st.body.render(r, b)
		b.WriteString(")")
	}
	b.WriteString("\n")
	s.body.render(r, b)
}

// render spells the clauses in SQL's order.
func (s *selectStmt) render(r *renderer, b *strings.Builder) {
	b.WriteString("SELECT ")
	for i, it := range s.items {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(it.expr)
		if it.alias != "" {
			b.WriteString(" AS " + it.alias)
		}
	}
	if s.from != nil {
		b.WriteString(" FROM ")
		s.from.renderRel(r, b)
	}
	if len(s.where) > 0 {
		b.WriteString(" WHERE " + strings.Join(s.where, " AND "))
	}
	if len(s.groupBy) > 0 {
		b.WriteString(" GROUP BY " + strings.Join(s.groupBy, ", "))
	}
	if s.qualify != "" {
		b.WriteString(" QUALIFY " + s.qualify)
	}
	if s.tail != "" {
		b.WriteString(" " + s.tail)
	}
	b.WriteString(s.settings)
}

// render joins the parts with UNION ALL.
func (u *unionAll) render(r *renderer, b *strings.Builder) {
	sep := " UNION ALL "
	if u.lines {
		sep = "\nUNION ALL\n"
	}
	for i, p := range u.parts {
		if i > 0 {
			b.WriteString(sep)
		}
		p.render(r, b)
	}
}

// render writes the query as it is.
func (q rawSQL) render(_ *renderer, b *strings.Builder) { b.WriteString(string(q)) }

// renderRel spells the table's name and alias.
func (t table) renderRel(r *renderer, b *strings.Builder) {
	name, alias := t.name, t.alias
	if t.quote {
		name = r.d.QuoteIdent(name)
		if alias != "" {
			alias = r.d.QuoteIdent(alias)
		}
	}
	b.WriteString(name)
	if alias != "" {
		b.WriteString(" AS " + alias)
	}
}

// renderRel spells a stage by its name, or nested as a subquery under
// its name for a dialect without WITH queries.
func (s stageRef) renderRel(r *renderer, b *strings.Builder) {
	st, ok := r.stages[string(s)]
	if !ok || !r.nested {
		b.WriteString(string(s))
		return
	}
	subquery{query: st.body, alias: st.name}.renderRel(r, b)
}

// renderRel spells (query) AS alias.
func (s subquery) renderRel(r *renderer, b *strings.Builder) {
	b.WriteString("(")
	s.query.render(r, b)
	b.WriteString(") AS " + s.alias)
}

// renderRel spells the left relation and each JOIN.
func (j join) renderRel(r *renderer, b *strings.Builder) {
	j.left.renderRel(r, b)
	for _, c := range j.joins {
		b.WriteString(" " + c.kind + " ")
		c.right.renderRel(r, b)
		if len(c.using) > 0 {
			b.WriteString(" USING (" + strings.Join(c.using, ", ") + ")")
			continue
		}
		b.WriteString(" ON " + strings.Join(c.on, " AND "))
	}
}
