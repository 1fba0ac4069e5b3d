package sqlgen

import (
	"fmt"
	"strconv"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/dpplan"
)

// HistogramSQL generates the engine statement computing histogram h per
// group: columns k0, k1, …, then b (the bin) and c (its count). Rows are
// bounded as for the main statement (at most RowsPerGroup rows per person
// and group, at most Groups groups per person), with their own random
// choices.
func HistogramSQL(p *dpplan.Plan, d engine.Dialect, h int) (string, error) {
	g := newSQLGen(d, p, dpplan.CleanForm) // histograms read the view where NaN is NULL
	if err := g.checkJoins(); err != nil {
		return "", err
	}
	hist := p.Histograms[h]
	keys := g.keyNames()
	rows, err := g.rowStage(p.Table.Name, func() ([]item, []string, error) {
		col, err := g.column(hist.Column)
		if err != nil {
			return nil, nil, err
		}
		// The value each kept row adds: its bin, or for a distinct count
		// the value itself.
		value := col
		if !hist.Distinct {
			if value, err = g.bin(hist, col); err != nil {
				return nil, nil, err
			}
		}
		return []item{as(value, "b")}, []string{col + " IS NOT NULL"}, nil
	})
	if err != nil {
		return "", err
	}
	outKeys := concat(keys, "b")
	// final counts the kept rows per (group, bin), or the distinct values
	// per group.
	final := func(from relation) sqlNode {
		if !hist.Distinct {
			return &selectStmt{items: append(cols(outKeys...), as("count(*)", "c")), from: from, groupBy: outKeys}
		}
		if _, nested := d.(engine.Nested); nested {
			// Such a dialect (ClickHouse) reads an alias anywhere in its
			// SELECT: 0 AS b would be counted instead of the column b (and
			// 0 is a UInt8, which reads as a bool).
			inner := &selectStmt{items: append(cols(keys...), as("count(DISTINCT b)", "c")), from: from, groupBy: keys}
			return &selectStmt{
				items: append(cols(keys...), as("CAST(0 AS "+d.TypeName(engine.Integer)+")", "b"), item{expr: "c"}),
				from:  subquery{query: inner, alias: "distinct_values"},
			}
		}
		return &selectStmt{items: append(cols(keys...), as("CAST(0 AS "+d.TypeName(engine.Integer)+")", "b"), as("count(DISTINCT b)", "c")), from: from, groupBy: keys}
	}
	st := &statement{stages: []stage{{name: "r", body: rows}}}
	if !p.Bounded {
		st.body = final(stageRef("r"))
		return g.render(st), nil
	}
	if sm, ok := d.(engine.Sampler); ok {
		// The sampled rows carry the random key rk of each row (see
		// sampledHistogram).
		sampledRows := *rows
		sampledRows.items = append(rows.items[:len(rows.items):len(rows.items)], as(d.Random(), "rk"))
		return g.sampledHistogram(sm, rows, &sampledRows, keys, final), nil
	}
	unitKeys := append([]string{"u"}, keys...)
	st.stages = append(st.stages, stage{name: "r_bounded", body: g.keepRandom(stageRef("r"), unitKeys, concat(unitKeys, "b"), p.Contribution.RowsPerGroup)})
	var from relation = stageRef("r_bounded")
	if lb, ok := d.(engine.LimitBy); ok && p.BoundGroups {
		// Each (person, group) collects its kept values into a list, at
		// most L0 of a person's groups are kept by the hash of the group,
		// and the list is unnested: the kept rows are read once.
		st.stages = append(st.stages,
			stage{name: "unit_groups_bounded", body: &selectStmt{
				items: append(cols(unitKeys...), as(lb.Collect("b"), "bs")), from: from, groupBy: unitKeys,
				tail: lb.KeepFirst(lb.RowKey(g.salt, unitKeys), []string{"u"}, p.Contribution.Groups),
			}},
			stage{name: "kept", body: &selectStmt{items: append(cols(keys...), as(lb.Unnest("bs"), "b")), from: stageRef("unit_groups_bounded")}})
		from = stageRef("kept")
	} else if p.BoundGroups {
		st.stages = append(st.stages,
			stage{name: "unit_groups", body: &selectStmt{items: cols(unitKeys...), from: from, groupBy: unitKeys}},
			stage{name: "unit_groups_bounded", body: g.keepRandom(stageRef("unit_groups"), []string{"u"}, unitKeys, p.Contribution.Groups)})
		// The kept pairs' columns are renamed (pair_u, pair_k0, …) so
		// that the join can match a NULL key to a NULL key, which USING
		// would not: a NULL group is a group.
		ns, ok := d.(engine.NullSafe)
		if !ok {
			return "", fmt.Errorf("sqlgen: the %s dialect cannot join a NULL group key", d.Name())
		}
		pairCols, on := []item{as("u", "pair_u")}, []string{"u = pair_u"}
		for _, k := range keys {
			pairCols = append(pairCols, as(k, "pair_"+k))
			on = append(on, ns.NullSafeEqual(k, "pair_"+k))
		}
		pairs := &selectStmt{items: pairCols, from: stageRef("unit_groups_bounded")}
		from = join{left: from, joins: []joinClause{{kind: "JOIN", right: subquery{query: pairs, alias: "pairs"}, on: on}}}
	}
	st.body = final(from)
	return g.render(st), nil
}

// sampledHistogram writes the bounded histogram statement for dialects
// that bound with aggregates (engine.Sampler), as the main statement's
// splitPairs does: at most L∞ values per (person, group), chosen by the
// smallest random key rk of their rows (SmallestN), at most L0 groups per
// person (keepGroups), then one row per kept value. A list per pair is
// only made where it is needed: DuckDB spills an aggregate's hash table
// but keeps SmallestN's lists in memory, so that a list for every pair
// made large tables fail under a memory limit (see docs/scaling.md).
// Every pair is counted first (n, plain aggregates, which spill), and at
// most L0 pairs per person are kept; the rows are read again, joined with
// the kept pairs: a pair with at most L∞ rows keeps all of them, and only
// the rows of the pairs with more than L∞ rows are sampled with
// SmallestN. (Counting the rows per (pair, bin) before the join, a third
// aggregate, took more memory and time than joining the rows.) The kept
// values, and so the answers, are those of a list for every pair: the
// same pairs, the same randomness per pair.
//
// rows selects u, the keys and b; sampledRows also rk. The rows are
// spelled each time they are read, not as a WITH query read three times,
// so that they are never materialized.
func (g *sqlGen) sampledHistogram(sm engine.Sampler, rows, sampledRows *selectStmt, keys []string, final func(from relation) sqlNode) string {
	L := strconv.FormatInt(g.p.Contribution.RowsPerGroup, 10)
	pair := append([]string{"u"}, keys...)
	stages, from := g.keepGroups(sm, append(cols(keys...), as("count(*)", "n")), subquery{query: rows, alias: "r"}, pair)
	stages = append(stages, stage{name: "kept_pairs", kw: sm.Materialized(), body: &selectStmt{items: cols(concat(pair, "n")...), from: stageRef(from)}})
	// The pairs are joined on u and the keys, a NULL key matching a NULL
	// key (USING would drop the NULL group's rows).
	joinPairs := func(rows *selectStmt, alias, cond string) relation {
		on := []string{"r.u = " + alias + ".u"}
		for _, k := range keys {
			on = append(on, sm.NullSafeEqual("r."+k, alias+"."+k))
		}
		pairs := &selectStmt{items: cols(pair...), from: stageRef("kept_pairs"), where: []string{cond}}
		return join{left: subquery{query: rows, alias: "r"}, joins: []joinClause{{kind: "JOIN", right: subquery{query: pairs, alias: alias}, on: on}}}
	}
	rKeys := make([]string, len(keys))
	for i, k := range keys {
		rKeys[i] = "r." + k
	}
	light := &selectStmt{items: cols(concat(rKeys, "r.b")...), from: joinPairs(rows, "light", "n <= "+L)}
	rPair := append([]string{"r.u"}, rKeys...)
	sampled := &selectStmt{
		items:   append(cols(rPair...), as(sm.SmallestN("r.b", "r.rk", g.p.Contribution.RowsPerGroup), "bs")),
		from:    joinPairs(sampledRows, "heavy", "n > "+L),
		groupBy: rPair,
	}
	heavy := &selectStmt{items: append(cols(keys...), as(sm.Unnest("bs"), "b")), from: subquery{query: sampled, alias: "sampled"}}
	stages = append(stages, stage{name: "kept", body: &unionAll{parts: []sqlNode{light, heavy}, lines: true}})
	return g.render(&statement{stages: stages, body: final(stageRef("kept"))})
}

// bin spells the candidate bin of a histogram's column value.
func (g *sqlGen) bin(hist dpplan.Histogram, col string) (string, error) {
	d := g.d
	lits := make([]string, 3)
	for i, v := range []float64{hist.Lower, hist.Upper, hist.Step} {
		l, err := engine.Literal(d, v)
		if err != nil {
			return "", err
		}
		lits[i] = l
	}
	// Total for every value the column can hold: the value is clamped to
	// the declared bounds (within ±2^53), so value − lower is finite, and
	// the bin is clamped into [0, Bins] before the cast.
	steps, err := engine.Divide(d, "("+g.clamp(col, lits[0], lits[1])+" - "+lits[0]+")", hist.Step)
	if err != nil {
		return "", err
	}
	return "CAST(" + g.clamp("floor("+steps+")", "0", strconv.Itoa(hist.Bins)) + " AS " + d.TypeName(engine.Integer32) + ")", nil
}
