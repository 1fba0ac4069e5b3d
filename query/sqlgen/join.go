package sqlgen

import (
	"fmt"
	"strings"
)

// fromClause renders the plan's FROM: the private table (or view) alone,
// joined with its public tables under the aliases t0, t1, …, or the
// per-person pre-aggregation it reads.
func (g *sqlGen) fromClause(view string) (string, error) {
	q := g.p.Query
	if q.Pre != nil {
		// A per-person pre-aggregation is read as a subquery.
		inner, err := g.preSQL(q.Pre)
		if err != nil {
			return "", err
		}
		return "(" + inner + ") AS " + g.ident("t0"), nil
	}
	if len(q.Joins) == 0 {
		return g.ident(view), nil
	}
	var b strings.Builder
	b.WriteString(g.ident(view) + " AS " + g.ident("t0"))
	for i, j := range q.Joins {
		kind := " JOIN "
		if j.Left {
			kind = " LEFT JOIN "
		}
		alias := fmt.Sprintf("t%d", i+1)
		b.WriteString(kind + g.ident(j.Table) + " AS " + g.ident(alias) + " ON ")
		for k, on := range j.On {
			if k > 0 {
				b.WriteString(" AND ")
			}
			b.WriteString(g.colRef(on[0]) + " = " + g.colRef(on[1]))
		}
	}
	return b.String(), nil
}

// colRef renders a column of the relation: its quoted name, qualified by
// its table's alias when the query joins tables.
func (g *sqlGen) colRef(name string) string {
	q := g.p.Query
	if len(q.Joins) == 0 {
		return g.ident(name)
	}
	for i, j := range q.Joins {
		if rest, ok := strings.CutPrefix(name, j.Table+"."); ok {
			return g.ident(fmt.Sprintf("t%d", i+1)) + "." + g.ident(rest)
		}
	}
	return g.ident("t0") + "." + g.ident(name)
}
