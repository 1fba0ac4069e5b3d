package clickhouse

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/schema"
)

// Dialect is ClickHouse's SQL dialect, as versions 18.16 and later run
// it: no WITH subqueries (engine.Nested), LIMIT n BY (engine.LimitBy),
// exact sums in Decimal128, NULL-propagating least and greatest, casts that
// truncate, booleans as UInt8.
var Dialect engine.Dialect = dialect{}

type dialect struct{}

var (
	_ engine.Nested          = dialect{}
	_ engine.LimitBy         = dialect{}
	_ engine.NullPropagating = dialect{}
	_ engine.FloatLiterals   = dialect{}
	_ engine.TruncatingCast  = dialect{}
	_ engine.BoolLiterals    = dialect{}
	_ engine.NoNotBetween    = dialect{}
	_ engine.DateSpeller     = dialect{}
	_ engine.TextSpeller     = dialect{}
)

func (dialect) Name() string { return "clickhouse" }

// QuoteIdent wraps the name in double quotes, escaping backslashes and
// double quotes with a backslash.
func (dialect) QuoteIdent(name string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(name) + `"`
}

// QuoteString renders a string literal: backslashes and quotes are
// escaped, and a double quote is written \x22, so that no literal holds a
// double quote (Engine.Query relies on it).
func (dialect) QuoteString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, `"`, `\x22`).Replace(s) + "'"
}

// TypeName spells every type Nullable: a CAST of NULL to a type that is
// not Nullable fails in ClickHouse, and every arm of a CASE is evaluated
// on every row.
func (dialect) TypeName(t engine.Type) string {
	switch t {
	case engine.Integer:
		return "Nullable(Int64)"
	case engine.Double:
		return "Nullable(Float64)"
	case engine.Boolean:
		return "Nullable(UInt8)"
	case engine.Integer32:
		return "Nullable(Int32)"
	default:
		return "Nullable(String)"
	}
}

// ExactSum sums in Decimal128 with scale 0 (38 digits): ClickHouse's sum
// of Int64 wraps around on overflow; 2^63 · 2^64 rows would be needed to
// overflow this one.
func (dialect) ExactSum(expr string) string { return "sum(toDecimal128(" + expr + ", 0))" }

// GridSum is ClickHouse's sum of Float64, which adds in IEEE 754 doubles
// (exact on the grid in any order, see engine.Dialect).
func (dialect) GridSum(expr string) string { return "sum(" + expr + ")" }

// RoundToGrid adds and subtracts 1.5·2^(52+exp) in Float64; ClickHouse
// evaluates plus and minus as written.
func (dialect) RoundToGrid(expr string, exp int) string {
	c := strconv.FormatFloat(math.Ldexp(1.5, 52+exp), 'g', -1, 64)
	if !strings.ContainsAny(c, ".eE") {
		c += ".0"
	}
	return "(" + expr + " + CAST(" + c + " AS Float64) - CAST(" + c + " AS Float64))"
}

// Random is a uniform number in [0, 1) per row. dpstat's statements for
// ClickHouse choose rows with RowKey instead.
func (dialect) Random() string { return "(rand64() / 18446744073709551616.0)" }

// SupportsQualify is false.
func (dialect) SupportsQualify() bool { return false }

// OneJoin is true: ClickHouse 18.16 runs one JOIN per SELECT.
func (dialect) OneJoin() bool { return true }

// RowKey hashes the salt and each value with cityHash64, a NULL as a
// value of its own (isNull, then the value with NULL read as the type's
// default).
func (dialect) RowKey(salt uint64, exprs []string) string {
	parts := []string{"toUInt64(" + strconv.FormatUint(salt, 10) + ")"}
	for _, e := range exprs {
		parts = append(parts, "isNull("+e+")", "assumeNotNull("+e+")")
	}
	return "cityHash64(" + strings.Join(parts, ", ") + ")"
}

// KeepFirst is ORDER BY key LIMIT n BY partition.
func (dialect) KeepFirst(key string, partition []string, n int64) string {
	return "ORDER BY " + key + " LIMIT " + strconv.FormatInt(n, 10) + " BY " + strings.Join(partition, ", ")
}

// KeptRows sorts the rows' tuples by key and keeps the first n.
func (dialect) KeptRows(key string, exprs []string, n int64) string {
	return "arraySlice(arraySort(t -> t.1, groupArray(tuple(" + key + ", " + strings.Join(exprs, ", ") + "))), 1, " + strconv.FormatInt(n, 10) + ")"
}

// KeptCount counts the non-NULL values of the i-th expression (element
// i+1 of each tuple, after the key).
func (dialect) KeptCount(list string, i int) string {
	return "toUInt64(arrayCount(t -> NOT isNull(t." + strconv.Itoa(i+1) + "), " + list + "))"
}

// KeptExactSum sums the high and low 32 bits of each value apart, in
// 64 bits (at most 2^32 values of at most 2^31 in magnitude cannot
// overflow), and joins them in a Decimal128: arraySum has no Decimal.
// The split is floor division with a non-negative remainder, so that
// hi·2^32 + lo = x for every Int64 x: lo = ((x % 2^32) + 2^32) % 2^32
// (in [0, 2^32)) and hi = (x − lo) / 2^32, exact. ClickHouse's intDiv
// and modulo truncate toward zero, and a divisor typed UInt64 turns a
// negative Int64 into a huge unsigned one, so every constant is an Int64,
// and so is each value (an Int32 summand mixed with Int64 constants in
// these lambdas stops an 18.16 server).
func (dialect) KeptExactSum(list string, i int) string {
	e := "t." + strconv.Itoa(i+1)
	x := "toInt64(assumeNotNull(" + e + "))"
	lo := "modulo(modulo(" + x + ", " + splitBase + ") + " + splitBase + ", " + splitBase + ")"
	hi := "intDiv(" + x + " - " + lo + ", " + splitBase + ")"
	part := func(f string) string {
		return "arraySum(arrayMap(t -> " + f + ", arrayFilter(t -> NOT isNull(" + e + "), " + list + ")))"
	}
	return "if(arrayExists(t -> NOT isNull(" + e + "), " + list + "), toDecimal128(" + part(hi) + ", 0) * toDecimal128(4294967296, 0) + toDecimal128(" + part(lo) + ", 0), NULL)"
}

// splitBase is 2^32 as an Int64, the base KeptExactSum splits values by.
const splitBase = "toInt64(4294967296)"

// KeptGridSum sums the non-NULL i-th elements as doubles.
func (dialect) KeptGridSum(list string, i int) string {
	e := "t." + strconv.Itoa(i+1)
	return "if(arrayExists(t -> NOT isNull(" + e + "), " + list + "), arraySum(arrayMap(t -> assumeNotNull(" + e + "), arrayFilter(t -> NOT isNull(" + e + "), " + list + "))), NULL)"
}

// ShardGroups joins the table's rows on each shard to perGroup, whose
// innermost SELECT reads the same Distributed table: with
// distributed_product_mode = 'local' (PerShard) a shard reads its local
// table there, so perGroup's sums are that shard's. ClickHouse sends a
// Distributed table's shards only the SELECT that reads it, and a join
// subquery of that SELECT goes with it: the join is how the per-group
// level runs on the shards (a subquery in FROM would run on the server
// dpstat connects to). The rows join perGroup's one row per group by
// the keys (encoded as isNull and assumeNotNull, since a NULL key
// matches nothing) and any() takes the group's sums. The rows are read
// once more for this, their keys only: a scan per shard, far cheaper
// than the bounding.
// perGroupName is the alias of ShardGroups' per-group sums; it and the
// encoded keys (_dp_kn0, _dp_kv0, …) begin with schema.ReservedPrefix,
// as every name a statement gives, so that none is a column of the rows
// they are read beside.
const perGroupName = schema.ReservedPrefix + "per_group"

func (dialect) ShardGroups(source, where string, keyExprs, keys, sums []string, perGroup string) string {
	var left, right, using, outKeys, outSums []string
	for i, k := range keys {
		n, v := schema.ReservedPrefix+"kn"+strconv.Itoa(i), schema.ReservedPrefix+"kv"+strconv.Itoa(i)
		left = append(left, "isNull("+keyExprs[i]+") AS "+n, "assumeNotNull("+keyExprs[i]+") AS "+v)
		right = append(right, "isNull("+k+") AS "+n, "assumeNotNull("+k+") AS "+v, k)
		using = append(using, n, v)
		outKeys = append(outKeys, k)
	}
	for _, s := range sums {
		right = append(right, s)
		outSums = append(outSums, "any("+s+") AS "+s)
	}
	if len(keys) == 0 {
		// One row of sums: every row of the shard joins it.
		q := "SELECT " + strings.Join(outSums, ", ") + " FROM " + source + " CROSS JOIN (" + perGroup + ") AS " + perGroupName
		if where != "" {
			q += " WHERE " + where
		}
		return q
	}
	q := "SELECT " + strings.Join(append(append(left, outKeys...), outSums...), ", ") + " FROM " + source +
		" ANY INNER JOIN (SELECT " + strings.Join(right, ", ") + " FROM (" + perGroup + ")) AS " + perGroupName + " USING " + strings.Join(using, ", ")
	if where != "" {
		q += " WHERE " + where
	}
	return q + " GROUP BY " + strings.Join(append(using, outKeys...), ", ")
}

// PerShard sets distributed_group_by_no_merge: each shard runs the
// SELECT over a Distributed table to its end; and
// distributed_product_mode = 'local': a shard reads its local table in
// the join subquery of ShardGroups.
func (dialect) PerShard() string {
	return " SETTINGS distributed_group_by_no_merge = 1, distributed_product_mode = 'local'"
}

// Collect is groupArray, which skips NULLs.
func (dialect) Collect(arg string) string { return "groupArray(" + arg + ")" }

// Unnest is arrayJoin.
func (dialect) Unnest(list string) string { return "arrayJoin(" + list + ")" }

// BoolLiteral is 1 or 0.
func (dialect) BoolLiteral(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// Extremum spells a NULL-skipping least or greatest: ClickHouse's return
// NULL when an argument is NULL, and refuse to compare Int64 with Float64,
// so when a Float64 literal is among the arguments every other argument is
// read as Float64 (as DuckDB converts them; Nullable(Float64) when it is). A literal argument is
// never NULL: f(coalesce(a, lit), lit) skips a NULL a; otherwise
// f(coalesce(a, b), coalesce(b, a)) is b when a is NULL, a when b is, and
// NULL when both are.
func (dialect) Extremum(f string, args []string) string {
	isLit := func(a string) bool { return floatLitRE.MatchString(a) || intLitRE.MatchString(a) }
	anyFloat := false
	for _, a := range args {
		anyFloat = anyFloat || floatLitRE.MatchString(a)
	}
	conv := make([]string, len(args))
	for i, a := range args {
		conv[i] = a
		isFloatExtremum := (strings.HasPrefix(a, "least(") || strings.HasPrefix(a, "greatest(")) && strings.Contains(a, "toFloat64(")
		if anyFloat && !floatLitRE.MatchString(a) && !isFloatExtremum {
			// toFloat64 keeps a column that cannot be NULL out of
			// Nullable, whose arithmetic costs about a third more over
			// a clamped sum; a Nullable argument stays Nullable.
			conv[i] = "toFloat64(" + a + ")"
			if a == "NULL" {
				conv[i] = "CAST(NULL AS Nullable(Float64))"
			}
		}
	}
	out, outLit := conv[0], isLit(args[0])
	for i, b := range conv[1:] {
		switch {
		case outLit && isLit(args[i+1]):
			out = f + "(" + out + ", " + b + ")"
		case isLit(args[i+1]):
			out = f + "(coalesce(" + out + ", " + b + "), " + b + ")"
		case outLit:
			out = f + "(" + out + ", coalesce(" + b + ", " + out + "))"
		default:
			out = f + "(coalesce(" + out + ", " + b + "), coalesce(" + b + ", " + out + "))"
		}
		outLit = false
	}
	return out
}

var intLitRE = regexp.MustCompile(`^-?[0-9]+$`)

// FloatLiteral is toFloat64(text), a constant that is not Nullable; a
// subnormal is a product of two normal doubles (floatLiteral).
func (dialect) FloatLiteral(text string) string { return floatLiteral(text) }

// Materialize makes an expression of constants a full column (see
// engine.Materializer).
func (dialect) Materialize(expr string) string { return "materialize(" + expr + ")" }

// IntLiteral spells a typed Int64 constant that is not Nullable (see
// engine.IntLiterals).
func (dialect) IntLiteral(n int64) string { return "toInt64(" + strconv.FormatInt(n, 10) + ")" }

// TruncatingCast marks casts of Float64 to integers, which truncate.
func (dialect) TruncatingCast() {}

// NoNotBetween marks the missing NOT BETWEEN of 18.16.
func (dialect) NoNotBetween() {}

// lastDay is 2105-12-31, the last day of ClickHouse 18.16's Date, in days
// since 1970-01-01.
const lastDay = 49672

// dayNumber spells day (days since 1970-01-01, an integer or integral
// Float64, or NULL) as a Nullable(Int64) clamped to the days a Date holds,
// and as that Date. Clamping keeps every date function total (the date
// functions of 18.16 wrap around outside the range): a declared bound
// beyond it is moved into it, and a stored Date after 2105 (the type holds
// days to 2149) reads as 2105-12-31.
func dayNumber(day string) (n, date string) {
	n = "CAST(least(greatest(" + day + ", 0), " + strconv.Itoa(lastDay) + ") AS Nullable(Int64))"
	return n, "toDate(CAST(" + n + " AS Nullable(UInt16)))"
}

// DayRange is the range of a Date, from 1970-01-01 to 2105-12-31 (see
// engine.DayRanger).
func (dialect) DayRange() (int64, int64) { return 0, lastDay }

// TruncDay spells date_trunc with toStartOfYear, toStartOfQuarter and
// toStartOfMonth, and the ISO week's Monday by subtracting the day of the
// week (toMonday would leave the range at 1970-01-01).
func (dialect) TruncDay(unit, day string) string {
	n, date := dayNumber(day)
	switch unit {
	case "year":
		return "CAST(toStartOfYear(" + date + ") AS Nullable(Int64))"
	case "quarter":
		return "CAST(toStartOfQuarter(" + date + ") AS Nullable(Int64))"
	case "month":
		return "CAST(toStartOfMonth(" + date + ") AS Nullable(Int64))"
	case "week":
		return "(" + n + " - (toDayOfWeek(" + date + ") - 1))"
	}
	return n
}

// DatePart spells EXTRACT with toYear, toQuarter, toMonth, toDayOfMonth
// and toDayOfWeek (ISO: 1 for Monday); the day of the year and the ISO
// week are computed from toStartOfYear (of the week's Thursday, for the
// ISO week), by integer arithmetic.
func (dialect) DatePart(field, day string) string {
	n, date := dayNumber(day)
	var x string
	switch field {
	case "year":
		x = "toYear(" + date + ")"
	case "quarter":
		x = "toQuarter(" + date + ")"
	case "month":
		x = "toMonth(" + date + ")"
	case "day":
		x = "toDayOfMonth(" + date + ")"
	case "isodow":
		x = "toDayOfWeek(" + date + ")"
	case "dow":
		x = "(toDayOfWeek(" + date + ") % 7)"
	case "doy":
		x = "(" + n + " - CAST(toStartOfYear(" + date + ") AS Nullable(Int64)) + 1)"
	case "week":
		// The ISO week holds its Thursday; it is the Thursday's week of
		// that Thursday's year.
		thu, thuDate := dayNumber(n + " + 4 - toDayOfWeek(" + date + ")")
		x = "(intDiv(" + thu + " - CAST(toStartOfYear(" + thuDate + ") AS Nullable(Int64)), 7) + 1)"
	default:
		return "CAST(NULL AS Nullable(Int64))"
	}
	return "CAST(" + x + " AS Nullable(Int64))"
}

// TextFunc spells lower and upper with ClickHouse's lower and upper, which
// change the ASCII letters only (as the other engines' translate);
// length with lengthUTF8, substr by code points (substrCodePoints); trims
// with regular expressions that remove spaces only; concat with coalesce
// of each argument to the empty string (ClickHouse's concat is NULL when an argument
// is); starts_with by comparing the prefix's bytes.
func (dialect) TextFunc(name string, args []string) (string, bool) {
	switch {
	case (name == "lower" || name == "upper") && len(args) == 1:
		return name + "(" + args[0] + ")", true
	case name == "length" && len(args) == 1:
		return "CAST(lengthUTF8(" + args[0] + ") AS Nullable(Int64))", true
	case name == "trim" && len(args) == 1:
		return "replaceRegexpOne(replaceRegexpOne(" + args[0] + ", '^ +', ''), ' +$', '')", true
	case name == "ltrim" && len(args) == 1:
		return "replaceRegexpOne(" + args[0] + ", '^ +', '')", true
	case name == "rtrim" && len(args) == 1:
		return "replaceRegexpOne(" + args[0] + ", ' +$', '')", true
	case name == "||" && len(args) == 2:
		return "concat(" + args[0] + ", " + args[1] + ")", true
	case name == "concat" && len(args) > 0:
		parts := make([]string, 0, len(args)+1)
		for _, a := range args {
			parts = append(parts, "coalesce("+a+", '')")
		}
		if len(parts) == 1 {
			parts = append(parts, "''")
		}
		return "concat(" + strings.Join(parts, ", ") + ")", true
	case name == "starts_with" && len(args) == 2:
		return "(substring(" + args[0] + ", 1, length(" + args[1] + ")) = " + args[1] + ")", true
	case name == "substr" && (len(args) == 2 || len(args) == 3):
		return substrCodePoints(args), true
	}
	return "", false
}
