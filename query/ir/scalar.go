package ir

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpstat/dpstat/schema"
)

// Scalar is a numeric expression of the project stage.
type Scalar interface{ scalarNode() }

// ColumnValue reads a numeric column, clamped to its declared bounds.
type ColumnValue struct{ Column string }

// Constant is a numeric literal.
type Constant struct {
	Value float64
	// Int is true for an integer literal.
	Int bool
	// Type is schema.Date for a DATE literal (Value is its days since
	// 1970-01-01), "" for a number.
	Type schema.Type
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
	Type schema.Type
	Arg  Scalar
}

func (ColumnValue) scalarNode() {}

func (Constant) scalarNode() {}

func (Arith) scalarNode() {}

func (Negate) scalarNode() {}

func (Call) scalarNode() {}

func (Cond) scalarNode() {}

func (Cast) scalarNode() {}

// Derived is a computed column of the project stage.
type Derived struct {
	// Expr computes the column's value per row.
	Expr Scalar
	// Text spells Expr for messages and EXPLAIN.
	Text string
}

// MaxExact is the largest magnitude a derived value or any intermediate
// value may reach: doubles hold every integer up to 2^53 exactly.
const MaxExact = 1 << 53

// MinOperand is the smallest nonzero magnitude an operand of a product or
// quotient keeps on engines whose doubles fail on underflow
// (engine.StrictUnderflow): smaller values are read as 0, so that a product
// of two operands (at least 2^-800) or a quotient by a divisor within
// ±2^53 (at least 2^-453) is a normal double. A divisor's range must stay
// this far from 0 on every engine.
const MinOperand = 0x1p-400

// Span is the facts about a scalar's values: every value lies in [lo, hi];
// IsInt says the values are whole numbers; nullable that NULL can occur.
type Span struct {
	Lo, Hi   float64
	IsInt    bool
	nullable bool
}

func (s Span) finite() bool {
	return !math.IsInf(s.Lo, 0) && !math.IsInf(s.Hi, 0) && !math.IsNaN(s.Lo) && !math.IsNaN(s.Hi)
}

// ScalarRange derives the span of s over table t (whose column bounds may
// be narrowed by WHERE), or refuses an expression that is not total.
func ScalarRange(s Scalar, t *Table) (Span, error) {
	out, err := rawRange(s, t)
	if err != nil {
		return Span{}, err
	}
	if tl, ok := s.(TextLength); ok && !out.finite() {
		return Span{}, Refuse("%s has no upper bound: %s has no public value list; clamp it, e.g. LEAST(%s, 100), or declare `values:` for %s in the catalog",
			tl.Fn, strings.Join(tl.Fn.columns(), ", "), tl.Fn, strings.Join(tl.Fn.columns(), ", "))
	}
	if !out.finite() {
		return Span{}, Refuse("the expression %s has no finite bounds: its inputs include a column without declared bounds; clamp it with LEAST(GREATEST(x, low), high) or declare `lower:` and `upper:` in the catalog", ScalarString(s))
	}
	return out, nil
}

// rawRange is ScalarRange without the final finiteness check: a column
// without bounds spans ±Inf, which only LEAST and GREATEST may narrow.
func rawRange(s Scalar, t *Table) (Span, error) {
	switch x := s.(type) {
	case nil:
		// NULL: it adds no value, only the possibility of NULL.
		return Span{Lo: math.NaN(), Hi: math.NaN(), IsInt: true, nullable: true}, nil
	case Constant:
		return checkedSpan(s, Span{Lo: x.Value, Hi: x.Value, IsInt: x.Int})
	case ColumnValue:
		c := t.Column(x.Column)
		if c == nil {
			return Span{}, fmt.Errorf("query: derived column reads unknown column %s", x.Column)
		}
		if c.Type != schema.Int && c.Type != schema.Float && !c.Type.Temporal() {
			return Span{}, Refuse("column %s is %s: arithmetic needs an int, float or date column", c.Name, c.Type)
		}
		sp := Span{Lo: math.Inf(-1), Hi: math.Inf(1), IsInt: c.Type != schema.Float, nullable: true}
		// A per-person count has a lower bound only (PreAggregate).
		if c.Lower != nil {
			sp.Lo = *c.Lower
		}
		if c.Upper != nil {
			sp.Hi = *c.Upper
		}
		return sp, nil
	case Negate:
		a, err := rawRange(x.Arg, t)
		if err != nil {
			return Span{}, err
		}
		return Span{Lo: -a.Hi, Hi: -a.Lo, IsInt: a.IsInt, nullable: a.nullable}, nil
	case Arith:
		a, err := rawRange(x.L, t)
		if err != nil {
			return Span{}, err
		}
		b, err := rawRange(x.R, t)
		if err != nil {
			return Span{}, err
		}
		if err := needFiniteSpans(s, a, b); err != nil {
			return Span{}, err
		}
		out := Span{IsInt: a.IsInt && b.IsInt, nullable: a.nullable || b.nullable}
		switch x.Op {
		case "+":
			out.Lo, out.Hi = a.Lo+b.Lo, a.Hi+b.Hi
		case "-":
			out.Lo, out.Hi = a.Lo-b.Hi, a.Hi-b.Lo
		case "*":
			out.Lo, out.Hi = Corners(a, b, func(u, v float64) float64 { return u * v })
		case "/":
			if b.Lo <= MinOperand && b.Hi >= -MinOperand {
				return Span{}, Refuse("%s divides by %s, which can be 0 or within 2^-400 of it (its range is [%g, %g]); divide by an expression whose range stays away from 0", ScalarString(s), ScalarString(x.R), b.Lo, b.Hi)
			}
			out.Lo, out.Hi = Corners(a, b, func(u, v float64) float64 { return u / v })
			out.IsInt = false
		case "%":
			c, ok := x.R.(Constant)
			if !ok || math.Abs(c.Value) < MinOperand {
				return Span{}, Refuse("%s: the divisor of %% must be a literal of magnitude at least 2^-400", ScalarString(s))
			}
			m := math.Abs(c.Value)
			if math.Max(math.Abs(a.Lo), math.Abs(a.Hi))/m > MaxExact {
				return Span{}, Refuse("%s: the quotient can exceed 2^53; use a larger divisor", ScalarString(s))
			}
			// The remainder has the dividend's sign and is below |c|;
			// computed in doubles (l − c·trunc(l / c)) it can miss by
			// remSlack, with either sign.
			w := remSlack(a, b, m)
			out.Lo, out.Hi = math.Max(math.Min(a.Lo, 0), -m)-w, math.Min(math.Max(a.Hi, 0), m)+w
			if out.IsInt {
				out.Lo, out.Hi = math.Floor(out.Lo), math.Ceil(out.Hi)
			}
		default:
			return Span{}, fmt.Errorf("query: unknown operator %s", x.Op)
		}
		return checkedSpan(s, out)
	case Call:
		return callRange(s, x, t)
	case Cond:
		return condRange(s, x, t)
	case DatePart:
		return datePartRange(x, t)
	case TextLength:
		return TextLengthRange(x, t), nil
	case Cast:
		a, err := rawRange(x.Arg, t)
		if err != nil {
			return Span{}, err
		}
		if x.Type == schema.Int {
			if err := needFiniteSpans(s, a); err != nil {
				return Span{}, err
			}
			a.Lo, a.Hi, a.IsInt = math.Floor(a.Lo), math.Ceil(a.Hi), true
		} else {
			a.IsInt = false
		}
		return checkedSpan(s, a)
	}
	return Span{}, fmt.Errorf("query: unknown expression %T", s)
}

// checkedSpan refuses a span of s beyond ±2^53, where doubles stop being
// exact.
func checkedSpan(s Scalar, out Span) (Span, error) {
	if out.finite() && (math.Abs(out.Lo) > MaxExact || math.Abs(out.Hi) > MaxExact) {
		return Span{}, Refuse("the expression %s can reach [%g, %g], beyond ±2^53 = %d where doubles stop being exact; clamp its inputs to a smaller range", ScalarString(s), out.Lo, out.Hi, int64(MaxExact))
	}
	return out, nil
}

// needFiniteSpans refuses arithmetic of s on a part without bounds.
func needFiniteSpans(s Scalar, parts ...Span) error {
	for _, p := range parts {
		if !p.finite() {
			return Refuse("the expression %s does arithmetic on a column without declared bounds; clamp it first with LEAST(GREATEST(x, low), high) or declare `lower:` and `upper:` in the catalog", ScalarString(s))
		}
	}
	return nil
}

// callRange is rawRange of a function call.
func callRange(s Scalar, x Call, t *Table) (Span, error) {
	args := make([]Span, len(x.Args))
	for i, a := range x.Args {
		sp, err := rawRange(a, t)
		if err != nil {
			return Span{}, err
		}
		args[i] = sp
	}
	out := args[0]
	switch x.Func {
	case "least", "greatest":
		return checkedSpan(s, extremumRange(x.Func == "least", args))
	case "coalesce":
		// The value is one of the arguments' (a NULL literal adds
		// none); NULL only if all can be.
		out = Span{Lo: math.NaN(), Hi: math.NaN(), IsInt: true, nullable: true}
		for _, a := range args {
			out.nullable = out.nullable && a.nullable
			if math.IsNaN(a.Lo) {
				continue
			}
			if math.IsNaN(out.Lo) {
				out.Lo, out.Hi = a.Lo, a.Hi
			}
			out.Lo, out.Hi = math.Min(out.Lo, a.Lo), math.Max(out.Hi, a.Hi)
			out.IsInt = out.IsInt && a.IsInt
		}
		return checkedSpan(s, out)
	case "nullif":
		out.nullable = true
		return checkedSpan(s, out)
	}
	if err := needFiniteSpans(s, out); err != nil {
		return Span{}, err
	}
	switch x.Func {
	case "abs":
		lo := 0.0
		if out.Lo > 0 {
			lo = out.Lo
		} else if out.Hi < 0 {
			lo = -out.Hi
		}
		out.Lo, out.Hi = lo, math.Max(math.Abs(out.Lo), math.Abs(out.Hi))
	case "floor":
		out.Lo, out.Hi, out.IsInt = math.Floor(out.Lo), math.Floor(out.Hi), true
	case "ceil":
		out.Lo, out.Hi, out.IsInt = math.Ceil(out.Lo), math.Ceil(out.Hi), true
	case "round":
		// round(x) and round(x, n ≥ 0) stay within the floor and
		// ceiling of the bounds, in doubles too while the bounds
		// scaled by 10^n are exact (roundSlack).
		w := 0.0
		if len(x.Args) == 2 {
			if c, ok := x.Args[1].(Constant); ok {
				w = roundSlack(out, math.Pow(10, c.Value))
			}
		}
		out.Lo, out.Hi = math.Floor(out.Lo)-w, math.Ceil(out.Hi)+w
		out.IsInt = out.IsInt || len(x.Args) == 1
	default:
		return Span{}, fmt.Errorf("query: unknown function %s", x.Func)
	}
	return checkedSpan(s, out)
}

// condRange is rawRange of a CASE: the union of its arms' spans.
func condRange(s Scalar, x Cond, t *Table) (Span, error) {
	var out Span
	first := true
	nullArm := false // a NULL arm, wherever it comes
	add := func(sp Span) {
		if math.IsNaN(sp.Lo) {
			nullArm = true
			return
		}
		if first {
			out, first = sp, false
			return
		}
		out.Lo, out.Hi = math.Min(out.Lo, sp.Lo), math.Max(out.Hi, sp.Hi)
		out.IsInt = out.IsInt && sp.IsInt
		out.nullable = out.nullable || sp.nullable
	}
	for _, th := range x.Thens {
		sp, err := rawRange(th, t)
		if err != nil {
			return Span{}, err
		}
		add(sp)
	}
	if x.Else == nil {
		out.nullable = true
	} else {
		sp, err := rawRange(x.Else, t)
		if err != nil {
			return Span{}, err
		}
		add(sp)
	}
	if first {
		return Span{}, Refuse("%s is NULL in every case: nothing to aggregate", ScalarString(s))
	}
	out.nullable = out.nullable || nullArm
	return checkedSpan(s, out)
}

// extremumRange is the span of LEAST (least) or GREATEST of args as SQL
// computes them: NULL arguments are skipped, so the result is NULL only if
// every argument is NULL, and otherwise the least (greatest) of the
// arguments that are not NULL. Its lower bound (for LEAST) is the least
// lower bound of any argument; its upper bound the least upper bound of
// the arguments that cannot be NULL (one of them is always there), or,
// when every argument can be NULL, the greatest upper bound of any (each
// may be the only one that is not NULL). GREATEST is the mirror image. A
// NULL literal (a NaN span) adds nothing.
func extremumRange(least bool, args []Span) Span {
	out := Span{IsInt: true, nullable: true}
	anyLo, anyHi := math.Inf(1), math.Inf(-1)   // over every argument
	sureLo, sureHi := math.Inf(-1), math.Inf(1) // over those never NULL
	values := false
	for _, a := range args {
		out.nullable = out.nullable && a.nullable
		if math.IsNaN(a.Lo) {
			continue
		}
		values = true
		out.IsInt = out.IsInt && a.IsInt
		anyLo, anyHi = math.Min(anyLo, a.Lo), math.Max(anyHi, a.Hi)
		if !a.nullable {
			sureLo, sureHi = math.Max(sureLo, a.Lo), math.Min(sureHi, a.Hi)
		}
	}
	if !values {
		return Span{Lo: math.NaN(), Hi: math.NaN(), IsInt: true, nullable: true}
	}
	if least {
		out.Lo, out.Hi = anyLo, anyHi
		if !out.nullable {
			out.Hi = sureHi
		}
	} else {
		out.Lo, out.Hi = anyLo, anyHi
		if !out.nullable {
			out.Lo = sureLo
		}
	}
	return out
}

// remSlack bounds how far l − m·trunc(l / m), computed in doubles for l in
// a and a literal divisor of magnitude m, can fall outside the exact
// remainder's range: the quotient rounds to at most u·|l| from its value
// (u = 2^-53), so the truncation can step to the next whole number (a
// remainder of the other sign, of magnitude at most u·|l|), and the product
// and the difference round by at most u·(|l| + m) and u·2m. 2^-51·(|l| + 2m)
// covers the sum. Whole numbers below 2^53 in magnitude are exact at every
// step: no slack.
func remSlack(a, b Span, m float64) float64 {
	A := math.Max(math.Abs(a.Lo), math.Abs(a.Hi))
	if a.IsInt && b.IsInt && A < MaxExact {
		return 0
	}
	return math.Ldexp(A+2*m, -51)
}

// roundSlack bounds how far round(x · p) / p (ROUND(x, n) with p = 10^n),
// computed in doubles for x in a, can fall outside the floor and ceiling of
// a's bounds: none while those, scaled by p, are whole numbers of at most
// 2^53 (every step is monotone and meets them exactly); otherwise the
// product and the quotient each round by u·|x|·p and u·|x| (u = 2^-53),
// and the rounding to a whole number adds at most 1/2: 2^-51·|x| + 1
// covers it.
func roundSlack(a Span, p float64) float64 {
	A := math.Max(math.Abs(math.Floor(a.Lo)), math.Abs(math.Ceil(a.Hi)))
	if A*p <= MaxExact {
		return 0
	}
	return math.Ceil(math.Ldexp(A, -51)) + 1
}

// Corners applies f to the four corners of two spans.
func Corners(a, b Span, f func(u, v float64) float64) (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, u := range []float64{a.Lo, a.Hi} {
		for _, v := range []float64{b.Lo, b.Hi} {
			w := f(u, v)
			lo, hi = math.Min(lo, w), math.Max(hi, w)
		}
	}
	return lo, hi
}

// ScalarString spells a scalar as SQL for people.
func ScalarString(s Scalar) string {
	switch x := s.(type) {
	case nil:
		return "NULL"
	case Constant:
		return strconv.FormatFloat(x.Value, 'g', -1, 64)
	case ColumnValue:
		return x.Column
	case Negate:
		return "-" + ScalarString(x.Arg)
	case Arith:
		return "(" + ScalarString(x.L) + " " + x.Op + " " + ScalarString(x.R) + ")"
	case Call:
		parts := make([]string, len(x.Args))
		for i, a := range x.Args {
			parts[i] = ScalarString(a)
		}
		return strings.ToUpper(x.Func) + "(" + strings.Join(parts, ", ") + ")"
	case Cond:
		var b strings.Builder
		b.WriteString("CASE")
		for i, w := range x.Whens {
			b.WriteString(" WHEN " + ExprString(w, nil) + " THEN " + ScalarString(x.Thens[i]))
		}
		if x.Else != nil {
			b.WriteString(" ELSE " + ScalarString(x.Else))
		}
		return b.String() + " END"
	case Cast:
		return "CAST(" + ScalarString(x.Arg) + " AS " + string(x.Type) + ")"
	case DatePart:
		return DateString(x.Field, x.Column, x.Trunc, x.Shift)
	case TextLength:
		return x.Fn.String()
	}
	return "?"
}

// MaxScalarDepth bounds the nesting of a scalar expression.
const MaxScalarDepth = MaxExprDepth

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
				WalkColumns(w, func(c string) { out = append(out, c) })
				walk(x.Thens[i])
			}
			walk(x.Else)
		}
	}
	walk(s)
	return out
}
