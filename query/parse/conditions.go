package parse

import (
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

var compareOps = map[string]string{"=": "=", "<>": "<>", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

// expr converts a boolean expression; having selects output references
// (HAVING) instead of column references (WHERE).
func (p *parser) expr(n *pg.Node, having bool) (ir.Expr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > ir.MaxExprDepth {
		return nil, ir.Refuse("condition nested too deeply: more than %d levels of AND, OR and NOT; want at most %d", ir.MaxExprDepth, ir.MaxExprDepth)
	}
	switch {
	case n.GetBoolExpr() != nil:
		b := n.GetBoolExpr()
		args := make([]ir.Expr, len(b.Args))
		for i, a := range b.Args {
			e, err := p.expr(a, having)
			if err != nil {
				return nil, err
			}
			args[i] = e
		}
		switch b.Boolop {
		case pg.BoolExprType_AND_EXPR:
			return ir.And{Args: args}, nil
		case pg.BoolExprType_OR_EXPR:
			return ir.Or{Args: args}, nil
		case pg.BoolExprType_NOT_EXPR:
			if len(args) != 1 {
				return nil, ir.Refuse("malformed NOT")
			}
			return ir.Not{Arg: args[0]}, nil
		}
		return nil, ir.Refuse("unsupported boolean operator")
	case n.GetNullTest() != nil:
		nt := n.GetNullTest()
		arg, err := p.operand(nt.Arg, having)
		if err != nil {
			return nil, err
		}
		return ir.IsNull{Arg: arg, Negate: nt.Nulltesttype == pg.NullTestType_IS_NOT_NULL}, nil
	case n.GetAExpr() != nil:
		return p.aexpr(n.GetAExpr(), having)
	case n.GetSubLink() != nil:
		return nil, ir.Refuse("a subquery in WHERE or in the select list is not supported: subqueries are read in FROM or WITH, e.g. WITH s AS (SELECT … FROM t WHERE …) SELECT COUNT(*) FROM s")
	case n.GetColumnRef() != nil && !having:
		col, err := p.columnRef(n.GetColumnRef())
		if err != nil {
			return nil, err
		}
		if col.Type != schema.Bool {
			return nil, ir.Refuse("column %s is %s, not a condition; compare it with a value", col.Name, col.Type)
		}
		return ir.Compare{Op: "=", Left: ir.Operand{Kind: ir.ColumnRef, Column: col.Name}, Right: ir.Operand{Kind: ir.Literal, Value: true}}, nil
	case n.GetAConst() != nil:
		if b, ok := n.GetAConst().Val.(*pg.A_Const_Boolval); ok {
			v := b.Boolval.Boolval
			return ir.Compare{Op: "=", Left: ir.Operand{Kind: ir.Literal, Value: v}, Right: ir.Operand{Kind: ir.Literal, Value: true}}, nil
		}
	case n.GetFuncCall() != nil && !having && funcName(n.GetFuncCall()) == "starts_with":
		f, err := p.textFn(n, 0)
		if err != nil {
			return nil, err
		}
		return ir.Compare{Op: "=", Left: ir.Operand{Kind: ir.Computed, Fn: f}, Right: ir.Operand{Kind: ir.Literal, Value: true}}, nil
	case n.GetFuncCall() != nil && !having:
		fc := n.GetFuncCall()
		if ir.IsAggregate(funcName(fc)) {
			return nil, ir.Refuse("aggregates are not allowed in WHERE; use HAVING to filter the noisy results")
		}
		return nil, ir.Refuse("function %s is not supported in WHERE; use comparisons, AND, OR, NOT, IN, BETWEEN and IS NULL", funcName(fc))
	}
	where := "WHERE"
	if having {
		where = "HAVING"
	}
	return nil, ir.Refuse("unsupported condition in %s; use comparisons, AND, OR, NOT, IN, BETWEEN and IS NULL over %s",
		where, map[bool]string{false: "columns and literals", true: "outputs and literals"}[having])
}

func (p *parser) aexpr(a *pg.A_Expr, having bool) (ir.Expr, error) {
	op := ""
	if len(a.Name) == 1 && a.Name[0].GetString_() != nil {
		op = a.Name[0].GetString_().Sval
	}
	switch a.Kind {
	case pg.A_Expr_Kind_AEXPR_OP:
		norm, ok := compareOps[op]
		if !ok {
			return nil, ir.Refuse("operator %s is not supported in conditions; use =, <>, <, <=, >, >=", op)
		}
		if !having {
			if e, ok, err := p.shiftedCompare(a, norm); ok {
				return e, err
			}
		}
		l, err := p.operand(a.Lexpr, having)
		if err != nil {
			return nil, err
		}
		r, err := p.operand(a.Rexpr, having)
		if err != nil {
			return nil, err
		}
		if l, r, err = p.temporalOperands(l, r); err != nil {
			return nil, err
		}
		if err := p.comparable(l, r); err != nil {
			return nil, err
		}
		if norm == "=" && !having {
			if err := p.inPublicList(l, r); err != nil {
				return nil, err
			}
		}
		return ir.Compare{Op: norm, Left: l, Right: r}, nil
	case pg.A_Expr_Kind_AEXPR_IN:
		arg, err := p.operand(a.Lexpr, having)
		if err != nil {
			return nil, err
		}
		list := a.Rexpr.GetList()
		if list == nil {
			return nil, ir.Refuse("IN takes a list of values")
		}
		in := ir.In{Arg: arg, Negate: op == "<>"}
		for _, item := range list.Items {
			v, err := p.operand(item, having)
			if err != nil {
				return nil, err
			}
			if v.Kind != ir.Literal {
				return nil, ir.Refuse("IN lists may hold only literal values")
			}
			if _, v, err = p.temporalOperands(arg, v); err != nil {
				return nil, err
			}
			if err := p.comparable(arg, v); err != nil {
				return nil, err
			}
			if !in.Negate && !having {
				if err := p.inPublicList(arg, v); err != nil {
					return nil, err
				}
			}
			in.Values = append(in.Values, v)
		}
		return in, nil
	case pg.A_Expr_Kind_AEXPR_BETWEEN, pg.A_Expr_Kind_AEXPR_NOT_BETWEEN:
		arg, err := p.operand(a.Lexpr, having)
		if err != nil {
			return nil, err
		}
		list := a.Rexpr.GetList()
		if list == nil || len(list.Items) != 2 {
			return nil, ir.Refuse("BETWEEN takes two bounds")
		}
		lo, err := p.operand(list.Items[0], having)
		if err != nil {
			return nil, err
		}
		hi, err := p.operand(list.Items[1], having)
		if err != nil {
			return nil, err
		}
		if _, lo, err = p.temporalOperands(arg, lo); err != nil {
			return nil, err
		}
		if _, hi, err = p.temporalOperands(arg, hi); err != nil {
			return nil, err
		}
		if err := p.comparable(arg, lo); err != nil {
			return nil, err
		}
		if err := p.comparable(arg, hi); err != nil {
			return nil, err
		}
		return ir.Between{Arg: arg, Low: lo, High: hi, Negate: a.Kind == pg.A_Expr_Kind_AEXPR_NOT_BETWEEN}, nil
	case pg.A_Expr_Kind_AEXPR_LIKE, pg.A_Expr_Kind_AEXPR_ILIKE:
		return p.like(a, op, having)
	case pg.A_Expr_Kind_AEXPR_SIMILAR:
		return nil, ir.Refuse("SIMILAR TO is not supported; use LIKE or ILIKE")
	}
	return nil, ir.Refuse("unsupported operator in a condition; use =, <>, <, <=, >, >=, IN, BETWEEN, IS NULL")
}

// containsAggregate reports whether an expression of the select list
// calls an aggregate function anywhere.
func containsAggregate(n *pg.Node) bool {
	if n == nil {
		return false
	}
	any := func(nodes []*pg.Node) bool {
		for _, x := range nodes {
			if containsAggregate(x) {
				return true
			}
		}
		return false
	}
	switch {
	case n.GetFuncCall() != nil:
		fc := n.GetFuncCall()
		return ir.IsAggregate(funcName(fc)) || any(fc.Args)
	case n.GetAExpr() != nil:
		return containsAggregate(n.GetAExpr().Lexpr) || containsAggregate(n.GetAExpr().Rexpr)
	case n.GetTypeCast() != nil:
		return containsAggregate(n.GetTypeCast().Arg)
	case n.GetMinMaxExpr() != nil:
		return any(n.GetMinMaxExpr().Args)
	case n.GetCoalesceExpr() != nil:
		return any(n.GetCoalesceExpr().Args)
	case n.GetCaseExpr() != nil:
		ce := n.GetCaseExpr()
		if containsAggregate(ce.Defresult) {
			return true
		}
		for _, a := range ce.Args {
			if w := a.GetCaseWhen(); w != nil && (containsAggregate(w.Expr) || containsAggregate(w.Result)) {
				return true
			}
		}
	}
	return false
}

// inPublicList refuses col = 'x' (or col IN (…, 'x', …)) where the text
// column has a public value list without x but with a value x nearly
// spells: the comparison can match no row, and is almost always a
// misspelling (sex = 'female' against Female, Male). The list is public,
// so the refusal is free and says nothing of the data; it names the
// closest listed value.
func (p *parser) inPublicList(a, b ir.Operand) error {
	if a.Kind != ir.ColumnRef {
		a, b = b, a
	}
	if a.Kind != ir.ColumnRef || b.Kind != ir.Literal {
		return nil
	}
	col := p.table.Column(a.Column)
	s, ok := b.Value.(string)
	if col == nil || col.Type != schema.Text || col.Values == nil || !ok {
		return nil
	}
	best, bestDist := "", -1
	for _, v := range col.Values {
		w, _ := v.(string)
		if w == s {
			return nil
		}
		if len(s) > 256 || len(w) > 256 {
			// Too long to be a misspelling worth the distance's cost.
			if strings.EqualFold(s, w) {
				best, bestDist = w, 0
			}
			continue
		}
		// Both strings are bounded: the SQL text's length and the
		// catalog's values.
		d := catalog.EditDistance(strings.ToLower(s), strings.ToLower(w))
		if bestDist < 0 || d < bestDist {
			best, bestDist = w, d
		}
	}
	// Only a near miss is refused: the same letters in another case, or a
	// few letters off. A literal like no listed value is answered (its
	// rows are simply none).
	if !strings.EqualFold(s, best) && bestDist > max(1, len([]rune(s))/4) {
		return nil
	}
	return ir.Refuse("%s = '%s' can match no row: '%s' is not in the public value list of %s (%s); did you mean '%s'?",
		col.Name, s, s, col.Name, formatList(col.Values, 8), best)
}

// formatList spells at most n values of a list.
func formatList(vs []any, n int) string {
	parts := make([]string, 0, n+1)
	for i, v := range vs {
		if i == n {
			parts = append(parts, fmt.Sprintf("… %d more", len(vs)-n))
			break
		}
		parts = append(parts, fmt.Sprint(v))
	}
	return strings.Join(parts, ", ")
}

// likeOps maps the grammar's LIKE operators to the model's.
var likeOps = map[string]string{"~~": "LIKE", "!~~": "NOT LIKE", "~~*": "ILIKE", "!~~*": "NOT ILIKE"}

// like parses col [NOT] LIKE|ILIKE 'pattern' over a text column. The
// pattern is a literal without backslashes (engines disagree on LIKE's
// default escape character); % and _ are its wildcards. A LIKE over a
// NULL is NULL, as any comparison: it never fails.
func (p *parser) like(a *pg.A_Expr, op string, having bool) (ir.Expr, error) {
	norm, ok := likeOps[op]
	if !ok || having {
		return nil, ir.Refuse("LIKE and ILIKE are supported in WHERE, CASE and FILTER conditions over text columns")
	}
	l, err := p.operand(a.Lexpr, false)
	if err != nil {
		return nil, err
	}
	r, err := p.operand(a.Rexpr, false)
	if err != nil {
		return nil, err
	}
	pat, isText := r.Value.(string)
	if (l.Kind != ir.ColumnRef && l.Kind != ir.Computed) || r.Kind != ir.Literal || !isText {
		return nil, ir.Refuse("write column LIKE 'pattern', with a text column (or a text function of one) and a literal pattern")
	}
	if l.Kind == ir.Computed && p.kindOf(l) != "text" {
		return nil, ir.Refuse("LIKE needs text; %s is %s", ir.OperandString(l, nil), p.kindOf(l))
	}
	if col := p.table.Column(l.Column); l.Kind == ir.ColumnRef && (col == nil || col.Type != schema.Text) {
		return nil, ir.Refuse("LIKE needs a text column; %s is not one", l.Column)
	}
	if strings.Contains(pat, "\\") {
		return nil, ir.Refuse("LIKE pattern %q: backslashes are not accepted (engines disagree on LIKE's escape character); use _ for any one character", pat)
	}
	return ir.Compare{Op: norm, Left: l, Right: r}, nil
}
