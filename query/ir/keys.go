package ir

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// CompareValues orders two answer values: numbers numerically, strings and
// booleans naturally.
func CompareValues(a, b any) int {
	if fa, ok := Number(a); ok {
		if fb, ok := Number(b); ok {
			switch {
			case fa < fb:
				return -1
			case fa > fb:
				return 1
			}
			return 0
		}
	}
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y)
		}
	case bool:
		if y, ok := b.(bool); ok {
			switch {
			case x == y:
				return 0
			case !x:
				return -1
			}
			return 1
		}
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

// Number reads an engine's or a released value as a float64; false when it
// is not a number.
func Number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// CanonicalValue maps a driver's value onto the catalog's value types and
// each value onto one spelling: integers of every width become int64,
// float32 becomes float64, -0 becomes 0, every NaN becomes math.NaN(), and
// bytes become a string.
func CanonicalValue(v any) any {
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
		k[i] = CanonicalValue(v)
	}
	return k
}

// KeyID identifies a key by its values: two keys have the same ID exactly
// when their values are equal as values. Numbers are compared as numbers
// whatever their Go type (an integral float64 equals the int64 of the same
// value), -0 equals 0, NaN equals NaN (a NaN key has one place), and NULL
// equals only NULL.
func KeyID(k []any) string {
	var b strings.Builder
	for _, v := range k {
		switch x := CanonicalValue(v).(type) {
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

// KeyIndex maps the IDs of keys to their positions.
func KeyIndex(keys [][]any) map[string]int {
	index := make(map[string]int, len(keys))
	for i, k := range keys {
		index[KeyID(k)] = i
	}
	return index
}

// UnknownKeyError reports an engine row whose group key is none of the
// plan's groups. The generated SQL maps every key into the plan's groups
// (a range key clamped into its keys, listed keys filtered to the list), so
// this cannot happen: it is kept as an internal error that detects a bug in
// dpstat, and a row is never dropped silently, since whether it was dropped
// would depend on one person's data.
type UnknownKeyError struct {
	// Key is the engine's key, for the data owner's logs only: it may be
	// a value of the data.
	Key []any
}

// Error reports an unknown group without its key, which may be data.
func (e *UnknownKeyError) Error() string {
	return "internal error: the engine returned a group that is not one of the query's groups"
}

// ReadKey reads the first n values of an engine row as a canonical key.
func ReadKey(row []any, n int) []any {
	key := make([]any, n)
	for i := range n {
		key[i] = CanonicalValue(row[i])
	}
	return key
}

// CompareKeys orders key values, NULL first.
func CompareKeys(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	return CompareValues(a, b)
}

// ToBig reads an engine's exact integer (a count or a sum in grid steps) as
// a big.Int, whatever integer or decimal type the driver returns.
func ToBig(v any) (*big.Int, error) {
	switch x := v.(type) {
	case nil:
		return new(big.Int), nil // a sum of no values
	case *big.Int:
		return new(big.Int).Set(x), nil
	case int64:
		return big.NewInt(x), nil
	case int32:
		return big.NewInt(int64(x)), nil
	case int:
		return big.NewInt(int64(x)), nil
	case uint64:
		return new(big.Int).SetUint64(x), nil
	case float64:
		// Exact integers only: the statistics are integer counts and sums.
		if x != math.Trunc(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("non-integer value from the engine")
		}
		b, _ := new(big.Float).SetFloat64(x).Int(nil)
		return b, nil
	}
	return nil, fmt.Errorf("unexpected engine value of type %T", v)
}
