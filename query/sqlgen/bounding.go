package sqlgen

// The bounding stages: how a statement keeps at most L∞ rows per person
// and group and at most L0 groups per person, chosen at random, in each
// dialect's way (sorting by a salted random key, sampling with aggregates,
// or one SELECT per shard).

import (
	"slices"
	"strconv"
	"strings"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/dpplan"
)

// perShard reports whether the statement bounds each person on the
// shards: the plan says the table is distributed by its privacy unit, the
// dialect keeps rows per key with LIMIT BY, and the statement reads the
// table alone and directly (source is the table, its quoted name one
// word).
func (g *sqlGen) perShard(source relation) bool {
	_, lb := g.d.(engine.LimitBy)
	t, direct := source.(table)
	return g.p.PerShard && lb && g.p.Bounded && len(g.p.Query.Joins) == 0 && g.p.Query.Pre == nil &&
		direct && t.alias == "" && !strings.ContainsAny(g.ident(t.name), " (")
}

// shardBounded writes a bounded statement whose per-person stages are one
// SELECT over the table (engine.ShardBounder): per (person, group), the
// at most L∞ rows with the smallest row key (the rows keepRandom keeps)
// are aggregated from a list; then at most L0 groups per person are kept
// by the key keepRandom uses. The dialect's PerShard clause makes each
// shard run that SELECT to its end: every person's rows are on one shard,
// so each shard's (person, group) rows are the statement's. Each shard
// also sums them per group (engine.ShardBounder.ShardGroups), and the
// initiator sums the shards' per-group partial sums.
func (g *sqlGen) shardBounded(sb engine.ShardBounder, rows *selectStmt, rowExprs []string, exprOf map[string]string, aggs func(func(int) string) []item, keys []string) string {
	p := g.p
	lb := g.d.(engine.LimitBy)
	// The rows' values, in the order keepRandom hashes them.
	hashed := append([]string{unitName}, keys...)
	var vals []string
	index := map[string]int{}
	for _, e := range rowExprs {
		if e == "" || slices.Contains(hashed, e) {
			continue
		}
		if _, ok := index[e]; !ok {
			vals = append(vals, "("+exprOf[e]+")")
			index[e] = len(vals)
		}
	}
	rowKey := lb.RowKey(g.salt, append(append([]string{}, hashed...), vals...))
	list := sb.KeptRows(rowKey, append([]string{}, vals...), p.Contribution.RowsPerGroup)
	L := strconv.FormatInt(p.Contribution.RowsPerGroup, 10)
	perUnit := func(i int) string {
		switch p.Statistics[i].Summand.Kind {
		case dpplan.RowCount:
			return "least(count(*), " + L + ")"
		case dpplan.DistinctUnits:
			return g.intConst(1)
		case dpplan.DistinctValues:
			return g.intConst(0)
		case dpplan.NonNullCount:
			return sb.KeptCount(list, index[rowExprs[i]])
		}
		if g.form != dpplan.IntegerForm && p.GridSummed(i) {
			return sb.KeptGridSum(list, index[rowExprs[i]])
		}
		return sb.KeptExactSum(list, index[rowExprs[i]])
	}
	unitAndKeys := rows.items[:1+len(keys)]
	inner := &selectStmt{items: append(unitAndKeys[:len(unitAndKeys):len(unitAndKeys)], aggs(perUnit)...), from: rows.from, where: rows.where, groupBy: hashed}
	if p.BoundGroups {
		inner.tail = lb.KeepFirst(lb.RowKey(g.salt, hashed), []string{unitName}, p.Contribution.Groups)
	}
	perGroup := &selectStmt{items: append(cols(keys...), aggs(g.resum)...), from: subquery{query: inner, alias: perUnitBoundedStage}, groupBy: keys}
	sums := make([]string, len(p.Statistics))
	for i := range sums {
		sums[i] = statName(i)
	}
	keyExprs := make([]string, len(keys))
	for i, c := range unitAndKeys[1:] {
		keyExprs[i] = c.expr
	}
	source := g.ident(rows.from.(table).name)
	perShard := sb.ShardGroups(source, strings.Join(rows.where, " AND "), keyExprs, keys, sums, render(g.d, perGroup))
	final := &selectStmt{items: append(cols(keys...), aggs(g.resum)...), from: subquery{query: rawSQL(perShard), alias: perShardStage}, groupBy: keys, settings: sb.PerShard()}
	return g.render(final)
}

// resum spells the sum over persons of statistic i's per-person value.
func (g *sqlGen) resum(i int) string {
	if st := g.p.Statistics[i].Summand.Kind; st == dpplan.FixedPointSum || st == dpplan.CentredSquareSum {
		return g.sum(i, statName(i))
	}
	return g.d.ExactSum(statName(i))
}

// sampled writes the bounding stages with aggregates, for dialects that
// can (engine.Sampler), instead of sorting every row by a random key:
//
//   - per (person, group): COUNT(*) counts at most L∞ rows; a sum or a
//     count of values reads the at most L∞ non-NULL values with the
//     smallest random key of their row (a uniform random subset), and
//     SmallestN keeps them without a sort (only for the kept pairs with
//     more than L∞ rows: splitPairs); with L∞ ≤ 2, plain aggregates keep
//     them in one pass (onePassPerUnit);
//   - per person: each (person, group) gets a random key h; t is the
//     (L0+1)-th smallest h of the person, and the groups with h < t are
//     kept (all of them when the person has at most L0). At most L0 values
//     lie strictly below the (L0+1)-th smallest, ties or not, so a person
//     keeps at most L0 groups; without ties (the keys are random doubles)
//     exactly min(L0, groups), chosen uniformly.
//
// Which values and groups of a person are kept depends only on that
// person's rows and on fresh randomness (the random keys are computed
// once: the per-person stage is materialized), so the contribution bound
// holds whatever the engine's order (see keepRandom).
func (g *sqlGen) sampled(sm engine.Sampler, rows *selectStmt, keys, rowExprs []string, aggs func(func(int) string) []item) string {
	p := g.p
	L := p.Contribution.RowsPerGroup
	perUnit := func(i int) string {
		switch p.Statistics[i].Summand.Kind {
		case dpplan.RowCount:
			return "least(count(*), " + strconv.FormatInt(L, 10) + ")"
		case dpplan.DistinctUnits:
			return g.intConst(1)
		case dpplan.DistinctValues:
			return g.intConst(0)
		case dpplan.NonNullCount:
			return sm.ListCount(sm.SmallestN(rowExprs[i], rkName, L))
		default:
			return sm.ListSum(sm.SmallestN(rowExprs[i], rkName, L))
		}
	}
	if p.SamplesValues() {
		es, ok := g.onePass()
		if !ok {
			return g.splitPairs(sm, rows, keys, rowExprs, aggs, perUnit)
		}
		perUnit = g.onePassPerUnit(es, rowExprs, perUnit)
	}
	stages, from := g.keepGroups(sm, append(cols(keys...), aggs(perUnit)...), stageRef(rowsStage), append([]string{unitName}, keys...))
	st := &statement{stages: append([]stage{{name: rowsStage, body: rows}}, stages...)}
	st.body = &selectStmt{items: append(cols(keys...), aggs(g.resum)...), from: stageRef(from), groupBy: keys}
	return g.render(st)
}

// splitPairs writes the sampled bounding of a plan that sums or counts
// values without a list per (person, group): DuckDB spills an
// aggregate's hash table but keeps the lists of SmallestN in memory, so
// that a list per pair made large tables fail under a memory limit (see
// docs/scaling.md). Every pair is aggregated with plain aggregates, which
// spill, and its row count n; at most L0 pairs per person are kept as
// keepGroups keeps them; a kept pair with at most L∞ rows keeps all of its
// values, which its plain aggregates give exactly as perUnit would (NULL
// where perUnit's list is empty); the rows of the other kept pairs are
// read again and aggregated by perUnit, with lists.
func (g *sqlGen) splitPairs(sm engine.Sampler, rows *selectStmt, keys, rowExprs []string, aggs func(func(int) string) []item, perUnit func(int) string) string {
	p := g.p
	L := strconv.FormatInt(p.Contribution.RowsPerGroup, 10)
	all := func(i int) string {
		switch p.Statistics[i].Summand.Kind {
		case dpplan.RowCount, dpplan.DistinctUnits, dpplan.DistinctValues:
			return perUnit(i)
		case dpplan.NonNullCount:
			return "nullif(count(" + rowExprs[i] + "), 0)"
		default:
			return g.sum(i, rowExprs[i])
		}
	}
	sums := make([]string, len(p.Statistics))
	for i := range sums {
		sums[i] = statName(i)
	}
	list := cols(append(append([]string{unitName}, keys...), sums...)...)
	unitKeys := append([]string{unitName}, keys...)
	// The rows are spelled twice, not as a WITH query read twice, so that
	// they are never materialized: each read takes them from the table.
	r := subquery{query: rows, alias: rowsStage}
	stages, from := g.keepGroups(sm, append(append(cols(keys...), as("count(*)", nName)), aggs(all)...), r, unitKeys)
	stages = append(stages, stage{name: keptStage, kw: sm.Materialized(), body: &selectStmt{items: cols("*"), from: stageRef(from)}})
	// The heavy pairs' columns are renamed (_dp_u_pair, _dp_k0_pair, …) so that
	// the join can match a NULL key to a NULL key, which USING would not:
	// a NULL group is a group.
	heavyCols, on := []item{as(unitName, pairName(unitName))}, []string{unitName + " = " + pairName(unitName)}
	for _, k := range keys {
		heavyCols = append(heavyCols, as(k, pairName(k)))
		on = append(on, sm.NullSafeEqual(k, pairName(k)))
	}
	heavy := &selectStmt{items: heavyCols, from: stageRef(keptStage), where: []string{nName + " > " + L}}
	stages = append(stages, stage{name: sampledStage, body: &selectStmt{
		items:   append(cols(unitKeys...), aggs(perUnit)...),
		from:    join{left: r, joins: []joinClause{{kind: "JOIN", right: subquery{query: heavy, alias: heavyStage}, on: on}}},
		groupBy: unitKeys,
	}})
	keptValues := &unionAll{parts: []sqlNode{
		&selectStmt{items: list, from: stageRef(keptStage), where: []string{nName + " <= " + L}},
		&selectStmt{items: list, from: stageRef(sampledStage)},
	}}
	st := &statement{stages: stages, body: &selectStmt{items: append(cols(keys...), aggs(g.resum)...), from: subquery{query: keptValues, alias: keptValuesStage}, groupBy: keys}}
	return g.render(st)
}

// keepGroups builds the per-person stages of the sampled bounding: the
// (person, group) aggregates (u, then items, read from source grouped by
// groupBy) and, when the plan limits groups per person, the threshold
// that keeps at most L0 of them. It returns the stages and the one to
// read the kept (person, group) rows from.
func (g *sqlGen) keepGroups(sm engine.Sampler, items []item, source relation, groupBy []string) ([]stage, string) {
	p := g.p
	perUnit := &selectStmt{items: append(cols(unitName), items...), from: source, groupBy: groupBy}
	if !p.BoundGroups {
		return []stage{{name: perUnitStage, body: perUnit}}, perUnitStage
	}
	// The random key h is drawn once per (person, group): the stage is
	// materialized because it is read twice.
	perUnit.items = append(perUnit.items, as(g.d.Random(), hName))
	return []stage{
		{name: perUnitStage, kw: sm.Materialized(), body: perUnit},
		{name: thresholdsStage, body: &selectStmt{items: []item{{expr: unitName}, as(sm.NthSmallest(hName, p.Contribution.Groups+1), tName)}, from: stageRef(perUnitStage), groupBy: []string{unitName}}},
		{name: perUnitBoundedStage, body: &selectStmt{
			items: cols(perUnitStage + ".*"),
			from:  join{left: stageRef(perUnitStage), joins: []joinClause{{kind: "JOIN", right: stageRef(thresholdsStage), on: []string{perUnitStage + "." + unitName + " = " + thresholdsStage + "." + unitName}}}},
			where: []string{tName + " IS NULL OR " + hName + " < " + tName},
		}},
	}, perUnitBoundedStage
}

// keepRandom keeps at most limit rows of rel per partition, chosen
// uniformly at random. Whether QUALIFY exists is the dialect's business.
//
// The random order is a privacy requirement, not a nicety: which of a
// person's rows are kept must depend only on that person's rows and on
// fresh randomness. Without an ORDER BY, the rows kept for one person
// could change when another person is added (the engine's physical order
// shifts), and the sensitivity the plan derives would no longer bound the
// change. A cheaper order must keep that property (for example a hash of
// the row with a secret salt).
//
// A LimitBy dialect orders by a keyed hash of the row's values hashed (the
// columns of rel that the statement reads), with the statement's secret
// salt (see engine.LimitBy).
func (g *sqlGen) keepRandom(rel relation, partition, hashed []string, limit int64) *selectStmt {
	if lb, ok := g.d.(engine.LimitBy); ok {
		return &selectStmt{items: cols("*"), from: rel, tail: lb.KeepFirst(lb.RowKey(g.salt, hashed), partition, limit)}
	}
	rn := "row_number() OVER (PARTITION BY " + strings.Join(partition, ", ") + " ORDER BY " + g.d.Random() + ")"
	if g.d.SupportsQualify() {
		return &selectStmt{items: cols("*"), from: rel, qualify: rn + " <= " + strconv.FormatInt(limit, 10)}
	}
	numbered := &selectStmt{items: []item{{expr: "*"}, as(rn, rnName)}, from: rel}
	return &selectStmt{items: cols("*"), from: subquery{query: numbered, alias: numberedStage}, where: []string{rnName + " <= " + strconv.FormatInt(limit, 10)}}
}
