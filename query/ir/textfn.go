package ir

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"
)

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

// TextFuncs maps each text function to its argument count (-1: one or
// more) and its result's type family.
var TextFuncs = map[string]struct {
	Args int
	kind string
}{
	"lower": {1, "text"}, "upper": {1, "text"}, "length": {1, "number"}, "char_length": {1, "number"},
	"substr": {3, "text"}, "substring": {3, "text"}, "trim": {1, "text"}, "btrim": {1, "text"},
	"ltrim": {1, "text"}, "rtrim": {1, "text"}, "concat": {-1, "text"}, "starts_with": {2, "bool"},
	"||": {2, "text"},
}

// MaxTextDepth bounds the nesting of text functions.
const MaxTextDepth = 16

// ValueKind is the type family of the function's result.
func (f *TextFn) ValueKind() string {
	switch f.Func {
	case "column", "literal", "null":
		return "text"
	}
	return TextFuncs[f.Func].kind
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

// ASCIILower changes the ASCII letters of s to lower case, and no other
// character: lower as every engine computes it, and how ILIKE folds its
// pattern.
func ASCIILower(s string) string { return asciiLower(s) }

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

// MaxImageInputs is the most combinations of public input values whose
// image a GROUP BY expression's public values are computed from.
const MaxImageInputs = 100_000

// image computes the values the function can take over the public value
// lists of its columns in t (each also NULL): nil with ok false when a
// column has no public list. NULL results are left out (NULL is no key).
// The combinations were counted when the query was parsed (textBucket).
func (f *TextFn) image(t *Table) (vals []any, ok bool) {
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
			if id := KeyID([]any{v}); !seen[id] {
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
	sort.SliceStable(vals, func(i, j int) bool { return CompareValues(vals[i], vals[j]) < 0 })
	if vals == nil {
		vals = []any{}
	}
	return vals, true
}

// Combinations counts the assignments of public values (and NULL) of the
// function's columns, capped at MaxImageInputs + 1; -1 when a column has
// no public list.
func (f *TextFn) Combinations(t *Table) int64 {
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

// TextLength is length(Fn) inside an aggregate: a number whose bounds are
// the image's when the columns have public value lists (the value is then
// clamped to them), else [0, +Inf), which LEAST must clamp.
type TextLength struct{ Fn *TextFn }

func (TextLength) scalarNode() {}

// TextLengthRange is the span of length(f) over t.
func TextLengthRange(x TextLength, t *Table) Span {
	vals, ok := x.Fn.image(t)
	if !ok || x.Fn.Combinations(t) > MaxImageInputs || len(vals) == 0 {
		return Span{Lo: 0, Hi: math.Inf(1), IsInt: true, nullable: true}
	}
	out := Span{Lo: math.Inf(1), Hi: math.Inf(-1), IsInt: true, nullable: true}
	for _, v := range vals {
		f := float64(v.(int64))
		out.Lo, out.Hi = math.Min(out.Lo, f), math.Max(out.Hi, f)
	}
	return out
}
