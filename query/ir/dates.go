package ir

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dpstat/dpstat/schema"
)

// DatePart is EXTRACT(Field FROM Column) or date_trunc(Field, Column) of
// a date or timestamp column, as a number of the project stage (a
// truncation is its days or microseconds since 1970-01-01).
type DatePart struct {
	Column string
	Field  string
	Trunc  bool
	// Shift moves the column by a fixed interval before the function
	// applies, in microseconds (whole days for a date column), as in
	// date_trunc('month', signup + INTERVAL '7 days'); 0 for none.
	Shift int64
}

func (DatePart) scalarNode() {}

// TruncUnits and ExtractFields are the date_trunc units and EXTRACT
// fields dpstat computes, each with the column types it applies to.
var (
	TruncUnits = map[string]bool{"year": true, "quarter": true, "month": true, "week": true, "day": true, "hour": false, "minute": false}
	// ExtractFields maps each field to whether it applies to dates (true)
	// or only to timestamps (false).
	ExtractFields = map[string]bool{"year": true, "quarter": true, "month": true, "week": true, "day": true,
		"dow": true, "isodow": true, "doy": true, "hour": false, "minute": false}
)

// Microseconds in an hour and in a minute, the units of timestamps.
const (
	MicrosPerHour   = 3_600_000_000
	MicrosPerMinute = 60_000_000
)

// IsDateFunc reports whether a function name is a date function of the
// project stage.
func IsDateFunc(name string) bool {
	return name == "date_trunc" || name == "extract" || name == "date_part"
}

// TemporalLiteral reads DATE '…' or TIMESTAMP '…'.
func TemporalLiteral(t schema.Type, s string) (Operand, error) {
	v, err := ParseTemporal(t, s)
	if err != nil {
		return Operand{}, err
	}
	return Operand{Kind: Literal, Value: v, Type: t}, nil
}

// ParseTemporal reads a date ("2024-01-31") or timestamp literal of type t
// as days or microseconds since 1970-01-01.
func ParseTemporal(t schema.Type, s string) (int64, error) {
	if t == schema.Date {
		d, err := schema.ParseDate(s)
		if err != nil || d < schema.MinDate || d > schema.MaxDate {
			return 0, Refuse("cannot read '%s' as a date: want YYYY-MM-DD from 0001-01-01 to 9999-12-31, e.g. DATE '2024-03-01'", s)
		}
		return d, nil
	}
	us, err := schema.ParseTimestamp(s)
	if err != nil {
		return 0, Refuse("cannot read '%s' as a timestamp: want YYYY-MM-DD HH:MM:SS from 1684 to 2255, e.g. TIMESTAMP '2024-03-01 13:45:00'", s)
	}
	return us, nil
}

// FloorDiv is a / b rounded down (b > 0).
func FloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// CheckCount refuses a DateBucket whose image over the column's bounds in
// t (declared, narrowed by WHERE) has more than MaxGroups values, counted
// without listing them; the plan calls it before anything lists them.
func (b *Bucket) CheckCount(t *Table) error {
	if b.Kind != DateBucket {
		return nil
	}
	c := t.Column(b.Column)
	if c == nil || !c.Bounded() {
		return fmt.Errorf("query: %s needs a bounded column", b)
	}
	if lo, hi := b.shiftedBounds(c); b.dateCount(lo, hi) > MaxGroups {
		n := b.dateCount(lo, hi)
		return Refuse("%s has %d values over the range of %s [%s, %s] (declared, narrowed by WHERE); want at most %d groups: group by a coarser unit or narrow the range",
			b, n, c.Name, schema.FormatValue(c.Type, int64(*c.Lower)), schema.FormatValue(c.Type, int64(*c.Upper)), MaxGroups)
	}
	return nil
}

// unitShift is the bucket's shift in the column's units: days for a date,
// microseconds for a timestamp.
func (b *Bucket) unitShift() int64 {
	if b.Type == schema.Date {
		return b.Shift / schema.MicrosPerDay
	}
	return b.Shift
}

// shiftedBounds is the column's range in t (declared, narrowed by WHERE)
// moved by the bucket's shift: the values the date function is applied
// to.
func (b *Bucket) shiftedBounds(c *Column) (int64, int64) {
	s := b.unitShift()
	return int64(*c.Lower) + s, int64(*c.Upper) + s
}

// dayOf splits a column value into its day (since 1970-01-01) and the
// microseconds since that day's midnight.
func (b *Bucket) dayOf(v int64) (int64, int64) {
	if b.Type == schema.Date {
		return v, 0
	}
	d := FloorDiv(v, schema.MicrosPerDay)
	return d, v - d*schema.MicrosPerDay
}

// truncDay truncates a day to the unit (year, quarter, month, week, day).
func truncDay(unit string, d int64) int64 {
	y, m, _ := schema.DateOf(d)
	switch unit {
	case "year":
		return schema.DaysOf(y, 1, 1)
	case "quarter":
		return schema.DaysOf(y, (m-1)/3*3+1, 1)
	case "month":
		return schema.DaysOf(y, m, 1)
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

// DateKey is the key of the DateBucket b for a column value v (days for a
// date, microseconds for a timestamp) already moved by its shift, as the
// engines compute it.
func (b *Bucket) DateKey(v int64) int64 { return b.dateValue(v) }

// dateValue computes the bucket's key of a column value already moved by
// the bucket's shift, as the engines do.
func (b *Bucket) dateValue(v int64) int64 {
	d, tod := b.dayOf(v)
	if b.Trunc {
		switch b.Field {
		case "hour":
			return FloorDiv(v, MicrosPerHour) * MicrosPerHour
		case "minute":
			return FloorDiv(v, MicrosPerMinute) * MicrosPerMinute
		}
		t := truncDay(b.Field, d)
		if b.Type == schema.Timestamp {
			return t * schema.MicrosPerDay
		}
		return t
	}
	y, m, day := schema.DateOf(d)
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
		return tod / MicrosPerHour
	case "minute":
		return tod / MicrosPerMinute % 60
	}
	return 0
}

// dateCount counts the bucket's values over [lo, hi] without enumerating
// them.
func (b *Bucket) dateCount(lo, hi int64) int64 {
	if !b.Trunc {
		if b.Field == "year" {
			y1, _, _ := schema.DateOf(floorDivDay(b, lo))
			y2, _, _ := schema.DateOf(floorDivDay(b, hi))
			return int64(y2-y1) + 1
		}
		return 60 // every other field has at most 60 values
	}
	switch b.Field {
	case "hour", "minute":
		w := int64(MicrosPerHour)
		if b.Field == "minute" {
			w = MicrosPerMinute
		}
		return FloorDiv(hi, w) - FloorDiv(lo, w) + 1
	}
	d1, d2 := floorDivDay(b, lo), floorDivDay(b, hi)
	y1, m1, _ := schema.DateOf(d1)
	y2, m2, _ := schema.DateOf(d2)
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
// ascending order. The plan checked the count first (CheckCount), so the
// loops are bounded before they start.
func (b *Bucket) dateValues(t *Table) []any {
	lo, hi := b.shiftedBounds(t.Column(b.Column))
	if b.Trunc {
		out := make([]any, 0, b.dateCount(lo, hi))
		for v := b.dateValue(lo); v <= hi; {
			out = append(out, v)
			// The next unit starts after this one: step past its end.
			next := v
			switch {
			case b.Field == "hour":
				next += MicrosPerHour
			case b.Field == "minute":
				next += MicrosPerMinute
			case b.Type == schema.Timestamp:
				d := v / schema.MicrosPerDay
				next = b.dateValue(nextDayStart(b.Field, d) * schema.MicrosPerDay)
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
		y1, _, _ := schema.DateOf(d1)
		y2, _, _ := schema.DateOf(d2)
		for y := y1; y <= y2; y++ {
			vals = append(vals, int64(y))
		}
	case b.Type == schema.Date && d2-d1 < 800:
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
	y, m, _ := schema.DateOf(d)
	switch unit {
	case "year":
		return schema.DaysOf(y+1, 1, 1)
	case "quarter":
		return schema.DaysOf(y, (m-1)/3*3+4, 1)
	case "month":
		return schema.DaysOf(y, m+1, 1)
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

// DateString spells the date function as SQL, of the column moved by
// shift microseconds (ShiftString).
func DateString(field, column string, trunc bool, shift int64) string {
	column = ShiftString(column, shift)
	if trunc {
		return fmt.Sprintf("date_trunc('%s', %s)", field, column)
	}
	return fmt.Sprintf("EXTRACT(%s FROM %s)", field, column)
}

// ShiftString spells a column moved by shift microseconds as SQL, e.g.
// signup + INTERVAL '7 days'; the column alone when shift is 0.
func ShiftString(column string, shift int64) string {
	if shift == 0 {
		return column
	}
	op := "+"
	if shift < 0 {
		op, shift = "-", -shift
	}
	n, unit := shift/1_000_000, "second"
	for _, u := range []struct {
		w    int64
		name string
	}{{7 * schema.MicrosPerDay, "week"}, {schema.MicrosPerDay, "day"}, {MicrosPerHour, "hour"}, {MicrosPerMinute, "minute"}} {
		if shift%u.w == 0 {
			n, unit = shift/u.w, u.name
			break
		}
	}
	if n != 1 {
		unit += "s"
	}
	return fmt.Sprintf("%s %s INTERVAL '%d %s'", column, op, n, unit)
}

// datePartRange is the span of a DatePart over the column's bounds in t.
func datePartRange(x DatePart, t *Table) (Span, error) {
	c := t.Column(x.Column)
	if c == nil || !c.Bounded() || !c.Type.Temporal() {
		return Span{}, Refuse("%s needs a date or timestamp column with declared bounds", DateString(x.Field, x.Column, x.Trunc, x.Shift))
	}
	b := &Bucket{Kind: DateBucket, Column: x.Column, Field: x.Field, Trunc: x.Trunc, Type: c.Type, Shift: x.Shift}
	lo, hi := b.shiftedBounds(c)
	if x.Trunc {
		return Span{Lo: float64(b.dateValue(lo)), Hi: float64(b.dateValue(hi)), IsInt: true, nullable: true}, nil
	}
	if x.Field == "year" {
		y1, _, _ := schema.DateOf(floorDivDay(b, lo))
		y2, _, _ := schema.DateOf(floorDivDay(b, hi))
		return Span{Lo: float64(y1), Hi: float64(y2), IsInt: true, nullable: true}, nil
	}
	vals := b.dateValues(t)
	out := Span{Lo: math.Inf(1), Hi: math.Inf(-1), IsInt: true, nullable: true}
	for _, v := range vals {
		f := float64(v.(int64))
		out.Lo, out.Hi = math.Min(out.Lo, f), math.Max(out.Hi, f)
	}
	return out, nil
}

// ParseInterval reads "n unit [n unit …]" into months and microseconds.
func ParseInterval(s string) (months, micros int64, err error) {
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
			micros += 7 * n * schema.MicrosPerDay
		case "day":
			micros += n * schema.MicrosPerDay
		case "hour":
			micros += n * MicrosPerHour
		case "minute", "min":
			micros += n * MicrosPerMinute
		case "second", "sec":
			micros += n * 1_000_000
		default:
			return 0, 0, fmt.Errorf("bad unit")
		}
	}
	return months, micros, nil
}

// AddMonths moves a day by n months, keeping the day of the month or
// taking the last day of a shorter month.
func AddMonths(d, n int64) int64 {
	if n == 0 {
		return d
	}
	y, m, day := schema.DateOf(d)
	total := int64(y)*12 + int64(m-1) + n
	ny, nm := FloorDiv(total, 12), total-FloorDiv(total, 12)*12+1
	_, _, lastDay := schema.DateOf(schema.DaysOf(int(ny), time.Month(nm)+1, 1) - 1)
	return schema.DaysOf(int(ny), time.Month(nm), min(day, lastDay))
}

// ScalarTemporal is the date or timestamp type of a derived value over the
// columns of t: a temporal column, a DATE literal, a truncation, one
// shifted by a number (date + n, date − n), or a CASE, LEAST, GREATEST or
// COALESCE of values of one temporal type; "" for a number (date − date
// is a number of days).
func ScalarTemporal(s Scalar, t *Table) schema.Type {
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
		l, r := ScalarTemporal(x.L, t), ScalarTemporal(x.R, t)
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
				return ScalarTemporal(x.Args[0], t)
			}
		}
	}
	return ""
}

// commonTemporal is the temporal type every value of args has, or "".
func commonTemporal(args []Scalar, t *Table) schema.Type {
	var out schema.Type
	for i, a := range args {
		at := ScalarTemporal(a, t)
		if at == "" || (i > 0 && at != out) {
			return ""
		}
		out = at
	}
	return out
}

// AggTemporal is the date or timestamp type of an aggregate's released
// value: MIN, MAX, MEDIAN and percentile_cont of a temporal column or
// expression; "" for a number.
func AggTemporal(a *Aggregate, derived map[string]*Derived, t *Table) schema.Type {
	if a == nil || a.Func != Quantile {
		return ""
	}
	if dv := derived[a.Column]; dv != nil {
		return ScalarTemporal(dv.Expr, t)
	}
	if c := t.Column(a.Column); c != nil && c.Type.Temporal() {
		return c.Type
	}
	return ""
}

// TemporalValue rounds a released day or microsecond count to a whole
// one within the values dpstat reads and spells it.
func TemporalValue(t schema.Type, x float64) string {
	lo, hi := float64(schema.MinTimestamp), float64(schema.MaxTimestamp)
	if t == schema.Date {
		lo, hi = schema.MinDate, schema.MaxDate
	}
	if math.IsNaN(x) {
		x = lo
	}
	return schema.FormatValue(t, int64(math.Min(hi, math.Max(lo, math.Round(x)))))
}
