package sqlgen

import (
	"fmt"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/ir"
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
	clamped := fmt.Sprintf("(CASE WHEN %s IS NULL THEN NULL ELSE least(greatest(%s, %d), %d) END)", col, col, int64(*c.Lower), int64(*c.Upper))
	shift := x.Shift
	if c.Type == catalog.Date {
		if shift%catalog.MicrosPerDay != 0 {
			return "", fmt.Errorf("query: %s moves a date by part of a day", ir.DateString(field, column, trunc, x.Shift))
		}
		shift /= catalog.MicrosPerDay
	}
	switch {
	case shift > 0:
		clamped = fmt.Sprintf("(%s + %d)", clamped, shift)
	case shift < 0:
		clamped = fmt.Sprintf("(%s - %d)", clamped, -shift)
	}
	day := clamped
	tod := ""
	if c.Type == catalog.Timestamp {
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
		out = fmt.Sprintf("CAST(floor(%s / CAST(%d AS %s)) AS %s)", tod, int64(ir.MicrosPerHour), dbl, big)
	case field == "minute":
		out = fmt.Sprintf("(CAST(floor(%s / CAST(%d AS %s)) AS %s) %% 60)", tod, int64(ir.MicrosPerMinute), dbl, big)
	default:
		out = engine.DatePart(d, field, day)
	}
	return out, nil
}
