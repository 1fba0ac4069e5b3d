package query

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
)

// Text functions: lower, upper, length, substr (substring), trim, ltrim,
// rtrim, concat, || and starts_with over text columns and literals. They
// may stand in WHERE, CASE and FILTER conditions (lower(city) = 'paris'),
// in GROUP BY (GROUP BY lower(city)), and length inside aggregates.
//
// Each is spelled for the engines in SQL that every engine evaluates the
// same way and that no value can make fail: lower and upper change the
// ASCII letters only (translate), as PostgreSQL does under the "C"
// collation dpstat reads text with; trim removes spaces; substr takes a
// literal start ≥ 1 and length ≥ 0; NULL gives NULL (concat skips it, as
// SQL's concat does). Go evaluates them the same way (TextFn.eval), which
// gives a GROUP BY key over columns with public value lists its public
// image: the key's values over every combination of its inputs' listed
// values (and NULL), computed before any data is read.

// TextFn is a text function of the project stage, or one of its inputs (a
// column, a literal).
type TextFn struct {
	// Func is "column", "literal", "null", or the function: lower, upper,
	// length, substr, trim, ltrim, rtrim, concat, "||", starts_with.
	Func string
	// Column names the column read (Func "column").
	Column string
	// Value is the literal (Func "literal").
	Value string
	// Args are the function's text arguments.
	Args []*TextFn
	// From and For are substr's literal start (≥ 1) and length (≥ 0).
	From, For int64
}

// textFuncs maps each text function to its argument count (-1: one or
// more) and its result's type family.
var textFuncs = map[string]struct {
	args int
	kind string
}{
	"lower": {1, "text"}, "upper": {1, "text"}, "length": {1, "number"}, "char_length": {1, "number"},
	"substr": {3, "text"}, "substring": {3, "text"}, "trim": {1, "text"}, "btrim": {1, "text"},
	"ltrim": {1, "text"}, "rtrim": {1, "text"}, "concat": {-1, "text"}, "starts_with": {2, "bool"},
	"||": {2, "text"},
}

// isTextFunc reports whether a node is a text function call or a ||.
func isTextFunc(n *pg.Node) bool {
	if n == nil {
		return false
	}
	if fc := n.GetFuncCall(); fc != nil {
		_, ok := textFuncs[funcName(fc)]
		return ok
	}
	if a := n.GetAExpr(); a != nil {
		return a.Kind == pg.A_Expr_Kind_AEXPR_OP && opName(a) == "||"
	}
	return false
}

// maxTextDepth bounds the nesting of text functions.
const maxTextDepth = 16

// textFn parses a text function, a text column or a string literal.
func (p *parser) textFn(n *pg.Node, depth int) (*TextFn, error) {
	if depth > maxTextDepth {
		return nil, refuse("text functions nested too deeply: want at most %d levels", maxTextDepth)
	}
	if n == nil {
		return nil, refuse("missing argument of a text function")
	}
	if c := n.GetAConst(); c != nil && c.Isnull {
		return &TextFn{Func: "null"}, nil
	}
	if c := n.GetAConst(); c != nil {
		o, err := constOperand(c)
		if err != nil {
			return nil, err
		}
		s, ok := o.Value.(string)
		if !ok {
			return nil, refuse("text functions take text columns and string literals, got %s", p.describe(o))
		}
		return &TextFn{Func: "literal", Value: s}, nil
	}
	if cr := n.GetColumnRef(); cr != nil {
		col, err := p.columnRef(cr)
		if err != nil {
			return nil, err
		}
		if col.Type != catalog.Text {
			return nil, refuse("column %s is %s: text functions take text columns (and string literals)", col.Name, col.Type)
		}
		return &TextFn{Func: "column", Column: col.Name}, nil
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
		return &TextFn{Func: "||", Args: []*TextFn{l, r}}, nil
	}
	fc := n.GetFuncCall()
	if fc == nil {
		return nil, refuse("text functions take text columns, string literals and text functions (lower, upper, substr, trim, ltrim, rtrim, concat, ||)")
	}
	name := funcName(fc)
	spec, ok := textFuncs[name]
	if !ok || fc.AggStar || fc.Over != nil || fc.AggFilter != nil || fc.AggDistinct || len(fc.AggOrder) > 0 {
		return nil, refuse("function %s is not a text function dpstat computes; use lower, upper, length, substr, trim, ltrim, rtrim, concat, || or starts_with", name)
	}
	switch name {
	case "char_length":
		name = "length"
	case "substring":
		name = "substr"
	case "btrim":
		name = "trim"
	}
	if (spec.args > 0 && len(fc.Args) != spec.args && !(name == "substr" && len(fc.Args) == 2)) || len(fc.Args) == 0 {
		want := strconv.Itoa(spec.args)
		if name == "substr" {
			want = "2 or 3"
		}
		return nil, refuse("%s takes %s arguments, got %d", strings.ToUpper(name), want, len(fc.Args))
	}
	if len(fc.Args) > 64 {
		return nil, refuse("%s takes at most 64 arguments, got %d", strings.ToUpper(name), len(fc.Args))
	}
	f := &TextFn{Func: name}
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
			return nil, refuse("SUBSTR(text, start, length) takes a literal start from 1 and a literal length from 0 (engines disagree on other values)")
		}
		f.From, f.Args = from, []*TextFn{arg}
		return f, nil
	}
	if name == "starts_with" {
		if fc.Args[1].GetAConst() == nil {
			return nil, refuse("STARTS_WITH(text, prefix) takes a literal prefix")
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
func (p *parser) textArg(n *pg.Node, depth int) (*TextFn, error) {
	f, err := p.textFn(n, depth+1)
	if err != nil {
		return nil, err
	}
	if k := f.kind(); k != "text" {
		return nil, refuse("%s is %s, not text: text functions take text arguments", f, k)
	}
	return f, nil
}

// intConst reads an integer literal.
func intConst(n *pg.Node) (int64, bool) {
	f, ok := numberConst(n)
	if !ok || f != math.Trunc(f) || math.Abs(f) > maxExact {
		return 0, false
	}
	return int64(f), true
}

// kind is the type family of the function's result.
func (f *TextFn) kind() string {
	switch f.Func {
	case "column", "literal", "null":
		return "text"
	}
	return textFuncs[f.Func].kind
}

// String spells the function as SQL.
func (f *TextFn) String() string {
	switch f.Func {
	case "column":
		return f.Column
	case "literal":
		return "'" + strings.ReplaceAll(f.Value, "'", "''") + "'"
	case "null":
		return "NULL"
	case "||":
		return f.Args[0].String() + " || " + f.Args[1].String()
	case "substr":
		if f.For < 0 {
			return fmt.Sprintf("substr(%s, %d)", f.Args[0], f.From)
		}
		return fmt.Sprintf("substr(%s, %d, %d)", f.Args[0], f.From, f.For)
	}
	parts := make([]string, len(f.Args))
	for i, a := range f.Args {
		parts[i] = a.String()
	}
	return f.Func + "(" + strings.Join(parts, ", ") + ")"
}

// columns lists the columns the function reads, each once.
func (f *TextFn) columns() []string {
	var out []string
	var walk func(*TextFn)
	walk = func(x *TextFn) {
		if x.Func == "column" {
			for _, c := range out {
				if c == x.Column {
					return
				}
			}
			out = append(out, x.Column)
		}
		for _, a := range x.Args {
			walk(a)
		}
	}
	walk(f)
	return out
}

// asciiLower and asciiUpper change the ASCII letters only, as the SQL
// that TextFn renders does.
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

func asciiUpper(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}, s)
}

// eval computes the function for one assignment of its columns (a value
// is a string, or nil for NULL) as the engines do: string, int64 (length),
// bool (starts_with), or nil.
func (f *TextFn) eval(row map[string]any) any {
	switch f.Func {
	case "column":
		return row[f.Column]
	case "literal":
		return f.Value
	case "null":
		return nil
	case "concat":
		var b strings.Builder
		for _, a := range f.Args {
			if s, ok := a.eval(row).(string); ok {
				b.WriteString(s)
			}
		}
		return b.String()
	}
	args := make([]string, len(f.Args))
	for i, a := range f.Args {
		s, ok := a.eval(row).(string)
		if !ok {
			return nil // NULL in, NULL out
		}
		args[i] = s
	}
	s := args[0]
	switch f.Func {
	case "lower":
		return asciiLower(s)
	case "upper":
		return asciiUpper(s)
	case "length":
		return int64(utf8.RuneCountInString(s))
	case "trim":
		return strings.Trim(s, " ")
	case "ltrim":
		return strings.TrimLeft(s, " ")
	case "rtrim":
		return strings.TrimRight(s, " ")
	case "||":
		return s + args[1]
	case "starts_with":
		return strings.HasPrefix(s, args[1])
	case "substr":
		r := []rune(s)
		from := min(f.From-1, int64(len(r)))
		to := int64(len(r))
		if f.For >= 0 {
			to = min(to, from+f.For)
		}
		return string(r[from:to])
	}
	return nil
}

// textSQL renders the function for the engine.
func (g *sqlGen) textSQL(f *TextFn) (string, error) {
	switch f.Func {
	case "column":
		return g.colRef(f.Column), nil
	case "literal":
		return engine.Literal(g.d, f.Value)
	case "null":
		return "CAST(NULL AS " + g.d.TypeName(engine.Text) + ")", nil
	}
	args := make([]string, len(f.Args))
	for i, a := range f.Args {
		s, err := g.textSQL(a)
		if err != nil {
			return "", err
		}
		args[i] = s
	}
	if f.Func == "substr" {
		args = append(args, strconv.FormatInt(f.From, 10))
		if f.For >= 0 {
			args = append(args, strconv.FormatInt(f.For, 10))
		}
	}
	if sql, ok := engine.TextFunc(g.d, f.Func, args); ok {
		return sql, nil
	}
	return "", fmt.Errorf("query: unknown text function %s", f.Func)
}

// MaxImageInputs is the most combinations of public input values whose
// image a GROUP BY expression's public values are computed from.
const MaxImageInputs = 100_000

// image computes the values the function can take over the public value
// lists of its columns in t (each also NULL): nil with ok false when a
// column has no public list. NULL results are left out (NULL is no key).
// The combinations were counted when the query was parsed (textBucket).
func (f *TextFn) image(t *catalog.Table) (vals []any, ok bool) {
	cols := f.columns()
	lists := make([][]any, len(cols))
	for i, name := range cols {
		c := t.Column(name)
		if c == nil || c.Values == nil {
			return nil, false
		}
		lists[i] = append(append([]any{}, c.Values...), nil)
	}
	seen := map[string]bool{}
	row := map[string]any{}
	var walk func(i int)
	walk = func(i int) {
		if i == len(cols) {
			v := f.eval(row)
			if v == nil {
				return
			}
			if id := keyID([]any{v}); !seen[id] {
				seen[id] = true
				vals = append(vals, v)
			}
			return
		}
		for _, v := range lists[i] {
			row[cols[i]] = v
			walk(i + 1)
		}
	}
	walk(0)
	sort.SliceStable(vals, func(i, j int) bool { return compareValues(vals[i], vals[j]) < 0 })
	if vals == nil {
		vals = []any{}
	}
	return vals, true
}

// combinations counts the assignments of public values (and NULL) of the
// function's columns, capped at MaxImageInputs + 1; -1 when a column has
// no public list.
func (f *TextFn) combinations(t *catalog.Table) int64 {
	n := int64(1)
	for _, name := range f.columns() {
		c := t.Column(name)
		if c == nil || c.Values == nil {
			return -1
		}
		n *= int64(len(c.Values)) + 1
		if n > MaxImageInputs {
			return MaxImageInputs + 1
		}
	}
	return n
}

// textBucket parses a text function as a GROUP BY key: its values are
// public when every column it reads has a public value list (the image,
// computed here and bounded); otherwise key selection chooses them.
func (p *parser) textBucket(n *pg.Node) (*Bucket, error) {
	f, err := p.textFn(n, 0)
	if err != nil {
		return nil, err
	}
	if n := f.combinations(p.table); n > MaxImageInputs {
		return nil, refuse("GROUP BY %s: its columns' public value lists have more than %d combinations to compute its values from; group by fewer or shorter-listed columns", f, MaxImageInputs)
	}
	return &Bucket{Kind: TextBucket, Fn: f}, nil
}

// textKeySQL renders a text key: with a public image, a value outside it
// (a value of the data that no listed value gives) is NULL, so that the
// engine returns only the plan's groups.
func (g *sqlGen) textKeySQL(b *Bucket) (string, error) {
	e, err := g.textSQL(b.Fn)
	if err != nil {
		return "", err
	}
	vals := b.Values(g.p.Table)
	if vals == nil {
		return e, nil
	}
	if len(vals) == 0 {
		return "CAST(NULL AS " + g.d.TypeName(map[string]engine.Type{"text": engine.Text, "number": engine.Integer, "bool": engine.Boolean}[b.Fn.kind()]) + ")", nil
	}
	lits := make([]string, len(vals))
	for i, v := range vals {
		l, err := engine.Literal(g.d, v)
		if err != nil {
			return "", err
		}
		lits[i] = l
	}
	return "CASE WHEN " + e + " IN (" + strings.Join(lits, ", ") + ") THEN " + e + " END", nil
}

// TextLength is length(Fn) inside an aggregate: a number whose bounds are
// the image's when the columns have public value lists (the value is then
// clamped to them), else [0, +Inf), which LEAST must clamp.
type TextLength struct{ Fn *TextFn }

func (TextLength) scalarNode() {}

// textLengthRange is the span of length(f) over t.
func textLengthRange(x TextLength, t *catalog.Table) span {
	vals, ok := x.Fn.image(t)
	if !ok || x.Fn.combinations(t) > MaxImageInputs || len(vals) == 0 {
		return span{lo: 0, hi: math.Inf(1), isInt: true, nullable: true}
	}
	out := span{lo: math.Inf(1), hi: math.Inf(-1), isInt: true, nullable: true}
	for _, v := range vals {
		f := float64(v.(int64))
		out.lo, out.hi = math.Min(out.lo, f), math.Max(out.hi, f)
	}
	return out
}

// textLengthSQL renders length(f) as a double, clamped to its bounds.
func (g *sqlGen) textLengthSQL(x TextLength) (string, error) {
	e, err := g.textSQL(x.Fn)
	if err != nil {
		return "", err
	}
	dbl := g.d.TypeName(engine.Double)
	e = "CAST(" + e + " AS " + dbl + ")"
	sp := textLengthRange(x, g.p.Table)
	if math.IsInf(sp.hi, 1) {
		return e, nil
	}
	return fmt.Sprintf("CASE WHEN %s IS NULL THEN NULL ELSE least(greatest(%s, CAST(%g AS %s)), CAST(%g AS %s)) END", e, e, sp.lo, dbl, sp.hi, dbl), nil
}
