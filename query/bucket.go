package query

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
)

// BucketKind says how a computed group key maps a row to a bin.
type BucketKind int

// The computed keys.
const (
	// WidthBucket is width_bucket(col, Lo, Hi, N): 0 below Lo, N+1 at or
	// above Hi, else 1 + floor((col − Lo)·N/(Hi − Lo)).
	WidthBucket BucketKind = iota
	// FloorBucket is floor(col / Width) * Width over a bounded column,
	// whose value is clamped to the declared bounds first.
	FloorBucket
	// CaseBucket is CASE WHEN cond THEN v … ELSE v END with literal values.
	CaseBucket
	// DateBucket is date_trunc(Field, Column) or EXTRACT(Field FROM
	// Column) over a date or timestamp column with declared bounds.
	DateBucket
	// TextBucket is a text function of text columns (lower(city),
	// substr(code, 1, 2), city || '/' || zone): public when every column
	// it reads has a public value list, else chosen by key selection.
	TextBucket
	// RangeBucket is a numeric expression of whole numbers whose derived
	// range [KLo, KHi] is bounded (LEAST(n, 10), age / 10 cast to int,
	// x % 7): its values are the integers of that range.
	RangeBucket
)

// Bucket is a computed group key whose possible values are public (they
// follow from the query and the declared bounds), so every bin is released,
// empty ones included, without key selection.
type Bucket struct {
	Kind   BucketKind
	Column string
	Lo, Hi float64
	N      int64
	Width  float64
	// KLo and KHi are the first and last bin numbers of a FloorBucket,
	// floor(lower / Width) and floor(upper / Width) over the declared
	// bounds, checked when the query is parsed: the key's values are
	// k·Width for k = KLo … KHi, at most MaxGroups of them.
	KLo, KHi int64
	// Whens and Thens are the CASE arms; Else is the ELSE value.
	Whens []Expr
	Thens []any
	Else  any
	// Field is a DateBucket's date_trunc unit or EXTRACT field, Trunc
	// says which, and Type is the column's type (date or timestamp).
	Field string
	Trunc bool
	Type  catalog.Type
	// Fn is a TextBucket's function.
	Fn *TextFn
	// Num is a RangeBucket's expression.
	Num Scalar
}

// Values lists every value the key can take, in order.
//
// Every bound was checked when the query was parsed (parser.bucket): the
// loops below run at most MaxGroups times.
func (b *Bucket) Values(t *catalog.Table) []any {
	switch b.Kind {
	case WidthBucket:
		out := make([]any, 0, b.N+2)
		for i := int64(0); i <= b.N+1; i++ {
			out = append(out, i)
		}
		return out
	case RangeBucket:
		out := make([]any, 0, b.KHi-b.KLo+1)
		for k := b.KLo; k <= b.KHi; k++ {
			out = append(out, k)
		}
		return out
	case FloorBucket:
		// The bin count was computed in integers when the query was
		// parsed, so this loop is bounded before it starts.
		out := make([]any, 0, b.KHi-b.KLo+1)
		for k := b.KLo; k <= b.KHi; k++ {
			out = append(out, canonicalFloat(float64(k)*b.Width))
		}
		return out
	case DateBucket:
		return b.dateValues(t)
	case TextBucket:
		vals, ok := b.Fn.image(t)
		if !ok {
			return nil
		}
		return vals
	}
	var out []any
	for _, v := range append(append([]any{}, b.Thens...), b.Else) {
		if v == nil {
			continue // no ELSE: NULL is no group
		}
		dup := false
		for _, w := range out {
			dup = dup || keyID([]any{w}) == keyID([]any{v})
		}
		if !dup {
			out = append(out, canonicalValue(v))
		}
	}
	return out
}

// keyValues returns the public values of group key g, or nil when it has
// none (key selection).
func (p *Plan) keyValues(g string) []any {
	if b := p.Query.Buckets[g]; b != nil {
		return b.Values(p.Table)
	}
	return p.Table.Column(g).Values
}

// keyExpr renders group key g as an engine expression.
func (g *sqlGen) keyExpr(k string) (string, error) {
	b := g.p.Query.Buckets[k]
	if b == nil {
		return g.colRef(k), nil
	}
	lit := func(v any) string {
		l, err := engine.Literal(g.d, v)
		if err != nil {
			return "NULL"
		}
		return l
	}
	switch b.Kind {
	case WidthBucket:
		// Total for every value the column can hold (docs/privacy.md,
		// "Totality"): the ELSE arm sees only lo <= col < hi, so col − lo
		// lies in [0, hi − lo], which the parser checked is finite; divided
		// by hi − lo it is at most 1, times N at most N. The bin is clamped
		// into [0, N−1] before the cast, so even a NaN (which DuckDB orders
		// above +Inf, and which the clean view reads as NULL) cannot make
		// the cast fail.
		col := g.colRef(b.Column)
		frac, err := engine.Divide(g.d, "("+col+" - "+lit(b.Lo)+")", b.Hi-b.Lo)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("CASE WHEN %s IS NULL THEN NULL WHEN %s < %s THEN 0 WHEN %s >= %s THEN %d ELSE CAST(least(greatest(floor(%s * %s), %s), %s) AS %s) + 1 END",
			col, col, lit(b.Lo), col, lit(b.Hi), b.N+1,
			frac, lit(float64(b.N)), lit(0.0), lit(float64(b.N-1)), g.d.TypeName(engine.Integer)), nil
	case FloorBucket:
		// Total: the value is clamped to the declared bounds first, so
		// value / w lies between lower / w and upper / w, which the parser
		// checked are finite (and their floors within ±2^52).
		c := g.p.Table.Column(b.Column)
		col := g.colRef(b.Column)
		// greatest and least skip NULLs, so NULL is kept NULL explicitly
		// (it then matches no bin).
		q, err := engine.Divide(g.d, g.clamp(col, lit(*c.Lower), lit(*c.Upper)), b.Width)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("CASE WHEN %s IS NULL THEN NULL ELSE floor(%s) * %s END", col, q, lit(b.Width)), nil
	case DateBucket:
		return g.dateSQL(b.Column, b.Field, b.Trunc)
	case TextBucket:
		return g.textKeySQL(b)
	case RangeBucket:
		// Whole numbers within ±2^53 (checked when parsed): the cast
		// cannot fail.
		e, err := g.scalarSQL(b.Num)
		if err != nil {
			return "", err
		}
		return "CAST(" + e + " AS " + g.d.TypeName(engine.Integer) + ")", nil
	}
	var s strings.Builder
	s.WriteString("CASE")
	for i, w := range b.Whens {
		cond, err := g.expr(w)
		if err != nil {
			return "", err
		}
		s.WriteString(" WHEN " + cond + " THEN " + lit(b.Thens[i]))
	}
	s.WriteString(" ELSE " + lit(b.Else) + " END")
	return s.String(), nil
}

// isBucketExpr reports whether a node looks like a computed key.
func isBucketExpr(n *pg.Node) bool {
	if n == nil {
		return false
	}
	if isTextFunc(n) {
		return true
	}
	if fc := n.GetFuncCall(); fc != nil {
		return funcName(fc) == "width_bucket" || isDateFunc(funcName(fc))
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
func (p *parser) bucket(n *pg.Node) (*Bucket, error) {
	numericCol := func(node *pg.Node, what string) (*catalog.Column, error) {
		cr := node.GetColumnRef()
		if cr == nil {
			return nil, refuse("%s takes a column as its first argument", what)
		}
		col, err := p.columnRef(cr)
		if err != nil {
			return nil, err
		}
		if col.Type != catalog.Int && col.Type != catalog.Float {
			return nil, refuse("%s over column %s (%s): want an int or float column", what, col.Name, col.Type)
		}
		return col, nil
	}
	if fc := n.GetFuncCall(); fc != nil && isDateFunc(funcName(fc)) {
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
			return nil, refuse("width_bucket takes (column, low, high, count)")
		}
		col, err := numericCol(fc.Args[0], "width_bucket")
		if err != nil {
			return nil, err
		}
		lo, ok1 := numberConst(fc.Args[1])
		hi, ok2 := numberConst(fc.Args[2])
		cnt, ok3 := numberConst(fc.Args[3])
		if !ok1 || !ok2 || !ok3 || !(lo < hi) || cnt != math.Trunc(cnt) || cnt < 1 || cnt > MaxGroups-2 {
			return nil, refuse("width_bucket(%s, low, high, count) needs literal numbers with low < high and a whole count from 1 to %d", col.Name, MaxGroups-2)
		}
		if math.IsInf(hi-lo, 0) {
			// The bin of a value is computed from (value − low) / (high −
			// low), which must be finite for every value in [low, high).
			return nil, refuse("width_bucket(%s, %g, %g, %g): high − low overflows a double; want low and high whose difference is a finite number (e.g. both within ±8.9e307)", col.Name, lo, hi, cnt)
		}
		return &Bucket{Kind: WidthBucket, Column: col.Name, Lo: lo, Hi: hi, N: int64(cnt)}, nil
	}
	if a := n.GetAExpr(); a != nil {
		// floor(col / w) * w
		form := "write floor(col / w) * w with the same literal width w > 0"
		fc := a.Lexpr.GetFuncCall()
		w, ok := numberConst(a.Rexpr)
		if fc == nil || funcName(fc) != "floor" || len(fc.Args) != 1 || !ok || !(w > 0) {
			return nil, refuse("unsupported GROUP BY expression: %s", form)
		}
		div := fc.Args[0].GetAExpr()
		if div == nil || opName(div) != "/" {
			return nil, refuse("unsupported GROUP BY expression: %s", form)
		}
		w2, ok := numberConst(div.Rexpr)
		if !ok || w2 != w {
			return nil, refuse("unsupported GROUP BY expression: %s", form)
		}
		col, err := numericCol(div.Lexpr, "floor(col / w) * w")
		if err != nil {
			return nil, err
		}
		if !col.Bounded() {
			return nil, refuse("floor(%s / w) * w needs declared bounds for %s, so that its bins are public: declare `lower:` and `upper:`", col.Name, col.Name)
		}
		return floorBucket(col, w)
	}
	ce := n.GetCaseExpr()
	if ce == nil {
		return nil, refuse("unsupported GROUP BY expression")
	}
	if ce.Arg != nil {
		return nil, refuse("CASE bins are written CASE WHEN condition THEN value … ELSE value END")
	}
	b := &Bucket{Kind: CaseBucket}
	kind := ""
	value := func(node *pg.Node) (any, error) {
		o, err := p.operand(node, false)
		if err != nil || o.Kind != Literal {
			return nil, refuse("CASE bins take literal values after THEN and ELSE")
		}
		k := p.kindOf(o)
		if kind != "" && k != kind {
			return nil, refuse("CASE bins mix %s and %s values; use one type", kind, k)
		}
		kind = k
		return o.Value, nil
	}
	for _, arm := range ce.Args {
		w := arm.GetCaseWhen()
		if w == nil {
			return nil, refuse("malformed CASE")
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
func (p *parser) addBucket(b *Bucket) (string, error) {
	if p.q.Buckets == nil {
		p.q.Buckets = map[string]*Bucket{}
	}
	for name, prev := range p.q.Buckets {
		if reflect.DeepEqual(prev, b) {
			return "", refuse("GROUP BY lists the expression %s twice", name)
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
	if b.Kind == TextBucket || b.Kind == DateBucket {
		return "", refuse("the select-list expression %s is not in GROUP BY; group by the same expression (or by its position or alias)", b)
	}
	return "", refuse("the select-list expression is not in GROUP BY; group by the same expression (or by its position or alias)")
}

// bucketKind is the type family of a computed key's values.
func (b *Bucket) kind() string {
	if b.Kind == DateBucket && b.Trunc {
		return string(b.Type)
	}
	if b.Kind == TextBucket {
		return b.Fn.kind()
	}
	if b.Kind != CaseBucket {
		return "number"
	}
	v := b.Else
	if v == nil && len(b.Thens) > 0 {
		v = b.Thens[0]
	}
	switch v.(type) {
	case string:
		return "text"
	case bool:
		return "bool"
	}
	return "number"
}

// maxBinNumber bounds the bin numbers floor(bound / w) of a FloorBucket:
// below 2^52, consecutive whole numbers are exact doubles and k·w moves
// with k.
const maxBinNumber = 1 << 52

// floorBucket checks floor(col / w) * w over the column's declared bounds
// and counts its bins in integer arithmetic, before anything loops over
// them: a width so small that a bound divided by it overflows, is NaN, or
// reaches 2^52 is refused, as is a bin count above MaxGroups.
func floorBucket(col *catalog.Column, w float64) (*Bucket, error) {
	lo, hi := *col.Lower, *col.Upper
	// The widest bins that stay within MaxGroups, for the message.
	minWidth := (hi - lo) / (MaxGroups - 1)
	tooMany := func(bins string) error {
		return refuse("floor(%s / %g) * %g gives %s bins over the declared range [%g, %g]; want at most %d: a width of at least %.3g",
			col.Name, w, w, bins, lo, hi, MaxGroups, minWidth)
	}
	kLo, kHi := math.Floor(lo/w), math.Floor(hi/w)
	if math.IsNaN(kLo) || math.IsNaN(kHi) || math.Abs(kLo) >= maxBinNumber || math.Abs(kHi) >= maxBinNumber {
		return nil, tooMany("too many")
	}
	b := &Bucket{Kind: FloorBucket, Column: col.Name, Width: w, KLo: int64(kLo), KHi: int64(kHi)}
	if n := b.KHi - b.KLo + 1; n > MaxGroups {
		return nil, tooMany(strconv.FormatInt(n, 10))
	}
	// Distinct bins must have distinct values k·w, or two groups would
	// share a key.
	prev := math.Inf(-1)
	for k := b.KLo; k <= b.KHi; k++ {
		v := float64(k) * w
		if !(v > prev) {
			return nil, refuse("floor(%s / %g) * %g: the width is too small for its bins to be told apart over the declared range [%g, %g]; want a width of at least %.3g",
				col.Name, w, w, lo, hi, math.Max(minWidth, math.Abs(math.Max(math.Abs(lo), math.Abs(hi)))*0x1p-40))
		}
		prev = v
	}
	return b, nil
}

// String spells the computed key as SQL, for messages.
func (b *Bucket) String() string {
	switch b.Kind {
	case WidthBucket:
		return fmt.Sprintf("width_bucket(%s, %g, %g, %d)", b.Column, b.Lo, b.Hi, b.N)
	case FloorBucket:
		return fmt.Sprintf("floor(%s / %g) * %g", b.Column, b.Width, b.Width)
	case DateBucket:
		return dateString(b.Field, b.Column, b.Trunc)
	case TextBucket:
		return b.Fn.String()
	case RangeBucket:
		return scalarString(b.Num)
	}
	return "CASE … END"
}

// keyNames spells the GROUP BY keys for messages: columns by name,
// computed keys as their expressions.
func (q *Query) keyNames() string {
	names := make([]string, len(q.GroupBy))
	for i, g := range q.GroupBy {
		names[i] = g
		if b := q.Buckets[g]; b != nil {
			names[i] = b.String()
		}
	}
	return strings.Join(names, ", ")
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
func (p *parser) rangeBucket(n *pg.Node) (*Bucket, error) {
	s, err := p.scalar(n)
	if err != nil {
		return nil, err
	}
	sp, err := scalarRange(s, p.table)
	if err != nil {
		return nil, err
	}
	text := scalarString(s)
	if !sp.isInt {
		return nil, refuse("GROUP BY %s: its values are not whole numbers, so they have no public list; group by floor(x / w) * w, width_bucket(x, low, high, n) or CAST(… AS int)", text)
	}
	if math.IsNaN(sp.lo) {
		return nil, refuse("GROUP BY %s: the expression is always NULL", text)
	}
	if count := sp.hi - sp.lo + 1; count > MaxGroups {
		return nil, refuse("GROUP BY %s: its range [%g, %g] holds %g values; want at most %d groups: clamp it with LEAST/GREATEST", text, sp.lo, sp.hi, count, MaxGroups)
	}
	return &Bucket{Kind: RangeBucket, Num: s, KLo: int64(sp.lo), KHi: int64(sp.hi)}, nil
}
