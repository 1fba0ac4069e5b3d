// Package engine is the small interface between dpstat's query planner and
// the database that computes exact aggregates: run this SQL, give the rows
// back, and say which SQL dialect you speak.
//
// Everything that differs between engines (quoting, random numbers, how a
// file becomes a table, whether QUALIFY exists, the wide integer type for
// exact sums) lives in a Dialect, so the planner writes one engine-neutral
// plan and asks the dialect how to spell it. Implementations live in
// sub-packages named after the engine (engine/duckdb, engine/postgres),
// which register themselves (Register) so that a catalog's `engine:`
// section chooses one (Open) and nothing above this package imports a
// concrete engine.
package engine

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpstat/dpstat/schema"
)

// Engine runs SQL that dpstat generated (never an analyst's text) and
// returns the rows.
type Engine interface {
	// Query runs one statement and returns all its rows. Values are Go
	// values as the engine's driver returns them (int64, float64, string,
	// bool, *big.Int for wide integers, nil for NULL).
	Query(ctx context.Context, sql string, args ...any) (*Rows, error)
	// Dialect says how to spell SQL for this engine.
	Dialect() Dialect
	// Close releases the engine's resources.
	Close() error
}

// Registrar is implemented by engines that can expose a data file as a
// named relation (DuckDB reads CSV and Parquet files directly).
type Registrar interface {
	// RegisterFile makes the file at path, in the given format ("csv" or
	// "parquet"), queryable under name, with the given columns cast to
	// their types. Missing or malformed values become NULL; rows that do
	// not parse are skipped, so no data value can make a later query fail.
	RegisterFile(ctx context.Context, name, path, format string, columns []Column) error
}

// Sampler is implemented by dialects that can bound each person's
// contribution with aggregates instead of a row_number() window over every
// row (a sort): the query generator then keeps at most L∞ values per
// (person, group) with SmallestN over a random key per row, and at most L0
// groups per person with a threshold from NthSmallest.
type Sampler interface {
	// SmallestN spells an aggregate: the list of at most n non-NULL values
	// of arg whose key is smallest.
	SmallestN(arg, key string, n int64) string
	// ListSum spells the exact sum of a list's values (NULL when empty).
	ListSum(list string) string
	// ListCount spells the number of a list's non-NULL values.
	ListCount(list string) string
	// Unnest spells a select-list item giving one row per element of a
	// list.
	Unnest(list string) string
	// NthSmallest spells an aggregate: the n-th smallest value of a
	// non-NULL column, or NULL when there are fewer than n rows.
	NthSmallest(col string, n int64) string
	// Materialized is the keyword that makes a WITH query computed once
	// (so that random values in it are the same wherever it is read).
	Materialized() string
	NullSafe
}

// ExtremeSampler is implemented by Sampler dialects that can keep at most
// two values per (person, group) in one pass over the rows: with one i.i.d.
// random key per row, the rows with the smallest and the largest key of a
// pair are a uniform random 2-subset of its rows (and the smallest alone a
// uniform random row), so plain aggregates replace SmallestN's lists and
// the second read of the rows that lists need.
type ExtremeSampler interface {
	Sampler
	// ArgMin spells an aggregate: arg on the row with the smallest key
	// among the rows whose arg is not NULL (NULL when there is none).
	ArgMin(arg, key string) string
	// ArgMax is ArgMin with the largest key.
	ArgMax(arg, key string) string
	// SumOfTwo spells the exact sum of two non-NULL values of one summand,
	// in the type that the dialect's sum of that summand gives (ExactSum
	// or GridSum), so that it never overflows the summand's type.
	SumOfTwo(a, b string) string
}

// NullSafe is implemented by dialects whose bounded statements join rows
// with the (person, group) pairs they keep: the join must match a NULL
// key to a NULL key, since a NULL group is a group (USING or = would drop
// its rows).
type NullSafe interface {
	// NullSafeEqual spells a join condition true when a and b are equal or
	// both NULL (a group key may be NULL, and a NULL group is a group).
	NullSafeEqual(a, b string) string
}

// Binder is implemented by engines that read tables where they already
// live (a database server): a catalog table is bound to a relation of the
// engine instead of being registered as a file.
type Binder interface {
	// BindTable makes the relation (a table or view of the engine, such
	// as "public.visits") queryable under name with only the given
	// columns, each read as its engine-neutral type; a NaN in a Double
	// column reads as NULL unless the column keeps NaN. It checks that
	// every column exists with a compatible type and says precisely what
	// does not match. It never writes to the engine.
	BindTable(ctx context.Context, name, relation string, columns []Column) error
}

// Pinger is implemented by engines that can be unreachable (a server).
// dpstat pings before it charges a query, so that an engine that cannot be
// reached refuses the query at no cost: whether a server answers does not
// depend on anyone's data.
type Pinger interface {
	// Ping checks that the engine answers.
	Ping(ctx context.Context) error
}

// UnavailableError reports that an engine could not be reached (Pinger);
// nothing ran on it.
type UnavailableError struct {
	// Err is the driver's error, for the data owner's logs.
	Err error
}

// Error says the engine cannot be reached, and why.
func (e *UnavailableError) Error() string { return "the engine cannot be reached: " + e.Err.Error() }

// Unwrap returns the driver's error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Sniffer is implemented by engines that can read a data file's column
// names and guess their types, for writing a catalog skeleton.
type Sniffer interface {
	// Sniff returns the columns of the file at path with guessed types.
	// It reads data only to guess types and never reports values.
	Sniff(ctx context.Context, path string) ([]Column, error)
}

// Loader is implemented by engines that can copy the files their tables
// read into memory once, for a long-running server.
type Loader interface {
	// Load copies every registered file into memory.
	Load(ctx context.Context) error
}

// Column is a column of a registered source and the engine-neutral type it
// is cast to.
type Column struct {
	Name string
	Type Type
	// Source is the column's name in the file (a CSV header such as
	// "Hours per week") or in the server's table; empty means Name.
	Source string
	// KeepNaN leaves NaN in a Double column as it is; by default a NaN
	// reads as NULL.
	KeepNaN bool
}

// Type is an engine-neutral column type.
type Type int

// The column types.
const (
	Integer   Type = iota // 64-bit signed integer
	Double                // IEEE 754 double
	Text                  // character string
	Boolean               // true or false
	Integer32             // 32-bit signed integer (fixed-point summands)
	// Date is a calendar date, read as the engine's date type and exposed
	// as a 64-bit integer: days since 1970-01-01; a value that is not a
	// finite date reads as NULL.
	Date
	// Timestamp is a date and time without time zone, read as the
	// engine's timestamp type and exposed as a 64-bit integer:
	// microseconds since 1970-01-01 00:00:00; a value that is not a
	// finite timestamp reads as NULL.
	Timestamp
)

// TypeOf is the engine type a column of schema type t is read as: the one
// mapping from the declared types to the engines' types.
func TypeOf(t schema.Type) Type {
	switch t {
	case schema.Int:
		return Integer
	case schema.Float:
		return Double
	case schema.Bool:
		return Boolean
	case schema.Date:
		return Date
	case schema.Timestamp:
		return Timestamp
	}
	return Text
}

// Schema is the schema type a column of engine type t holds ("int",
// "float", "bool", "date", "timestamp", "text"), for messages that compare
// a server's column with its declaration.
func (t Type) Schema() schema.Type {
	switch t {
	case Integer, Integer32:
		return schema.Int
	case Double:
		return schema.Float
	case Boolean:
		return schema.Bool
	case Date:
		return schema.Date
	case Timestamp:
		return schema.Timestamp
	}
	return schema.Text
}

// Rows is a fully read result.
type Rows struct {
	Columns []string
	Rows    [][]any
}

// Dialect spells SQL for one engine. Methods must be pure functions.
type Dialect interface {
	// Name identifies the dialect, e.g. "duckdb".
	Name() string
	// QuoteIdent quotes an identifier so that any name is taken literally.
	QuoteIdent(name string) string
	// QuoteString renders a string literal.
	QuoteString(s string) string
	// TypeName spells an engine-neutral type.
	TypeName(t Type) string
	// ExactSum spells an aggregate that sums a 32- or 64-bit integer expression
	// exactly, into a type wide enough (at least 128 bits) that no number
	// of rows can overflow it.
	ExactSum(expr string) string
	// GridSum spells an aggregate that sums a DOUBLE expression into a
	// DOUBLE. It is exact only when every value is a multiple of a common
	// power of two and every partial sum fits the 53-bit significand; the
	// caller checks that bound and falls back to ExactSum otherwise.
	GridSum(expr string) string
	// RoundToGrid spells expr (a DOUBLE of magnitude below 2^(50+exp))
	// rounded to the nearest multiple of 2^exp, exactly, by IEEE 754
	// arithmetic: (expr + c) − c with c = 1.5·2^(52+exp). The engine must
	// evaluate it as written (no algebraic simplification of the two
	// constants).
	RoundToGrid(expr string, exp int) string
	// Random is an expression giving a uniform random number per row, used
	// only to choose which rows a person keeps (never for noise).
	Random() string
	// SupportsQualify reports whether QUALIFY filters window functions.
	SupportsQualify() bool
}

// Literal renders a Go value (int64, float64, string, bool or nil) as an SQL
// literal in the dialect. Floats must be finite.
func Literal(d Dialect, v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "NULL", nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case int:
		return strconv.Itoa(x), nil
	case float64:
		if x != x || x > 1.7976931348623157e308 || x < -1.7976931348623157e308 {
			return "", fmt.Errorf("engine: cannot render the non-finite number %v as a literal", x)
		}
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		if fl, ok := d.(FloatLiterals); ok {
			return fl.FloatLiteral(s), nil
		}
		return "CAST(" + s + " AS " + d.TypeName(Double) + ")", nil
	case string:
		return d.QuoteString(x), nil
	case bool:
		if b, ok := d.(BoolLiterals); ok {
			return b.BoolLiteral(x), nil
		}
		if x {
			return "TRUE", nil
		}
		return "FALSE", nil
	default:
		return "", fmt.Errorf("engine: cannot render a %T as a literal", v)
	}
}

// ANSI is the standard SQL spelling that most engines share: double-quoted
// identifiers and single-quoted strings with doubled quotes. Dialects embed
// it and override what differs.
type ANSI struct{}

// QuoteIdent doubles embedded double quotes and wraps the name in them.
func (ANSI) QuoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// QuoteString doubles embedded single quotes and wraps the string in them.
func (ANSI) QuoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// StrictUnderflow is implemented by dialects whose double precision
// multiplication and division raise an error, instead of rounding to zero,
// when the result of nonzero operands is too small for a double
// (PostgreSQL's "value out of range: underflow"). The query generator spells
// every product and quotient of a row's value with Scale, Divide and Square,
// which keep such a dialect's expressions total.
type StrictUnderflow interface {
	// StrictUnderflow marks the dialect; it is never called.
	StrictUnderflow()
}

// MaxStatementBytes is the longest statement dpstat sends an engine. The
// planner refuses, before the charge, a query whose statements would be
// longer (nested expressions over computed values repeat them, so the
// text can grow faster than the query's), and engines that limit the
// statements they parse are configured to take this much (ClickHouse's
// max_query_size), so that no statement fails after the charge for its
// length.
const MaxStatementBytes = 4 << 20

// smallestNormal is the smallest positive normal double, 2^-1022.
const smallestNormal = 0x1p-1022

// flushTiny spells expr op c, or 0 where |expr| < below, for a dialect
// with StrictUnderflow; below is chosen so that the result of every larger
// |expr| is a normal double, and the exact result of every smaller one is
// within 2^-1022 of zero.
func flushTiny(d Dialect, expr, op, c string, below float64) string {
	if _, ok := d.(StrictUnderflow); !ok || below == 0 {
		return expr + " " + op + " " + c
	}
	lim := strconv.FormatFloat(below, 'g', -1, 64)
	zero := "CAST(0 AS " + d.TypeName(Double) + ")"
	return "CASE WHEN abs(" + expr + ") < CAST(" + lim + " AS " + d.TypeName(Double) + ") THEN " + zero +
		" ELSE " + expr + " " + op + " " + c + " END"
}

// Scale spells expr · c for a finite constant c. On a dialect with
// StrictUnderflow a product that would be smaller than 2^-1022 in
// magnitude is 0 (IEEE 754 would give a subnormal or ±0), so that no value
// of expr makes it fail.
func Scale(d Dialect, expr string, c float64) (string, error) {
	lit, err := Literal(d, c)
	if err != nil {
		return "", err
	}
	below := 0.0
	if a := math.Abs(c); a < 1 && a > 0 {
		below = smallestNormal / a
	}
	return flushTiny(d, expr, "*", lit, below), nil
}

// Divide spells expr / c for a finite nonzero constant c. On a dialect
// with StrictUnderflow a quotient that would be smaller than 2^-1022 in
// magnitude is 0, so that no value of expr makes it fail.
func Divide(d Dialect, expr string, c float64) (string, error) {
	if c == 0 || math.IsNaN(c) || math.IsInf(c, 0) {
		return "", fmt.Errorf("engine: cannot divide by %v: want a finite nonzero constant", c)
	}
	lit, err := Literal(d, c)
	if err != nil {
		return "", err
	}
	below := 0.0
	if a := math.Abs(c); a > 1 {
		below = smallestNormal * a
		if math.IsInf(below, 0) {
			below = math.MaxFloat64
		}
	}
	return flushTiny(d, expr, "/", lit, below), nil
}

// Square spells expr · expr. On a dialect with StrictUnderflow a square
// smaller than 2^-1022 is 0, so that no value of expr makes it fail.
func Square(d Dialect, expr string) string {
	return flushTiny(d, expr, "*", expr, 0x1p-511)
}

// BoolLiterals is implemented by dialects without TRUE and FALSE literals
// (ClickHouse before 21.x reads booleans as UInt8): Literal spells a bool
// with BoolLiteral.
type BoolLiterals interface {
	// BoolLiteral spells true or false.
	BoolLiteral(b bool) string
}

// Nested is implemented by dialects that have no WITH subqueries (common
// table expressions): the query generator writes each stage of a
// statement as a subquery in the FROM of the next, and reads a stage that
// is used twice by writing it twice, so every random choice in such a
// dialect must be a deterministic function of the row (LimitBy.RowKey).
// Such a dialect also joins at most one table per SELECT.
type Nested interface {
	// OneJoin reports whether a SELECT may hold at most one JOIN.
	OneJoin() bool
}

// LimitBy is implemented by dialects that keep n rows per key with a
// clause after ORDER BY (ClickHouse's LIMIT n BY) instead of a
// row_number() window. The random choice of rows is a keyed hash of each
// row's values with a salt the generator draws afresh for every
// statement: which rows of a person are kept then depends only on that
// person's rows (rows that tie are equal in every value the statement
// reads, so which of them is kept changes nothing), and a stage read
// twice makes the same choice both times.
type LimitBy interface {
	// RowKey spells a 64-bit pseudo-random key of the values of exprs
	// (NULL included, as a value of its own) and salt.
	RowKey(salt uint64, exprs []string) string
	// KeepFirst spells the clauses that, after a SELECT's FROM, WHERE
	// and GROUP BY, keep at most n of its rows per distinct value of
	// partition, those with the smallest key.
	KeepFirst(key string, partition []string, n int64) string
	// Collect spells an aggregate: the list of the non-NULL values of
	// arg.
	Collect(arg string) string
	// Unnest spells a select-list item giving one row per element of a
	// list.
	Unnest(list string) string
}

// NullPropagating is implemented by dialects whose least and greatest
// return NULL when any argument is NULL (SQL's standard reading), where
// dpstat's SQL means the NULL-skipping least and greatest of DuckDB and
// PostgreSQL: Least and Greatest spell those for every dialect.
type NullPropagating interface {
	// Extremum spells f ("least" or "greatest") of args skipping NULLs,
	// converting arguments of different types as the dialect needs.
	Extremum(f string, args []string) string
}

// FloatLiterals is implemented by dialects that spell a double literal
// otherwise than CAST(text AS TypeName(Double)) (ClickHouse, whose
// Nullable constants some functions refuse).
type FloatLiterals interface {
	// FloatLiteral spells the finite double written (by
	// strconv.FormatFloat, with a decimal point or exponent) as text.
	FloatLiteral(text string) string
}

// IntLiterals is implemented by dialects that spell a typed 64-bit integer
// constant otherwise than CAST(n AS TypeName(Integer)) (ClickHouse, whose
// TypeName is Nullable and whose Nullable constants some functions refuse:
// "Illegal column for DataTypeNullable").
type IntLiterals interface {
	// IntLiteral spells n as a 64-bit integer constant.
	IntLiteral(n int64) string
}

// IntConst spells n as a typed 64-bit integer constant of the dialect:
// an engine types a bare literal by its value (ClickHouse reads
// 9007199254740992 as UInt64, which has no common type with Int64).
func IntConst(d Dialect, n int64) string {
	if il, ok := d.(IntLiterals); ok {
		return il.IntLiteral(n)
	}
	return "CAST(" + strconv.FormatInt(n, 10) + " AS " + d.TypeName(Integer) + ")"
}

// Materializer is implemented by dialects that must not meet a Nullable
// constant inside an expression (ClickHouse 18.16 fails on one with
// "Illegal column for DataTypeNullable": NULLIF(2.5, 1.5) or CAST(3 AS
// Nullable(Int64)) under LEAST, COALESCE or CASE): the generator passes
// every expression it computes from constants alone through Materialize,
// which makes it an ordinary column.
type Materializer interface {
	// Materialize spells expr, an expression of constants, as a column.
	Materialize(expr string) string
}

// Least spells the least of args, skipping NULLs (NULL when all are).
func Least(d Dialect, args ...string) string { return extremum(d, "least", args) }

// Greatest spells the greatest of args, skipping NULLs (NULL when all
// are).
func Greatest(d Dialect, args ...string) string { return extremum(d, "greatest", args) }

func extremum(d Dialect, f string, args []string) string {
	if np, ok := d.(NullPropagating); ok && len(args) > 1 {
		return np.Extremum(f, args)
	}
	return f + "(" + strings.Join(args, ", ") + ")"
}

// TruncatingCast is implemented by dialects whose cast of a double to an
// integer truncates toward zero (ClickHouse) where dpstat's SQL means the
// cast that rounds to the nearest integer (DuckDB, PostgreSQL): CastInt
// spells the rounding cast for every dialect.
type TruncatingCast interface {
	// TruncatingCast marks the dialect; it is never called.
	TruncatingCast()
}

// CastInt spells the cast of a double expression (finite, within the
// integer type's range, or NULL) to the integer type t, rounding to the
// nearest integer.
func CastInt(d Dialect, expr string, t Type) string {
	if _, ok := d.(TruncatingCast); ok {
		// round() of a double ties to even in such a dialect, as
		// PostgreSQL's cast; DuckDB's cast ties away from zero.
		// Callers bound the result by the floor and ceiling either way.
		return "CAST(round(" + expr + ") AS " + d.TypeName(t) + ")"
	}
	return "CAST(" + expr + " AS " + d.TypeName(t) + ")"
}

// HalfEvenRound is implemented by dialects whose round() of a double ties
// to even (PostgreSQL's rint): Round spells dpstat's ROUND, which ties
// away from zero on every engine, as DuckDB's round and Go's math.Round.
type HalfEvenRound interface {
	// HalfEvenRound marks the dialect; it is never called.
	HalfEvenRound()
}

// Round spells ROUND(expr) of a double expression: the nearest whole
// number, halves away from zero. Where round() ties to even it is
// trunc(expr) plus the sign of expr when the fraction, expr - trunc(expr)
// (exact in doubles), is at least one half.
func Round(d Dialect, expr string) string {
	if _, ok := d.(HalfEvenRound); ok {
		t := "trunc(" + expr + ")"
		return "(" + t + " + CASE WHEN abs(" + expr + " - " + t + ") >= 0.5 THEN sign(" + expr + ") ELSE 0 END)"
	}
	return "round(" + expr + ")"
}

// NoNotBetween is implemented by dialects without x NOT BETWEEN a AND b
// (ClickHouse 18.16): the generator writes NOT (x BETWEEN a AND b), which
// means the same for every value, NULL included.
type NoNotBetween interface {
	// NoNotBetween marks the dialect; it is never called.
	NoNotBetween()
}

// Describer is implemented by engines that can say, for EXPLAIN, how a
// bound table is read (for a distributed table: how it is sharded and
// where each person's contribution is bounded).
type Describer interface {
	// Describe returns lines about catalog table name, whose privacy
	// unit is privacyUnit ("" for none); nil when there is nothing to
	// say.
	Describe(name, privacyUnit string) []string
}

// DateSpeller is implemented by dialects whose date functions are not
// SQL's date_trunc and EXTRACT over a DATE (ClickHouse): TruncDay and
// DatePart spell them for every dialect. The day given is an integer or
// integral double expression (or NULL): a number of days since 1970-01-01
// that the caller has clamped to a column's declared bounds.
type DateSpeller interface {
	// TruncDay spells, as a 64-bit integer of days since 1970-01-01, the
	// first day of the unit holding day: "year", "quarter", "month",
	// "week" (ISO weeks, from Monday) or "day". It must be total.
	TruncDay(unit, day string) string
	// DatePart spells, as a 64-bit integer, the field of day: "year",
	// "quarter", "month", "week" (the ISO week), "day" (of the month),
	// "dow" (0 for Sunday to 6), "isodow" (1 for Monday to 7) or "doy".
	// It must be total.
	DatePart(field, day string) string
}

// DayRanger is implemented by dialects whose date functions compute only
// within a range of days (ClickHouse 18.16's Date: 1970-01-01 to
// 2105-12-31), a range that also holds every date and timestamp their
// tables store.
type DayRanger interface {
	// DayRange returns the first and last day of the range, in days since
	// 1970-01-01.
	DayRange() (first, last int64)
}

// TruncDay spells the first day of the unit holding day (see
// DateSpeller); the standard spelling is date_trunc over a DATE.
func TruncDay(d Dialect, unit, day string) string {
	if s, ok := d.(DateSpeller); ok {
		return s.TruncDay(unit, day)
	}
	native := "(DATE '1970-01-01' + CAST(" + day + " AS " + d.TypeName(Integer32) + "))"
	return "CAST(CAST(date_trunc('" + unit + "', CAST(" + native + " AS TIMESTAMP)) AS DATE) - DATE '1970-01-01' AS " + d.TypeName(Integer) + ")"
}

// DatePart spells a field of day (see DateSpeller); the standard spelling
// is EXTRACT over a DATE.
func DatePart(d Dialect, field, day string) string {
	if s, ok := d.(DateSpeller); ok {
		return s.DatePart(field, day)
	}
	native := "(DATE '1970-01-01' + CAST(" + day + " AS " + d.TypeName(Integer32) + "))"
	return "CAST(extract(" + field + " FROM " + native + ") AS " + d.TypeName(Integer) + ")"
}

// TextSpeller is implemented by dialects whose text functions are not
// spelled as DuckDB's and PostgreSQL's (ClickHouse): TextFunc spells them
// for every dialect.
type TextSpeller interface {
	// TextFunc spells the text function name over args, which are
	// spelled already (see TextFunc for the meanings); ok is false for
	// a function the dialect spells in the standard way.
	TextFunc(name string, args []string) (sql string, ok bool)
}

// TextFunc spells a text function of dpstat's SQL over args (spelled
// already), with the same answer on every engine: lower and upper change
// the ASCII letters only; length counts code points, as a 64-bit
// integer; trim, ltrim and rtrim remove spaces (U+0020) only; "||" is
// NULL when an argument is, concat skips NULL arguments; starts_with
// reports whether args[0] begins with args[1]; substr takes the string, a
// first code point (from 1) and optionally a count (≥ 0), both decimal
// integers. ok is false for any other name.
func TextFunc(d Dialect, name string, args []string) (string, bool) {
	if s, ok := d.(TextSpeller); ok {
		if sql, ok := s.TextFunc(name, args); ok {
			return sql, true
		}
	}
	const upper, lower = "'ABCDEFGHIJKLMNOPQRSTUVWXYZ'", "'abcdefghijklmnopqrstuvwxyz'"
	switch {
	case name == "lower" && len(args) == 1:
		return "translate(" + args[0] + ", " + upper + ", " + lower + ")", true
	case name == "upper" && len(args) == 1:
		return "translate(" + args[0] + ", " + lower + ", " + upper + ")", true
	case name == "length" && len(args) == 1:
		return "CAST(length(" + args[0] + ") AS " + d.TypeName(Integer) + ")", true
	case name == "trim" && len(args) == 1:
		return "ltrim(rtrim(" + args[0] + ", ' '), ' ')", true
	case (name == "ltrim" || name == "rtrim") && len(args) == 1:
		return name + "(" + args[0] + ", ' ')", true
	case name == "||" && len(args) == 2:
		return "(" + args[0] + " || " + args[1] + ")", true
	case name == "concat" && len(args) > 0:
		return "concat(" + strings.Join(args, ", ") + ")", true
	case name == "starts_with" && len(args) == 2:
		return "starts_with(" + args[0] + ", " + args[1] + ")", true
	case name == "substr" && (len(args) == 2 || len(args) == 3):
		return "substr(" + strings.Join(args, ", ") + ")", true
	}
	return "", false
}

// UnitSharder is implemented by engines that can tell whether a bound
// table is distributed over shards by its privacy unit, so that all of a
// person's rows are on one shard (a ClickHouse Distributed table whose
// sharding key is the unit or a hash of it). The query generator then
// bounds each person's contribution on the shards (ShardBounder).
type UnitSharder interface {
	// ShardedByUnit reports whether catalog table name is distributed by
	// the column privacyUnit.
	ShardedByUnit(name, privacyUnit string) bool
}

// ShardBounder is implemented by dialects that can run every per-person
// stage of a statement on the shards of a table distributed by the privacy
// unit (UnitSharder): one SELECT over the table keeps at most L∞ rows per
// (person, group) in a list, aggregates them, and keeps at most L0 groups
// per person (LimitBy.KeepFirst), and a second level sums them per group
// (ShardGroups); each shard runs both to the end, and only its per-group
// partial sums cross the network.
type ShardBounder interface {
	// KeptRows spells an aggregate: the list of at most n rows, each the
	// tuple of exprs, whose key is smallest.
	KeptRows(key string, exprs []string, n int64) string
	// KeptCount spells the number of non-NULL values of the i-th of the
	// exprs (from 1) in the rows of a KeptRows list.
	KeptCount(list string, i int) string
	// KeptExactSum spells the exact sum of the i-th of the exprs (64-bit
	// integers, from 1) in the rows of a KeptRows list, in the type of
	// ExactSum; NULL when none is non-NULL.
	KeptExactSum(list string, i int) string
	// KeptGridSum spells the sum of the i-th of the exprs (doubles on a
	// grid, see GridSum; from 1) in the rows of a KeptRows list; NULL when
	// none is non-NULL.
	KeptGridSum(list string, i int) string
	// ShardGroups spells a SELECT over the distributed table source
	// (rows filtered by where, "" for all) that each shard runs to its
	// end, returning perGroup computed on that shard's rows alone: one row
	// per group, the columns keys (their expressions over source are
	// keyExprs) and sums. perGroup is a SELECT whose innermost SELECT
	// reads source.
	ShardGroups(source, where string, keyExprs, keys, sums []string, perGroup string) string
	// PerShard spells the clause, after a whole statement, that makes
	// each shard run the SELECT reading a distributed table to its end
	// (ShardGroups), the server that received the statement only
	// gathering the shards' rows.
	PerShard() string
}
