package sqlgen

import (
	"fmt"
	"strings"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/ir"
)

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
	case ir.WidthBucket:
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
	case ir.FloorBucket:
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
	case ir.DateBucket:
		return g.dateSQL(ir.DatePart{Column: b.Column, Field: b.Field, Trunc: b.Trunc, Shift: b.Shift})
	case ir.TextBucket:
		return g.textKeySQL(b)
	case ir.RangeBucket:
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
