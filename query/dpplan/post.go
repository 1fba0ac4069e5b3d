package dpplan

import (
	"fmt"
	"math"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/query/ir"
)

// postValue is a post-processing result: a value (valid false for NULL)
// and an interval (ci false when none can be carried through).
type postValue struct {
	v, lo, hi float64
	valid, ci bool
	isInt     bool
}

// EvalPost evaluates a post-processing expression on a row's released
// values and their intervals. The interval follows from the inputs'
// intervals where the operation is monotone in each argument (or by the
// corners for products and quotients); it covers the true value whenever
// every interval it reads does. A result that is not a finite number (a
// division by zero, the square root of a negative) is NULL.
func EvalPost(s ir.Scalar, row []any, ci []*Interval) postValue {
	switch x := s.(type) {
	case ir.Constant:
		return postValue{v: x.Value, lo: x.Value, hi: x.Value, valid: true, ci: true, isInt: x.Int}
	case ir.OutputValue:
		f, ok := ir.Number(row[x.Output])
		out := postValue{v: f, valid: ok}
		_, out.isInt = row[x.Output].(int64)
		if iv := ci[x.Output]; iv != nil && ok {
			out.lo, out.hi, out.ci = iv.Low, iv.High, true
		}
		return out
	case ir.Negate:
		a := EvalPost(x.Arg, row, ci)
		return postValue{v: -a.v, lo: -a.hi, hi: -a.lo, valid: a.valid, ci: a.ci, isInt: a.isInt}
	case ir.Arith:
		a, b := EvalPost(x.L, row, ci), EvalPost(x.R, row, ci)
		out := postValue{valid: a.valid && b.valid, ci: a.ci && b.ci, isInt: a.isInt && b.isInt && x.Op != "/"}
		sa, sb := ir.Span{Lo: a.lo, Hi: a.hi}, ir.Span{Lo: b.lo, Hi: b.hi}
		switch x.Op {
		case "+":
			out.v, out.lo, out.hi = a.v+b.v, a.lo+b.lo, a.hi+b.hi
		case "-":
			out.v, out.lo, out.hi = a.v-b.v, a.lo-b.hi, a.hi-b.lo
		case "*":
			out.v = a.v * b.v
			out.lo, out.hi = ir.Corners(sa, sb, func(u, v float64) float64 { return u * v })
		case "/":
			out.v = a.v / b.v
			if b.lo <= 0 && b.hi >= 0 {
				out.ci = false
			} else {
				out.lo, out.hi = ir.Corners(sa, sb, func(u, v float64) float64 { return u / v })
			}
		}
		return out.finish()
	case ir.Call:
		args := make([]postValue, len(x.Args))
		for i, a := range x.Args {
			args[i] = EvalPost(a, row, ci)
		}
		return postCall(x.Func, args).finish()
	}
	return postValue{}
}

// postCall applies a function of PostFuncs (or least/greatest).
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

// Value is the released cell: an int64 when the expression keeps whole
// numbers of whole-number inputs, a float64 otherwise, nil for NULL.
func (p postValue) Value() any {
	p = p.finish()
	if !p.valid {
		return nil
	}
	if p.isInt && p.v == math.Trunc(p.v) && math.Abs(p.v) < 1<<62 {
		return int64(p.v)
	}
	return p.v
}

// Interval is the released cell's interval, or nil.
func (p postValue) Interval() *Interval {
	p = p.finish()
	if !p.valid || !p.ci {
		return nil
	}
	return &Interval{Low: math.Min(p.lo, p.v), High: math.Max(p.hi, p.v)}
}

// DescribePost says how a computed output is released, for notes and
// EXPLAIN.
func DescribePost(o ir.Output, q *ir.Query, confidence float64) string {
	k := ir.PostInputs(o.Post)
	if k == 0 {
		return fmt.Sprintf("%s: a constant, free", o.Name)
	}
	return fmt.Sprintf("%s = %s: computed from released values, free; its interval combines theirs and holds with probability at least %s (each of its %d input(s) at %s)",
		o.Name, ir.PostString(o.Post, q), fmtG(1-float64(k)*(1-confidence)), k, accounting.Num(confidence))
}
