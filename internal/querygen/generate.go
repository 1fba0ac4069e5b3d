// Package querygen generates random DP SQL queries over the
// neighbouring-table harness, and holds that harness: its tables (Rows,
// Codes, the catalog declaration Catalog) and its oracle (Check), so that
// the query package's tests and the engine conformance suite
// (query/enginetest) run the same queries on the same data with the same
// checks on every engine.
//
// Generate composes every construct dpstat accepts into queries no one
// wrote by hand (docs/privacy.md §7, "The relational generator"): a public
// table joined once or twice (each occurrence under its own alias and with
// its own ON, INNER or LEFT), a private table of the same people joined
// once or twice on the unit (on the table with epochs by month, monthly,
// also on the epochs: the same date, or date_trunc of both to the day or
// the month, outside and inside pre-aggregations; with conditions on the
// epoch column that choose the months read), subqueries computing a column, chains of up
// to four CTEs that copy the previous one's column (d + d, LEAST(d, i),
// CASE WHEN b THEN d ELSE NULL END), per-person pre-aggregations (of a
// table alone or joined, by the unit or the unit and a key), every scalar
// form (arithmetic, %, LEAST/GREATEST with NULL arms, CASE, COALESCE,
// NULLIF, ABS, FLOOR, ROUND, CAST, length, EXTRACT, date differences),
// conditions (comparisons, AND/OR/NOT, IS NULL, BETWEEN, IN, LIKE), keys
// (columns, CASE bins of small integers and text, clamped and % integers,
// width_bucket, floor bins, casts, date_trunc) and aggregates (COUNT, SUM,
// AVG, COUNT(DISTINCT), MEDIAN, FILTER, MIN, MAX), with the harness's
// extreme literals (±2^53, the smallest subnormal, -0). A query is a pure
// function of its seed, so a failure is reproduced by its seed alone.
package querygen

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// genColumn is a column in scope, with the SQL that names it.
type genColumn struct {
	ref  string
	kind genKind
}

// genKind is the type class of a generated expression.
type genKind int

const (
	genNum genKind = iota
	genText
	genBool
	genDate
)

// generator draws one query's parts from its random source.
type generator struct {
	r     *rand.Rand
	scope []genColumn
	// unit is the privacy unit's column in scope, or "" where the table
	// has none (or the FROM hides it).
	unit string
}

// Generate returns the query of a seed and the harness table it reads
// (people, rows or wide: see Catalog). The same seed gives the same query
// on every run and every machine.
func Generate(seed uint64) (sql, table string) {
	g := &generator{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	table = []string{"people", "rows", "wide"}[g.r.IntN(3)]
	if seed%5 == 4 && table != "rows" {
		// A table with epochs, in one seed of five (the others' queries
		// are those of before it was added).
		table = "monthly"
	}
	with, from := g.from(table)
	var keys, outs []string
	for i := range g.r.IntN(3) {
		k := g.key()
		outs = append(outs, fmt.Sprintf("%s AS k%d", k, i+1))
		keys = append(keys, k)
	}
	for range 1 + g.r.IntN(3) {
		outs = append(outs, g.aggregate())
	}
	var s strings.Builder
	s.WriteString(with)
	s.WriteString("SELECT " + strings.Join(outs, ", ") + " FROM " + from)
	var where []string
	if g.r.IntN(2) == 0 {
		where = append(where, g.cond(2))
	}
	if table == "monthly" {
		if c := g.epochCond(); c != "" {
			where = append(where, c)
		}
	}
	switch len(where) {
	case 1:
		s.WriteString(" WHERE " + where[0])
	case 2:
		s.WriteString(" WHERE (" + where[0] + ") AND " + where[1])
	}
	if len(keys) > 0 {
		s.WriteString(" GROUP BY " + strings.Join(keys, ", "))
	}
	return s.String(), table
}

// baseColumns are the harness table's columns under alias a.
func baseColumns(a string) []genColumn {
	return []genColumn{
		{a + ".f", genNum}, {"LEAST(GREATEST(" + a + ".fz, 0), 1)", genNum}, {a + ".i", genNum},
		{a + ".t", genText}, {a + ".u", genText}, {a + ".b", genBool}, {a + ".dt", genDate},
	}
}

// from draws the FROM clause (and a WITH clause before SELECT where it
// uses CTEs), and sets the scope it brings.
func (g *generator) from(table string) (with, from string) {
	hasUnit := table != "rows"
	switch g.r.IntN(6) {
	case 0:
		g.scope = baseColumns("x")
		if hasUnit {
			g.unit = "x.pid"
		}
		return "", table + " x"
	case 1:
		// A public table, joined once or twice (each occurrence its own
		// alias and ON).
		g.scope = baseColumns("x")
		if hasUnit {
			g.unit = "x.pid"
		}
		from = table + " x " + g.joinKind() + " codes c1 ON x.t = c1.t"
		g.scope = append(g.scope, genColumn{"c1.label", genText}, genColumn{"LEAST(GREATEST(c1.weight, 0), 5)", genNum})
		if g.r.IntN(2) == 0 {
			on := []string{"x.t = c2.t", "c1.t = c2.t", "c1.label = c2.label"}[g.r.IntN(3)]
			from += " " + g.joinKind() + " codes c2 ON " + on
			g.scope = append(g.scope, genColumn{"c2.label", genText}, genColumn{"LEAST(GREATEST(c2.weight, 0), 5)", genNum})
		}
		return "", from
	case 2:
		if !hasUnit {
			return g.from(table)
		}
		// A private table of the same people, joined on the unit once or
		// twice.
		g.scope = append(baseColumns("x"), genColumn{"y.i", genNum}, genColumn{"y.f", genNum}, genColumn{"y.t", genText})
		if hasUnit {
			g.unit = "x.pid"
		}
		if table == "monthly" {
			// A private join on a table with epochs equates the epochs.
			from = table + " x " + g.joinKind() + " monthly y ON x.pid = y.pid AND " + g.sameEpoch("x", "y")
			if g.r.IntN(2) == 0 {
				from += " " + g.joinKind() + " monthly z ON x.pid = z.pid AND " + g.sameEpoch([]string{"x", "y"}[g.r.IntN(2)], "z")
				g.scope = append(g.scope, genColumn{"z.i", genNum}, genColumn{"z.t", genText})
			}
			return "", from
		}
		from = table + " x " + g.joinKind() + " visits y ON x.pid = y.pid"
		if g.r.IntN(2) == 0 {
			from += " " + g.joinKind() + " visits z ON x.pid = z.pid"
			g.scope = append(g.scope, genColumn{"z.i", genNum}, genColumn{"z.t", genText})
		}
		return "", from
	case 3:
		// A subquery computing a column.
		g.scope = baseColumns(table)
		d := g.num(2)
		where := ""
		if g.r.IntN(2) == 0 {
			where = " WHERE " + g.cond(1)
		}
		g.scope = []genColumn{{"x.t", genText}, {"x.i", genNum}, {"x.f", genNum}, {"x.b", genBool}, {"x.d", genNum}}
		if hasUnit {
			g.unit = "x.pid"
		}
		return "", "(SELECT pid, t, i, f, b, " + d + " AS d FROM " + table + where + ") x"
	case 4:
		// A chain of CTEs, each copying the previous one's column.
		g.scope = baseColumns(table)
		prev, body := table, ""
		cols := "pid, t, i, f, b"
		depth := 1 + g.r.IntN(4)
		for level := range depth {
			name := fmt.Sprintf("c%d", level)
			e := g.num(1)
			if level > 0 {
				e = []string{"d + d", "d * 2", "LEAST(d, i)", "CASE WHEN b THEN d ELSE NULL END", "d - f"}[g.r.IntN(5)]
			}
			sel := cols + ", " + e + " AS d"
			if level > 0 {
				sel = cols + ", " + e + " AS d"
			}
			if body != "" {
				body += ", "
			}
			body += name + " AS (SELECT " + sel + " FROM " + prev + ")"
			prev = name
			g.scope = []genColumn{{"t", genText}, {"i", genNum}, {"f", genNum}, {"b", genBool}, {"d", genNum}}
		}
		g.scope = []genColumn{{"x.t", genText}, {"x.i", genNum}, {"x.f", genNum}, {"x.b", genBool}, {"x.d", genNum}}
		if hasUnit {
			g.unit = "x.pid"
		}
		return "WITH " + body + " ", prev + " x"
	default:
		if !hasUnit {
			return g.from(table)
		}
		// A per-person pre-aggregation, of the table alone or joined.
		inner := table + " x"
		g.scope = baseColumns("x")
		if g.r.IntN(2) == 0 {
			if table == "monthly" {
				// A join inside equates the epochs too.
				inner += " " + g.joinKind() + " monthly y ON x.pid = y.pid AND " + g.sameEpoch("x", "y")
				if g.r.IntN(2) == 0 {
					inner += " JOIN monthly z ON x.pid = z.pid AND " + g.sameEpoch("x", "z")
				}
			} else {
				inner += " " + g.joinKind() + " visits y ON x.pid = y.pid"
				if g.r.IntN(2) == 0 {
					inner += " JOIN visits z ON x.pid = z.pid"
				}
			}
			g.scope = append(g.scope, genColumn{"y.i", genNum})
		}
		v := g.num(1)
		where := ""
		if g.r.IntN(2) == 0 {
			where = " WHERE " + g.cond(1)
		}
		by, extra := "x.pid", ""
		if g.r.IntN(2) == 0 {
			by, extra = "x.pid, x.t", ", x.t AS t"
		}
		g.scope = []genColumn{{"LEAST(s.n, 20)", genNum}, {"LEAST(GREATEST(s.sv, -50), 50)", genNum}, {"LEAST(GREATEST(s.mi, 0), 100)", genNum}}
		if extra != "" {
			g.scope = append(g.scope, genColumn{"s.t", genText})
		}
		g.unit = ""
		return "", "(SELECT x.pid AS pid" + extra + ", COUNT(*) AS n, SUM(" + v + ") AS sv, MAX(x.i) AS mi FROM " + inner + where + " GROUP BY " + by + ") s"
	}
}

// sameEpoch draws the equality of the epochs (months of dt) of
// occurrences a and b of the monthly table in a join's ON.
func (g *generator) sameEpoch(a, b string) string {
	switch g.r.IntN(3) {
	case 0:
		return a + ".dt = " + b + ".dt"
	case 1:
		return "date_trunc('day', " + a + ".dt) = date_trunc('day', " + b + ".dt)"
	}
	return "date_trunc('month', " + a + ".dt) = date_trunc('month', " + b + ".dt)"
}

// epochCond draws a condition on the monthly table's epoch column, which
// decides the months a query reads, where x.dt is in scope ("" otherwise).
func (g *generator) epochCond() string {
	found := false
	for _, c := range g.scope {
		found = found || c.ref == "x.dt"
	}
	if !found {
		return ""
	}
	m := func() string { return fmt.Sprintf("DATE '2024-%02d-%02d'", 1+g.r.IntN(12), 1+g.r.IntN(28)) }
	switch g.r.IntN(5) {
	case 0:
		return "x.dt >= " + m()
	case 1:
		return "x.dt < " + m()
	case 2:
		return "x.dt BETWEEN " + m() + " AND " + m()
	case 3:
		return fmt.Sprintf("date_trunc('month', x.dt) = DATE '2024-%02d-01'", 1+g.r.IntN(12))
	}
	return "(x.dt < " + m() + " OR x.dt >= " + m() + ")"
}

func (g *generator) joinKind() string {
	if g.r.IntN(3) == 0 {
		return "LEFT JOIN"
	}
	return "JOIN"
}

// pick returns a column of the kind in scope, or "" if there is none.
func (g *generator) pick(k genKind) string {
	var of []string
	for _, c := range g.scope {
		if c.kind == k {
			of = append(of, c.ref)
		}
	}
	if len(of) == 0 {
		return ""
	}
	return of[g.r.IntN(len(of))]
}

// column returns a plain numeric column of the scope (one without a
// clamp around it), or a plain column of the base table.
func (g *generator) column() string {
	var of []string
	for _, c := range g.scope {
		if c.kind == genNum && !strings.Contains(c.ref, "(") {
			of = append(of, c.ref)
		}
	}
	if len(of) == 0 {
		return "i"
	}
	return of[g.r.IntN(len(of))]
}

// genLiterals are the numeric literals the generator uses: the small and
// the extreme.
var genLiterals = []string{"0", "1", "-1", "2", "3", "2.5", "-0.0", "40", "9007199254740992", "-9007199254740992", "1e15", "4.9e-324", "1.5", "100"}

// num draws a numeric expression of at most depth levels.
func (g *generator) num(depth int) string {
	leaf := func() string {
		if c := g.pick(genNum); c != "" && g.r.IntN(4) > 0 {
			return c
		}
		return genLiterals[g.r.IntN(len(genLiterals))]
	}
	if depth <= 0 {
		return leaf()
	}
	a := func() string { return g.num(depth - 1) }
	switch g.r.IntN(16) {
	case 0:
		return a() + " + " + a()
	case 1:
		return "(" + a() + ") - (" + a() + ")"
	case 2:
		return "(" + a() + ") * " + leaf()
	case 3:
		return "(" + a() + ") / " + leaf()
	case 4:
		return "(" + a() + ") % " + []string{"7", "1.5", "-3"}[g.r.IntN(3)]
	case 5:
		return "LEAST(" + a() + ", " + a() + ")"
	case 6:
		return "GREATEST(" + a() + ", " + a() + ")"
	case 7:
		return "CASE WHEN " + g.cond(depth-1) + " THEN " + a() + " ELSE " + a() + " END"
	case 8:
		return "CASE WHEN " + g.cond(depth-1) + " THEN NULL ELSE " + a() + " END"
	case 9:
		return "COALESCE(" + a() + ", " + leaf() + ")"
	case 10:
		return "NULLIF(" + a() + ", " + leaf() + ")"
	case 11:
		return []string{"ABS", "FLOOR"}[g.r.IntN(2)] + "(" + a() + ")"
	case 12:
		return "ROUND(" + a() + ", " + []string{"0", "1", "2"}[g.r.IntN(3)] + ")"
	case 13:
		return "CAST(" + a() + " AS int)"
	case 14:
		if t := g.pick(genText); t != "" {
			return "length(" + t + ")"
		}
		return leaf()
	default:
		if d := g.pick(genDate); d != "" {
			return []string{"EXTRACT(month FROM " + d + ")", d + " - DATE '2024-01-01'"}[g.r.IntN(2)]
		}
		return leaf()
	}
}

// cond draws a condition of at most depth levels.
func (g *generator) cond(depth int) string {
	if depth > 0 {
		switch g.r.IntN(6) {
		case 0:
			return "(" + g.cond(depth-1) + " AND " + g.cond(depth-1) + ")"
		case 1:
			return "(" + g.cond(depth-1) + " OR " + g.cond(depth-1) + ")"
		case 2:
			return "NOT (" + g.cond(depth-1) + ")"
		}
	}
	ops := []string{"<", "<=", "=", "<>", ">", ">="}
	switch g.r.IntN(7) {
	case 0:
		if t := g.pick(genText); t != "" {
			return t + " " + []string{"= 'a'", "= ''", "LIKE 'b%'", "IN ('a', 'b')", "IS NULL", "<> 'b'"}[g.r.IntN(5)]
		}
	case 1:
		if b := g.pick(genBool); b != "" {
			return []string{b, "NOT " + b, b + " IS NULL"}[g.r.IntN(3)]
		}
	case 2:
		return g.num(depth) + " IS " + []string{"", "NOT "}[g.r.IntN(2)] + "NULL"
	case 3:
		return g.num(depth) + " BETWEEN " + genLiterals[g.r.IntN(len(genLiterals))] + " AND " + genLiterals[g.r.IntN(len(genLiterals))]
	case 4:
		if d := g.pick(genDate); d != "" {
			return d + " " + ops[g.r.IntN(len(ops))] + " '2024-06-01'"
		}
	}
	return g.num(depth) + " " + ops[g.r.IntN(len(ops))] + " " + g.num(depth)
}

// key draws a GROUP BY key.
func (g *generator) key() string {
	switch g.r.IntN(9) {
	case 0:
		if t := g.pick(genText); t != "" {
			return t
		}
	case 1:
		if b := g.pick(genBool); b != "" {
			return b
		}
	case 2:
		return "CASE WHEN " + g.cond(1) + " THEN " + []string{"1 ELSE 2", "0 ELSE 1", "'p' ELSE 'q'"}[g.r.IntN(3)] + " END"
	case 3:
		return "LEAST(GREATEST(" + g.num(1) + ", 0), 3)"
	case 4:
		return "LEAST(" + g.num(2) + ", 1)"
	case 5:
		return "(" + g.num(0) + ") % 5"
	case 6:
		return fmt.Sprintf("width_bucket(%s, 0, 10, %d)", g.column(), 1+g.r.IntN(5))
	case 7:
		return "CAST(" + g.num(1) + " AS int)"
	case 8:
		if d := g.pick(genDate); d != "" {
			return "date_trunc('month', " + d + ")"
		}
	}
	return "floor(" + g.column() + " / 2.5) * 2.5"
}

// aggregate draws an aggregate of the query.
func (g *generator) aggregate() string {
	switch g.r.IntN(9) {
	case 0:
		return "COUNT(*)"
	case 1:
		return "COUNT(" + g.num(1) + ")"
	case 2, 3:
		return "SUM(" + g.num(2) + ")"
	case 4:
		return "AVG(" + g.num(1) + ")"
	case 5:
		if g.unit != "" {
			return "COUNT(DISTINCT " + g.unit + ")"
		}
		return "COUNT(*)"
	case 6:
		return "MEDIAN(" + g.num(1) + ")"
	case 7:
		return "SUM(" + g.num(1) + ") FILTER (WHERE " + g.cond(1) + ")"
	default:
		return []string{"MIN", "MAX"}[g.r.IntN(2)] + "(" + g.num(1) + ")"
	}
}
