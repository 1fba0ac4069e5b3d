package sqlgen

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// scalarSQL spells s (see scalarNode), refusing, free, an expression
// whose spelling is longer than an engine takes: some spellings repeat
// their arguments (a clamp, ClickHouse's NULL-skipping LEAST), so the text
// can grow exponentially with the nesting, and checking each node as it is
// built bounds the work and memory of planning whatever the query.
func (g *sqlGen) scalarSQL(s ir.Scalar) (string, error) {
	e, err := g.scalarNode(s)
	if err == nil && len(e) > engine.MaxStatementBytes {
		return "", ir.Refuse("an expression of this query spells as %d bytes of SQL, over the %d an engine takes: simplify nested expressions (a LEAST, GREATEST or CASE over a computed value repeats it in the statement)", len(e), engine.MaxStatementBytes)
	}
	if m, ok := g.d.(engine.Materializer); ok && err == nil && computedConstant(s) {
		e = m.Materialize(e)
	}
	return e, err
}

// computedConstant reports whether s is computed from constants alone (a
// function, cast or arithmetic of them), not a plain literal: an engine
// may fold it into a constant of a Nullable type (engine.Materializer).
func computedConstant(s ir.Scalar) bool {
	var constant func(s ir.Scalar) bool
	constant = func(s ir.Scalar) bool {
		switch x := s.(type) {
		case nil, ir.Constant:
			return true
		case ir.Negate:
			return constant(x.Arg)
		case ir.Cast:
			return constant(x.Arg)
		case ir.Arith:
			return constant(x.L) && constant(x.R)
		case ir.Call:
			for _, a := range x.Args {
				if !constant(a) {
					return false
				}
			}
			return true
		}
		return false
	}
	switch s.(type) {
	case nil, ir.Constant:
		return false
	}
	return constant(s)
}

// scalarNode renders a scalar for the engine, every value a double: a
// bounded column clamped to its bounds in t (NULL kept NULL), an unbounded
// one as it is (only LEAST and GREATEST read it, see rawRange).
func (g *sqlGen) scalarNode(s ir.Scalar) (string, error) {
	d := g.d
	dbl := d.TypeName(engine.Double)
	switch x := s.(type) {
	case nil:
		return "CAST(NULL AS " + dbl + ")", nil
	case ir.Constant:
		return engine.Literal(d, x.Value)
	case ir.ColumnValue:
		c := g.p.Table.Column(x.Column)
		col := "CAST(" + g.colRef(x.Column) + " AS " + dbl + ")"
		if c == nil || !c.Bounded() {
			return col, nil
		}
		lo, err := engine.Literal(d, *c.Lower)
		if err != nil {
			return "", err
		}
		hi, err := engine.Literal(d, *c.Upper)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("CASE WHEN %s IS NULL THEN NULL ELSE least(greatest(%s, %s), %s) END", g.colRef(x.Column), col, lo, hi), nil
	case ir.Negate:
		a, err := g.scalarSQL(x.Arg)
		return "(-" + a + ")", err
	case ir.Arith:
		l, err := g.scalarSQL(x.L)
		if err != nil {
			return "", err
		}
		r, err := g.scalarSQL(x.R)
		if err != nil {
			return "", err
		}
		switch x.Op {
		case "%":
			// The truncated remainder, as SQL's %: total for the literal
			// divisor the planner requires (|r| ≥ 2^-400, |l / r| ≤ 2^53).
			l = g.flushTiny(l)
			return "(" + l + " - " + r + " * trunc(" + l + " / " + r + "))", nil
		case "*", "/":
			return "(" + g.flushTiny(l) + " " + x.Op + " " + g.flushTiny(r) + ")", nil
		}
		return "(" + l + " " + x.Op + " " + r + ")", nil
	case ir.Call:
		if x.Func == "round" && len(x.Args) == 2 {
			// round(x, n) as round(x · 10^n) / 10^n: every engine rounds a
			// double to a whole number (PostgreSQL has no round(double, n)).
			a, err := g.scalarSQL(x.Args[0])
			if err != nil {
				return "", err
			}
			p10 := math.Pow(10, x.Args[1].(ir.Constant).Value)
			scaled, err := engine.Scale(d, g.flushTiny(a), p10)
			if err != nil {
				return "", err
			}
			return engine.Divide(d, engine.Round(d, scaled), p10)
		}
		parts := make([]string, len(x.Args))
		for i, a := range x.Args {
			sql, err := g.scalarSQL(a)
			if err != nil {
				return "", err
			}
			parts[i] = sql
		}
		switch x.Func {
		case "least":
			return engine.Least(d, parts...), nil // NULL-skipping on every engine
		case "greatest":
			return engine.Greatest(d, parts...), nil
		case "round":
			return engine.Round(d, parts[0]), nil
		}
		return x.Func + "(" + strings.Join(parts, ", ") + ")", nil
	case ir.Cond:
		var b strings.Builder
		b.WriteString("CASE")
		for i, w := range x.Whens {
			c, err := g.expr(w)
			if err != nil {
				return "", err
			}
			th, err := g.scalarSQL(x.Thens[i])
			if err != nil {
				return "", err
			}
			b.WriteString(" WHEN " + c + " THEN " + th)
		}
		if x.Else != nil {
			e, err := g.scalarSQL(x.Else)
			if err != nil {
				return "", err
			}
			b.WriteString(" ELSE " + e)
		}
		return b.String() + " END", nil
	case ir.DatePart:
		e, err := g.dateSQL(x)
		return "CAST(" + e + " AS " + dbl + ")", err
	case ir.TextLength:
		return g.textLengthSQL(x)
	case ir.Cast:
		a, err := g.scalarSQL(x.Arg)
		if err != nil {
			return "", err
		}
		if x.Type == schema.Int {
			// Within ±2^53 by the planner: the cast cannot fail.
			return "CAST(" + engine.CastInt(d, a, engine.Integer) + " AS " + dbl + ")", nil
		}
		return a, nil
	}
	return "", fmt.Errorf("query: unknown expression %T", s)
}

// column renders a column of the plan's relation: a declared column by its
// quoted name, a derived one by its expression mapped into the range the
// plan derived for it (clampKey: NULL stays NULL; a sensitivity, a bin or
// a cast relies on that range, so it is enforced where the value is made),
// an integer one then cast to a 64-bit integer, exact within its ±2^53
// bounds.
func (g *sqlGen) column(name string) (string, error) {
	dv := g.p.Query.Derived[name]
	if dv == nil {
		return g.colRef(name), nil
	}
	e, err := g.scalarSQL(dv.Expr)
	if err != nil {
		return "", err
	}
	c := g.p.Table.Column(name)
	if c == nil || !c.Bounded() {
		return "", fmt.Errorf("query: derived column %s has no derived range", name)
	}
	lo, err := engine.Literal(g.d, *c.Lower)
	if err != nil {
		return "", err
	}
	hi, err := engine.Literal(g.d, *c.Upper)
	if err != nil {
		return "", err
	}
	e = g.clampKey(e, lo, hi)
	if c.Type == schema.Int {
		return engine.CastInt(g.d, e, engine.Integer), nil
	}
	return "(" + e + ")", nil
}

// flushTiny reads a value below MinOperand in magnitude as 0 on an engine
// whose doubles fail on underflow (engine.StrictUnderflow); elsewhere it is
// the value itself.
func (g *sqlGen) flushTiny(e string) string {
	if _, ok := g.d.(engine.StrictUnderflow); !ok {
		return e
	}
	dbl := g.d.TypeName(engine.Double)
	return "(CASE WHEN abs(" + e + ") < CAST(" + strconv.FormatFloat(ir.MinOperand, 'g', -1, 64) + " AS " + dbl + ") THEN CAST(0 AS " + dbl + ") ELSE " + e + " END)"
}
