package sqlgen

import (
	"github.com/dpstat/dpstat/engine"
)

// Key values are read by the type the plan expects, never by the engine's
// guess: an engine types a computed key by its values (ClickHouse types
// CASE … THEN 1 ELSE 2 END as UInt8, which its driver reads as a bool),
// so every computed key, and every constant the statement returns as a
// statistic, is cast to the planned type in the SQL itself.

// typedKey spells key k's expression e cast to the type of the key's
// planned values: a computed key (a bucket) whose values are integers is
// a 64-bit integer, doubles a double, text text and booleans a boolean. A
// column key is read as its column, which the engine binds with its
// declared type already.
func (g *sqlGen) typedKey(k, e string) string {
	if g.p.Query.Buckets[k] == nil {
		return e
	}
	t, ok := valuesType(g.p.KeyValues(k))
	if !ok {
		return e
	}
	return "CAST(" + e + " AS " + g.d.TypeName(t) + ")"
}

// valuesType is the engine type of the planned values of a key; false
// when they are of no one type (or none is known).
func valuesType(vals []any) (engine.Type, bool) {
	var t engine.Type
	found := false
	for _, v := range vals {
		var vt engine.Type
		switch v.(type) {
		case nil:
			continue
		case int64, int:
			vt = engine.Integer
		case float64:
			vt = engine.Double
		case string:
			vt = engine.Text
		case bool:
			vt = engine.Boolean
		default:
			return 0, false
		}
		if found && vt != t {
			return 0, false
		}
		t, found = vt, true
	}
	return t, found
}

// intConst spells the whole number n as a 64-bit integer of the dialect,
// for a constant statistic (a placeholder, or one person's count).
func (g *sqlGen) intConst(n int64) string {
	return engine.IntConst(g.d, n)
}
