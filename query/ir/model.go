package ir

import (
	"fmt"
	"strings"

	"github.com/dpstat/dpstat/schema"
)

// Aggregate is one aggregate in the select list.
type Aggregate struct {
	Func AggFunc
	// Column is the catalog's name of the aggregated column; empty for
	// COUNT(*).
	Column string
	// Q is the quantile's fraction in [0, 1] (Quantile only).
	Q float64
	// Extreme is -1 for MIN and +1 for MAX, released as quantiles of a
	// low or high rank (Quantile only; see Plan.extremeRank).
	Extreme int
	// Expr spells the aggregated expression when Column is a derived
	// column (Query.Derived).
	Expr string
}

// String renders the aggregate as SQL, e.g. "AVG(hours_per_week)".
func (a Aggregate) String() string {
	arg := a.Column
	if a.Expr != "" {
		arg = a.Expr
	}
	switch {
	case a.Func == Quantile && a.Extreme < 0:
		return "MIN(" + arg + ")"
	case a.Func == Quantile && a.Extreme > 0:
		return "MAX(" + arg + ")"
	}
	switch a.Func {
	case CountStar:
		return "COUNT(*)"
	case CountDistinct:
		return "COUNT(DISTINCT " + a.Column + ")"
	case Quantile:
		return fmt.Sprintf("PERCENTILE_CONT(%g) WITHIN GROUP (ORDER BY %s)", a.Q, arg)
	}
	return a.Func.String() + "(" + arg + ")"
}

// Output is one column of the answer: a group key or an aggregate.
type Output struct {
	// Name is the alias, or a name derived from the expression.
	Name string
	// Key is the grouped column this output shows; empty for aggregates.
	Key string
	// Agg is the aggregate this output computes; nil for keys.
	Agg *Aggregate
	// Post is the expression a computed output evaluates on other
	// outputs' released values (see post.go); nil otherwise.
	Post Scalar
	// Hidden marks an aggregate that only a computed output reads: it is
	// planned, charged and released to the expression, but not shown.
	Hidden bool
}

// IsKey reports whether the output is a group key.
func (o Output) IsKey() bool { return o.Agg == nil && o.Post == nil }

// Query is a checked aggregate query over one catalog table.
type Query struct {
	// Table is the catalog's name of the queried table.
	Table string
	// Base is the queried table as the parser bound it (parse.Bind): the
	// table of FROM, the private table of a join, the table under a
	// per-person pre-aggregation. The stages read its facts (privacy
	// unit, contribution bounds, epochs) and Relation's columns; they
	// never read the catalog.
	Base *Table
	// Outputs is the select list.
	Outputs []Output
	// GroupBy lists the grouped columns (catalog names), each with a public
	// value list.
	GroupBy []string
	// TopK, when positive, asks for the TopK most common keys: the query
	// was GROUP BY … ORDER BY COUNT(*) DESC LIMIT TopK with only keys and
	// COUNT(*) in the select list.
	TopK int64
	// Buckets maps the GroupBy names of computed keys (width_bucket,
	// floor(col / w) * w, CASE bins) to their definitions.
	Buckets map[string]*Bucket
	// Derived maps the names of derived columns ("#e1", …), the
	// aggregated expressions of the project stage, to their definitions.
	Derived map[string]*Derived
	// Joins lists the public tables joined to the private one; Relation is
	// then the joined relation's columns (public ones named
	// "alias.column", one set per occurrence: see QualifiedName), and
	// JoinRows the most rows one private row becomes.
	Joins    []Join
	Relation *Table
	JoinRows int64
	// Pre is the per-person pre-aggregation the query reads instead of a
	// table (Relation is then its relation), or nil.
	Pre *PreAggregate
	// Where is the row predicate, or nil.
	Where Expr
	// Having filters the noisy answer rows, or nil. Its operands are
	// outputs and literals.
	Having Expr
	// OrderBy sorts the noisy answer rows.
	OrderBy []OrderTerm
	// Limit is the maximum number of answer rows, or -1 for no limit.
	Limit int64
	// Offset is the number of answer rows skipped.
	Offset int64
	// Text is the query as the parser normalizes it, for the ledger.
	Text string
}

// Aggregates returns the aggregates of the select list in order.
func (q *Query) Aggregates() []Aggregate {
	var out []Aggregate
	for _, o := range q.Outputs {
		if o.Agg != nil {
			out = append(out, *o.Agg)
		}
	}
	return out
}

// OrderTerm sorts by one output.
type OrderTerm struct {
	// Output indexes Query.Outputs.
	Output int
	Desc   bool
}

// Expr is a boolean expression of the query model: a row predicate in
// WHERE (operands are columns and literals) or an answer filter in HAVING
// (operands are outputs and literals).
type Expr interface {
	exprNode()
}

// OperandKind says what an Operand refers to.
type OperandKind int

// The operand kinds.
const (
	// Literal is a constant: int64, float64, string or bool.
	Literal OperandKind = iota
	// ColumnRef is a column of the queried table (WHERE only).
	ColumnRef
	// OutputRef is an output of the query (HAVING only).
	OutputRef
	// Computed is a text function (Fn), a date function (Part) or a
	// numeric expression (Num) of a row's columns (WHERE only).
	Computed
)

// Operand is a leaf of an expression.
type Operand struct {
	Kind OperandKind
	// Value is the literal: int64, float64, string or bool.
	Value any
	// Column is the catalog column name for ColumnRef.
	Column string
	// Output indexes Query.Outputs for OutputRef.
	Output int
	// Type marks a date or timestamp literal (schema.Date or
	// schema.Timestamp): Value is then its int64 days or microseconds
	// since 1970-01-01, or, before it is checked against the column it is
	// compared with, the text of DATE '…'. Empty for other literals.
	Type schema.Type
	// Fn is the text function of a Computed operand.
	Fn *TextFn
	// Part is the date function of a Computed operand.
	Part *DatePart
	// Num is the numeric expression of a Computed operand: arithmetic
	// over the row's values, clamped to their bounds as in an aggregate.
	Num Scalar
}

// Compare is Left Op Right with Op one of =, <>, <, <=, >, >=.
type Compare struct {
	Op          string
	Left, Right Operand
}

// And is the conjunction of its arguments.
type And struct{ Args []Expr }

// Or is the disjunction of its arguments.
type Or struct{ Args []Expr }

// Not negates its argument.
type Not struct{ Arg Expr }

// In is Arg [NOT] IN (Values...).
type In struct {
	Arg    Operand
	Values []Operand
	Negate bool
}

// IsNull is Arg IS [NOT] NULL.
type IsNull struct {
	Arg    Operand
	Negate bool
}

// Between is Arg [NOT] BETWEEN Low AND High.
type Between struct {
	Arg, Low, High Operand
	Negate         bool
}

func (Compare) exprNode() {}

func (And) exprNode() {}

func (Or) exprNode() {}

func (Not) exprNode() {}

func (In) exprNode() {}

func (IsNull) exprNode() {}

func (Between) exprNode() {}

// String renders the model back as SQL-like text for messages and tests.
func (q *Query) String() string {
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, o := range q.Outputs {
		if i > 0 {
			b.WriteString(", ")
		}
		if o.Agg != nil {
			b.WriteString(o.Agg.String())
		} else {
			b.WriteString(o.Key)
		}
		b.WriteString(" AS " + o.Name)
	}
	b.WriteString(" FROM " + q.Table)
	if q.Where != nil {
		b.WriteString(" WHERE " + ExprString(q.Where, q))
	}
	if len(q.GroupBy) > 0 {
		b.WriteString(" GROUP BY " + q.KeyNames())
	}
	if q.Having != nil {
		b.WriteString(" HAVING " + ExprString(q.Having, q))
	}
	if len(q.OrderBy) > 0 {
		b.WriteString(" ORDER BY ")
		for i, t := range q.OrderBy {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(q.Outputs[t.Output].Name)
			if t.Desc {
				b.WriteString(" DESC")
			}
		}
	}
	if q.Limit >= 0 {
		fmt.Fprintf(&b, " LIMIT %d", q.Limit)
	}
	if q.Offset > 0 {
		fmt.Fprintf(&b, " OFFSET %d", q.Offset)
	}
	return b.String()
}

// OperandString spells an operand of a condition as SQL, naming columns and
// outputs as the query does.
func OperandString(o Operand, q *Query) string {
	switch o.Kind {
	case ColumnRef:
		return o.Column
	case OutputRef:
		return q.Outputs[o.Output].Name
	case Computed:
		if o.Part != nil {
			return DateString(o.Part.Field, o.Part.Column, o.Part.Trunc, o.Part.Shift)
		}
		if o.Num != nil {
			return ScalarString(o.Num)
		}
		return o.Fn.String()
	}
	if s, ok := o.Value.(string); ok {
		return "'" + strings.ReplaceAll(s, "'", "''") + "'"
	}
	if o.Type.Temporal() {
		return strings.ToUpper(string(o.Type)) + " '" + schema.FormatValue(o.Type, o.Value) + "'"
	}
	return fmt.Sprint(o.Value)
}

// ExprString spells a condition as SQL, for EXPLAIN and messages.
func ExprString(e Expr, q *Query) string {
	switch x := e.(type) {
	case Compare:
		return OperandString(x.Left, q) + " " + x.Op + " " + OperandString(x.Right, q)
	case And:
		return joinExprs(x.Args, " AND ", q)
	case Or:
		return joinExprs(x.Args, " OR ", q)
	case Not:
		return "NOT (" + ExprString(x.Arg, q) + ")"
	case In:
		parts := make([]string, len(x.Values))
		for i, v := range x.Values {
			parts[i] = OperandString(v, q)
		}
		not := ""
		if x.Negate {
			not = "NOT "
		}
		return OperandString(x.Arg, q) + " " + not + "IN (" + strings.Join(parts, ", ") + ")"
	case IsNull:
		if x.Negate {
			return OperandString(x.Arg, q) + " IS NOT NULL"
		}
		return OperandString(x.Arg, q) + " IS NULL"
	case Between:
		not := ""
		if x.Negate {
			not = "NOT "
		}
		return OperandString(x.Arg, q) + " " + not + "BETWEEN " + OperandString(x.Low, q) + " AND " + OperandString(x.High, q)
	}
	return "?"
}

func joinExprs(args []Expr, sep string, q *Query) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = "(" + ExprString(a, q) + ")"
	}
	return strings.Join(parts, sep)
}
