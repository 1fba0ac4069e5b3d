package schema

import (
	"fmt"
	"strings"
)

// Type is a column's type.
type Type string

// The column types.
const (
	Int   Type = "int"
	Float Type = "float"
	Text  Type = "text"
	Bool  Type = "bool"
	// Date is a calendar date, kept as days since 1970-01-01; its bounds
	// and values are written as dates ("2024-03-01").
	Date Type = "date"
	// Timestamp is a date and time without time zone, kept as
	// microseconds since 1970-01-01 00:00:00; its bounds and values are
	// written as "2024-03-01 13:45:00".
	Timestamp Type = "timestamp"
)

// Temporal reports whether the type is date or timestamp.
func (t Type) Temporal() bool { return t == Date || t == Timestamp }

// FormatValue spells a value of a column of type t for people: dates and
// timestamps as such, everything else as Go prints it.
func FormatValue(t Type, v any) string {
	if n, ok := v.(int64); ok {
		switch t {
		case Date:
			return FormatDate(n)
		case Timestamp:
			return FormatTimestamp(n)
		}
	}
	return fmt.Sprint(v)
}

// MaxIntBound is the largest magnitude accepted for the bounds and values
// of an int column: 2^53, so that every bound is exact as a float64 too.
const MaxIntBound = 1 << 53

// MaxRowsPerGroup is the largest max_rows_per_group a table may declare:
// the engines keep a person's values in a group with an aggregate that
// takes at most this many (DuckDB's min_by with a count accepts n below
// 1,000,000). A larger bound would make every query over the table fail in
// the engine, so the catalog refuses it instead.
const MaxRowsPerGroup = 999_999

// ReservedPrefix begins every name that dpstat's statements give their
// own columns, stages and subqueries (u, k0, s0, …, spelled _dp_u,
// _dp_k0, _dp_s0, …). A table or column may not be declared under a name
// that begins with it, in any case (DuckDB's names ignore case), so that
// a generated name never is a data column's: on ClickHouse an alias is
// seen by every expression of its SELECT, where it would take the place
// of the column.
const ReservedPrefix = "_dp_"

// Reserved reports whether name begins with ReservedPrefix, in any case.
func Reserved(name string) bool {
	return len(name) >= len(ReservedPrefix) && strings.EqualFold(name[:len(ReservedPrefix)], ReservedPrefix)
}

// Named returns the item of items whose name (as name spells it) is want,
// compared exactly first and then case-insensitively, as SQL compares
// unquoted names; the zero value when there is none.
func Named[T any](items []T, name func(T) string, want string) T {
	for _, it := range items {
		if name(it) == want {
			return it
		}
	}
	for _, it := range items {
		if strings.EqualFold(name(it), want) {
			return it
		}
	}
	var zero T
	return zero
}
