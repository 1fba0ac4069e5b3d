package parse

import (
	"math"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// post parses a select-list expression over aggregates and literals.
func (p *parser) post(n *pg.Node) (ir.Scalar, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > ir.MaxScalarDepth {
		return nil, ir.Refuse("expression nested too deeply: more than %d levels; want at most %d", ir.MaxScalarDepth, ir.MaxScalarDepth)
	}
	if n == nil {
		return nil, ir.Refuse("missing operand in an expression")
	}
	switch {
	case n.GetAConst() != nil:
		o, err := constOperand(n.GetAConst())
		if err != nil {
			return nil, err
		}
		switch v := o.Value.(type) {
		case int64:
			return ir.Constant{Value: float64(v), Int: true}, nil
		case float64:
			return ir.Constant{Value: v}, nil
		}
		return nil, ir.Refuse("only numbers can be computed with in an expression over aggregates, got %s", p.describe(o))
	case n.GetFuncCall() != nil:
		fc := n.GetFuncCall()
		name := funcName(fc)
		if ir.IsAggregate(name) {
			agg, err := p.aggregate(fc)
			if err != nil {
				return nil, err
			}
			if t := ir.AggTemporal(&agg, p.q.Derived, p.table); t != "" {
				return nil, ir.Refuse("%s is a %s: select it as a column of its own, not inside an expression over aggregates", agg, t)
			}
			return ir.OutputValue{Output: p.aggOutput(agg)}, nil
		}
		want, ok := ir.PostFuncs[name]
		if !ok || fc.AggStar || fc.Over != nil {
			return nil, ir.Refuse("function %s is not supported over aggregates; use ABS, ROUND, FLOOR, CEIL, SQRT, POWER, EXP, LN, LOG10, SIGN, PI, LEAST, GREATEST, COALESCE and arithmetic", name)
		}
		if len(fc.Args) < want[0] || len(fc.Args) > want[1] {
			return nil, ir.Refuse("%s takes %d to %d arguments, got %d", strings.ToUpper(name), want[0], want[1], len(fc.Args))
		}
		if name == "pi" {
			return ir.Constant{Value: math.Pi}, nil
		}
		args := make([]ir.Scalar, len(fc.Args))
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
			d, ok := args[1].(ir.Constant)
			if !ok || !d.Int || d.Value < 0 || d.Value > 15 {
				return nil, ir.Refuse("ROUND(x, digits) takes a whole number of digits from 0 to 15")
			}
		}
		return ir.Call{Func: name, Args: args}, nil
	case n.GetAExpr() != nil:
		a := n.GetAExpr()
		if a.Kind != pg.A_Expr_Kind_AEXPR_OP {
			return nil, ir.Refuse("this operator is not supported over aggregates; use + - * / and functions")
		}
		return arith(a, "+-*/", "over aggregates", p.post)
	case n.GetMinMaxExpr() != nil:
		mm := n.GetMinMaxExpr()
		f := "least"
		if mm.Op == pg.MinMaxOp_IS_GREATEST {
			f = "greatest"
		}
		args := make([]ir.Scalar, len(mm.Args))
		for i, a := range mm.Args {
			s, err := p.post(a)
			if err != nil {
				return nil, err
			}
			args[i] = s
		}
		return ir.Call{Func: f, Args: args}, nil
	case n.GetTypeCast() != nil:
		tc := n.GetTypeCast()
		arg, err := p.post(tc.Arg)
		if err != nil {
			return nil, err
		}
		switch typ, name := castType(tc.TypeName); typ {
		case schema.Int:
			return ir.Call{Func: "round", Args: []ir.Scalar{arg}}, nil
		case schema.Float:
			return arg, nil
		default:
			return nil, ir.Refuse("CAST to %q is not supported over aggregates; cast to int or float", name)
		}
	case n.GetColumnRef() != nil:
		return nil, ir.Refuse("a column in an expression over aggregates: select the grouped column on its own, and aggregates of columns inside an aggregate (SUM(x * 2))")
	}
	return nil, ir.Refuse("this expression is not supported over aggregates; use aggregates, numbers, + - * /, and ABS, ROUND, FLOOR, CEIL, SQRT, POWER, EXP, LN, LOG10, SIGN, PI, LEAST, GREATEST")
}

// aggOutput returns the output that releases agg: a visible one if the
// select list has it, else a new hidden one.
func (p *parser) aggOutput(agg ir.Aggregate) int {
	for i, o := range p.q.Outputs {
		if o.Agg != nil && *o.Agg == agg {
			return i
		}
	}
	a := agg
	p.q.Outputs = append(p.q.Outputs, ir.Output{Name: "#" + agg.String(), Agg: &a, Hidden: true})
	return len(p.q.Outputs) - 1
}
