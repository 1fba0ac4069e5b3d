package query

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
)

// Dates and timestamps. The engines expose a date column as its number of
// days since 1970-01-01 and a timestamp column as its microseconds since
// 1970-01-01 00:00:00 (engine.Date, engine.Timestamp), so a temporal
// column is an int column to the plan: clamped to its declared bounds,
// narrowed by WHERE, grouped by exact keys. Literals (DATE '2024-03-01',
// or a string compared with a date column) are read in the same units
// when the query is parsed; a malformed one is refused, whatever the data.
//
// date_trunc and EXTRACT (date_part) of a bounded temporal column have a
// public image: the months, weeks, days … of the declared range, 1..12 for
// the month, 0..6 for the day of the week. Grouped by, they are computed
// keys (DateBucket) released without key selection; aggregated, their
// bounds are the image's (DatePart). Each is computed by the engine from
// the clamped value, so every value the column can hold (NULL, ±infinity,
// dates beyond the bounds) has one answer and none fails.

// DatePart is EXTRACT(Field FROM Column) or date_trunc(Field, Column) of
// a date or timestamp column, as a number of the project stage (a
// truncation is its days or microseconds since 1970-01-01).
type DatePart struct {
	Column string
	Field  string
	Trunc  bool
}

func (DatePart) scalarNode() {}

// truncUnits and extractFields are the date_trunc units and EXTRACT
// fields dpstat computes, each with the column types it applies to.
var (
	truncUnits = map[string]bool{"year": true, "quarter": true, "month": true, "week": true, "day": true, "hour": false, "minute": false}
	// extractFields maps each field to whether it applies to dates (true)
	// or only to timestamps (false).
	extractFields = map[string]bool{"year": true, "quarter": true, "month": true, "week": true, "day": true,
		"dow": true, "isodow": true, "doy": true, "hour": false, "minute": false}
)

// Microseconds in an hour and in a minute, the units of timestamps.
const (
	microsPerHour   = 3_600_000_000
	microsPerMinute = 60_000_000
)

// isDateFunc reports whether a function name is a date function of the
// project stage.
func isDateFunc(name string) bool {
	return name == "date_trunc" || name == "extract" || name == "date_part"
}

// temporalLiteral reads DATE '…' or TIMESTAMP '…'.
func temporalLiteral(t catalog.Type, s string) (Operand, error) {
	v, err := parseTemporal(t, s)
	if err != nil {
		return Operand{}, err
	}
	return Operand{Kind: Literal, Value: v, Type: t}, nil
}

// parseTemporal reads a date ("2024-01-31") or timestamp literal of type t
// as days or microseconds since 1970-01-01.
func parseTemporal(t catalog.Type, s string) (int64, error) {
	if t == catalog.Date {
		d, err := catalog.ParseDate(s)
		if err != nil || d < catalog.MinDate || d > catalog.MaxDate {
			return 0, refuse("cannot read '%s' as a date: want YYYY-MM-DD from 0001-01-01 to 9999-12-31, e.g. DATE '2024-03-01'", s)
		}
		return d, nil
	}
	us, err := catalog.ParseTimestamp(s)
	if err != nil {
		return 0, refuse("cannot read '%s' as a timestamp: want YYYY-MM-DD HH:MM:SS from 1684 to 2255, e.g. TIMESTAMP '2024-03-01 13:45:00'", s)
	}
	return us, nil
}

// temporalOf returns the date or timestamp type of an operand: a temporal
// column, a grouped key of one (a column or a truncation), or a temporal
// literal; "" otherwise.
func (p *parser) temporalOf(o Operand) catalog.Type {
	switch o.Kind {
	case ColumnRef:
		if c := p.table.Column(o.Column); c != nil && c.Type.Temporal() {
			return c.Type
		}
	case OutputRef:
		out := p.q.Outputs[o.Output]
		if !out.IsKey() {
			return aggTemporal(out.Agg, p.q.Derived, p.table)
		}
		if b := p.q.Buckets[out.Key]; b != nil {
			if b.Kind == DateBucket && b.Trunc {
				return b.Type
			}
			return ""
		}
		if c := p.table.Column(out.Key); c != nil && c.Type.Temporal() {
			return c.Type
		}
	case Literal:
		return o.Type
	case Computed:
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
func (p *parser) temporalOperands(a, b Operand) (Operand, Operand, error) {
	conv := func(o Operand, t catalog.Type) (Operand, error) {
		if o.Kind != Literal {
			return o, nil
		}
		switch {
		case o.Type == t:
			return o, nil
		case o.Type == catalog.Date && t == catalog.Timestamp:
			return Operand{Kind: Literal, Value: o.Value.(int64) * catalog.MicrosPerDay, Type: t}, nil
		case o.Type == catalog.Timestamp && t == catalog.Date:
			return o, refuse("cannot compare a date with %s; compare it with a DATE literal, e.g. DATE '%s'", operandString(o, nil), catalog.FormatDate(floorDiv(o.Value.(int64), catalog.MicrosPerDay)))
		}
		if s, ok := o.Value.(string); ok {
			return temporalLiteral(t, s)
		}
		return o, nil
	}
	var err error
	if t := p.temporalOf(a); t != "" && a.Kind != Literal {
		b, err = conv(b, t)
	} else if t := p.temporalOf(b); t != "" && b.Kind != Literal {
		a, err = conv(a, t)
	}
	return a, b, err
}

// floorDiv is a / b rounded down (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// dateArgs reads the field and the column of date_trunc('unit', col),
// date_part('field', col) or EXTRACT(field FROM col).
func (p *parser) dateArgs(fc *pg.FuncCall) (string, *catalog.Column, bool, error) {
	name := funcName(fc)
	form := map[string]string{"date_trunc": "date_trunc('month', col)", "extract": "EXTRACT(month FROM col)", "date_part": "date_part('month', col)"}[name]
	if len(fc.Args) != 2 || fc.AggStar || fc.Over != nil || fc.AggFilter != nil {
		return "", nil, false, refuse("write %s with a literal field and a date or timestamp column", form)
	}
	c := fc.Args[0].GetAConst()
	sv, ok := c.GetVal().(*pg.A_Const_Sval)
	if c == nil || !ok {
		return "", nil, false, refuse("write %s with a literal field and a date or timestamp column", form)
	}
	field := strings.ToLower(sv.Sval.Sval)
	cr := fc.Args[1].GetColumnRef()
	if a := fc.Args[1].GetAExpr(); cr == nil && a != nil && a.Lexpr.GetColumnRef() != nil && isInterval(a.Rexpr) {
		text := ""
		if sv, ok := a.Rexpr.GetTypeCast().Arg.GetAConst().GetVal().(*pg.A_Const_Sval); ok {
			text = sv.Sval.Sval
		}
		col := ""
		if f := a.Lexpr.GetColumnRef().Fields; len(f) > 0 && f[len(f)-1].GetString_() != nil {
			col = f[len(f)-1].GetString_().Sval
		}
		return "", nil, false, refuse("%s of %s %s INTERVAL '%s' is not supported: date functions take a date or timestamp column, as in %s; apply it to %s and shift the literals it is compared with instead",
			strings.ToUpper(name), col, opName(a), text, form, col)
	}
	if cr == nil {
		return "", nil, false, refuse("%s: the second argument must be a date or timestamp column, as in %s", strings.ToUpper(name), form)
	}
	col, err := p.columnRef(cr)
	if err != nil {
		return "", nil, false, err
	}
	trunc := name == "date_trunc"
	if !col.Type.Temporal() {
		return "", nil, false, refuse("%s over column %s (%s): want a date or timestamp column", strings.ToUpper(name), col.Name, col.Type)
	}
	fields := extractFields
	what := "EXTRACT field"
	if trunc {
		fields, what = truncUnits, "date_trunc unit"
	}
	forDates, ok := fields[field]
	if !ok || (!forDates && col.Type == catalog.Date) {
		var names []string
		for _, f := range []string{"year", "quarter", "month", "week", "day", "dow", "isodow", "doy", "hour", "minute"} {
			if d, ok := fields[f]; ok && (d || col.Type == catalog.Timestamp) {
				names = append(names, f)
			}
		}
		return "", nil, false, refuse("%s %q over %s column %s is not supported; want one of %s", what, field, col.Type, col.Name, strings.Join(names, ", "))
	}
	if !col.Bounded() {
		return "", nil, false, refuse("%s(…, %s) needs declared bounds for %s, so that its values are public: declare `lower:` and `upper:` (e.g. lower: \"2024-01-01\")", strings.ToUpper(name), col.Name, col.Name)
	}
	return field, col, trunc, nil
}

// dateBucket parses a date function as a GROUP BY key. Its image over the
// column's declared bounds is counted before anything enumerates it, and
// refused when larger than MaxGroups.
func (p *parser) dateBucket(fc *pg.FuncCall) (*Bucket, error) {
	field, col, trunc, err := p.dateArgs(fc)
	if err != nil {
		return nil, err
	}
	return &Bucket{Kind: DateBucket, Column: col.Name, Field: field, Trunc: trunc, Type: col.Type}, nil
}

// checkCount refuses a DateBucket whose image over the column's bounds in
// t (declared, narrowed by WHERE) has more than MaxGroups values, counted
// without listing them; the plan calls it before anything lists them.
func (b *Bucket) checkCount(t *catalog.Table) error {
	if b.Kind != DateBucket {
		return nil
	}
	c := t.Column(b.Column)
	if c == nil || !c.Bounded() {
		return fmt.Errorf("query: %s needs a bounded column", b)
	}
	if n := b.dateCount(int64(*c.Lower), int64(*c.Upper)); n > MaxGroups {
		return refuse("%s has %d values over the range of %s [%s, %s] (declared, narrowed by WHERE); want at most %d groups: group by a coarser unit or narrow the range",
			b, n, c.Name, catalog.FormatValue(c.Type, int64(*c.Lower)), catalog.FormatValue(c.Type, int64(*c.Upper)), MaxGroups)
	}
	return nil
}

// dayOf splits a column value into its day (since 1970-01-01) and the
// microseconds since that day's midnight.
func (b *Bucket) dayOf(v int64) (int64, int64) {
	if b.Type == catalog.Date {
		return v, 0
	}
	d := floorDiv(v, catalog.MicrosPerDay)
	return d, v - d*catalog.MicrosPerDay
}

// truncDay truncates a day to the unit (year, quarter, month, week, day).
func truncDay(unit string, d int64) int64 {
	y, m, _ := catalog.DateOf(d)
	switch unit {
	case "year":
		return catalog.DaysOf(y, 1, 1)
	case "quarter":
		return catalog.DaysOf(y, (m-1)/3*3+1, 1)
	case "month":
		return catalog.DaysOf(y, m, 1)
	case "week":
		return d - (isoDow(d) - 1)
	}
	return d
}

// isoDow is the ISO day of the week, 1 (Monday) to 7 (Sunday); 1970-01-01
// was a Thursday.
func isoDow(d int64) int64 {
	r := (d + 3) % 7
	if r < 0 {
		r += 7
	}
	return r + 1
}

// dateValue computes the bucket's key of a column value, as the engines
// do.
func (b *Bucket) dateValue(v int64) int64 {
	d, tod := b.dayOf(v)
	if b.Trunc {
		switch b.Field {
		case "hour":
			return floorDiv(v, microsPerHour) * microsPerHour
		case "minute":
			return floorDiv(v, microsPerMinute) * microsPerMinute
		}
		t := truncDay(b.Field, d)
		if b.Type == catalog.Timestamp {
			return t * catalog.MicrosPerDay
		}
		return t
	}
	y, m, day := catalog.DateOf(d)
	switch b.Field {
	case "year":
		return int64(y)
	case "quarter":
		return int64((m-1)/3 + 1)
	case "month":
		return int64(m)
	case "day":
		return int64(day)
	case "dow":
		return isoDow(d) % 7
	case "isodow":
		return isoDow(d)
	case "doy":
		return int64(time.Date(y, m, day, 0, 0, 0, 0, time.UTC).YearDay())
	case "week":
		_, w := time.Date(y, m, day, 0, 0, 0, 0, time.UTC).ISOWeek()
		return int64(w)
	case "hour":
		return tod / microsPerHour
	case "minute":
		return tod / microsPerMinute % 60
	}
	return 0
}

// dateCount counts the bucket's values over [lo, hi] without enumerating
// them.
func (b *Bucket) dateCount(lo, hi int64) int64 {
	if !b.Trunc {
		if b.Field == "year" {
			y1, _, _ := catalog.DateOf(floorDivDay(b, lo))
			y2, _, _ := catalog.DateOf(floorDivDay(b, hi))
			return int64(y2-y1) + 1
		}
		return 60 // every other field has at most 60 values
	}
	switch b.Field {
	case "hour", "minute":
		w := int64(microsPerHour)
		if b.Field == "minute" {
			w = microsPerMinute
		}
		return floorDiv(hi, w) - floorDiv(lo, w) + 1
	}
	d1, d2 := floorDivDay(b, lo), floorDivDay(b, hi)
	y1, m1, _ := catalog.DateOf(d1)
	y2, m2, _ := catalog.DateOf(d2)
	switch b.Field {
	case "year":
		return int64(y2-y1) + 1
	case "quarter":
		return int64(y2*4+(int(m2)-1)/3) - int64(y1*4+(int(m1)-1)/3) + 1
	case "month":
		return int64(y2*12+int(m2)) - int64(y1*12+int(m1)) + 1
	case "week":
		return (truncDay("week", d2)-truncDay("week", d1))/7 + 1
	}
	return d2 - d1 + 1
}

func floorDivDay(b *Bucket, v int64) int64 {
	d, _ := b.dayOf(v)
	return d
}

// dateValues lists the bucket's values over the column's bounds in t, in
// ascending order. The plan checked the count first (checkCount), so the
// loops are bounded before they start.
func (b *Bucket) dateValues(t *catalog.Table) []any {
	c := t.Column(b.Column)
	lo, hi := int64(*c.Lower), int64(*c.Upper)
	if b.Trunc {
		out := make([]any, 0, b.dateCount(lo, hi))
		for v := b.dateValue(lo); v <= hi; {
			out = append(out, v)
			// The next unit starts after this one: step past its end.
			next := v
			switch {
			case b.Field == "hour":
				next += microsPerHour
			case b.Field == "minute":
				next += microsPerMinute
			case b.Type == catalog.Timestamp:
				d := v / catalog.MicrosPerDay
				next = b.dateValue(nextDayStart(b.Field, d) * catalog.MicrosPerDay)
			default:
				next = b.dateValue(nextDayStart(b.Field, v))
			}
			if next <= v {
				break
			}
			v = next
		}
		return out
	}
	var vals []int64
	d1, d2 := floorDivDay(b, lo), floorDivDay(b, hi)
	switch {
	case b.Field == "year":
		y1, _, _ := catalog.DateOf(d1)
		y2, _, _ := catalog.DateOf(d2)
		for y := y1; y <= y2; y++ {
			vals = append(vals, int64(y))
		}
	case b.Type == catalog.Date && d2-d1 < 800:
		// A range of a few years at most: the fields its days take.
		seen := map[int64]bool{}
		for d := d1; d <= d2; d++ {
			seen[b.dateValue(d)] = true
		}
		lo, hi := fieldDomain(b.Field)
		for v := lo; v <= hi; v++ {
			if seen[v] {
				vals = append(vals, v)
			}
		}
	default:
		lo, hi := fieldDomain(b.Field)
		for v := lo; v <= hi; v++ {
			vals = append(vals, v)
		}
	}
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = v
	}
	return out
}

// nextDayStart is a day in the unit after the one holding day d.
func nextDayStart(unit string, d int64) int64 {
	y, m, _ := catalog.DateOf(d)
	switch unit {
	case "year":
		return catalog.DaysOf(y+1, 1, 1)
	case "quarter":
		return catalog.DaysOf(y, (m-1)/3*3+4, 1)
	case "month":
		return catalog.DaysOf(y, m+1, 1)
	case "week":
		return truncDay("week", d) + 7
	}
	return d + 1
}

// fieldDomain is every value an EXTRACT field can take.
func fieldDomain(field string) (int64, int64) {
	switch field {
	case "quarter":
		return 1, 4
	case "month":
		return 1, 12
	case "day":
		return 1, 31
	case "dow":
		return 0, 6
	case "isodow":
		return 1, 7
	case "doy":
		return 1, 366
	case "week":
		return 1, 53
	case "hour":
		return 0, 23
	case "minute":
		return 0, 59
	}
	return 0, 0
}

// dateString spells the date function as SQL.
func dateString(field, column string, trunc bool) string {
	if trunc {
		return fmt.Sprintf("date_trunc('%s', %s)", field, column)
	}
	return fmt.Sprintf("EXTRACT(%s FROM %s)", field, column)
}

// dateSQL renders the date function of a column value for the engine, as
// a BIGINT: the column clamped to its bounds in the plan's relation (NULL
// kept NULL), made a date again, and the engine's date_trunc or extract
// applied. Every step is total for every clamped value.
func (g *sqlGen) dateSQL(column, field string, trunc bool) (string, error) {
	d := g.d
	c := g.p.Table.Column(column)
	if c == nil || !c.Bounded() || !c.Type.Temporal() {
		return "", fmt.Errorf("query: %s needs a bounded date or timestamp column", dateString(field, column, trunc))
	}
	col := g.colRef(column)
	big, dbl := d.TypeName(engine.Integer), d.TypeName(engine.Double)
	clamped := fmt.Sprintf("(CASE WHEN %s IS NULL THEN NULL ELSE least(greatest(%s, %d), %d) END)", col, col, int64(*c.Lower), int64(*c.Upper))
	day := clamped
	tod := ""
	if c.Type == catalog.Timestamp {
		// Within ±2^53, floor(v / w) computed in doubles is exact for
		// every whole w ≥ 1.
		x := "CAST(" + clamped + " AS " + dbl + ")"
		switch {
		case trunc && (field == "hour" || field == "minute"):
			w := int64(microsPerHour)
			if field == "minute" {
				w = microsPerMinute
			}
			return fmt.Sprintf("(CAST(floor(%s / CAST(%d AS %s)) AS %s) * %d)", x, w, dbl, big, w), nil
		}
		day = fmt.Sprintf("floor(%s / CAST(%d AS %s))", x, int64(catalog.MicrosPerDay), dbl)
		tod = fmt.Sprintf("(%s - %s * CAST(%d AS %s))", x, day, int64(catalog.MicrosPerDay), dbl)
	}
	var out string
	switch {
	case trunc:
		out = engine.TruncDay(d, field, day)
		if c.Type == catalog.Timestamp {
			out = fmt.Sprintf("(%s * %d)", out, int64(catalog.MicrosPerDay))
		}
	case field == "hour":
		out = fmt.Sprintf("CAST(floor(%s / CAST(%d AS %s)) AS %s)", tod, int64(microsPerHour), dbl, big)
	case field == "minute":
		out = fmt.Sprintf("(CAST(floor(%s / CAST(%d AS %s)) AS %s) %% 60)", tod, int64(microsPerMinute), dbl, big)
	default:
		out = engine.DatePart(d, field, day)
	}
	return out, nil
}

// dateScalar parses a date function inside an aggregate.
func (p *parser) dateScalar(fc *pg.FuncCall) (Scalar, error) {
	field, col, trunc, err := p.dateArgs(fc)
	if err != nil {
		return nil, err
	}
	return DatePart{Column: col.Name, Field: field, Trunc: trunc}, nil
}

// datePartRange is the span of a DatePart over the column's bounds in t.
func datePartRange(x DatePart, t *catalog.Table) (span, error) {
	c := t.Column(x.Column)
	if c == nil || !c.Bounded() || !c.Type.Temporal() {
		return span{}, refuse("%s needs a date or timestamp column with declared bounds", dateString(x.Field, x.Column, x.Trunc))
	}
	b := &Bucket{Kind: DateBucket, Column: x.Column, Field: x.Field, Trunc: x.Trunc, Type: c.Type}
	lo, hi := int64(*c.Lower), int64(*c.Upper)
	if x.Trunc {
		return span{lo: float64(b.dateValue(lo)), hi: float64(b.dateValue(hi)), isInt: true, nullable: true}, nil
	}
	if x.Field == "year" {
		y1, _, _ := catalog.DateOf(floorDivDay(b, lo))
		y2, _, _ := catalog.DateOf(floorDivDay(b, hi))
		return span{lo: float64(y1), hi: float64(y2), isInt: true, nullable: true}, nil
	}
	vals := b.dateValues(t)
	out := span{lo: math.Inf(1), hi: math.Inf(-1), isInt: true, nullable: true}
	for _, v := range vals {
		f := float64(v.(int64))
		out.lo, out.hi = math.Min(out.lo, f), math.Max(out.hi, f)
	}
	return out, nil
}

// dateConstant reads DATE '…' in an aggregated expression as its number of
// days since 1970-01-01 (date − date is a number of days).
func dateConstant(tc *pg.TypeCast) (Scalar, bool, error) {
	typ, _ := castType(tc.TypeName)
	if !typ.Temporal() {
		return nil, false, nil
	}
	c := tc.Arg.GetAConst()
	if c == nil {
		return nil, true, refuse("casts to %s are supported on literals only, e.g. DATE '2024-03-01'", typ)
	}
	if typ != catalog.Date {
		return nil, true, refuse("timestamps cannot be computed with in an aggregated expression; use EXTRACT(field FROM ts) or date_trunc")
	}
	o, err := constOperand(c)
	if err != nil {
		return nil, true, err
	}
	s, ok := o.Value.(string)
	if !ok {
		return nil, true, refuse("DATE takes a string such as '2024-03-01', got %v", o.Value)
	}
	d, err := parseTemporal(catalog.Date, s)
	if err != nil {
		return nil, true, err
	}
	return Constant{Value: float64(d), Int: true, Type: catalog.Date}, true, nil
}

// renderTemporalKeys spells the released keys of date and timestamp
// columns, and of their truncations, as dates and timestamps.
func renderTemporalKeys(p *Plan, res *Result) {
	q := p.Query
	for i, o := range q.Outputs {
		if !o.IsKey() {
			continue
		}
		var t catalog.Type
		if b := q.Buckets[o.Key]; b != nil {
			if b.Kind == DateBucket && b.Trunc {
				t = b.Type
			}
		} else if c := p.Table.Column(o.Key); c != nil {
			t = c.Type
		}
		if !t.Temporal() {
			continue
		}
		for _, row := range res.Rows {
			if v, ok := row[i].(int64); ok {
				row[i] = catalog.FormatValue(t, v)
			}
		}
	}
}

// renderTemporalAggregates spells the released MIN, MAX and quantiles of
// dates and timestamps (days or microseconds since 1970-01-01) as dates
// and timestamps, once HAVING and ORDER BY have compared them as numbers.
func renderTemporalAggregates(p *Plan, res *Result) {
	q := p.Query
	for i, o := range q.Outputs {
		if t := aggTemporal(o.Agg, q.Derived, p.Table); t != "" && o.Post == nil {
			for _, row := range res.Rows {
				if v, ok := row[i].(float64); ok {
					row[i] = temporalValue(t, v)
				}
			}
		}
	}
}

// foldInterval reads DATE '…' ± INTERVAL '…' (or a TIMESTAMP, or a
// date plus or minus several intervals) as one literal, when a is such an
// expression: ok is false otherwise. Adding months keeps the day of the
// month, or takes the month's last day when it has fewer days (2024-01-31
// + 1 month is 2024-02-29), as the engines do.
func (p *parser) foldInterval(a *pg.A_Expr) (Operand, bool, error) {
	op := opName(a)
	if a.Kind != pg.A_Expr_Kind_AEXPR_OP || (op != "+" && op != "-") || a.Lexpr == nil || !isInterval(a.Rexpr) {
		return Operand{}, false, nil
	}
	var base Operand
	switch {
	case a.Lexpr.GetAExpr() != nil:
		b, ok, err := p.foldInterval(a.Lexpr.GetAExpr())
		if !ok || err != nil {
			return Operand{}, ok, err
		}
		base = b
	case a.Lexpr.GetTypeCast() != nil && a.Lexpr.GetTypeCast().Arg.GetAConst() != nil:
		b, err := castConst(a.Lexpr.GetTypeCast().Arg.GetAConst(), a.Lexpr.GetTypeCast().TypeName)
		if err != nil {
			return Operand{}, true, err
		}
		base = b
	default:
		return Operand{}, true, refuse("INTERVAL arithmetic is supported on DATE and TIMESTAMP literals only, e.g. DATE '2024-03-01' - INTERVAL '30 days'; compare the column with the result")
	}
	if !base.Type.Temporal() {
		return Operand{}, true, refuse("INTERVAL is added to DATE or TIMESTAMP literals only, not to %s", operandString(base, nil))
	}
	tc := a.Rexpr.GetTypeCast()
	c := tc.Arg.GetAConst()
	text := ""
	if sv, ok := c.GetVal().(*pg.A_Const_Sval); ok {
		text = sv.Sval.Sval
	}
	months, micros, err := parseInterval(text)
	if err != nil || len(tc.TypeName.Typmods) > 0 {
		return Operand{}, true, refuse("cannot read INTERVAL '%s': want a whole number and a unit, several separated by spaces, e.g. INTERVAL '1 month', INTERVAL '2 weeks 3 days' (units: year, month, week, day, hour, minute, second)", text)
	}
	if op == "-" {
		months, micros = -months, -micros
	}
	v := base.Value.(int64)
	if base.Type == catalog.Date {
		if micros%catalog.MicrosPerDay != 0 {
			return Operand{}, true, refuse("DATE %s INTERVAL '%s': a date moves by whole days; use a TIMESTAMP literal for hours, minutes and seconds", op, text)
		}
		v = addMonths(v, months) + micros/catalog.MicrosPerDay
		if v < catalog.MinDate || v > catalog.MaxDate {
			return Operand{}, true, refuse("DATE %s INTERVAL '%s' leaves the dates from 0001-01-01 to 9999-12-31", op, text)
		}
	} else {
		d := floorDiv(v, catalog.MicrosPerDay)
		v = addMonths(d, months)*catalog.MicrosPerDay + (v - d*catalog.MicrosPerDay) + micros
		if v < catalog.MinTimestamp || v > catalog.MaxTimestamp {
			return Operand{}, true, refuse("TIMESTAMP %s INTERVAL '%s' leaves the timestamps dpstat reads (1684 to 2255)", op, text)
		}
	}
	return Operand{Kind: Literal, Value: v, Type: base.Type}, true, nil
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

// parseInterval reads "n unit [n unit …]" into months and microseconds.
func parseInterval(s string) (months, micros int64, err error) {
	f := strings.Fields(strings.ToLower(s))
	if len(f) == 0 || len(f)%2 != 0 || len(f) > 16 {
		return 0, 0, fmt.Errorf("bad interval")
	}
	for i := 0; i < len(f); i += 2 {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil || n > 1_000_000 || n < -1_000_000 {
			return 0, 0, fmt.Errorf("bad count")
		}
		switch strings.TrimSuffix(f[i+1], "s") {
		case "year":
			months += 12 * n
		case "month", "mon":
			months += n
		case "week":
			micros += 7 * n * catalog.MicrosPerDay
		case "day":
			micros += n * catalog.MicrosPerDay
		case "hour":
			micros += n * microsPerHour
		case "minute", "min":
			micros += n * microsPerMinute
		case "second", "sec":
			micros += n * 1_000_000
		default:
			return 0, 0, fmt.Errorf("bad unit")
		}
	}
	return months, micros, nil
}

// addMonths moves a day by n months, keeping the day of the month or
// taking the last day of a shorter month.
func addMonths(d, n int64) int64 {
	if n == 0 {
		return d
	}
	y, m, day := catalog.DateOf(d)
	total := int64(y)*12 + int64(m-1) + n
	ny, nm := floorDiv(total, 12), total-floorDiv(total, 12)*12+1
	_, _, lastDay := catalog.DateOf(catalog.DaysOf(int(ny), time.Month(nm)+1, 1) - 1)
	return catalog.DaysOf(int(ny), time.Month(nm), min(day, lastDay))
}

// KeyTypes names the catalog type of each visible output that is a group
// key ("date", "timestamp", "int", "text", …) or a MIN, MAX or quantile
// of a date or timestamp ("date", "timestamp"), and "" for other aggregates,
// computed outputs and keys whose type is best read from their values
// (numeric bins), in the order of the answer's columns. Clients type
// their result columns by it.
func (p *Plan) KeyTypes() []string {
	var out []string
	for _, o := range p.Query.Outputs {
		if o.Hidden {
			continue
		}
		t := string(aggTemporal(o.Agg, p.Query.Derived, p.Table))
		if o.IsKey() {
			if b := p.Query.Buckets[o.Key]; b != nil {
				switch {
				case b.Kind == DateBucket && b.Trunc:
					t = string(b.Type)
				case b.Kind == DateBucket:
					t = string(catalog.Int)
				case b.Kind == TextBucket:
					t = map[string]string{"text": "text", "number": "int", "bool": "bool"}[b.Fn.kind()]
				case b.Kind == CaseBucket && b.kind() != "number":
					t = b.kind()
				case b.Kind == WidthBucket:
					t = string(catalog.Int)
				}
			} else if c := p.Table.Column(o.Key); c != nil {
				t = string(c.Type)
			}
		}
		out = append(out, t)
	}
	return out
}

// shiftedCompare reads col ± INTERVAL '…' op literal (either side) as col
// op (literal ∓ interval), which is the same condition for whole days and
// hours, and lets the bounds narrow as for any comparison; ok is false
// when neither side is a column plus an interval. Months are refused: a
// month shift of the column cannot be moved to the literal exactly.
func (p *parser) shiftedCompare(a *pg.A_Expr, op string) (Expr, bool, error) {
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
		return nil, true, refuse("INTERVAL is added to dates and timestamps; %s is not one", operandString(col, nil))
	}
	tc := x.Rexpr.GetTypeCast()
	text := ""
	if sv, ok := tc.Arg.GetAConst().GetVal().(*pg.A_Const_Sval); ok {
		text = sv.Sval.Sval
	}
	months, micros, err := parseInterval(text)
	if err != nil || len(tc.TypeName.Typmods) > 0 {
		return nil, true, refuse("cannot read INTERVAL '%s': want a whole number and a unit, several separated by spaces, e.g. INTERVAL '30 days' (units: week, day, hour, minute, second)", text)
	}
	if months != 0 {
		return nil, true, refuse("%s %s INTERVAL '%s': a column shifted by months or years is not supported; shift the literal instead, e.g. %s > DATE '2024-06-01' - INTERVAL '%s'", col.Column, opName(x), text, col.Column, text)
	}
	shift := micros
	if t == catalog.Date {
		if micros%catalog.MicrosPerDay != 0 {
			return nil, true, refuse("%s %s INTERVAL '%s': a date moves by whole days", col.Column, opName(x), text)
		}
		shift = micros / catalog.MicrosPerDay
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
	if lit.Kind != Literal || lit.Type != t || !ok {
		return nil, true, refuse("compare %s %s INTERVAL '%s' with a %s literal, e.g. DATE '2024-06-01'", col.Column, opName(x), text, t)
	}
	// col + s op v ⇔ col op v − s, on either side.
	lit.Value = v - shift
	if left {
		return Compare{Op: op, Left: col, Right: lit}, true, nil
	}
	return Compare{Op: op, Left: lit, Right: col}, true, nil
}

// MIN, MAX, MEDIAN and percentile_cont of a date or timestamp are
// released as for numbers: the exponential mechanism over a public grid of
// the column's declared range of days or microseconds (an integer grid when
// the range has at most QuantileBins values), the selected candidate
// rounded to a whole day or microsecond and spelled as a date or timestamp
// (renderTemporal). Their argument may be the column shifted by a fixed
// INTERVAL of days, weeks (or, for a timestamp, hours, minutes, seconds):
// a derived column whose bounds are the declared ones shifted by the
// interval, which must stay within the dates (timestamps) dpstat reads.

// quantileArg reads the argument of MIN, MAX, MEDIAN or percentile_cont
// when it is a date or timestamp column, or one shifted by an INTERVAL
// (col ± INTERVAL '…'); ok is false for any other argument.
func (p *parser) quantileArg(n *pg.Node) (Scalar, bool, error) {
	if cr := n.GetColumnRef(); cr != nil {
		col, err := p.columnRef(cr)
		if err != nil || !col.Type.Temporal() {
			return nil, false, nil
		}
		if !col.Bounded() {
			return nil, true, refuse("MIN, MAX and quantiles of %s need declared bounds: declare `lower:` and `upper:` for %s in the catalog (e.g. lower: \"2024-01-01\")", col.Name, col.Name)
		}
		return ColumnValue{Column: col.Name}, true, nil
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
func (p *parser) shiftedScalar(a *pg.A_Expr, timestamp bool) (Scalar, bool, error) {
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
		return nil, true, refuse("%s: INTERVAL is added to dates and timestamps; column %s is %s", expr, col.Name, col.Type)
	}
	if col.Type == catalog.Timestamp && !timestamp {
		return nil, true, refuse("%s: a shifted timestamp is supported as the whole argument of MIN, MAX, MEDIAN or percentile_cont only; elsewhere use EXTRACT(field FROM %s) or date_trunc", expr, col.Name)
	}
	months, micros, err := parseInterval(text)
	if err != nil || len(tc.TypeName.Typmods) > 0 {
		return nil, true, refuse("cannot read INTERVAL '%s': want a whole number and a unit, several separated by spaces, e.g. INTERVAL '30 days' (units: week, day, hour, minute, second)", text)
	}
	if months != 0 {
		return nil, true, refuse("%s: a column shifted by months or years is not supported in an aggregate; shift it by days or weeks, e.g. INTERVAL '30 days'", expr)
	}
	shift, lo, hi := micros, int64(catalog.MinTimestamp), int64(catalog.MaxTimestamp)
	if col.Type == catalog.Date {
		if micros%catalog.MicrosPerDay != 0 {
			return nil, true, refuse("%s: a date moves by whole days; use days or weeks", expr)
		}
		shift, lo, hi = micros/catalog.MicrosPerDay, catalog.MinDate, catalog.MaxDate
	}
	if !col.Bounded() {
		return nil, true, refuse("%s needs declared bounds for %s: declare `lower:` and `upper:` (e.g. lower: \"2024-01-01\")", expr, col.Name)
	}
	if op == "-" {
		shift = -shift
	}
	if l, u := int64(*col.Lower)+shift, int64(*col.Upper)+shift; l < lo || u > hi {
		return nil, true, refuse("%s leaves the %ss dpstat reads (%s to %s) over the declared range of %s", expr, col.Type,
			catalog.FormatValue(col.Type, lo), catalog.FormatValue(col.Type, hi), col.Name)
	}
	if shift < 0 {
		return Arith{Op: "-", L: ColumnValue{Column: col.Name}, R: Constant{Value: float64(-shift), Int: true}}, true, nil
	}
	return Arith{Op: "+", L: ColumnValue{Column: col.Name}, R: Constant{Value: float64(shift), Int: true}}, true, nil
}

// scalarTemporal is the date or timestamp type of a derived value over the
// columns of t: a temporal column, a DATE literal, a truncation, one
// shifted by a number (date + n, date − n), or a CASE, LEAST, GREATEST or
// COALESCE of values of one temporal type; "" for a number (date − date
// is a number of days).
func scalarTemporal(s Scalar, t *catalog.Table) catalog.Type {
	switch x := s.(type) {
	case ColumnValue:
		if c := t.Column(x.Column); c != nil && c.Type.Temporal() {
			return c.Type
		}
	case Constant:
		return x.Type
	case DatePart:
		if c := t.Column(x.Column); c != nil && x.Trunc {
			return c.Type
		}
	case Arith:
		l, r := scalarTemporal(x.L, t), scalarTemporal(x.R, t)
		switch {
		case (x.Op == "+" || x.Op == "-") && l != "" && r == "":
			return l
		case x.Op == "+" && l == "" && r != "":
			return r
		}
	case Cond:
		args := append([]Scalar{}, x.Thens...)
		if x.Else != nil {
			args = append(args, x.Else)
		}
		return commonTemporal(args, t)
	case Call:
		switch x.Func {
		case "least", "greatest", "coalesce":
			return commonTemporal(x.Args, t)
		case "nullif":
			if len(x.Args) > 0 {
				return scalarTemporal(x.Args[0], t)
			}
		}
	}
	return ""
}

// commonTemporal is the temporal type every value of args has, or "".
func commonTemporal(args []Scalar, t *catalog.Table) catalog.Type {
	var out catalog.Type
	for i, a := range args {
		at := scalarTemporal(a, t)
		if at == "" || (i > 0 && at != out) {
			return ""
		}
		out = at
	}
	return out
}

// aggTemporal is the date or timestamp type of an aggregate's released
// value: MIN, MAX, MEDIAN and percentile_cont of a temporal column or
// expression; "" for a number.
func aggTemporal(a *Aggregate, derived map[string]*Derived, t *catalog.Table) catalog.Type {
	if a == nil || a.Func != Quantile {
		return ""
	}
	if dv := derived[a.Column]; dv != nil {
		return scalarTemporal(dv.Expr, t)
	}
	if c := t.Column(a.Column); c != nil && c.Type.Temporal() {
		return c.Type
	}
	return ""
}

// temporalValue rounds a released day or microsecond count to a whole
// one within the values dpstat reads and spells it.
func temporalValue(t catalog.Type, x float64) string {
	lo, hi := float64(catalog.MinTimestamp), float64(catalog.MaxTimestamp)
	if t == catalog.Date {
		lo, hi = catalog.MinDate, catalog.MaxDate
	}
	if math.IsNaN(x) {
		x = lo
	}
	return catalog.FormatValue(t, int64(math.Min(hi, math.Max(lo, math.Round(x)))))
}

// gridValue spells a candidate of an aggregate's quantile grid for
// EXPLAIN: a date or timestamp for a temporal aggregate, else the number.
func (p *Plan) gridValue(a Aggregate, x float64) string {
	if t := aggTemporal(&a, p.Query.Derived, p.Table); t != "" {
		return temporalValue(t, x)
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// checkTemporalArg refuses SUM, AVG and the variances of an expression
// whose values are dates (signup + 7, date_trunc('month', signup)): a
// sum of dates means nothing, as for a date column itself. COUNT, MIN,
// MAX and quantiles take them.
func (p *parser) checkTemporalArg(f AggFunc, name string, s Scalar) error {
	if f == Count || f == Quantile {
		return nil
	}
	if t := scalarTemporal(s, p.table); t != "" {
		return refuse("%s(%s): the expression is a %s, which is not summed or averaged; use MIN, MAX or MEDIAN of it, or a number of days, e.g. %s(signup - DATE '2024-01-01')",
			strings.ToUpper(name), scalarString(s), t, strings.ToUpper(name))
	}
	return nil
}
