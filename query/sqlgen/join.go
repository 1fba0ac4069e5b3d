package sqlgen

import (
	"fmt"
)

// fromClause builds the plan's FROM: the private table (or view) alone,
// joined with its public tables under the aliases t0, t1, …, or the
// per-person pre-aggregation it reads.
func (g *sqlGen) fromClause(view string) (relation, error) {
	q := g.p.Query
	if q.Pre != nil {
		// A per-person pre-aggregation is read as a subquery.
		inner, err := g.preSQL(q.Pre)
		if err != nil {
			return nil, err
		}
		return subquery{query: inner, alias: g.ident("t0")}, nil
	}
	if len(q.Joins) == 0 {
		return table{name: view, quote: true}, nil
	}
	from := join{left: table{name: view, alias: "t0", quote: true}}
	for i, j := range q.Joins {
		kind := "JOIN"
		if j.Left {
			kind = "LEFT JOIN"
		}
		on := make([]string, len(j.On))
		for k, c := range j.On {
			on[k] = g.colRef(c[0]) + " = " + g.colRef(c[1])
		}
		from.joins = append(from.joins, joinClause{kind: kind, right: table{name: j.Table, alias: fmt.Sprintf("t%d", i+1), quote: true}, on: on})
	}
	return from, nil
}

// colRef renders a column of the relation: its quoted name, qualified by
// its occurrence's alias (t0 for the first table, t1, … for the joined
// ones in order) when the query joins tables. A joined occurrence's
// columns are named "alias.column" (ir.QualifiedName): each name resolves
// to its own occurrence, never to another occurrence of the same table.
func (g *sqlGen) colRef(name string) string {
	q := g.p.Query
	if len(q.Joins) == 0 {
		return g.ident(name)
	}
	for i, j := range q.Joins {
		if col, ok := j.Column(name); ok {
			return g.ident(fmt.Sprintf("t%d", i+1)) + "." + g.ident(col)
		}
	}
	return g.ident("t0") + "." + g.ident(name)
}
