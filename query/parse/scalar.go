package parse

import (
	"fmt"
	"math"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// scalar parses a numeric expression of the project stage.
func (p *parser) scalar(n *pg.Node) (ir.Scalar, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > ir.MaxScalarDepth {
		return nil, ir.Refuse("expression nested too deeply: more than %d levels; want at most %d", ir.MaxScalarDepth, ir.MaxScalarDepth)
	}
	if n == nil {
		return nil, ir.Refuse("missing operand in an expression")
	}
	if c := n.GetAConst(); c != nil {
		o, err := constOperand(c)
		if err != nil {
			return nil, err
		}
		switch v := o.Value.(type) {
		case int64:
			if v > ir.MaxExact || v < -ir.MaxExact {
				return nil, ir.Refuse("the literal %d is beyond ±2^53 = %d; use a smaller number", v, int64(ir.MaxExact))
			}
			return ir.Constant{Value: float64(v), Int: true}, nil
		case float64:
			if math.Abs(v) > ir.MaxExact {
				return nil, ir.Refuse("the literal %g is beyond ±2^53 = %d; use a smaller number", v, int64(ir.MaxExact))
			}
			return ir.Constant{Value: v}, nil
		}
		return nil, ir.Refuse("only numbers can be computed with in an aggregated expression, got %s", p.describe(o))
	}
	if cr := n.GetColumnRef(); cr != nil {
		col, err := p.columnRef(cr)
		if err != nil {
			return nil, err
		}
		if col.Type == schema.Timestamp {
			return nil, ir.Refuse("column %s is a timestamp: an aggregated expression computes with EXTRACT(field FROM %s) or date_trunc('unit', %s), not the timestamp itself", col.Name, col.Name, col.Name)
		}
		if col.Type != schema.Int && col.Type != schema.Float && col.Type != schema.Date {
			return nil, ir.Refuse("column %s is %s: an aggregated expression computes with int, float and date columns (compare other columns in a CASE WHEN or FILTER condition)", col.Name, col.Type)
		}
		return ir.ColumnValue{Column: col.Name}, nil
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
		if typ == schema.Int || typ == schema.Float {
			return ir.Cast{Type: typ, Arg: arg}, nil
		}
		return nil, ir.Refuse("CAST to %q is not supported in an aggregated expression; cast to int or float", name)
	}
	if a := n.GetAExpr(); a != nil {
		if s, ok, err := p.shiftedScalar(a, false); ok {
			return s, err
		}
		if o, ok, err := p.foldInterval(a); ok {
			if err != nil {
				return nil, err
			}
			if o.Type != schema.Date {
				return nil, ir.Refuse("timestamps cannot be computed with in an aggregated expression; use EXTRACT(field FROM ts) or date_trunc")
			}
			return ir.Constant{Value: float64(o.Value.(int64)), Int: true, Type: schema.Date}, nil
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
			return ir.Call{Func: "nullif", Args: []ir.Scalar{l, r}}, nil
		}
		return nil, ir.Refuse("this operator is not supported in an aggregated expression; use + - * / %%, CASE, COALESCE, NULLIF, LEAST, GREATEST, ABS, ROUND, FLOOR, CEIL and casts")
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
		return ir.Call{Func: f, Args: args}, nil
	}
	if ce := n.GetCoalesceExpr(); ce != nil {
		args, err := p.scalars(ce.Args)
		if err != nil {
			return nil, err
		}
		return ir.Call{Func: "coalesce", Args: args}, nil
	}
	if ce := n.GetCaseExpr(); ce != nil {
		return p.caseScalar(ce)
	}
	if fc := n.GetFuncCall(); fc != nil {
		return p.callScalar(n, fc)
	}
	if n.GetSubLink() != nil {
		return nil, ir.Refuse("a subquery in WHERE or in the select list is not supported: subqueries are read in FROM or WITH, e.g. WITH s AS (SELECT … FROM t WHERE …) SELECT COUNT(*) FROM s")
	}
	return nil, ir.Refuse("this expression is not supported in an aggregate; use columns, numbers, + - * / %%, CASE, COALESCE, NULLIF, LEAST, GREATEST, ABS, ROUND, FLOOR, CEIL and casts")
}

// thenValue parses a CASE result: a scalar, or NULL.
func (p *parser) thenValue(n *pg.Node) (ir.Scalar, error) {
	if c := n.GetAConst(); c != nil && c.Isnull {
		return nil, nil
	}
	return p.scalar(n)
}

func (p *parser) scalars(nodes []*pg.Node) ([]ir.Scalar, error) {
	out := make([]ir.Scalar, len(nodes))
	for i, n := range nodes {
		s, err := p.scalar(n)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	if len(out) == 0 {
		return nil, ir.Refuse("a function needs at least one argument")
	}
	return out, nil
}

// derive registers an aggregate's argument as a derived column and returns
// its name ("#e1", …: "#" cannot occur in a declared name).
func (p *parser) derive(s ir.Scalar) string {
	if p.q.Derived == nil {
		p.q.Derived = map[string]*ir.Derived{}
	}
	text := ir.ScalarString(s)
	for name, d := range p.q.Derived {
		if d.Text == text {
			return name
		}
	}
	name := fmt.Sprintf("#e%d", len(p.q.Derived)+1)
	p.q.Derived[name] = &ir.Derived{Expr: s, Text: text}
	return name
}

// arith parses an operator expression of scalars: unary minus (folded into
// a literal), or one of the binary operators ops, with operands parsed by
// sub. where says where the expression stands, for the refusal.
func arith(a *pg.A_Expr, ops, where string, sub func(*pg.Node) (ir.Scalar, error)) (ir.Scalar, error) {
	op := opName(a)
	if a.Lexpr == nil && op == "-" {
		arg, err := sub(a.Rexpr)
		if err != nil {
			return nil, err
		}
		if c, ok := arg.(ir.Constant); ok {
			return ir.Constant{Value: -c.Value, Int: c.Int}, nil
		}
		return ir.Negate{Arg: arg}, nil
	}
	if len(op) != 1 || !strings.Contains(ops, op) {
		return nil, ir.Refuse("operator %s is not supported %s; use %s", op, where, strings.Join(strings.Split(ops, ""), " "))
	}
	l, err := sub(a.Lexpr)
	if err != nil {
		return nil, err
	}
	r, err := sub(a.Rexpr)
	if err != nil {
		return nil, err
	}
	return ir.Arith{Op: op, L: l, R: r}, nil
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

// caseScalar reads CASE WHEN condition THEN value … [ELSE value] END.
func (p *parser) caseScalar(ce *pg.CaseExpr) (ir.Scalar, error) {
	if ce.Arg != nil {
		return nil, ir.Refuse("write CASE WHEN condition THEN value … END (the CASE x WHEN v form is not supported)")
	}
	out := ir.Cond{}
	for _, arm := range ce.Args {
		w := arm.GetCaseWhen()
		if w == nil {
			return nil, ir.Refuse("malformed CASE")
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

// callScalar reads a function call inside an aggregated expression:
// date and text functions, and the numeric ones.
func (p *parser) callScalar(n *pg.Node, fc *pg.FuncCall) (ir.Scalar, error) {
	name := funcName(fc)
	if ir.IsAggregate(name) {
		return nil, ir.Refuse("aggregates cannot be nested: %s inside another aggregate", strings.ToUpper(name))
	}
	if ir.IsDateFunc(name) {
		return p.dateScalar(fc)
	}
	if name == "length" || name == "char_length" {
		f, err := p.textFn(n, 0)
		if err != nil {
			return nil, err
		}
		return ir.TextLength{Fn: f}, nil
	}
	want := map[string][2]int{"abs": {1, 1}, "floor": {1, 1}, "ceil": {1, 1}, "ceiling": {1, 1}, "round": {1, 2}}
	arity, ok := want[name]
	if !ok || fc.AggStar || fc.Over != nil {
		return nil, ir.Refuse("function %s is not supported in an aggregated expression; use ABS, ROUND, FLOOR, CEIL, LEAST, GREATEST, COALESCE, NULLIF, CASE and arithmetic", name)
	}
	if len(fc.Args) < arity[0] || len(fc.Args) > arity[1] {
		return nil, ir.Refuse("%s takes %d to %d arguments, got %d", strings.ToUpper(name), arity[0], arity[1], len(fc.Args))
	}
	args, err := p.scalars(fc.Args)
	if err != nil {
		return nil, err
	}
	if name == "ceiling" {
		name = "ceil"
	}
	if name == "round" && len(args) == 2 {
		d, ok := args[1].(ir.Constant)
		if !ok || !d.Int || d.Value < 0 || d.Value > 15 {
			return nil, ir.Refuse("ROUND(x, digits) takes a whole number of digits from 0 to 15")
		}
	}
	return ir.Call{Func: name, Args: args}, nil
}
