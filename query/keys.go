package query

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Group keys are values, not text. The engine may spell one value in
// several ways: a float group holding both -0 and 0 is reported with
// whichever it met first, a driver may return an int32 where the plan has an
// int64. Every key the engine returns is made canonical (canonicalValue)
// and looked up by its value (keyID), so that no spelling of a value can
// move a row from one group to another, and a row whose key matches none
// of the plan's groups is an error, never silently dropped.

// canonicalValue maps a driver's value onto the catalog's value types and
// each value onto one spelling: integers of every width become int64,
// float32 becomes float64, -0 becomes 0, every NaN becomes math.NaN(), and
// bytes become a string.
func canonicalValue(v any) any {
	switch x := v.(type) {
	case int32:
		return int64(x)
	case int16:
		return int64(x)
	case int8:
		return int64(x)
	case int:
		return int64(x)
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case float32:
		return canonicalFloat(float64(x))
	case float64:
		return canonicalFloat(x)
	case []byte:
		return string(x)
	}
	return v
}

// canonicalFloat returns 0 for -0 and one NaN for every NaN.
func canonicalFloat(x float64) float64 {
	switch {
	case x == 0:
		return 0
	case math.IsNaN(x):
		return math.NaN()
	}
	return x
}

// canonicalKey makes every value of a key canonical, in place, and returns
// it.
func canonicalKey(k []any) []any {
	for i, v := range k {
		k[i] = canonicalValue(v)
	}
	return k
}

// keyID identifies a key by its values: two keys have the same ID exactly
// when their values are equal as values. Numbers are compared as numbers
// whatever their Go type (an integral float64 equals the int64 of the same
// value), -0 equals 0, NaN equals NaN (a NaN key has one place), and NULL
// equals only NULL.
func keyID(k []any) string {
	var b strings.Builder
	for _, v := range k {
		switch x := canonicalValue(v).(type) {
		case nil:
			b.WriteString("z;")
		case int64:
			b.WriteString("n" + strconv.FormatInt(x, 10) + ";")
		case float64:
			if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
				b.WriteString("n" + strconv.FormatInt(int64(x), 10) + ";")
			} else {
				// NaN, infinities and non-integers: their shortest decimal
				// spelling is unique.
				b.WriteString("n" + strconv.FormatFloat(x, 'g', -1, 64) + ";")
			}
		case string:
			b.WriteString("s" + strconv.Itoa(len(x)) + ":" + x + ";")
		case bool:
			if x {
				b.WriteString("bt;")
			} else {
				b.WriteString("bf;")
			}
		default:
			fmt.Fprintf(&b, "?%T:%v;", x, x)
		}
	}
	return b.String()
}

// keyIndex maps the IDs of keys to their positions.
func keyIndex(keys [][]any) map[string]int {
	index := make(map[string]int, len(keys))
	for i, k := range keys {
		index[keyID(k)] = i
	}
	return index
}

// UnknownKeyError reports an engine row whose group key is none of the
// plan's groups. The generated SQL keeps only the plan's groups, so this is
// an internal error: a row is never dropped silently, since whether it was
// dropped would depend on one person's data.
type UnknownKeyError struct {
	// Key is the engine's key, for the data owner's logs only: it may be
	// a value of the data.
	Key []any
}

// Error reports an unknown group without its key, which may be data.
func (e *UnknownKeyError) Error() string {
	return "internal error: the engine returned a group that is not one of the query's groups"
}

// readKey reads the first n values of an engine row as a canonical key.
func readKey(row []any, n int) []any {
	key := make([]any, n)
	for i := range n {
		key[i] = canonicalValue(row[i])
	}
	return key
}
