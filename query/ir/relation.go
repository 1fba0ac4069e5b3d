package ir

import (
	"math"
	"sort"

	"github.com/dpstat/dpstat/schema"
)

// Relation builds the relation a plan aggregates: the bound table's
// columns with the bounds the WHERE clause implies (narrowBounds), plus one
// column per derived column of the project stage, whose type, nullability
// and bounds follow by interval arithmetic (ScalarRange). The bound
// table is not changed.
func Relation(q *Query, table *Table) (*Table, error) {
	rel := *table
	rel.Columns = make([]*Column, len(table.Columns))
	for i, c := range table.Columns {
		cc := *c
		rel.Columns[i] = &cc
	}
	narrowBounds(&rel, q.Where)
	names := make([]string, 0, len(q.Derived))
	for name := range q.Derived {
		names = append(names, name)
	}
	sort.Strings(names)
	var derived []*Column
	for _, name := range names {
		sp, err := ScalarRange(q.Derived[name].Expr, &rel)
		if err != nil {
			return nil, err
		}
		lo, hi := canonicalFloat(sp.Lo), canonicalFloat(sp.Hi)
		typ := schema.Float
		if sp.IsInt {
			typ = schema.Int
		}
		derived = append(derived, &Column{Name: name, Type: typ, Lower: &lo, Upper: &hi, Nullable: sp.nullable})
	}
	rel.Columns = append(rel.Columns, derived...)
	return &rel, nil
}

// narrowBounds intersects the declared bounds of bounded numeric columns
// with what the WHERE clause's top-level conjuncts say of them (col op
// literal, literal op col, col BETWEEN literal AND literal): rows outside
// are filtered out, so clamping to the narrower bounds changes no kept
// value, and every sensitivity derived from them is smaller. An int
// column's strict bounds become the next whole number. A conjunct that
// would leave no value keeps the declared bounds (the query then counts no
// rows anyway).
func narrowBounds(t *Table, where Expr) {
	var conjuncts []Expr
	var walk func(e Expr)
	walk = func(e Expr) {
		if a, ok := e.(And); ok {
			for _, x := range a.Args {
				walk(x)
			}
			return
		}
		if e != nil {
			conjuncts = append(conjuncts, e)
		}
	}
	walk(where)
	narrow := func(col string, op string, v any) {
		c := t.Column(col)
		if c == nil || !c.Bounded() || (c.Type != schema.Int && c.Type != schema.Float && !c.Type.Temporal()) {
			return
		}
		x, ok := Number(v)
		if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		lo, hi := *c.Lower, *c.Upper
		isInt := c.Type == schema.Int || c.Type.Temporal()
		switch op {
		case "=":
			lo, hi = math.Max(lo, x), math.Min(hi, x)
			if isInt && x != math.Trunc(x) {
				return
			}
		case ">=":
			if isInt {
				x = math.Ceil(x)
			}
			lo = math.Max(lo, x)
		case ">":
			if isInt {
				x = math.Floor(x) + 1
			}
			lo = math.Max(lo, x)
		case "<=":
			if isInt {
				x = math.Floor(x)
			}
			hi = math.Min(hi, x)
		case "<":
			if isInt {
				x = math.Ceil(x) - 1
			}
			hi = math.Min(hi, x)
		default:
			return
		}
		if lo > hi {
			return
		}
		lo, hi = canonicalFloat(lo), canonicalFloat(hi)
		c.Lower, c.Upper = &lo, &hi
	}
	flip := map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}
	for _, e := range conjuncts {
		switch x := e.(type) {
		case Compare:
			switch {
			case x.Left.Kind == ColumnRef && x.Right.Kind == Literal:
				narrow(x.Left.Column, x.Op, x.Right.Value)
			case x.Right.Kind == ColumnRef && x.Left.Kind == Literal:
				narrow(x.Right.Column, flip[x.Op], x.Left.Value)
			}
		case Between:
			if !x.Negate && x.Arg.Kind == ColumnRef && x.Low.Kind == Literal && x.High.Kind == Literal {
				narrow(x.Arg.Column, ">=", x.Low.Value)
				narrow(x.Arg.Column, "<=", x.High.Value)
			}
		}
	}
}
