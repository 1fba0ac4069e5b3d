package parse

import (
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// temporalOf returns the date or timestamp type of an operand: a temporal
// column, a grouped key of one (a column or a truncation), or a temporal
// literal; "" otherwise.
func (p *parser) temporalOf(o ir.Operand) schema.Type {
	switch o.Kind {
	case ir.ColumnRef:
		if c := p.table.Column(o.Column); c != nil && c.Type.Temporal() {
			return c.Type
		}
	case ir.OutputRef:
		out := p.q.Outputs[o.Output]
		if !out.IsKey() {
			return ir.AggTemporal(out.Agg, p.q.Derived, p.table)
		}
		if b := p.q.Buckets[out.Key]; b != nil {
			if b.Kind == ir.DateBucket && b.Trunc {
				return b.Type
			}
			return ""
		}
		if c := p.table.Column(out.Key); c != nil && c.Type.Temporal() {
			return c.Type
		}
	case ir.Literal:
		return o.Type
	case ir.Computed:
		if o.Part != nil && o.Part.Trunc {
			if c := p.table.Column(o.Part.Column); c != nil {
				return c.Type
			}
		}
	}
	return ""
}

// temporalOperands reads the literal compared with a date or timestamp
// (a column, a key) in the other's units: a string is read as a date or
// timestamp, a DATE literal compared with a timestamp is its midnight. A
// string that is not a date, or a TIMESTAMP compared with a date, is
// refused.
func (p *parser) temporalOperands(a, b ir.Operand) (ir.Operand, ir.Operand, error) {
	conv := func(o ir.Operand, t schema.Type) (ir.Operand, error) {
		if o.Kind != ir.Literal {
			return o, nil
		}
		switch {
		case o.Type == t:
			return o, nil
		case o.Type == schema.Date && t == schema.Timestamp:
			return ir.Operand{Kind: ir.Literal, Value: o.Value.(int64) * schema.MicrosPerDay, Type: t}, nil
		case o.Type == schema.Timestamp && t == schema.Date:
			return o, ir.Refuse("cannot compare a date with %s; compare it with a DATE literal, e.g. DATE '%s'", ir.OperandString(o, nil), schema.FormatDate(ir.FloorDiv(o.Value.(int64), schema.MicrosPerDay)))
		}
		if s, ok := o.Value.(string); ok {
			return ir.TemporalLiteral(t, s)
		}
		return o, nil
	}
	var err error
	if t := p.temporalOf(a); t != "" && a.Kind != ir.Literal {
		b, err = conv(b, t)
	} else if t := p.temporalOf(b); t != "" && b.Kind != ir.Literal {
		a, err = conv(a, t)
	}
	return a, b, err
}

// dateArgs reads date_trunc('unit', col), date_part('field', col) or
// EXTRACT(field FROM col), where col may be shifted by an INTERVAL of
// days or weeks (and hours, minutes or seconds for a timestamp): col +
// INTERVAL '7 days'. It returns the part and its column.
func (p *parser) dateArgs(fc *pg.FuncCall) (ir.DatePart, *ir.Column, error) {
	name := funcName(fc)
	form := map[string]string{"date_trunc": "date_trunc('month', col)", "extract": "EXTRACT(month FROM col)", "date_part": "date_part('month', col)"}[name]
	if len(fc.Args) != 2 || fc.AggStar || fc.Over != nil || fc.AggFilter != nil {
		return ir.DatePart{}, nil, ir.Refuse("write %s with a literal field and a date or timestamp column", form)
	}
	c := fc.Args[0].GetAConst()
	sv, ok := c.GetVal().(*pg.A_Const_Sval)
	if c == nil || !ok {
		return ir.DatePart{}, nil, ir.Refuse("write %s with a literal field and a date or timestamp column", form)
	}
	field := strings.ToLower(sv.Sval.Sval)
	cr := fc.Args[1].GetColumnRef()
	var shifted *pg.A_Expr
	if a := fc.Args[1].GetAExpr(); cr == nil && a != nil && a.Kind == pg.A_Expr_Kind_AEXPR_OP && (opName(a) == "+" || opName(a) == "-") && a.Lexpr.GetColumnRef() != nil && isInterval(a.Rexpr) {
		shifted, cr = a, a.Lexpr.GetColumnRef()
	}
	if cr == nil {
		return ir.DatePart{}, nil, ir.Refuse("%s: the second argument must be a date or timestamp column, or one shifted by an INTERVAL, as in %s or %s", strings.ToUpper(name), form, strings.Replace(form, "col", "col + INTERVAL '7 days'", 1))
	}
	col, err := p.columnRef(cr)
	if err != nil {
		return ir.DatePart{}, nil, err
	}
	trunc := name == "date_trunc"
	if !col.Type.Temporal() {
		return ir.DatePart{}, nil, ir.Refuse("%s over column %s (%s): want a date or timestamp column", strings.ToUpper(name), col.Name, col.Type)
	}
	fields := ir.ExtractFields
	what := "EXTRACT field"
	if trunc {
		fields, what = ir.TruncUnits, "date_trunc unit"
	}
	forDates, ok := fields[field]
	if !ok || (!forDates && col.Type == schema.Date) {
		var names []string
		for _, f := range []string{"year", "quarter", "month", "week", "day", "dow", "isodow", "doy", "hour", "minute"} {
			if d, ok := fields[f]; ok && (d || col.Type == schema.Timestamp) {
				names = append(names, f)
			}
		}
		return ir.DatePart{}, nil, ir.Refuse("%s %q over %s column %s is not supported; want one of %s", what, field, col.Type, col.Name, strings.Join(names, ", "))
	}
	if !col.Bounded() {
		return ir.DatePart{}, nil, ir.Refuse("%s(…, %s) needs declared bounds for %s, so that its values are public: declare `lower:` and `upper:` (e.g. lower: \"2024-01-01\")", strings.ToUpper(name), col.Name, col.Name)
	}
	part := ir.DatePart{Column: col.Name, Field: field, Trunc: trunc}
	if shifted != nil {
		if part.Shift, err = p.dateShift(shifted, col, part); err != nil {
			return ir.DatePart{}, nil, err
		}
	}
	return part, col, nil
}

// dateShift reads the INTERVAL of col ± INTERVAL '…' inside the date
// function part as a shift in microseconds (whole days for a date column).
// Months and years are refused (a month is not a fixed number of days, so
// the shifted values would not follow from the bounds by adding a
// constant), as is part of a day for a date, and a shift that takes the
// declared range of col outside the dates or timestamps dpstat reads.
func (p *parser) dateShift(a *pg.A_Expr, col *ir.Column, part ir.DatePart) (int64, error) {
	op := opName(a)
	tc := a.Rexpr.GetTypeCast()
	text := ""
	if sv, ok := tc.Arg.GetAConst().GetVal().(*pg.A_Const_Sval); ok {
		text = sv.Sval.Sval
	}
	expr := ir.DateString(part.Field, fmt.Sprintf("%s %s INTERVAL '%s'", col.Name, op, text), part.Trunc, 0)
	months, micros, err := ir.ParseInterval(text)
	if err != nil || len(tc.TypeName.Typmods) > 0 {
		return 0, ir.Refuse("%s: cannot read INTERVAL '%s': want a whole number and a unit, several separated by spaces, e.g. INTERVAL '30 days' (units: week, day, hour, minute, second)", expr, text)
	}
	if months != 0 {
		return 0, ir.Refuse("%s: a column shifted by months or years is not supported in a date function; shift it by days or weeks, e.g. INTERVAL '30 days', or apply the function to %s and shift the literals it is compared with", expr, col.Name)
	}
	lo, hi := int64(schema.MinTimestamp), int64(schema.MaxTimestamp)
	shift := micros
	if col.Type == schema.Date {
		if micros%schema.MicrosPerDay != 0 {
			return 0, ir.Refuse("%s: a date moves by whole days; use days or weeks, e.g. INTERVAL '1 day'", expr)
		}
		shift, lo, hi = micros/schema.MicrosPerDay, schema.MinDate, schema.MaxDate
	}
	if op == "-" {
		shift, micros = -shift, -micros
	}
	if l, u := int64(*col.Lower)+shift, int64(*col.Upper)+shift; l < lo || u > hi {
		return 0, ir.Refuse("%s leaves the %ss dpstat reads (%s to %s) over the declared range of %s", expr, col.Type,
			schema.FormatValue(col.Type, lo), schema.FormatValue(col.Type, hi), col.Name)
	}
	return micros, nil
}

// dateBucket parses a date function as a GROUP BY key. Its image over the
// column's declared bounds (moved by a shift) is counted before anything
// enumerates it, and refused when larger than MaxGroups.
func (p *parser) dateBucket(fc *pg.FuncCall) (*ir.Bucket, error) {
	part, col, err := p.dateArgs(fc)
	if err != nil {
		return nil, err
	}
	return &ir.Bucket{Kind: ir.DateBucket, Column: col.Name, Field: part.Field, Trunc: part.Trunc, Type: col.Type, Shift: part.Shift}, nil
}

// dateScalar parses a date function inside an aggregate.
func (p *parser) dateScalar(fc *pg.FuncCall) (ir.Scalar, error) {
	part, _, err := p.dateArgs(fc)
	if err != nil {
		return nil, err
	}
	return part, nil
}

// dateConstant reads DATE '…' in an aggregated expression as its number of
// days since 1970-01-01 (date − date is a number of days).
func dateConstant(tc *pg.TypeCast) (ir.Scalar, bool, error) {
	typ, _ := castType(tc.TypeName)
	if !typ.Temporal() {
		return nil, false, nil
	}
	c := tc.Arg.GetAConst()
	if c == nil {
		return nil, true, ir.Refuse("casts to %s are supported on literals only, e.g. DATE '2024-03-01'", typ)
	}
	if typ != schema.Date {
		return nil, true, ir.Refuse("timestamps cannot be computed with in an aggregated expression; use EXTRACT(field FROM ts) or date_trunc")
	}
	o, err := constOperand(c)
	if err != nil {
		return nil, true, err
	}
	s, ok := o.Value.(string)
	if !ok {
		return nil, true, ir.Refuse("DATE takes a string such as '2024-03-01', got %v", o.Value)
	}
	d, err := ir.ParseTemporal(schema.Date, s)
	if err != nil {
		return nil, true, err
	}
	return ir.Constant{Value: float64(d), Int: true, Type: schema.Date}, true, nil
}

// foldInterval reads DATE '…' ± INTERVAL '…' (or a TIMESTAMP, or a
// date plus or minus several intervals) as one literal, when a is such an
// expression: ok is false otherwise. Adding months keeps the day of the
// month, or takes the month's last day when it has fewer days (2024-01-31
// + 1 month is 2024-02-29), as the engines do.
func (p *parser) foldInterval(a *pg.A_Expr) (ir.Operand, bool, error) {
	op := opName(a)
	if a.Kind != pg.A_Expr_Kind_AEXPR_OP || (op != "+" && op != "-") || a.Lexpr == nil || !isInterval(a.Rexpr) {
		return ir.Operand{}, false, nil
	}
	var base ir.Operand
	switch {
	case a.Lexpr.GetAExpr() != nil:
		b, ok, err := p.foldInterval(a.Lexpr.GetAExpr())
		if !ok || err != nil {
			return ir.Operand{}, ok, err
		}
		base = b
	case a.Lexpr.GetTypeCast() != nil && a.Lexpr.GetTypeCast().Arg.GetAConst() != nil:
		b, err := castConst(a.Lexpr.GetTypeCast().Arg.GetAConst(), a.Lexpr.GetTypeCast().TypeName)
		if err != nil {
			return ir.Operand{}, true, err
		}
		base = b
	default:
		return ir.Operand{}, true, ir.Refuse("INTERVAL arithmetic is supported on DATE and TIMESTAMP literals only, e.g. DATE '2024-03-01' - INTERVAL '30 days'; compare the column with the result")
	}
	if !base.Type.Temporal() {
		return ir.Operand{}, true, ir.Refuse("INTERVAL is added to DATE or TIMESTAMP literals only, not to %s", ir.OperandString(base, nil))
	}
	tc := a.Rexpr.GetTypeCast()
	c := tc.Arg.GetAConst()
	text := ""
	if sv, ok := c.GetVal().(*pg.A_Const_Sval); ok {
		text = sv.Sval.Sval
	}
	months, micros, err := ir.ParseInterval(text)
	if err != nil || len(tc.TypeName.Typmods) > 0 {
		return ir.Operand{}, true, ir.Refuse("cannot read INTERVAL '%s': want a whole number and a unit, several separated by spaces, e.g. INTERVAL '1 month', INTERVAL '2 weeks 3 days' (units: year, month, week, day, hour, minute, second)", text)
	}
	if op == "-" {
		months, micros = -months, -micros
	}
	v := base.Value.(int64)
	if base.Type == schema.Date {
		if micros%schema.MicrosPerDay != 0 {
			return ir.Operand{}, true, ir.Refuse("DATE %s INTERVAL '%s': a date moves by whole days; use a TIMESTAMP literal for hours, minutes and seconds", op, text)
		}
		v = ir.AddMonths(v, months) + micros/schema.MicrosPerDay
		if v < schema.MinDate || v > schema.MaxDate {
			return ir.Operand{}, true, ir.Refuse("DATE %s INTERVAL '%s' leaves the dates from 0001-01-01 to 9999-12-31", op, text)
		}
	} else {
		d := ir.FloorDiv(v, schema.MicrosPerDay)
		v = ir.AddMonths(d, months)*schema.MicrosPerDay + (v - d*schema.MicrosPerDay) + micros
		if v < schema.MinTimestamp || v > schema.MaxTimestamp {
			return ir.Operand{}, true, ir.Refuse("TIMESTAMP %s INTERVAL '%s' leaves the timestamps dpstat reads (1684 to 2255)", op, text)
		}
	}
	return ir.Operand{Kind: ir.Literal, Value: v, Type: base.Type}, true, nil
}

// isInterval reports whether a node is an INTERVAL '…' literal.
func isInterval(n *pg.Node) bool {
	tc := n.GetTypeCast()
	if tc == nil || tc.Arg.GetAConst() == nil || tc.TypeName == nil || len(tc.TypeName.Names) == 0 {
		return false
	}
	s := tc.TypeName.Names[len(tc.TypeName.Names)-1].GetString_()
	return s != nil && strings.EqualFold(s.Sval, "interval")
}

// shiftedCompare reads col ± INTERVAL '…' op literal (either side) as col
// op (literal ∓ interval), which is the same condition for whole days and
// hours, and lets the bounds narrow as for any comparison; ok is false
// when neither side is a column plus an interval. Months are refused: a
// month shift of the column cannot be moved to the literal exactly.
func (p *parser) shiftedCompare(a *pg.A_Expr, op string) (ir.Expr, bool, error) {
	shifted := func(n *pg.Node) (*pg.A_Expr, bool) {
		x := n.GetAExpr()
		if x == nil || x.Kind != pg.A_Expr_Kind_AEXPR_OP || (opName(x) != "+" && opName(x) != "-") || x.Lexpr.GetColumnRef() == nil || !isInterval(x.Rexpr) {
			return nil, false
		}
		return x, true
	}
	x, left := shifted(a.Lexpr)
	other := a.Rexpr
	if !left {
		var right bool
		if x, right = shifted(a.Rexpr); !right {
			return nil, false, nil
		}
		other = a.Lexpr
	}
	col, err := p.operand(x.Lexpr, false)
	if err != nil {
		return nil, true, err
	}
	t := p.temporalOf(col)
	if t == "" {
		return nil, true, ir.Refuse("INTERVAL is added to dates and timestamps; %s is not one", ir.OperandString(col, nil))
	}
	tc := x.Rexpr.GetTypeCast()
	text := ""
	if sv, ok := tc.Arg.GetAConst().GetVal().(*pg.A_Const_Sval); ok {
		text = sv.Sval.Sval
	}
	months, micros, err := ir.ParseInterval(text)
	if err != nil || len(tc.TypeName.Typmods) > 0 {
		return nil, true, ir.Refuse("cannot read INTERVAL '%s': want a whole number and a unit, several separated by spaces, e.g. INTERVAL '30 days' (units: week, day, hour, minute, second)", text)
	}
	if months != 0 {
		return nil, true, ir.Refuse("%s %s INTERVAL '%s': a column shifted by months or years is not supported; shift the literal instead, e.g. %s > DATE '2024-06-01' - INTERVAL '%s'", col.Column, opName(x), text, col.Column, text)
	}
	shift := micros
	if t == schema.Date {
		if micros%schema.MicrosPerDay != 0 {
			return nil, true, ir.Refuse("%s %s INTERVAL '%s': a date moves by whole days", col.Column, opName(x), text)
		}
		shift = micros / schema.MicrosPerDay
	}
	if opName(x) == "-" {
		shift = -shift
	}
	lit, err := p.operand(other, false)
	if err != nil {
		return nil, true, err
	}
	if _, lit, err = p.temporalOperands(col, lit); err != nil {
		return nil, true, err
	}
	v, ok := lit.Value.(int64)
	if lit.Kind != ir.Literal || lit.Type != t || !ok {
		return nil, true, ir.Refuse("compare %s %s INTERVAL '%s' with a %s literal, e.g. DATE '2024-06-01'", col.Column, opName(x), text, t)
	}
	// col + s op v ⇔ col op v − s, on either side.
	lit.Value = v - shift
	if left {
		return ir.Compare{Op: op, Left: col, Right: lit}, true, nil
	}
	return ir.Compare{Op: op, Left: lit, Right: col}, true, nil
}

// quantileArg reads the argument of MIN, MAX, MEDIAN or percentile_cont
// when it is a date or timestamp column, or one shifted by an INTERVAL
// (col ± INTERVAL '…'); ok is false for any other argument.
func (p *parser) quantileArg(n *pg.Node) (ir.Scalar, bool, error) {
	if cr := n.GetColumnRef(); cr != nil {
		col, err := p.columnRef(cr)
		if err != nil || !col.Type.Temporal() {
			return nil, false, nil
		}
		if !col.Bounded() {
			return nil, true, ir.Refuse("MIN, MAX and quantiles of %s need declared bounds: declare `lower:` and `upper:` for %s in the catalog (e.g. lower: \"2024-01-01\")", col.Name, col.Name)
		}
		return ir.ColumnValue{Column: col.Name}, true, nil
	}
	if a := n.GetAExpr(); a != nil {
		return p.shiftedScalar(a, true)
	}
	return nil, false, nil
}

// shiftedScalar reads col ± INTERVAL '…' of a bounded date or timestamp
// column as the column plus a number of days (microseconds); ok is false
// when a is not a column plus or minus an interval. Months and years are
// refused (a month is not a fixed number of days), as is a timestamp
// outside the argument of MIN, MAX or a quantile (timestamp is false).
func (p *parser) shiftedScalar(a *pg.A_Expr, timestamp bool) (ir.Scalar, bool, error) {
	op := opName(a)
	if a.Kind != pg.A_Expr_Kind_AEXPR_OP || (op != "+" && op != "-") || a.Lexpr.GetColumnRef() == nil || !isInterval(a.Rexpr) {
		return nil, false, nil
	}
	col, err := p.columnRef(a.Lexpr.GetColumnRef())
	if err != nil {
		return nil, true, err
	}
	tc := a.Rexpr.GetTypeCast()
	text := ""
	if sv, ok := tc.Arg.GetAConst().GetVal().(*pg.A_Const_Sval); ok {
		text = sv.Sval.Sval
	}
	expr := fmt.Sprintf("%s %s INTERVAL '%s'", col.Name, op, text)
	if !col.Type.Temporal() {
		return nil, true, ir.Refuse("%s: INTERVAL is added to dates and timestamps; column %s is %s", expr, col.Name, col.Type)
	}
	if col.Type == schema.Timestamp && !timestamp {
		return nil, true, ir.Refuse("%s: a shifted timestamp is supported as the whole argument of MIN, MAX, MEDIAN or percentile_cont only; elsewhere use EXTRACT(field FROM %s) or date_trunc", expr, col.Name)
	}
	months, micros, err := ir.ParseInterval(text)
	if err != nil || len(tc.TypeName.Typmods) > 0 {
		return nil, true, ir.Refuse("cannot read INTERVAL '%s': want a whole number and a unit, several separated by spaces, e.g. INTERVAL '30 days' (units: week, day, hour, minute, second)", text)
	}
	if months != 0 {
		return nil, true, ir.Refuse("%s: a column shifted by months or years is not supported in an aggregate; shift it by days or weeks, e.g. INTERVAL '30 days'", expr)
	}
	shift, lo, hi := micros, int64(schema.MinTimestamp), int64(schema.MaxTimestamp)
	if col.Type == schema.Date {
		if micros%schema.MicrosPerDay != 0 {
			return nil, true, ir.Refuse("%s: a date moves by whole days; use days or weeks", expr)
		}
		shift, lo, hi = micros/schema.MicrosPerDay, schema.MinDate, schema.MaxDate
	}
	if !col.Bounded() {
		return nil, true, ir.Refuse("%s needs declared bounds for %s: declare `lower:` and `upper:` (e.g. lower: \"2024-01-01\")", expr, col.Name)
	}
	if op == "-" {
		shift = -shift
	}
	if l, u := int64(*col.Lower)+shift, int64(*col.Upper)+shift; l < lo || u > hi {
		return nil, true, ir.Refuse("%s leaves the %ss dpstat reads (%s to %s) over the declared range of %s", expr, col.Type,
			schema.FormatValue(col.Type, lo), schema.FormatValue(col.Type, hi), col.Name)
	}
	if shift < 0 {
		return ir.Arith{Op: "-", L: ir.ColumnValue{Column: col.Name}, R: ir.Constant{Value: float64(-shift), Int: true}}, true, nil
	}
	return ir.Arith{Op: "+", L: ir.ColumnValue{Column: col.Name}, R: ir.Constant{Value: float64(shift), Int: true}}, true, nil
}

// checkTemporalArg refuses SUM, AVG and the variances of an expression
// whose values are dates (signup + 7, date_trunc('month', signup)): a
// sum of dates means nothing, as for a date column itself. COUNT, MIN,
// MAX and quantiles take them.
func (p *parser) checkTemporalArg(f ir.AggFunc, name string, s ir.Scalar) error {
	if f == ir.Count || f == ir.Quantile {
		return nil
	}
	if t := ir.ScalarTemporal(s, p.table); t != "" {
		return ir.Refuse("%s(%s): the expression is a %s, which is not summed or averaged; use MIN, MAX or MEDIAN of it, or a number of days, e.g. %s(signup - DATE '2024-01-01')",
			strings.ToUpper(name), ir.ScalarString(s), t, strings.ToUpper(name))
	}
	return nil
}
