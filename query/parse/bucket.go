package parse

import (
	"fmt"
	"math"
	"reflect"
	"strconv"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// isBucketExpr reports whether a node looks like a computed key.
func isBucketExpr(n *pg.Node) bool {
	if n == nil {
		return false
	}
	if isTextFunc(n) {
		return true
	}
	if fc := n.GetFuncCall(); fc != nil {
		return funcName(fc) == "width_bucket" || ir.IsDateFunc(funcName(fc))
	}
	if a := n.GetAExpr(); a != nil && a.Kind == pg.A_Expr_Kind_AEXPR_OP && opName(a) == "*" {
		return true
	}
	return n.GetCaseExpr() != nil || isNumericExpr(n)
}

func opName(a *pg.A_Expr) string {
	if len(a.Name) == 1 && a.Name[0].GetString_() != nil {
		return a.Name[0].GetString_().Sval
	}
	return ""
}

// numberConst reads a numeric literal.
func numberConst(n *pg.Node) (float64, bool) {
	if n == nil {
		return 0, false
	}
	if c := n.GetAConst(); c != nil && !c.Isnull {
		switch v := c.Val.(type) {
		case *pg.A_Const_Ival:
			return float64(v.Ival.Ival), true
		case *pg.A_Const_Fval:
			f, err := strconv.ParseFloat(v.Fval.Fval, 64)
			return f, err == nil && !math.IsInf(f, 0)
		}
	}
	if a := n.GetAExpr(); a != nil && a.Lexpr == nil && opName(a) == "-" {
		f, ok := numberConst(a.Rexpr)
		return -f, ok
	}
	return 0, false
}

// bucket parses a computed key: width_bucket(col, lo, hi, n),
// floor(col / w) * w, or CASE WHEN … THEN literal … ELSE literal END.
func (p *parser) bucket(n *pg.Node) (*ir.Bucket, error) {
	numericCol := func(node *pg.Node, what string) (*ir.Column, error) {
		cr := node.GetColumnRef()
		if cr == nil {
			return nil, ir.Refuse("%s takes a column as its first argument", what)
		}
		col, err := p.columnRef(cr)
		if err != nil {
			return nil, err
		}
		if col.Type != schema.Int && col.Type != schema.Float {
			return nil, ir.Refuse("%s over column %s (%s): want an int or float column", what, col.Name, col.Type)
		}
		return col, nil
	}
	if fc := n.GetFuncCall(); fc != nil && ir.IsDateFunc(funcName(fc)) {
		return p.dateBucket(fc)
	}
	if isTextFunc(n) {
		return p.textBucket(n)
	}
	if n.GetCaseExpr() == nil && isNumericExpr(n) && !isFloorBins(n) {
		return p.rangeBucket(n)
	}
	if fc := n.GetFuncCall(); fc != nil {
		if len(fc.Args) != 4 {
			return nil, ir.Refuse("width_bucket takes (column, low, high, count)")
		}
		col, err := numericCol(fc.Args[0], "width_bucket")
		if err != nil {
			return nil, err
		}
		lo, ok1 := numberConst(fc.Args[1])
		hi, ok2 := numberConst(fc.Args[2])
		cnt, ok3 := numberConst(fc.Args[3])
		if !ok1 || !ok2 || !ok3 || !(lo < hi) || cnt != math.Trunc(cnt) || cnt < 1 || cnt > ir.MaxGroups-2 {
			return nil, ir.Refuse("width_bucket(%s, low, high, count) needs literal numbers with low < high and a whole count from 1 to %d", col.Name, ir.MaxGroups-2)
		}
		if math.IsInf(hi-lo, 0) {
			// The bin of a value is computed from (value − low) / (high −
			// low), which must be finite for every value in [low, high).
			return nil, ir.Refuse("width_bucket(%s, %g, %g, %g): high − low overflows a double; want low and high whose difference is a finite number (e.g. both within ±8.9e307)", col.Name, lo, hi, cnt)
		}
		return &ir.Bucket{Kind: ir.WidthBucket, Column: col.Name, Lo: lo, Hi: hi, N: int64(cnt)}, nil
	}
	if a := n.GetAExpr(); a != nil {
		// floor(col / w) * w
		form := "write floor(col / w) * w with the same literal width w > 0"
		fc := a.Lexpr.GetFuncCall()
		w, ok := numberConst(a.Rexpr)
		if fc == nil || funcName(fc) != "floor" || len(fc.Args) != 1 || !ok || !(w > 0) {
			return nil, ir.Refuse("unsupported GROUP BY expression: %s", form)
		}
		div := fc.Args[0].GetAExpr()
		if div == nil || opName(div) != "/" {
			return nil, ir.Refuse("unsupported GROUP BY expression: %s", form)
		}
		w2, ok := numberConst(div.Rexpr)
		if !ok || w2 != w {
			return nil, ir.Refuse("unsupported GROUP BY expression: %s", form)
		}
		col, err := numericCol(div.Lexpr, "floor(col / w) * w")
		if err != nil {
			return nil, err
		}
		if !col.Bounded() {
			return nil, ir.Refuse("floor(%s / w) * w needs declared bounds for %s, so that its bins are public: declare `lower:` and `upper:`", col.Name, col.Name)
		}
		return ir.NewFloorBucket(col, w)
	}
	ce := n.GetCaseExpr()
	if ce == nil {
		return nil, ir.Refuse("unsupported GROUP BY expression")
	}
	if ce.Arg != nil {
		return nil, ir.Refuse("CASE bins are written CASE WHEN condition THEN value … ELSE value END")
	}
	b := &ir.Bucket{Kind: ir.CaseBucket}
	kind := ""
	value := func(node *pg.Node) (any, error) {
		o, err := p.operand(node, false)
		if err != nil || o.Kind != ir.Literal {
			return nil, ir.Refuse("CASE bins take literal values after THEN and ELSE")
		}
		k := p.kindOf(o)
		if kind != "" && k != kind {
			return nil, ir.Refuse("CASE bins mix %s and %s values; use one type", kind, k)
		}
		kind = k
		return o.Value, nil
	}
	for _, arm := range ce.Args {
		w := arm.GetCaseWhen()
		if w == nil {
			return nil, ir.Refuse("malformed CASE")
		}
		cond, err := p.expr(w.Expr, false)
		if err != nil {
			return nil, err
		}
		v, err := value(w.Result)
		if err != nil {
			return nil, err
		}
		b.Whens = append(b.Whens, cond)
		b.Thens = append(b.Thens, v)
	}
	if ce.Defresult != nil {
		// Without ELSE, a row no arm takes has the key NULL, which is no
		// group.
		v, err := value(ce.Defresult)
		if err != nil {
			return nil, err
		}
		b.Else = v
	}
	// Mixed int and float literals are all floats, as the engine's CASE
	// result is.
	anyFloat := false
	for _, t := range append(append([]any{}, b.Thens...), b.Else) {
		_, f := t.(float64)
		anyFloat = anyFloat || f
	}
	if anyFloat {
		toF := func(v any) any {
			if i, ok := v.(int64); ok {
				return float64(i)
			}
			return v
		}
		for i := range b.Thens {
			b.Thens[i] = toF(b.Thens[i])
		}
		b.Else = toF(b.Else)
	}
	return b, nil
}

// addBucket registers a computed GROUP BY key and returns its key name.
func (p *parser) addBucket(b *ir.Bucket) (string, error) {
	if p.q.Buckets == nil {
		p.q.Buckets = map[string]*ir.Bucket{}
	}
	for name, prev := range p.q.Buckets {
		if reflect.DeepEqual(prev, b) {
			return "", ir.Refuse("GROUP BY lists the expression %s twice", name)
		}
	}
	name := fmt.Sprintf("#bin%d", len(p.q.Buckets)+1)
	p.q.Buckets[name] = b
	return name, nil
}

// bucketOutput matches a select-list expression with a computed GROUP BY
// key.
func (p *parser) bucketOutput(n *pg.Node) (string, error) {
	b, err := p.bucket(n)
	if err != nil {
		return "", err
	}
	for name, prev := range p.q.Buckets {
		if reflect.DeepEqual(prev, b) {
			return name, nil
		}
	}
	if b.Kind == ir.TextBucket || b.Kind == ir.DateBucket {
		return "", ir.Refuse("the select-list expression %s is not in GROUP BY; group by the same expression (or by its position or alias)", b)
	}
	return "", ir.Refuse("the select-list expression is not in GROUP BY; group by the same expression (or by its position or alias)")
}

// isFloorBins reports whether n is written floor(x / w) * w, the floor
// bins (FloorBucket) rather than a RangeBucket.
func isFloorBins(n *pg.Node) bool {
	a := n.GetAExpr()
	if a == nil || opName(a) != "*" {
		return false
	}
	fc := a.Lexpr.GetFuncCall()
	return fc != nil && funcName(fc) == "floor" && len(fc.Args) == 1 && fc.Args[0].GetAExpr() != nil && opName(fc.Args[0].GetAExpr()) == "/"
}

// rangeBucket reads a GROUP BY numeric expression of whole numbers whose
// range, derived by interval arithmetic from the declared bounds, holds at
// most MaxGroups integers: those integers are its public keys.
func (p *parser) rangeBucket(n *pg.Node) (*ir.Bucket, error) {
	s, err := p.scalar(n)
	if err != nil {
		return nil, err
	}
	sp, err := ir.ScalarRange(s, p.table)
	if err != nil {
		return nil, err
	}
	text := ir.ScalarString(s)
	if !sp.IsInt {
		return nil, ir.Refuse("GROUP BY %s: its values are not whole numbers, so they have no public list; group by floor(x / w) * w, width_bucket(x, low, high, n) or CAST(… AS int)", text)
	}
	if math.IsNaN(sp.Lo) {
		return nil, ir.Refuse("GROUP BY %s: the expression is always NULL", text)
	}
	if count := math.Ceil(sp.Hi) - math.Floor(sp.Lo) + 1; count > ir.MaxGroups {
		return nil, ir.Refuse("GROUP BY %s: its range [%g, %g] holds %g values; want at most %d groups: clamp it with LEAST/GREATEST", text, sp.Lo, sp.Hi, count, ir.MaxGroups)
	}
	// The bounds of whole numbers are whole; floor and ceil keep the key
	// range around every value whatever rounding gave them.
	return &ir.Bucket{Kind: ir.RangeBucket, Num: s, KLo: int64(math.Floor(sp.Lo)), KHi: int64(math.Ceil(sp.Hi))}, nil
}
