package sqlgen

import (
	"strconv"
	"strings"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/ir"
)

// fromClause builds the plan's FROM: the private table (or view) alone,
// joined with its public tables under the aliases t0, t1, …, or the
// per-person pre-aggregation it reads. When a private table is joined,
// every private occurrence is read through capped: at most joinCap rows
// per person, so that the join's rows per person are bounded before the
// join, not only after it.
func (g *sqlGen) fromClause(view string) (relation, error) {
	q := g.p.Query
	if q.Pre != nil {
		// A per-person pre-aggregation is read as a subquery.
		inner, err := g.preSQL(q.Pre)
		if err != nil {
			return nil, err
		}
		return subquery{query: inner, alias: g.ident(occurrenceName(0))}, nil
	}
	if len(q.Joins) == 0 {
		return table{name: view, quote: true}, nil
	}
	capJoins := g.privateJoin()
	var filters [][]string
	if capJoins {
		var err error
		if filters, err = g.occurrenceFilters(); err != nil {
			return nil, err
		}
	}
	var left relation = table{name: view, alias: occurrenceName(0), quote: true}
	if capJoins {
		// On a table with epochs, each (person, epoch)'s rows are capped
		// apart; the query's WHERE keeps the first table's rows of the
		// epochs read (filters[0]).
		by, _, err := g.occurrenceEpoch(g.p.EpochColumn, false)
		if err != nil {
			return nil, err
		}
		left = g.capped(view, occurrenceName(0), g.p.Table.PrivacyUnit, by, g.occurrenceColumns(""), filters[0])
	}
	from := join{left: left}
	for i, j := range q.Joins {
		kind := "JOIN"
		if j.Left {
			kind = "LEFT JOIN"
		}
		on, err := g.joinOn(j)
		if err != nil {
			return nil, err
		}
		alias := occurrenceName(i + 1)
		var right relation = table{name: j.Table, alias: alias, quote: true}
		if j.Private {
			unit, _ := j.Column(j.Unit)
			by, keep, err := g.occurrenceEpoch(j.Epoch, true)
			if err != nil {
				return nil, err
			}
			right = g.capped(j.Table, alias, unit, by, g.occurrenceColumns(j.Alias), append(filters[i+1], keep...))
		}
		from.joins = append(from.joins, joinClause{kind: kind, right: right, on: on})
	}
	return from, nil
}

// privateJoin reports whether the plan joins a private table: a join
// whose rows per person grow with the product of that person's rows in
// each private occurrence, unlike a public join, which multiplies them by
// a public multiplicity.
func (g *sqlGen) privateJoin() bool {
	for _, j := range g.p.Query.Joins {
		if j.Private {
			return true
		}
	}
	return false
}

// joinCap is the most rows per person that each private occurrence of a
// private join keeps before the join: L0·L∞ of the plan's contribution
// bounds (the most rows per person the bounding after the join keeps, so
// that the cap still lets the join give each person that many rows), or,
// for the inner query of a pre-aggregation, the first table's declared
// max_groups_per_unit · max_rows_per_group (preCap).
func (g *sqlGen) joinCap() int64 {
	if g.preCap > 0 {
		return g.preCap
	}
	return max(g.p.Contribution.Groups*g.p.Contribution.RowsPerGroup, 1)
}

// occurrenceFilters spells, for each occurrence (t0, then each join's),
// the conjuncts of the query's WHERE that read only that occurrence's
// columns, where filtering its rows before the join keeps the join's
// result: the first table's, and an INNER-joined occurrence's (a row that
// fails such a conjunct fails it in every joined row it is part of), not a
// LEFT-joined one's (its failing rows become NULL-extended rows, which the
// conjunct reads differently). capped filters each occurrence by them
// before it chooses a person's rows, so that the rows it keeps are among
// those the query counts; the WHERE still applies after the join.
func (g *sqlGen) occurrenceFilters() ([][]string, error) {
	q := g.p.Query
	out := make([][]string, len(q.Joins)+1)
	var conjuncts []ir.Expr
	var flatten func(e ir.Expr)
	flatten = func(e ir.Expr) {
		if a, ok := e.(ir.And); ok {
			for _, x := range a.Args {
				flatten(x)
			}
			return
		}
		if e != nil {
			conjuncts = append(conjuncts, e)
		}
	}
	flatten(q.Where)
	for _, c := range conjuncts {
		occ := -1
		ok := ir.WalkColumns(c, func(name string) {
			o := -2 // a name of no occurrence (a derived column)
			for i, j := range q.Joins {
				if _, in := j.Column(name); in {
					o = i + 1
				}
			}
			if o == -2 && !strings.ContainsAny(name, ".#") && g.p.Table.Column(name) != nil {
				o = 0
			}
			switch {
			case o == -2 || (occ >= 0 && occ != o):
				occ = -2
			case occ == -1:
				occ = o
			}
		})
		if !ok || occ < 0 || (occ > 0 && q.Joins[occ-1].Left) {
			continue
		}
		e, err := g.expr(c)
		if err != nil {
			return nil, err
		}
		out[occ] = append(out[occ], "("+e+")")
	}
	return out, nil
}

// occurrenceColumns lists the catalog columns of a table occurrence of the
// plan's relation, by their names in the table: the first table's (alias
// "") are the relation's columns under their own names (a declared name
// holds neither "." nor "#"), a joined occurrence's are those named
// "alias.column" (ir.QualifiedName).
func (g *sqlGen) occurrenceColumns(alias string) []string {
	var out []string
	for _, c := range g.p.Table.Columns {
		if alias == "" {
			if !strings.ContainsAny(c.Name, ".#") {
				out = append(out, c.Name)
			}
			continue
		}
		if col, ok := strings.CutPrefix(c.Name, alias+"."); ok {
			out = append(out, col)
		}
	}
	return out
}

// capped reads table name under alias with at most joinCap rows per
// person (unit, a column of the table), or, when epoch is not "", per
// person and epoch (epoch spells the start of the row's epoch: see
// occurrenceEpoch), so that which rows of one (person, epoch) are kept
// never depends on that person's rows of another epoch (rows without a person are left
// out, as the join and the row filter leave them out, and so are rows
// that fail filters, the WHERE conjuncts of this occurrence alone: see
// occurrenceFilters), chosen as the
// bounding stages choose rows (see keepRandom): which rows of a person are
// kept depends only on that person's rows and on the statement's
// randomness, never on another person's rows.
//
//   - A LimitBy dialect (ClickHouse) keeps the rows with the smallest keyed
//     hash of their values (LimitBy.RowKey with the statement's salt).
//   - A Sampler dialect (DuckDB) spells the row stage once per read
//     (splitPairs, sampledHistogram), and every read must see the same
//     rows: the capped occurrence is a MATERIALIZED stage of the statement
//     (named alias_capped, _dp_t0_capped…, which no catalog table can be
//     named: see schema.ReservedPrefix), computed
//     once with a random order, and read under alias.
//   - Any other dialect numbers each person's rows in a random order, in a
//     subquery the statement reads once.
//
// The columns read are listed (never *), so that the row number's name
// (_dp_rn, which no declared column can hold) stays out of the relation.
func (g *sqlGen) capped(name, alias, unit, epoch string, columns []string, filters []string) relation {
	n := g.joinCap()
	qcols := make([]string, len(columns))
	for i, c := range columns {
		qcols[i] = g.ident(c)
	}
	// The table is read under the occurrence's alias, which the filters'
	// column references name (colRef).
	src := table{name: name, alias: alias, quote: true}
	where := append([]string{g.ident(unit) + " IS NOT NULL"}, filters...)
	partition := []string{g.ident(unit)}
	if epoch != "" {
		partition = append(partition, epoch)
	}
	if lb, ok := g.d.(engine.LimitBy); ok {
		return subquery{alias: g.ident(alias), query: &selectStmt{items: cols(qcols...), from: src, where: where,
			tail: lb.KeepFirst(lb.RowKey(g.salt, qcols), partition, n)}}
	}
	rn := "row_number() OVER (PARTITION BY " + strings.Join(partition, ", ") + " ORDER BY " + g.d.Random() + ")"
	limit := strconv.FormatInt(n, 10)
	var body *selectStmt
	if g.d.SupportsQualify() {
		body = &selectStmt{items: cols(qcols...), from: src, where: where, qualify: rn + " <= " + limit}
	} else {
		numbered := &selectStmt{items: append(cols(qcols...), as(rn, rnName)), from: src, where: where}
		body = &selectStmt{items: cols(qcols...), from: subquery{query: numbered, alias: numberedStage}, where: []string{rnName + " <= " + limit}}
	}
	if sm, ok := g.d.(engine.Sampler); ok {
		st := stage{name: g.ident(alias + "_capped"), kw: sm.Materialized(), body: body}
		g.caps = append(g.caps, st)
		return table{name: st.name, alias: g.ident(alias)}
	}
	return subquery{alias: g.ident(alias), query: body}
}

// render spells n through the dialect, after the stages of the capped
// private occurrences it reads (g.caps), if any.
func (g *sqlGen) render(n sqlNode) string {
	if len(g.caps) == 0 {
		return render(g.d, n)
	}
	st, ok := n.(*statement)
	if !ok {
		st = &statement{body: n}
	}
	return render(g.d, &statement{stages: append(append([]stage{}, g.caps...), st.stages...), body: st.body})
}

// colRef renders a column of the relation: a pre-aggregation's by the
// name the pre-aggregation gives it (preColumn); else its quoted name, qualified by
// its occurrence's alias (t0 for the first table, t1, … for the joined
// ones in order) when the query joins tables. A joined occurrence's
// columns are named "alias.column" (ir.QualifiedName): each name resolves
// to its own occurrence, never to another occurrence of the same table.
func (g *sqlGen) colRef(name string) string {
	q := g.p.Query
	if q.Pre != nil {
		if n, ok := preColumn(q.Pre, name); ok {
			return n
		}
	}
	if len(q.Joins) == 0 {
		return g.ident(name)
	}
	for i, j := range q.Joins {
		if col, ok := j.Column(name); ok {
			return g.ident(occurrenceName(i+1)) + "." + g.ident(col)
		}
	}
	return g.ident(occurrenceName(0)) + "." + g.ident(name)
}
