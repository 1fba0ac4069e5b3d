package query

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
)

// The project stage: numeric expressions over a row's columns, aggregated
// like columns. An aggregate of an expression (SUM(CASE WHEN c THEN x ELSE
// 0 END), AVG(LEAST(x, 50)), COUNT(*) FILTER (WHERE c), MAX(a * b)) reads
// a derived column, whose type, nullability and bounds follow from the
// declared bounds of the columns it reads by interval arithmetic
// (scalarRange). The plan sees a derived column as one more column of its
// table (Plan.Table), so contribution bounding, clamping, sensitivities and
// noise are derived exactly as for a declared one.
//
// Every expression is total (docs/privacy.md, "Totality"): a bounded column
// is clamped to its declared bounds before any arithmetic, every operation
// runs in doubles, and the planner refuses an expression whose range, or
// that of any intermediate value, is not within ±2^53 (where integers are
// exact doubles and nothing overflows), a division whose divisor's range
// holds 0, and a column without declared bounds outside LEAST/GREATEST.

// Scalar is a numeric expression of the project stage.
type Scalar interface{ scalarNode() }

// ColumnValue reads a numeric column, clamped to its declared bounds.
type ColumnValue struct{ Column string }

// Constant is a numeric literal.
type Constant struct {
	Value float64
	// Int is true for an integer literal.
	Int bool
	// Type is catalog.Date for a DATE literal (Value is its days since
	// 1970-01-01), "" for a number.
	Type catalog.Type
}

// Arith is L Op R, Op one of + - * / %.
type Arith struct {
	Op   string
	L, R Scalar
}

// Negate is −Arg.
type Negate struct{ Arg Scalar }

// Call is a function of numbers: least, greatest, abs, round, floor,
// ceil, coalesce, nullif.
type Call struct {
	Func string
	Args []Scalar
}

// Cond is CASE WHEN Whens[i] THEN Thens[i] … ELSE Else END; a nil Else is
// NULL.
type Cond struct {
	Whens []Expr
	Thens []Scalar
	Else  Scalar
}

// Cast converts Arg to an int (rounding to the nearest) or a float.
type Cast struct {
	Type catalog.Type
	Arg  Scalar
}

func (ColumnValue) scalarNode() {}
func (Constant) scalarNode()    {}
func (Arith) scalarNode()       {}
func (Negate) scalarNode()      {}
func (Call) scalarNode()        {}
func (Cond) scalarNode()        {}
func (Cast) scalarNode()        {}

// Derived is a computed column of the project stage.
type Derived struct {
	// Expr computes the column's value per row.
	Expr Scalar
	// Text spells Expr for messages and EXPLAIN.
	Text string
}

// maxExact is the largest magnitude a derived value or any intermediate
// value may reach: doubles hold every integer up to 2^53 exactly.
const maxExact = 1 << 53

// minOperand is the smallest nonzero magnitude an operand of a product or
// quotient keeps on engines whose doubles fail on underflow
// (engine.StrictUnderflow): smaller values are read as 0, so that a product
// of two operands (at least 2^-800) or a quotient by a divisor within
// ±2^53 (at least 2^-453) is a normal double. A divisor's range must stay
// this far from 0 on every engine.
const minOperand = 0x1p-400

// span is the facts about a scalar's values: every value lies in [lo, hi];
// isInt says the values are whole numbers; nullable that NULL can occur.
type span struct {
	lo, hi   float64
	isInt    bool
	nullable bool
}

func (s span) finite() bool {
	return !math.IsInf(s.lo, 0) && !math.IsInf(s.hi, 0) && !math.IsNaN(s.lo) && !math.IsNaN(s.hi)
}

// scalarRange derives the span of s over table t (whose column bounds may
// be narrowed by WHERE), or refuses an expression that is not total.
func scalarRange(s Scalar, t *catalog.Table) (span, error) {
	out, err := rawRange(s, t)
	if err != nil {
		return span{}, err
	}
	if tl, ok := s.(TextLength); ok && !out.finite() {
		return span{}, refuse("%s has no upper bound: %s has no public value list; clamp it, e.g. LEAST(%s, 100), or declare `values:` for %s in the catalog",
			tl.Fn, strings.Join(tl.Fn.columns(), ", "), tl.Fn, strings.Join(tl.Fn.columns(), ", "))
	}
	if !out.finite() {
		return span{}, refuse("the expression %s has no finite bounds: its inputs include a column without declared bounds; clamp it with LEAST(GREATEST(x, low), high) or declare `lower:` and `upper:` in the catalog", scalarString(s))
	}
	return out, nil
}

// rawRange is scalarRange without the final finiteness check: a column
// without bounds spans ±Inf, which only LEAST and GREATEST may narrow.
func rawRange(s Scalar, t *catalog.Table) (span, error) {
	checked := func(out span) (span, error) {
		if out.finite() && (math.Abs(out.lo) > maxExact || math.Abs(out.hi) > maxExact) {
			return span{}, refuse("the expression %s can reach [%g, %g], beyond ±2^53 = %d where doubles stop being exact; clamp its inputs to a smaller range", scalarString(s), out.lo, out.hi, int64(maxExact))
		}
		return out, nil
	}
	needFinite := func(parts ...span) error {
		for _, p := range parts {
			if !p.finite() {
				return refuse("the expression %s does arithmetic on a column without declared bounds; clamp it first with LEAST(GREATEST(x, low), high) or declare `lower:` and `upper:` in the catalog", scalarString(s))
			}
		}
		return nil
	}
	switch x := s.(type) {
	case nil:
		// NULL: it adds no value, only the possibility of NULL.
		return span{lo: math.NaN(), hi: math.NaN(), isInt: true, nullable: true}, nil
	case Constant:
		return checked(span{lo: x.Value, hi: x.Value, isInt: x.Int})
	case ColumnValue:
		c := t.Column(x.Column)
		if c == nil {
			return span{}, fmt.Errorf("query: derived column reads unknown column %s", x.Column)
		}
		if c.Type != catalog.Int && c.Type != catalog.Float && !c.Type.Temporal() {
			return span{}, refuse("column %s is %s: arithmetic needs an int, float or date column", c.Name, c.Type)
		}
		sp := span{lo: math.Inf(-1), hi: math.Inf(1), isInt: c.Type != catalog.Float, nullable: true}
		// A per-person count has a lower bound only (PreAggregate).
		if c.Lower != nil {
			sp.lo = *c.Lower
		}
		if c.Upper != nil {
			sp.hi = *c.Upper
		}
		return sp, nil
	case Negate:
		a, err := rawRange(x.Arg, t)
		if err != nil {
			return span{}, err
		}
		return span{lo: -a.hi, hi: -a.lo, isInt: a.isInt, nullable: a.nullable}, nil
	case Arith:
		a, err := rawRange(x.L, t)
		if err != nil {
			return span{}, err
		}
		b, err := rawRange(x.R, t)
		if err != nil {
			return span{}, err
		}
		if err := needFinite(a, b); err != nil {
			return span{}, err
		}
		out := span{isInt: a.isInt && b.isInt, nullable: a.nullable || b.nullable}
		switch x.Op {
		case "+":
			out.lo, out.hi = a.lo+b.lo, a.hi+b.hi
		case "-":
			out.lo, out.hi = a.lo-b.hi, a.hi-b.lo
		case "*":
			out.lo, out.hi = corners(a, b, func(u, v float64) float64 { return u * v })
		case "/":
			if b.lo <= minOperand && b.hi >= -minOperand {
				return span{}, refuse("%s divides by %s, which can be 0 or within 2^-400 of it (its range is [%g, %g]); divide by an expression whose range stays away from 0", scalarString(s), scalarString(x.R), b.lo, b.hi)
			}
			out.lo, out.hi = corners(a, b, func(u, v float64) float64 { return u / v })
			out.isInt = false
		case "%":
			c, ok := x.R.(Constant)
			if !ok || math.Abs(c.Value) < minOperand {
				return span{}, refuse("%s: the divisor of %% must be a literal of magnitude at least 2^-400", scalarString(s))
			}
			m := math.Abs(c.Value)
			if math.Max(math.Abs(a.lo), math.Abs(a.hi))/m > maxExact {
				return span{}, refuse("%s: the quotient can exceed 2^53; use a larger divisor", scalarString(s))
			}
			// The remainder has the dividend's sign and is below |c|.
			out.lo, out.hi = math.Max(math.Min(a.lo, 0), -m), math.Min(math.Max(a.hi, 0), m)
		default:
			return span{}, fmt.Errorf("query: unknown operator %s", x.Op)
		}
		return checked(out)
	case Call:
		args := make([]span, len(x.Args))
		for i, a := range x.Args {
			sp, err := rawRange(a, t)
			if err != nil {
				return span{}, err
			}
			args[i] = sp
		}
		out := args[0]
		switch x.Func {
		case "least", "greatest":
			// NULL arguments are skipped: NULL only if all are NULL.
			for _, a := range args[1:] {
				if x.Func == "least" {
					out.lo, out.hi = math.Min(out.lo, a.lo), math.Min(out.hi, a.hi)
				} else {
					out.lo, out.hi = math.Max(out.lo, a.lo), math.Max(out.hi, a.hi)
				}
				out.isInt = out.isInt && a.isInt
				out.nullable = out.nullable && a.nullable
			}
			return checked(out)
		case "coalesce":
			for _, a := range args[1:] {
				out.lo, out.hi = math.Min(out.lo, a.lo), math.Max(out.hi, a.hi)
				out.isInt = out.isInt && a.isInt
				out.nullable = out.nullable && a.nullable
			}
			return checked(out)
		case "nullif":
			out.nullable = true
			return checked(out)
		}
		if err := needFinite(out); err != nil {
			return span{}, err
		}
		switch x.Func {
		case "abs":
			lo := 0.0
			if out.lo > 0 {
				lo = out.lo
			} else if out.hi < 0 {
				lo = -out.hi
			}
			out.lo, out.hi = lo, math.Max(math.Abs(out.lo), math.Abs(out.hi))
		case "floor":
			out.lo, out.hi, out.isInt = math.Floor(out.lo), math.Floor(out.hi), true
		case "ceil":
			out.lo, out.hi, out.isInt = math.Ceil(out.lo), math.Ceil(out.hi), true
		case "round":
			// round(x) and round(x, n ≥ 0) stay within the floor and
			// ceiling of the bounds.
			out.lo, out.hi = math.Floor(out.lo), math.Ceil(out.hi)
			out.isInt = out.isInt || len(x.Args) == 1
		default:
			return span{}, fmt.Errorf("query: unknown function %s", x.Func)
		}
		return checked(out)
	case Cond:
		var out span
		first := true
		add := func(sp span) {
			if math.IsNaN(sp.lo) {
				out.nullable = true // a NULL arm
				return
			}
			if first {
				out, first = sp, false
				return
			}
			out.lo, out.hi = math.Min(out.lo, sp.lo), math.Max(out.hi, sp.hi)
			out.isInt = out.isInt && sp.isInt
			out.nullable = out.nullable || sp.nullable
		}
		for _, th := range x.Thens {
			sp, err := rawRange(th, t)
			if err != nil {
				return span{}, err
			}
			add(sp)
		}
		if x.Else == nil {
			out.nullable = true
		} else {
			sp, err := rawRange(x.Else, t)
			if err != nil {
				return span{}, err
			}
			add(sp)
		}
		if first {
			return span{}, refuse("%s is NULL in every case: nothing to aggregate", scalarString(s))
		}
		return checked(out)
	case DatePart:
		return datePartRange(x, t)
	case TextLength:
		return textLengthRange(x, t), nil
	case Cast:
		a, err := rawRange(x.Arg, t)
		if err != nil {
			return span{}, err
		}
		if x.Type == catalog.Int {
			if err := needFinite(a); err != nil {
				return span{}, err
			}
			a.lo, a.hi, a.isInt = math.Floor(a.lo), math.Ceil(a.hi), true
		} else {
			a.isInt = false
		}
		return checked(a)
	}
	return span{}, fmt.Errorf("query: unknown expression %T", s)
}

// corners applies f to the four corners of two spans.
func corners(a, b span, f func(u, v float64) float64) (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, u := range []float64{a.lo, a.hi} {
		for _, v := range []float64{b.lo, b.hi} {
			w := f(u, v)
			lo, hi = math.Min(lo, w), math.Max(hi, w)
		}
	}
	return lo, hi
}

// scalarString spells a scalar as SQL for people.
func scalarString(s Scalar) string {
	switch x := s.(type) {
	case nil:
		return "NULL"
	case Constant:
		return strconv.FormatFloat(x.Value, 'g', -1, 64)
	case ColumnValue:
		return x.Column
	case Negate:
		return "-" + scalarString(x.Arg)
	case Arith:
		return "(" + scalarString(x.L) + " " + x.Op + " " + scalarString(x.R) + ")"
	case Call:
		parts := make([]string, len(x.Args))
		for i, a := range x.Args {
			parts[i] = scalarString(a)
		}
		return strings.ToUpper(x.Func) + "(" + strings.Join(parts, ", ") + ")"
	case Cond:
		var b strings.Builder
		b.WriteString("CASE")
		for i, w := range x.Whens {
			b.WriteString(" WHEN " + exprString(w, nil) + " THEN " + scalarString(x.Thens[i]))
		}
		if x.Else != nil {
			b.WriteString(" ELSE " + scalarString(x.Else))
		}
		return b.String() + " END"
	case Cast:
		return "CAST(" + scalarString(x.Arg) + " AS " + string(x.Type) + ")"
	case DatePart:
		return dateString(x.Field, x.Column, x.Trunc)
	case TextLength:
		return x.Fn.String()
	}
	return "?"
}

// scalarSQL renders a scalar for the engine, every value a double: a
// bounded column clamped to its bounds in t (NULL kept NULL), an unbounded
// one as it is (only LEAST and GREATEST read it, see rawRange).
func (g *sqlGen) scalarSQL(s Scalar) (string, error) {
	d := g.d
	dbl := d.TypeName(engine.Double)
	switch x := s.(type) {
	case nil:
		return "CAST(NULL AS " + dbl + ")", nil
	case Constant:
		return engine.Literal(d, x.Value)
	case ColumnValue:
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
	case Negate:
		a, err := g.scalarSQL(x.Arg)
		return "(-" + a + ")", err
	case Arith:
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
	case Call:
		if x.Func == "round" && len(x.Args) == 2 {
			// round(x, n) as round(x · 10^n) / 10^n: every engine rounds a
			// double to a whole number (PostgreSQL has no round(double, n)).
			a, err := g.scalarSQL(x.Args[0])
			if err != nil {
				return "", err
			}
			p10 := math.Pow(10, x.Args[1].(Constant).Value)
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
	case Cond:
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
	case DatePart:
		e, err := g.dateSQL(x.Column, x.Field, x.Trunc)
		return "CAST(" + e + " AS " + dbl + ")", err
	case TextLength:
		return g.textLengthSQL(x)
	case Cast:
		a, err := g.scalarSQL(x.Arg)
		if err != nil {
			return "", err
		}
		if x.Type == catalog.Int {
			// Within ±2^53 by the planner: the cast cannot fail.
			return "CAST(" + engine.CastInt(d, a, engine.Integer) + " AS " + dbl + ")", nil
		}
		return a, nil
	}
	return "", fmt.Errorf("query: unknown expression %T", s)
}

// column renders a column of the plan's relation: a declared column by its
// quoted name, a derived one by its expression (an integer one cast to a
// 64-bit integer, exact within its ±2^53 bounds).
func (g *sqlGen) column(name string) (string, error) {
	dv := g.p.Query.Derived[name]
	if dv == nil {
		return g.colRef(name), nil
	}
	e, err := g.scalarSQL(dv.Expr)
	if err != nil {
		return "", err
	}
	if c := g.p.Table.Column(name); c != nil && c.Type == catalog.Int {
		return "CAST(" + e + " AS " + g.d.TypeName(engine.Integer) + ")", nil
	}
	return "(" + e + ")", nil
}

// maxScalarDepth bounds the nesting of a scalar expression.
const maxScalarDepth = MaxExprDepth

// scalar parses a numeric expression of the project stage.
func (p *parser) scalar(n *pg.Node) (Scalar, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxScalarDepth {
		return nil, refuse("expression nested too deeply: more than %d levels; want at most %d", maxScalarDepth, maxScalarDepth)
	}
	if n == nil {
		return nil, refuse("missing operand in an expression")
	}
	if c := n.GetAConst(); c != nil {
		o, err := constOperand(c)
		if err != nil {
			return nil, err
		}
		switch v := o.Value.(type) {
		case int64:
			if v > maxExact || v < -maxExact {
				return nil, refuse("the literal %d is beyond ±2^53 = %d; use a smaller number", v, int64(maxExact))
			}
			return Constant{Value: float64(v), Int: true}, nil
		case float64:
			if math.Abs(v) > maxExact {
				return nil, refuse("the literal %g is beyond ±2^53 = %d; use a smaller number", v, int64(maxExact))
			}
			return Constant{Value: v}, nil
		}
		return nil, refuse("only numbers can be computed with in an aggregated expression, got %s", p.describe(o))
	}
	if cr := n.GetColumnRef(); cr != nil {
		col, err := p.columnRef(cr)
		if err != nil {
			return nil, err
		}
		if col.Type == catalog.Timestamp {
			return nil, refuse("column %s is a timestamp: an aggregated expression computes with EXTRACT(field FROM %s) or date_trunc('unit', %s), not the timestamp itself", col.Name, col.Name, col.Name)
		}
		if col.Type != catalog.Int && col.Type != catalog.Float && col.Type != catalog.Date {
			return nil, refuse("column %s is %s: an aggregated expression computes with int, float and date columns (compare other columns in a CASE WHEN or FILTER condition)", col.Name, col.Type)
		}
		return ColumnValue{Column: col.Name}, nil
	}
	if tc := n.GetTypeCast(); tc != nil {
		if s, ok, err := dateConstant(tc); ok {
			return s, err
		}
		arg, err := p.scalar(tc.Arg)
		if err != nil {
			return nil, err
		}
		typ, name := castType(tc.TypeName)
		if typ == catalog.Int || typ == catalog.Float {
			return Cast{Type: typ, Arg: arg}, nil
		}
		return nil, refuse("CAST to %q is not supported in an aggregated expression; cast to int or float", name)
	}
	if a := n.GetAExpr(); a != nil {
		if s, ok, err := p.shiftedScalar(a, false); ok {
			return s, err
		}
		if o, ok, err := p.foldInterval(a); ok {
			if err != nil {
				return nil, err
			}
			if o.Type != catalog.Date {
				return nil, refuse("timestamps cannot be computed with in an aggregated expression; use EXTRACT(field FROM ts) or date_trunc")
			}
			return Constant{Value: float64(o.Value.(int64)), Int: true, Type: catalog.Date}, nil
		}
		switch a.Kind {
		case pg.A_Expr_Kind_AEXPR_OP:
			return arith(a, "+-*/%", "in an aggregated expression", p.scalar)
		case pg.A_Expr_Kind_AEXPR_NULLIF:
			l, err := p.scalar(a.Lexpr)
			if err != nil {
				return nil, err
			}
			r, err := p.scalar(a.Rexpr)
			if err != nil {
				return nil, err
			}
			return Call{Func: "nullif", Args: []Scalar{l, r}}, nil
		}
		return nil, refuse("this operator is not supported in an aggregated expression; use + - * / %%, CASE, COALESCE, NULLIF, LEAST, GREATEST, ABS, ROUND, FLOOR, CEIL and casts")
	}
	if mm := n.GetMinMaxExpr(); mm != nil {
		args, err := p.scalars(mm.Args)
		if err != nil {
			return nil, err
		}
		f := "least"
		if mm.Op == pg.MinMaxOp_IS_GREATEST {
			f = "greatest"
		}
		return Call{Func: f, Args: args}, nil
	}
	if ce := n.GetCoalesceExpr(); ce != nil {
		args, err := p.scalars(ce.Args)
		if err != nil {
			return nil, err
		}
		return Call{Func: "coalesce", Args: args}, nil
	}
	if ce := n.GetCaseExpr(); ce != nil {
		if ce.Arg != nil {
			return nil, refuse("write CASE WHEN condition THEN value … END (the CASE x WHEN v form is not supported)")
		}
		out := Cond{}
		for _, arm := range ce.Args {
			w := arm.GetCaseWhen()
			if w == nil {
				return nil, refuse("malformed CASE")
			}
			cond, err := p.expr(w.Expr, false)
			if err != nil {
				return nil, err
			}
			th, err := p.thenValue(w.Result)
			if err != nil {
				return nil, err
			}
			out.Whens = append(out.Whens, cond)
			out.Thens = append(out.Thens, th)
		}
		if ce.Defresult != nil {
			e, err := p.thenValue(ce.Defresult)
			if err != nil {
				return nil, err
			}
			out.Else = e
		}
		return out, nil
	}
	if fc := n.GetFuncCall(); fc != nil {
		name := funcName(fc)
		if aggregateNames[name] {
			return nil, refuse("aggregates cannot be nested: %s inside another aggregate", strings.ToUpper(name))
		}
		if isDateFunc(name) {
			return p.dateScalar(fc)
		}
		if name == "length" || name == "char_length" {
			f, err := p.textFn(n, 0)
			if err != nil {
				return nil, err
			}
			return TextLength{Fn: f}, nil
		}
		want := map[string][2]int{"abs": {1, 1}, "floor": {1, 1}, "ceil": {1, 1}, "ceiling": {1, 1}, "round": {1, 2}}
		n, ok := want[name]
		if !ok || fc.AggStar || fc.Over != nil {
			return nil, refuse("function %s is not supported in an aggregated expression; use ABS, ROUND, FLOOR, CEIL, LEAST, GREATEST, COALESCE, NULLIF, CASE and arithmetic", name)
		}
		if len(fc.Args) < n[0] || len(fc.Args) > n[1] {
			return nil, refuse("%s takes %d to %d arguments, got %d", strings.ToUpper(name), n[0], n[1], len(fc.Args))
		}
		args, err := p.scalars(fc.Args)
		if err != nil {
			return nil, err
		}
		if name == "ceiling" {
			name = "ceil"
		}
		if name == "round" && len(args) == 2 {
			d, ok := args[1].(Constant)
			if !ok || !d.Int || d.Value < 0 || d.Value > 15 {
				return nil, refuse("ROUND(x, digits) takes a whole number of digits from 0 to 15")
			}
		}
		return Call{Func: name, Args: args}, nil
	}
	if n.GetSubLink() != nil {
		return nil, refuse("a subquery in WHERE or in the select list is not supported: subqueries are read in FROM or WITH, e.g. WITH s AS (SELECT … FROM t WHERE …) SELECT COUNT(*) FROM s")
	}
	return nil, refuse("this expression is not supported in an aggregate; use columns, numbers, + - * / %%, CASE, COALESCE, NULLIF, LEAST, GREATEST, ABS, ROUND, FLOOR, CEIL and casts")
}

// thenValue parses a CASE result: a scalar, or NULL.
func (p *parser) thenValue(n *pg.Node) (Scalar, error) {
	if c := n.GetAConst(); c != nil && c.Isnull {
		return nil, nil
	}
	return p.scalar(n)
}

func (p *parser) scalars(nodes []*pg.Node) ([]Scalar, error) {
	out := make([]Scalar, len(nodes))
	for i, n := range nodes {
		s, err := p.scalar(n)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	if len(out) == 0 {
		return nil, refuse("a function needs at least one argument")
	}
	return out, nil
}

// derive registers an aggregate's argument as a derived column and returns
// its name ("#e1", …: "#" cannot occur in a declared name).
func (p *parser) derive(s Scalar) string {
	if p.q.Derived == nil {
		p.q.Derived = map[string]*Derived{}
	}
	text := scalarString(s)
	for name, d := range p.q.Derived {
		if d.Text == text {
			return name
		}
	}
	name := fmt.Sprintf("#e%d", len(p.q.Derived)+1)
	p.q.Derived[name] = &Derived{Expr: s, Text: text}
	return name
}

// flushTiny reads a value below minOperand in magnitude as 0 on an engine
// whose doubles fail on underflow (engine.StrictUnderflow); elsewhere it is
// the value itself.
func (g *sqlGen) flushTiny(e string) string {
	if _, ok := g.d.(engine.StrictUnderflow); !ok {
		return e
	}
	dbl := g.d.TypeName(engine.Double)
	return "(CASE WHEN abs(" + e + ") < CAST(" + strconv.FormatFloat(minOperand, 'g', -1, 64) + " AS " + dbl + ") THEN CAST(0 AS " + dbl + ") ELSE " + e + " END)"
}

// arith parses an operator expression of scalars: unary minus (folded into
// a literal), or one of the binary operators ops, with operands parsed by
// sub. where says where the expression stands, for the refusal.
func arith(a *pg.A_Expr, ops, where string, sub func(*pg.Node) (Scalar, error)) (Scalar, error) {
	op := opName(a)
	if a.Lexpr == nil && op == "-" {
		arg, err := sub(a.Rexpr)
		if err != nil {
			return nil, err
		}
		if c, ok := arg.(Constant); ok {
			return Constant{Value: -c.Value, Int: c.Int}, nil
		}
		return Negate{Arg: arg}, nil
	}
	if len(op) != 1 || !strings.Contains(ops, op) {
		return nil, refuse("operator %s is not supported %s; use %s", op, where, strings.Join(strings.Split(ops, ""), " "))
	}
	l, err := sub(a.Lexpr)
	if err != nil {
		return nil, err
	}
	r, err := sub(a.Rexpr)
	if err != nil {
		return nil, err
	}
	return Arith{Op: op, L: l, R: r}, nil
}

// scalarColumns lists the columns a scalar reads (with repeats).
func scalarColumns(s Scalar) []string {
	var out []string
	var walk func(s Scalar)
	walk = func(s Scalar) {
		switch x := s.(type) {
		case ColumnValue:
			out = append(out, x.Column)
		case DatePart:
			out = append(out, x.Column)
		case TextLength:
			out = append(out, x.Fn.columns()...)
		case Arith:
			walk(x.L)
			walk(x.R)
		case Negate:
			walk(x.Arg)
		case Cast:
			walk(x.Arg)
		case Call:
			for _, a := range x.Args {
				walk(a)
			}
		case Cond:
			for i, w := range x.Whens {
				walkColumns(w, func(c string) { out = append(out, c) })
				walk(x.Thens[i])
			}
			walk(x.Else)
		}
	}
	walk(s)
	return out
}

// isNumericExpr reports whether a condition's operand is a numeric
// expression of the project stage (arithmetic, LEAST/GREATEST, COALESCE,
// CASE, a numeric function or a cast of a non-literal), read by scalar.
func isNumericExpr(n *pg.Node) bool {
	switch {
	case n.GetMinMaxExpr() != nil, n.GetCoalesceExpr() != nil, n.GetCaseExpr() != nil:
		return true
	case n.GetTypeCast() != nil:
		return n.GetTypeCast().Arg.GetAConst() == nil
	case n.GetAExpr() != nil:
		a := n.GetAExpr()
		if a.Kind == pg.A_Expr_Kind_AEXPR_NULLIF {
			return true
		}
		if a.Kind != pg.A_Expr_Kind_AEXPR_OP {
			return false
		}
		switch opName(a) {
		case "+", "-", "*", "/", "%":
			return true
		}
	case n.GetFuncCall() != nil:
		switch funcName(n.GetFuncCall()) {
		case "abs", "round", "floor", "ceil", "ceiling", "trunc":
			return true
		}
	}
	return false
}
