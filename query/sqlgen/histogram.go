package sqlgen

import (
	"fmt"
	"strconv"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/dpplan"
)

// HistogramSQL generates the engine statement computing histogram h per
// group: columns _dp_k0, _dp_k1, …, then _dp_b (the bin) and _dp_c (its
// count), read by position (the names are in ast.go). Rows are
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
		return []item{as(value, binName)}, []string{col + " IS NOT NULL"}, nil
	})
	if err != nil {
		return "", err
	}
	outKeys := concat(keys, binName)
	// final counts the kept rows per (group, bin), or the distinct values
	// per group.
	final := func(from relation) sqlNode {
		if !hist.Distinct {
			return &selectStmt{items: append(cols(outKeys...), as("count(*)", countName)), from: from, groupBy: outKeys}
		}
		if _, nested := d.(engine.Nested); nested {
			// Such a dialect (ClickHouse) reads an alias anywhere in its
			// SELECT: 0 AS b would be counted instead of the column b (and
			// 0 is a UInt8, which reads as a bool).
			inner := &selectStmt{items: append(cols(keys...), as("count(DISTINCT "+binName+")", countName)), from: from, groupBy: keys}
			return &selectStmt{
				items: append(cols(keys...), as("CAST(0 AS "+d.TypeName(engine.Integer)+")", binName), item{expr: countName}),
				from:  subquery{query: inner, alias: distinctValuesStage},
			}
		}
		return &selectStmt{items: append(cols(keys...), as("CAST(0 AS "+d.TypeName(engine.Integer)+")", binName), as("count(DISTINCT "+binName+")", countName)), from: from, groupBy: keys}
	}
	st := &statement{stages: []stage{{name: rowsStage, body: rows}}}
	if !p.Bounded {
		st.body = final(stageRef(rowsStage))
		return g.render(st), nil
	}
	if sm, ok := d.(engine.Sampler); ok {
		// The sampled rows carry the random key rk of each row (see
		// sampledHistogram).
		sampledRows := *rows
		sampledRows.items = append(rows.items[:len(rows.items):len(rows.items)], as(d.Random(), rkName))
		return g.sampledHistogram(sm, rows, &sampledRows, keys, final), nil
	}
	unitKeys := append([]string{unitName}, keys...)
	st.stages = append(st.stages, stage{name: rowsBoundedStage, body: g.keepRandom(stageRef(rowsStage), unitKeys, concat(unitKeys, binName), p.Contribution.RowsPerGroup)})
	var from relation = stageRef(rowsBoundedStage)
	if lb, ok := d.(engine.LimitBy); ok && p.BoundGroups {
		// Each (person, group) collects its kept values into a list, at
		// most L0 of a person's groups are kept by the hash of the group,
		// and the list is unnested: the kept rows are read once.
		st.stages = append(st.stages,
			stage{name: unitGroupsBoundedStage, body: &selectStmt{
				items: append(cols(unitKeys...), as(lb.Collect(binName), binsName)), from: from, groupBy: unitKeys,
				tail: lb.KeepFirst(lb.RowKey(g.salt, unitKeys), []string{unitName}, p.Contribution.Groups),
			}},
			stage{name: keptStage, body: &selectStmt{items: append(cols(keys...), as(lb.Unnest(binsName), binName)), from: stageRef(unitGroupsBoundedStage)}})
		from = stageRef(keptStage)
	} else if p.BoundGroups {
		st.stages = append(st.stages,
			stage{name: unitGroupsStage, body: &selectStmt{items: cols(unitKeys...), from: from, groupBy: unitKeys}},
			stage{name: unitGroupsBoundedStage, body: g.keepRandom(stageRef(unitGroupsStage), []string{unitName}, unitKeys, p.Contribution.Groups)})
		// The kept pairs' columns are renamed (_dp_u_pair, _dp_k0_pair, …) so
		// that the join can match a NULL key to a NULL key, which USING
		// would not: a NULL group is a group.
		ns, ok := d.(engine.NullSafe)
		if !ok {
			return "", fmt.Errorf("sqlgen: the %s dialect cannot join a NULL group key", d.Name())
		}
		pairCols, on := []item{as(unitName, pairName(unitName))}, []string{unitName + " = " + pairName(unitName)}
		for _, k := range keys {
			pairCols = append(pairCols, as(k, pairName(k)))
			on = append(on, ns.NullSafeEqual(k, pairName(k)))
		}
		pairs := &selectStmt{items: pairCols, from: stageRef(unitGroupsBoundedStage)}
		from = join{left: from, joins: []joinClause{{kind: "JOIN", right: subquery{query: pairs, alias: pairsStage}, on: on}}}
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
	pair := append([]string{unitName}, keys...)
	stages, from := g.keepGroups(sm, append(cols(keys...), as("count(*)", nName)), subquery{query: rows, alias: rowsStage}, pair)
	stages = append(stages, stage{name: keptPairsStage, kw: sm.Materialized(), body: &selectStmt{items: cols(concat(pair, nName)...), from: stageRef(from)}})
	// The pairs are joined on u and the keys, a NULL key matching a NULL
	// key (USING would drop the NULL group's rows).
	joinPairs := func(rows *selectStmt, alias, cond string) relation {
		on := []string{rowsStage + "." + unitName + " = " + alias + "." + unitName}
		for _, k := range keys {
			on = append(on, sm.NullSafeEqual(rowsStage+"."+k, alias+"."+k))
		}
		pairs := &selectStmt{items: cols(pair...), from: stageRef(keptPairsStage), where: []string{cond}}
		return join{left: subquery{query: rows, alias: rowsStage}, joins: []joinClause{{kind: "JOIN", right: subquery{query: pairs, alias: alias}, on: on}}}
	}
	rKeys := make([]string, len(keys))
	for i, k := range keys {
		rKeys[i] = rowsStage + "." + k
	}
	light := &selectStmt{items: cols(concat(rKeys, rowsStage+"."+binName)...), from: joinPairs(rows, lightStage, nName+" <= "+L)}
	rPair := append([]string{rowsStage + "." + unitName}, rKeys...)
	sampled := &selectStmt{
		items:   append(cols(rPair...), as(sm.SmallestN(rowsStage+"."+binName, rowsStage+"."+rkName, g.p.Contribution.RowsPerGroup), binsName)),
		from:    joinPairs(sampledRows, heavyStage, nName+" > "+L),
		groupBy: rPair,
	}
	heavy := &selectStmt{items: append(cols(keys...), as(sm.Unnest(binsName), binName)), from: subquery{query: sampled, alias: sampledStage}}
	stages = append(stages, stage{name: keptStage, body: &unionAll{parts: []sqlNode{light, heavy}, lines: true}})
	return g.render(&statement{stages: stages, body: final(stageRef(keptStage))})
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
