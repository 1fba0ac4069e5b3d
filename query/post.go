package query

import (
	"fmt"
	"math"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/catalog"
)

// Post-processing: an output computed from released values (SUM(x) /
// COUNT(*), ROUND(AVG(x), 1), POWER(STDDEV(x), 2), 3 AS three). It reads
// only noisy values and literals, never a row, so it costs nothing beyond
// the aggregates it reads: those are planned, charged and noised like any
// other (an aggregate only an expression reads is a hidden output), and the
// expression is evaluated in Go on their released values.

// OutputValue reads the released value of output Output (Query.Outputs) in
// a post-processing expression.
type OutputValue struct{ Output int }

func (OutputValue) scalarNode() {}

// postFuncs are the functions of a post-processing expression, with their
// least and most arguments.
var postFuncs = map[string][2]int{
	"abs": {1, 1}, "round": {1, 2}, "floor": {1, 1}, "ceil": {1, 1}, "ceiling": {1, 1},
	"sqrt": {1, 1}, "power": {2, 2}, "pow": {2, 2}, "exp": {1, 1}, "ln": {1, 1}, "log10": {1, 1},
	"pi": {0, 0}, "sign": {1, 1},
}

// post parses a select-list expression over aggregates and literals.
func (p *parser) post(n *pg.Node) (Scalar, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxScalarDepth {
		return nil, refuse("expression nested too deeply: more than %d levels; want at most %d", maxScalarDepth, maxScalarDepth)
	}
	if n == nil {
		return nil, refuse("missing operand in an expression")
	}
	switch {
	case n.GetAConst() != nil:
		o, err := constOperand(n.GetAConst())
		if err != nil {
			return nil, err
		}
		switch v := o.Value.(type) {
		case int64:
			return Constant{Value: float64(v), Int: true}, nil
		case float64:
			return Constant{Value: v}, nil
		}
		return nil, refuse("only numbers can be computed with in an expression over aggregates, got %s", p.describe(o))
	case n.GetFuncCall() != nil:
		fc := n.GetFuncCall()
		name := funcName(fc)
		if aggregateNames[name] {
			agg, err := p.aggregate(fc)
			if err != nil {
				return nil, err
			}
			if t := aggTemporal(&agg, p.q.Derived, p.table); t != "" {
				return nil, refuse("%s is a %s: select it as a column of its own, not inside an expression over aggregates", agg, t)
			}
			return OutputValue{Output: p.aggOutput(agg)}, nil
		}
		want, ok := postFuncs[name]
		if !ok || fc.AggStar || fc.Over != nil {
			return nil, refuse("function %s is not supported over aggregates; use ABS, ROUND, FLOOR, CEIL, SQRT, POWER, EXP, LN, LOG10, SIGN, PI, LEAST, GREATEST, COALESCE and arithmetic", name)
		}
		if len(fc.Args) < want[0] || len(fc.Args) > want[1] {
			return nil, refuse("%s takes %d to %d arguments, got %d", strings.ToUpper(name), want[0], want[1], len(fc.Args))
		}
		if name == "pi" {
			return Constant{Value: math.Pi}, nil
		}
		args := make([]Scalar, len(fc.Args))
		for i, a := range fc.Args {
			s, err := p.post(a)
			if err != nil {
				return nil, err
			}
			args[i] = s
		}
		switch name {
		case "ceiling":
			name = "ceil"
		case "pow":
			name = "power"
		}
		if name == "round" && len(args) == 2 {
			d, ok := args[1].(Constant)
			if !ok || !d.Int || d.Value < 0 || d.Value > 15 {
				return nil, refuse("ROUND(x, digits) takes a whole number of digits from 0 to 15")
			}
		}
		return Call{Func: name, Args: args}, nil
	case n.GetAExpr() != nil:
		a := n.GetAExpr()
		if a.Kind != pg.A_Expr_Kind_AEXPR_OP {
			return nil, refuse("this operator is not supported over aggregates; use + - * / and functions")
		}
		return arith(a, "+-*/", "over aggregates", p.post)
	case n.GetMinMaxExpr() != nil:
		mm := n.GetMinMaxExpr()
		f := "least"
		if mm.Op == pg.MinMaxOp_IS_GREATEST {
			f = "greatest"
		}
		args := make([]Scalar, len(mm.Args))
		for i, a := range mm.Args {
			s, err := p.post(a)
			if err != nil {
				return nil, err
			}
			args[i] = s
		}
		return Call{Func: f, Args: args}, nil
	case n.GetTypeCast() != nil:
		tc := n.GetTypeCast()
		arg, err := p.post(tc.Arg)
		if err != nil {
			return nil, err
		}
		switch typ, name := castType(tc.TypeName); typ {
		case catalog.Int:
			return Call{Func: "round", Args: []Scalar{arg}}, nil
		case catalog.Float:
			return arg, nil
		default:
			return nil, refuse("CAST to %q is not supported over aggregates; cast to int or float", name)
		}
	case n.GetColumnRef() != nil:
		return nil, refuse("a column in an expression over aggregates: select the grouped column on its own, and aggregates of columns inside an aggregate (SUM(x * 2))")
	}
	return nil, refuse("this expression is not supported over aggregates; use aggregates, numbers, + - * /, and ABS, ROUND, FLOOR, CEIL, SQRT, POWER, EXP, LN, LOG10, SIGN, PI, LEAST, GREATEST")
}

// aggOutput returns the output that releases agg: a visible one if the
// select list has it, else a new hidden one.
func (p *parser) aggOutput(agg Aggregate) int {
	for i, o := range p.q.Outputs {
		if o.Agg != nil && *o.Agg == agg {
			return i
		}
	}
	a := agg
	p.q.Outputs = append(p.q.Outputs, Output{Name: "#" + agg.String(), Agg: &a, Hidden: true})
	return len(p.q.Outputs) - 1
}

// postValue is a post-processing result: a value (valid false for NULL)
// and an interval (ci false when none can be carried through).
type postValue struct {
	v, lo, hi float64
	valid, ci bool
	isInt     bool
}

// evalPost evaluates a post-processing expression on a row's released
// values and their intervals. The interval follows from the inputs'
// intervals where the operation is monotone in each argument (or by the
// corners for products and quotients); it covers the true value whenever
// every interval it reads does. A result that is not a finite number (a
// division by zero, the square root of a negative) is NULL.
func evalPost(s Scalar, row []any, ci []*Interval) postValue {
	switch x := s.(type) {
	case Constant:
		return postValue{v: x.Value, lo: x.Value, hi: x.Value, valid: true, ci: true, isInt: x.Int}
	case OutputValue:
		f, ok := number(row[x.Output])
		out := postValue{v: f, valid: ok}
		_, out.isInt = row[x.Output].(int64)
		if iv := ci[x.Output]; iv != nil && ok {
			out.lo, out.hi, out.ci = iv.Low, iv.High, true
		}
		return out
	case Negate:
		a := evalPost(x.Arg, row, ci)
		return postValue{v: -a.v, lo: -a.hi, hi: -a.lo, valid: a.valid, ci: a.ci, isInt: a.isInt}
	case Arith:
		a, b := evalPost(x.L, row, ci), evalPost(x.R, row, ci)
		out := postValue{valid: a.valid && b.valid, ci: a.ci && b.ci, isInt: a.isInt && b.isInt && x.Op != "/"}
		sa, sb := span{lo: a.lo, hi: a.hi}, span{lo: b.lo, hi: b.hi}
		switch x.Op {
		case "+":
			out.v, out.lo, out.hi = a.v+b.v, a.lo+b.lo, a.hi+b.hi
		case "-":
			out.v, out.lo, out.hi = a.v-b.v, a.lo-b.hi, a.hi-b.lo
		case "*":
			out.v = a.v * b.v
			out.lo, out.hi = corners(sa, sb, func(u, v float64) float64 { return u * v })
		case "/":
			out.v = a.v / b.v
			if b.lo <= 0 && b.hi >= 0 {
				out.ci = false
			} else {
				out.lo, out.hi = corners(sa, sb, func(u, v float64) float64 { return u / v })
			}
		}
		return out.finish()
	case Call:
		args := make([]postValue, len(x.Args))
		for i, a := range x.Args {
			args[i] = evalPost(a, row, ci)
		}
		return postCall(x.Func, args).finish()
	}
	return postValue{}
}

// postCall applies a function of postFuncs (or least/greatest).
func postCall(name string, args []postValue) postValue {
	a := args[0]
	mono := func(f func(float64) float64) postValue {
		return postValue{v: f(a.v), lo: f(a.lo), hi: f(a.hi), valid: a.valid, ci: a.ci}
	}
	switch name {
	case "least", "greatest":
		out := a
		for _, b := range args[1:] {
			pick := math.Min
			if name == "greatest" {
				pick = math.Max
			}
			if !b.valid {
				continue // NULL arguments are skipped, as in SQL
			}
			if !out.valid {
				out = b
				continue
			}
			out = postValue{v: pick(out.v, b.v), lo: pick(out.lo, b.lo), hi: pick(out.hi, b.hi), valid: true, ci: out.ci && b.ci, isInt: out.isInt && b.isInt}
		}
		return out
	case "abs":
		out := postValue{v: math.Abs(a.v), valid: a.valid, ci: a.ci, isInt: a.isInt}
		switch {
		case a.lo >= 0:
			out.lo, out.hi = a.lo, a.hi
		case a.hi <= 0:
			out.lo, out.hi = -a.hi, -a.lo
		default:
			out.lo, out.hi = 0, math.Max(-a.lo, a.hi)
		}
		return out
	case "round":
		p10 := 1.0
		if len(args) == 2 {
			p10 = math.Pow(10, args[1].v)
		}
		out := mono(func(v float64) float64 { return math.Round(v*p10) / p10 })
		out.isInt = len(args) == 1
		return out
	case "floor":
		out := mono(math.Floor)
		out.isInt = true
		return out
	case "ceil":
		out := mono(math.Ceil)
		out.isInt = true
		return out
	case "sign":
		sign := func(v float64) float64 {
			switch {
			case v > 0:
				return 1
			case v < 0:
				return -1
			}
			return 0
		}
		out := mono(sign)
		out.isInt = true
		return out
	case "sqrt":
		out := mono(func(v float64) float64 { return math.Sqrt(math.Max(v, 0)) })
		out.valid = a.valid && a.v >= 0
		return out
	case "exp":
		return mono(math.Exp)
	case "ln", "log10":
		f := math.Log
		if name == "log10" {
			f = math.Log10
		}
		out := mono(func(v float64) float64 { return f(math.Max(v, math.SmallestNonzeroFloat64)) })
		out.valid = a.valid && a.v > 0
		out.ci = out.ci && a.lo > 0
		return out
	case "power":
		e := args[1]
		out := postValue{v: math.Pow(a.v, e.v), valid: a.valid && e.valid}
		// Monotone in the base where it is not negative, for a fixed
		// exponent: increasing for e > 0, decreasing for e < 0.
		if a.ci && e.ci && e.lo == e.hi && a.lo >= 0 {
			lo, hi := math.Pow(a.lo, e.v), math.Pow(a.hi, e.v)
			out.lo, out.hi, out.ci = math.Min(lo, hi), math.Max(lo, hi), true
		}
		return out
	}
	return postValue{}
}

// finish makes a non-finite result NULL and drops a non-finite interval.
func (p postValue) finish() postValue {
	if math.IsNaN(p.v) || math.IsInf(p.v, 0) {
		p.valid = false
	}
	if math.IsNaN(p.lo) || math.IsNaN(p.hi) || math.IsInf(p.lo, 0) || math.IsInf(p.hi, 0) {
		p.ci = false
	}
	return p
}

// value is the released cell: an int64 when the expression keeps whole
// numbers of whole-number inputs, a float64 otherwise, nil for NULL.
func (p postValue) value() any {
	p = p.finish()
	if !p.valid {
		return nil
	}
	if p.isInt && p.v == math.Trunc(p.v) && math.Abs(p.v) < 1<<62 {
		return int64(p.v)
	}
	return p.v
}

// interval is the released cell's interval, or nil.
func (p postValue) interval() *Interval {
	p = p.finish()
	if !p.valid || !p.ci {
		return nil
	}
	return &Interval{Low: math.Min(p.lo, p.v), High: math.Max(p.hi, p.v)}
}

// postString spells a post-processing expression with the outputs' names.
func postString(s Scalar, q *Query) string {
	switch x := s.(type) {
	case OutputValue:
		o := q.Outputs[x.Output]
		if o.Agg != nil {
			return o.Agg.String()
		}
		return o.Name
	case Negate:
		return "-" + postString(x.Arg, q)
	case Arith:
		return "(" + postString(x.L, q) + " " + x.Op + " " + postString(x.R, q) + ")"
	case Call:
		parts := make([]string, len(x.Args))
		for i, a := range x.Args {
			parts[i] = postString(a, q)
		}
		return strings.ToUpper(x.Func) + "(" + strings.Join(parts, ", ") + ")"
	}
	return scalarString(s)
}

// postInputs counts the released aggregates a post-processing expression
// reads, for the coverage of its interval.
func postInputs(s Scalar) int {
	switch x := s.(type) {
	case OutputValue:
		return 1
	case Negate:
		return postInputs(x.Arg)
	case Arith:
		return postInputs(x.L) + postInputs(x.R)
	case Call:
		n := 0
		for _, a := range x.Args {
			n += postInputs(a)
		}
		return n
	}
	return 0
}

// describePost says how a computed output is released, for notes and
// EXPLAIN.
func describePost(o Output, q *Query, confidence float64) string {
	k := postInputs(o.Post)
	if k == 0 {
		return fmt.Sprintf("%s: a constant, free", o.Name)
	}
	return fmt.Sprintf("%s = %s: computed from released values, free; its interval combines theirs and holds with probability at least %.4g (each of its %d input(s) at %g)",
		o.Name, postString(o.Post, q), 1-float64(k)*(1-confidence), k, confidence)
}
