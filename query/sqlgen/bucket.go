package sqlgen

import (
	"fmt"
	"strconv"
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
	// A value that the dialect cannot spell is an error before anything
	// runs, never a NULL in its place.
	var litErr error
	lit := func(v any) string {
		l, err := engine.Literal(g.d, v)
		if err != nil {
			litErr = err
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
		// The engine's date functions compute the key; the plan listed
		// its values with dpstat's calendar. A value the list does not
		// hold (an engine's convention at a corner of the calendar) is
		// NULL, no group, rather than a group the plan did not expect.
		e, err := g.dateSQL(ir.DatePart{Column: b.Column, Field: b.Field, Trunc: b.Trunc, Shift: b.Shift})
		if err != nil {
			return "", err
		}
		return g.listedIntKey(e, b.Values(g.p.Table)), nil
	case ir.TextBucket:
		return g.textKeySQL(b)
	case ir.RangeBucket:
		// The key range [KLo, KHi] was derived by interval arithmetic;
		// the value is mapped into it here as well (enforce what you
		// assume), so that a corner case of the derivation makes a key
		// less accurate, never a group the plan did not list.
		e, err := g.scalarSQL(b.Num)
		if err != nil {
			return "", err
		}
		k := g.clampKey(e, lit(float64(b.KLo)), lit(float64(b.KHi)))
		return engine.CastInt(g.d, k, engine.Integer), litErr
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
	return s.String(), litErr
}

// clampKey spells the double expression e mapped into [lo, hi] with SQL's
// NULL semantics: NULL stays NULL, a value below lo is lo, above hi is hi,
// and NaN (which DuckDB and PostgreSQL order above every number, and
// which no comparison holds for on ClickHouse) is hi on every engine. The
// result lies in [lo, hi] or is NULL, so a cast of it to an integer type
// that holds lo and hi cannot fail, and with whole lo and hi, a cast that
// rounds keeps it in [lo, hi].
func (g *sqlGen) clampKey(e, lo, hi string) string {
	return "CASE WHEN " + e + " <= " + lo + " THEN " + lo + " WHEN " + e + " < " + hi + " THEN " + e + " WHEN " + e + " IS NOT NULL THEN " + hi + " END"
}

// maxListedKeys is the longest key list spelled out in a statement: a
// longer one is enforced by its least and greatest values.
const maxListedKeys = 1000

// listedIntKey spells the integer key expression e kept when it is one of
// vals (int64, ascending), else NULL: with at most maxListedKeys values,
// by membership; with more, by their range, within which the engine's
// date arithmetic and dpstat's list agree by construction (whole units
// from clamped bounds).
func (g *sqlGen) listedIntKey(e string, vals []any) string {
	if len(vals) == 0 {
		return "CAST(NULL AS " + g.d.TypeName(engine.Integer) + ")"
	}
	if len(vals) > maxListedKeys {
		lo, hi := vals[0].(int64), vals[len(vals)-1].(int64)
		return fmt.Sprintf("CASE WHEN %s >= %d AND %s <= %d THEN %s END", e, lo, e, hi, e)
	}
	lits := make([]string, len(vals))
	for i, v := range vals {
		lits[i] = strconv.FormatInt(v.(int64), 10)
	}
	return "CASE WHEN " + e + " IN (" + strings.Join(lits, ", ") + ") THEN " + e + " END"
}
