package parse

import (
	"math"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// isTextFunc reports whether a node is a text function call or a ||.
func isTextFunc(n *pg.Node) bool {
	if n == nil {
		return false
	}
	if fc := n.GetFuncCall(); fc != nil {
		_, ok := ir.TextFuncs[funcName(fc)]
		return ok
	}
	if a := n.GetAExpr(); a != nil {
		return a.Kind == pg.A_Expr_Kind_AEXPR_OP && opName(a) == "||"
	}
	return false
}

// textFn parses a text function, a text column or a string literal.
func (p *parser) textFn(n *pg.Node, depth int) (*ir.TextFn, error) {
	if depth > ir.MaxTextDepth {
		return nil, ir.Refuse("text functions nested too deeply: want at most %d levels", ir.MaxTextDepth)
	}
	if n == nil {
		return nil, ir.Refuse("missing argument of a text function")
	}
	if c := n.GetAConst(); c != nil && c.Isnull {
		return &ir.TextFn{Func: "null"}, nil
	}
	if c := n.GetAConst(); c != nil {
		o, err := constOperand(c)
		if err != nil {
			return nil, err
		}
		s, ok := o.Value.(string)
		if !ok {
			return nil, ir.Refuse("text functions take text columns and string literals, got %s", p.describe(o))
		}
		return &ir.TextFn{Func: "literal", Value: s}, nil
	}
	if cr := n.GetColumnRef(); cr != nil {
		col, err := p.columnRef(cr)
		if err != nil {
			return nil, err
		}
		if col.Type != schema.Text {
			return nil, ir.Refuse("column %s is %s: text functions take text columns (and string literals)", col.Name, col.Type)
		}
		return &ir.TextFn{Func: "column", Column: col.Name}, nil
	}
	if a := n.GetAExpr(); a != nil && a.Kind == pg.A_Expr_Kind_AEXPR_OP && opName(a) == "||" {
		l, err := p.textArg(a.Lexpr, depth)
		if err != nil {
			return nil, err
		}
		r, err := p.textArg(a.Rexpr, depth)
		if err != nil {
			return nil, err
		}
		return &ir.TextFn{Func: "||", Args: []*ir.TextFn{l, r}}, nil
	}
	fc := n.GetFuncCall()
	if fc == nil {
		return nil, ir.Refuse("text functions take text columns, string literals and text functions (lower, upper, substr, trim, ltrim, rtrim, concat, ||)")
	}
	name := funcName(fc)
	spec, ok := ir.TextFuncs[name]
	if !ok || fc.AggStar || fc.Over != nil || fc.AggFilter != nil || fc.AggDistinct || len(fc.AggOrder) > 0 {
		return nil, ir.Refuse("function %s is not a text function dpstat computes; use lower, upper, length, substr, trim, ltrim, rtrim, concat, || or starts_with", name)
	}
	switch name {
	case "char_length":
		name = "length"
	case "substring":
		name = "substr"
	case "btrim":
		name = "trim"
	}
	if (spec.Args > 0 && len(fc.Args) != spec.Args && !(name == "substr" && len(fc.Args) == 2)) || len(fc.Args) == 0 {
		want := strconv.Itoa(spec.Args)
		if name == "substr" {
			want = "2 or 3"
		}
		return nil, ir.Refuse("%s takes %s arguments, got %d", strings.ToUpper(name), want, len(fc.Args))
	}
	if len(fc.Args) > 64 {
		return nil, ir.Refuse("%s takes at most 64 arguments, got %d", strings.ToUpper(name), len(fc.Args))
	}
	f := &ir.TextFn{Func: name}
	if name == "substr" {
		arg, err := p.textArg(fc.Args[0], depth)
		if err != nil {
			return nil, err
		}
		from, ok1 := intConst(fc.Args[1])
		f.For = -1
		ok2 := true
		if len(fc.Args) == 3 {
			f.For, ok2 = intConst(fc.Args[2])
		}
		if !ok1 || !ok2 || from < 1 || from > math.MaxInt32 || (len(fc.Args) == 3 && (f.For < 0 || f.For > math.MaxInt32)) {
			return nil, ir.Refuse("SUBSTR(text, start, length) takes a literal start from 1 and a literal length from 0 (engines disagree on other values)")
		}
		f.From, f.Args = from, []*ir.TextFn{arg}
		return f, nil
	}
	if name == "starts_with" {
		if fc.Args[1].GetAConst() == nil {
			return nil, ir.Refuse("STARTS_WITH(text, prefix) takes a literal prefix")
		}
	}
	for _, a := range fc.Args {
		arg, err := p.textArg(a, depth)
		if err != nil {
			return nil, err
		}
		f.Args = append(f.Args, arg)
	}
	return f, nil
}

// textArg parses an argument of a text function, which must be text.
func (p *parser) textArg(n *pg.Node, depth int) (*ir.TextFn, error) {
	f, err := p.textFn(n, depth+1)
	if err != nil {
		return nil, err
	}
	if k := f.ValueKind(); k != "text" {
		return nil, ir.Refuse("%s is %s, not text: text functions take text arguments", f, k)
	}
	return f, nil
}

// intConst reads an integer literal.
func intConst(n *pg.Node) (int64, bool) {
	f, ok := numberConst(n)
	if !ok || f != math.Trunc(f) || math.Abs(f) > ir.MaxExact {
		return 0, false
	}
	return int64(f), true
}

// textBucket parses a text function as a GROUP BY key: its values are
// public when every column it reads has a public value list (the image,
// computed here and bounded); otherwise key selection chooses them.
func (p *parser) textBucket(n *pg.Node) (*ir.Bucket, error) {
	f, err := p.textFn(n, 0)
	if err != nil {
		return nil, err
	}
	if n := f.Combinations(p.table); n > ir.MaxImageInputs {
		return nil, ir.Refuse("GROUP BY %s: its columns' public value lists have more than %d combinations to compute its values from; group by fewer or shorter-listed columns", f, ir.MaxImageInputs)
	}
	return &ir.Bucket{Kind: ir.TextBucket, Fn: f}, nil
}
