package sqlgen

import (
	"fmt"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/ir"
)

// dateSQL renders the date function of a column value for the engine, as
// a BIGINT: the column clamped to its bounds in the plan's relation (NULL
// kept NULL), made a date again, and the engine's date_trunc or extract
// applied. Every step is total for every clamped value.
func (g *sqlGen) dateSQL(column, field string, trunc bool) (string, error) {
	d := g.d
	c := g.p.Table.Column(column)
	if c == nil || !c.Bounded() || !c.Type.Temporal() {
		return "", fmt.Errorf("query: %s needs a bounded date or timestamp column", ir.DateString(field, column, trunc))
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
