package sqlgen

import (
	"fmt"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// dateSQL renders the date function of a column value for the engine, as
// a BIGINT: the column clamped to its bounds in the plan's relation (NULL
// kept NULL), moved by the part's shift (whole days for a date,
// microseconds for a timestamp), made a date again, and the engine's
// date_trunc or extract applied. Every step is total for every clamped
// value: the parser checked that the shifted bounds stay within the
// dates and timestamps dpstat reads.
func (g *sqlGen) dateSQL(x ir.DatePart) (string, error) {
	d := g.d
	column, field, trunc := x.Column, x.Field, x.Trunc
	c := g.p.Table.Column(column)
	if c == nil || !c.Bounded() || !c.Type.Temporal() {
		return "", fmt.Errorf("query: %s needs a bounded date or timestamp column", ir.DateString(field, column, trunc, x.Shift))
	}
	col := g.colRef(column)
	big, dbl := d.TypeName(engine.Integer), d.TypeName(engine.Double)
	// The column read as the 64-bit integer the plan takes it for (a
	// per-person MIN of a date is a double on some engines), beside
	// integer bounds: ClickHouse's least and greatest refuse a Float64
	// beside a UInt64 or Int64 constant.
	clamped := fmt.Sprintf("(CASE WHEN %s IS NULL THEN NULL ELSE least(greatest(CAST(%s AS %s), %d), %d) END)", col, col, big, int64(*c.Lower), int64(*c.Upper))
	shift := x.Shift
	if c.Type == schema.Date {
		if shift%schema.MicrosPerDay != 0 {
			return "", fmt.Errorf("query: %s moves a date by part of a day", ir.DateString(field, column, trunc, x.Shift))
		}
		shift /= schema.MicrosPerDay
	}
	if err := g.checkDayRange(x, c, shift); err != nil {
		return "", err
	}
	switch {
	case shift > 0:
		clamped = fmt.Sprintf("(%s + %d)", clamped, shift)
	case shift < 0:
		clamped = fmt.Sprintf("(%s - %d)", clamped, -shift)
	}
	day := clamped
	tod := ""
	if c.Type == schema.Timestamp {
		// Within ±2^53, floor(v / w) computed in doubles is exact for
		// every whole w ≥ 1.
		x := "CAST(" + clamped + " AS " + dbl + ")"
		switch {
		case trunc && (field == "hour" || field == "minute"):
			w := int64(ir.MicrosPerHour)
			if field == "minute" {
				w = ir.MicrosPerMinute
			}
			return fmt.Sprintf("(CAST(floor(%s / CAST(%d AS %s)) AS %s) * %d)", x, w, dbl, big, w), nil
		}
		day = fmt.Sprintf("floor(%s / CAST(%d AS %s))", x, int64(schema.MicrosPerDay), dbl)
		tod = fmt.Sprintf("(%s - %s * CAST(%d AS %s))", x, day, int64(schema.MicrosPerDay), dbl)
	}
	var out string
	switch {
	case trunc:
		out = engine.TruncDay(d, field, day)
		if c.Type == schema.Timestamp {
			out = fmt.Sprintf("(%s * %d)", out, int64(schema.MicrosPerDay))
		}
	case field == "hour":
		out = fmt.Sprintf("CAST(floor(%s / CAST(%d AS %s)) AS %s)", tod, int64(ir.MicrosPerHour), dbl, big)
	case field == "minute":
		out = fmt.Sprintf("(CAST(floor(%s / CAST(%d AS %s)) AS %s) %% 60)", tod, int64(ir.MicrosPerMinute), dbl, big)
	default:
		out = engine.DatePart(d, field, day)
	}
	return out, nil
}

// checkDayRange refuses, on a dialect whose date functions compute within
// a range of days only (engine.DayRanger), a shift that can move a value
// the engine holds within the column's bounds out of that range: the
// engine would clamp it into the range, and its key would differ from
// the other engines' (or from every listed key). shift is in the
// column's units. It also refuses a column whose declared range lies
// wholly outside that range, shifted or not: every value would be clamped
// to a bound the engine cannot hold. Hours and minutes of a timestamp are
// integer arithmetic on every engine and need no check.
func (g *sqlGen) checkDayRange(x ir.DatePart, c *ir.Column, shift int64) error {
	dr, ok := g.d.(engine.DayRanger)
	if !ok || (c.Type == schema.Timestamp && (x.Field == "hour" || x.Field == "minute")) {
		return nil
	}
	first, last := dr.DayRange()
	lo, hi := int64(*c.Lower), int64(*c.Upper)
	day := func(v int64) int64 { return v }
	if c.Type == schema.Timestamp {
		// The engine holds timestamps of the days of its range only.
		lo, hi = max(lo, first*schema.MicrosPerDay), min(hi, (last+1)*schema.MicrosPerDay-1)
		day = func(v int64) int64 { return ir.FloorDiv(v, schema.MicrosPerDay) }
	} else {
		lo, hi = max(lo, first), min(hi, last)
	}
	if lo > hi {
		// Every value is clamped to a bound outside the range.
		return ir.Refuse("%s: this engine's date functions compute from %s to %s only, and the declared range of %s (from %s to %s) lies outside it; declare the range of the dates the table holds",
			ir.DateString(x.Field, x.Column, x.Trunc, x.Shift), schema.FormatDate(first), schema.FormatDate(last), c.Name,
			schema.FormatValue(c.Type, int64(*c.Lower)), schema.FormatValue(c.Type, int64(*c.Upper)))
	}
	if shift == 0 || (day(lo+shift) >= first && day(hi+shift) <= last) {
		return nil
	}
	return ir.Refuse("%s: this engine's date functions compute from %s to %s only, and the shift moves values of %s it holds (from %s to %s) outside that range; shift by less, or narrow the range of %s with WHERE",
		ir.DateString(x.Field, x.Column, x.Trunc, x.Shift), schema.FormatDate(first), schema.FormatDate(last), c.Name,
		schema.FormatValue(c.Type, lo), schema.FormatValue(c.Type, hi), c.Name)
}
