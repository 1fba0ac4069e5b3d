package sqlgen

import (
	"strconv"
	"strings"

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
	nk := len(p.Query.GroupBy)
	keys := make([]string, nk)
	var cols []string
	if p.Bounded {
		cols = append(cols, g.colRef(p.Table.PrivacyUnit)+" AS u")
	}
	for i, k := range p.Query.GroupBy {
		keys[i] = "k" + strconv.Itoa(i)
		e, err := g.keyExpr(k)
		if err != nil {
			return "", err
		}
		cols = append(cols, e+" AS "+keys[i])
	}
	col, err := g.column(hist.Column)
	if err != nil {
		return "", err
	}
	// The value each kept row adds: its bin, or for a distinct count the
	// value itself.
	value := col
	if !hist.Distinct {
		if value, err = g.bin(hist, col); err != nil {
			return "", err
		}
	}
	cols = append(cols, value+" AS b")
	conds, err := g.conditions()
	if err != nil {
		return "", err
	}
	conds = append(conds, col+" IS NOT NULL")
	source, err := g.fromClause(p.Table.Name)
	if err != nil {
		return "", err
	}
	where := " FROM " + source + " WHERE " + strings.Join(conds, " AND ")
	rows := "SELECT " + strings.Join(cols, ", ") + where
	outKeys := strings.Join(append(append([]string{}, keys...), "b"), ", ")
	// final counts the kept rows per (group, bin), or the distinct values
	// per group.
	final := func(from string) string {
		if !hist.Distinct {
			return "SELECT " + outKeys + ", count(*) AS c FROM " + from + " GROUP BY " + outKeys
		}
		if _, nested := d.(engine.Nested); nested {
			// Such a dialect (ClickHouse) reads an alias anywhere in its
			// SELECT: 0 AS b would be counted instead of the column b (and
			// 0 is a UInt8, which reads as a bool).
			inner := strings.Join(append(append([]string{}, keys...), "count(DISTINCT b) AS c"), ", ")
			outer := strings.Join(append(append([]string{}, keys...), "CAST(0 AS "+d.TypeName(engine.Integer)+") AS b", "c"), ", ")
			grouped := ""
			if len(keys) > 0 {
				grouped = " GROUP BY " + strings.Join(keys, ", ")
			}
			return "SELECT " + outer + " FROM (SELECT " + inner + " FROM " + from + grouped + ") AS distinct_values"
		}
		list := strings.Join(append(append([]string{}, keys...), "0 AS b", "count(DISTINCT b) AS c"), ", ")
		if len(keys) == 0 {
			return "SELECT " + list + " FROM " + from
		}
		return "SELECT " + list + " FROM " + from + " GROUP BY " + strings.Join(keys, ", ")
	}
	st := g.newStages()
	if !p.Bounded {
		st.add("r", "", rows)
		return st.finish(final(st.from("r"))), nil
	}
	if sm, ok := d.(engine.Sampler); ok {
		// The sampled rows carry the random key rk of each row (see
		// sampledHistogram).
		sampledRows := "SELECT " + strings.Join(append(append([]string{}, cols...), d.Random()+" AS rk"), ", ") + where
		return g.sampledHistogram(sm, rows, sampledRows, keys, final), nil
	}
	unitKeyList := append([]string{"u"}, keys...)
	unitKeys := strings.Join(unitKeyList, ", ")
	st.add("r", "", rows)
	st.add("r_bounded", "", g.keepRandom(st.from("r"), unitKeyList, append(append([]string{}, unitKeyList...), "b"), p.Contribution.RowsPerGroup))
	from := st.from("r_bounded")
	if lb, ok := d.(engine.LimitBy); ok && p.BoundGroups {
		// Each (person, group) collects its kept values into a list, at
		// most L0 of a person's groups are kept by the hash of the group,
		// and the list is unnested: the kept rows are read once.
		st.add("unit_groups_bounded", "", "SELECT "+unitKeys+", "+lb.Collect("b")+" AS bs FROM "+from+" GROUP BY "+unitKeys+" "+
			lb.KeepFirst(lb.RowKey(g.salt, unitKeyList), []string{"u"}, p.Contribution.Groups))
		st.add("kept", "", "SELECT "+strings.Join(append(append([]string{}, keys...), lb.Unnest("bs")+" AS b"), ", ")+" FROM "+st.from("unit_groups_bounded"))
		from = st.from("kept")
	} else if p.BoundGroups {
		st.add("unit_groups", "", "SELECT "+unitKeys+" FROM "+from+" GROUP BY "+unitKeys)
		st.add("unit_groups_bounded", "", g.keepRandom(st.from("unit_groups"), []string{"u"}, unitKeyList, p.Contribution.Groups))
		from = from + " JOIN " + st.from("unit_groups_bounded") + " USING (" + unitKeys + ")"
	}
	return st.finish(final(from)), nil
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
func (g *sqlGen) sampledHistogram(sm engine.Sampler, rows, sampledRows string, keys []string, final func(from string) string) string {
	L := strconv.FormatInt(g.p.Contribution.RowsPerGroup, 10)
	pair := strings.Join(append([]string{"u"}, keys...), ", ")
	keyList := ""
	if len(keys) > 0 {
		keyList = strings.Join(keys, ", ") + ", "
	}
	var b strings.Builder
	b.WriteString("WITH ")
	from := g.keepGroups(&b, sm, keyList+"count(*) AS n", "("+rows+") AS r GROUP BY "+pair)
	b.WriteString(",\nkept_pairs AS " + sm.Materialized() + " (SELECT " + pair + ", n FROM " + from + "),\n")
	// The pairs are joined on u and the keys, a NULL key matching a NULL
	// key (USING would drop the NULL group's rows).
	on := func(rel string) string {
		conds := []string{"r.u = " + rel + ".u"}
		for _, k := range keys {
			conds = append(conds, sm.NullSafeEqual("r."+k, rel+"."+k))
		}
		return " ON " + strings.Join(conds, " AND ")
	}
	rKeys := ""
	for _, k := range keys {
		rKeys += "r." + k + ", "
	}
	light := "SELECT " + rKeys + "r.b FROM (" + rows + ") AS r JOIN (SELECT " + pair + " FROM kept_pairs WHERE n <= " + L + ") AS light" + on("light")
	heavy := "SELECT " + keyList + sm.Unnest("bs") + " AS b FROM (SELECT " + strings.TrimSuffix("r.u, "+rKeys, ", ") + ", " + sm.SmallestN("r.b", "r.rk", g.p.Contribution.RowsPerGroup) + " AS bs" +
		" FROM (" + sampledRows + ") AS r JOIN (SELECT " + pair + " FROM kept_pairs WHERE n > " + L + ") AS heavy" + on("heavy") + " GROUP BY " + strings.TrimSuffix("r.u, "+rKeys, ", ") + ") AS sampled"
	b.WriteString("kept AS (" + light + "\nUNION ALL\n" + heavy + ")\n")
	b.WriteString(final("kept"))
	return b.String()
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
