package parse

import (
	"sort"
	"strings"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/query/ir"
)

// boundQuery is what a query binds to, spelled as text so that the case
// files name no Go type of the IR: the relation read (table, joins,
// per-person pre-aggregation), the row filter, the derived columns, the
// facts of the relation's columns the query changed (bounds narrowed by
// WHERE, derived columns), the outputs, the keys and what is done to the
// noisy rows (HAVING, ORDER BY, LIMIT).
type boundQuery struct {
	Table    string    `json:"table"`
	Joins    []string  `json:"joins,omitempty"`
	JoinRows int64     `json:"join_rows,omitempty"`
	Pre      *boundPre `json:"pre,omitempty"`
	Where    string    `json:"where,omitempty"`
	Derived  []string  `json:"derived,omitempty"`
	Columns  []string  `json:"columns,omitempty"`
	Outputs  []string  `json:"outputs,omitempty"`
	GroupBy  []string  `json:"group_by,omitempty"`
	Having   string    `json:"having,omitempty"`
	OrderBy  []string  `json:"order_by,omitempty"`
	TopK     int64     `json:"top_k,omitempty"`
	Limit    *int64    `json:"limit,omitempty"`
	Offset   int64     `json:"offset,omitempty"`
}

// boundPre is a per-person pre-aggregation: the inner query (its table,
// joins, filter and derived columns), the privacy unit, the inner keys
// and the columns the outer query reads with their facts.
type boundPre struct {
	Inner   *boundQuery `json:"inner"`
	Unit    string      `json:"unit"`
	Keys    []string    `json:"keys"`
	Columns []string    `json:"columns"`
}

// renderQuery spells q; cat gives the declared table the relation's facts
// are compared with.
func renderQuery(q *ir.Query, cat *catalog.Catalog) (*boundQuery, error) {
	b := renderRelation(q)
	cols, err := relationFacts(q, cat)
	if err != nil {
		return nil, err
	}
	b.Columns = cols
	if q.Pre != nil {
		b.Pre = &boundPre{Inner: renderRelation(q.Pre.Query), Unit: q.Pre.Unit, Keys: q.Pre.Keys}
		for _, c := range q.Pre.Columns {
			what := "key " + c.Key
			if c.Agg != nil {
				what = c.Agg.String()
			}
			b.Pre.Columns = append(b.Pre.Columns, c.Name+" = "+what)
		}
	}
	for _, o := range q.Outputs {
		var s string
		switch {
		case o.Agg != nil:
			s = o.Agg.String()
		case o.Post != nil:
			s = "post " + ir.PostString(o.Post, q)
		default:
			s = "key " + o.Key
		}
		if o.Name != o.Key {
			s += " AS " + o.Name
		}
		if o.Hidden {
			s += " (hidden)"
		}
		b.Outputs = append(b.Outputs, s)
	}
	for _, g := range q.GroupBy {
		if bk := q.Buckets[g]; bk != nil {
			g += " = " + bk.String()
		}
		b.GroupBy = append(b.GroupBy, g)
	}
	if q.Having != nil {
		b.Having = ir.ExprString(q.Having, q)
	}
	for _, o := range q.OrderBy {
		s := q.Outputs[o.Output].Name
		if o.Desc {
			s += " DESC"
		}
		b.OrderBy = append(b.OrderBy, s)
	}
	b.TopK, b.Offset = q.TopK, q.Offset
	if q.Limit >= 0 {
		b.Limit = &q.Limit
	}
	return b, nil
}

// renderRelation spells the relation q reads, its row filter and its
// derived columns.
func renderRelation(q *ir.Query) *boundQuery {
	b := &boundQuery{Table: q.Table}
	for _, j := range q.Joins {
		s := "JOIN "
		if j.Left {
			s = "LEFT JOIN "
		}
		if j.Private {
			s += "private "
		}
		s += j.Table + " AS " + j.Alias
		var on []string
		for _, p := range j.On {
			on = append(on, p[0]+" = "+p[1])
		}
		s += " ON " + strings.Join(on, " AND ")
		if j.Unit != "" {
			s += " (unit " + j.Unit + ")"
		}
		b.Joins = append(b.Joins, s)
	}
	if len(q.Joins) > 0 {
		b.JoinRows = q.JoinRows
	}
	if q.Where != nil {
		b.Where = ir.ExprString(q.Where, q)
	}
	names := make([]string, 0, len(q.Derived))
	for name := range q.Derived {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		b.Derived = append(b.Derived, name+" = "+q.Derived[name].Text)
	}
	return b
}

// relationFacts builds the relation a plan of q aggregates (ir.Relation)
// and spells the facts of its columns that differ from what the catalog
// declares: bounds narrowed by WHERE, the derived columns, and every
// column of a pre-aggregation. It is the one place of the case test that
// reads the relation's table and column types: the declared table of a
// plain query is the bound one the query carries (ir.Query.Base).
func relationFacts(q *ir.Query, cat *catalog.Catalog) ([]string, error) {
	base := q.Relation
	if base == nil {
		base = q.Base
	}
	rel, err := ir.Relation(q, base)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range rel.Columns {
		d := base.Column(c.Name)
		if q.Pre == nil && d != nil && d.Type == c.Type && sameBound(d.Lower, c.Lower) && sameBound(d.Upper, c.Upper) && d.Nullable == c.Nullable {
			continue
		}
		out = append(out, columnFact(c.Name, string(c.Type), c.Lower, c.Upper, c.Nullable))
	}
	return out, nil
}
