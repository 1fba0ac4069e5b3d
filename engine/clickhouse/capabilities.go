package clickhouse

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// What ClickHouse 18.16 runs otherwise than DuckDB and PostgreSQL, spelled
// here so that each construct means one thing on every engine
// (docs/engines.md, "What each engine supports").

// substrCodePoints spells substr(s, from[, n]) by code points:
// substringUTF8 of 18.16 cuts a 4-byte character (😀) into bytes, and
// takes no two-argument form. extractAll with (?s). lists the string's
// code points (a byte that is not UTF-8 is left out: DuckDB and
// PostgreSQL hold no such string), arraySlice keeps those from from (≥ 1)
// on, n of them (≥ 0) when given. extractAll takes no Nullable, hence the
// test for NULL.
func substrCodePoints(args []string) string {
	s := args[0]
	slice := "arraySlice(extractAll(assumeNotNull(" + s + "), '(?s).'), " + strings.Join(args[1:], ", ") + ")"
	return "if(isNull(" + s + "), NULL, arrayStringConcat(" + slice + "))"
}

// floatLiteral spells the finite double written as text (with a decimal
// point or exponent): toFloat64(text), a constant that is not Nullable. A
// subnormal (nonzero, below 2^-1022 in magnitude) is a syntax error in
// 18.16 (its parser reads numbers with strtod and refuses one that sets
// ERANGE), and as a string it reads as 0: it is spelled as the product of
// two normal doubles, m · 2^-537 and 2^-537, exact in IEEE 754.
func floatLiteral(text string) string {
	x, err := strconv.ParseFloat(text, 64)
	if err != nil || x == 0 || math.Abs(x) >= 0x1p-1022 {
		return "toFloat64(" + text + ")"
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return "(toFloat64(" + f(math.Ldexp(x, 537)) + ") * toFloat64(" + f(0x1p-537) + "))"
}

// floatLitRE matches what floatLiteral spells.
var floatLitRE = regexp.MustCompile(`^(?:toFloat64\([-+0-9.eE]+\)|\(toFloat64\([-+0-9.eE]+\) \* toFloat64\([-+0-9.eE]+\)\))$`)
