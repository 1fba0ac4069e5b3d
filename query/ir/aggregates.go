package ir

import (
	"fmt"
	"strings"
)

// This file is the registry of aggregate functions: the functions of the
// IR (AggFunc), what each one is (its SQL name, how many arguments it
// takes, the type of its result, whether its interval is known before the
// run), and the SQL spellings the parser reads as each. Adding an
// aggregate is a constant and a row here, and its aggregator in
// query/dpplan (its own file, which registers it).

// AggFunc is an aggregate function of the query model.
type AggFunc int

// The aggregate functions of this part of the SQL surface.
const (
	// CountStar is COUNT(*): rows per group.
	CountStar AggFunc = iota
	// Count is COUNT(col): rows per group where col is not NULL.
	Count
	// Sum is SUM(col): the sum of col clamped to its declared bounds,
	// NULLs excluded.
	Sum
	// Avg is AVG(col): a noisy centred sum over a noisy count, clamped to
	// the declared bounds.
	Avg
	// CountDistinct is COUNT(DISTINCT privacy_unit): people per group.
	CountDistinct
	// VarPop is VAR_POP(col): the population variance, from noisy centred
	// sums of the value and of its square and a noisy count.
	VarPop
	// VarSamp is VAR_SAMP(col) and VARIANCE(col): the sample variance.
	VarSamp
	// StddevPop is STDDEV_POP(col): the square root of VAR_POP.
	StddevPop
	// StddevSamp is STDDEV_SAMP(col) and STDDEV(col): the square root of
	// VAR_SAMP.
	StddevSamp
	// Quantile is percentile_cont(Q) WITHIN GROUP (ORDER BY col) and
	// MEDIAN(col): chosen by the exponential mechanism on ranks over a
	// public grid of candidate values.
	Quantile
)

// AggResult is the type of an aggregate's released value.
type AggResult int

// The result types of aggregates.
const (
	// ResultFloat: a float64.
	ResultFloat AggResult = iota
	// ResultInt: an int64 (counts).
	ResultInt
	// ResultArg: the argument's type for a date or timestamp (MIN, MAX and
	// quantiles of one), a float64 otherwise.
	ResultArg
)

// AggInfo is a function's row of the registry.
type AggInfo struct {
	// SQL is the function's SQL name, as String spells it.
	SQL string
	// Arity is the number of columns or expressions it aggregates
	// (COUNT(*) is CountStar, with none).
	Arity int
	// Result is the type of the released value.
	Result AggResult
	// KnownWidth is true when the interval's half-width does not depend
	// on the data (a preview then shows the answer's width); false when
	// it depends on a group's size or values (an average, a quantile).
	KnownWidth bool
}

// aggInfos is the registry's table of functions.
var aggInfos = map[AggFunc]AggInfo{
	CountStar:     {SQL: "COUNT", Arity: 0, Result: ResultInt, KnownWidth: true},
	Count:         {SQL: "COUNT", Arity: 1, Result: ResultInt, KnownWidth: true},
	CountDistinct: {SQL: "COUNT", Arity: 1, Result: ResultInt, KnownWidth: true},
	Sum:           {SQL: "SUM", Arity: 1, Result: ResultFloat, KnownWidth: true},
	Avg:           {SQL: "AVG", Arity: 1, Result: ResultFloat},
	VarPop:        {SQL: "VAR_POP", Arity: 1, Result: ResultFloat},
	VarSamp:       {SQL: "VAR_SAMP", Arity: 1, Result: ResultFloat},
	StddevPop:     {SQL: "STDDEV_POP", Arity: 1, Result: ResultFloat},
	StddevSamp:    {SQL: "STDDEV_SAMP", Arity: 1, Result: ResultFloat},
	Quantile:      {SQL: "PERCENTILE_CONT", Arity: 1, Result: ResultArg},
}

// AggName is one SQL spelling of an aggregate that the parser reads.
type AggName struct {
	// Name is the spelling, lower case.
	Name string
	// Func is the function it builds.
	Func AggFunc
	// Extreme is -1 for MIN and +1 for MAX (Quantile only).
	Extreme int
	// Alias marks another spelling of a listed function (VARIANCE,
	// STDDEV): it is not listed in messages.
	Alias bool
	// OwnName names an unnamed output after this spelling (median_x)
	// rather than after the function (percentile_cont_x).
	OwnName bool
	// Ordered marks a function written f(q) WITHIN GROUP (ORDER BY col):
	// the parser reads its syntax apart.
	Ordered bool
}

// aggNames is the registry's table of spellings, in the order messages
// list them. COUNT covers COUNT(*), COUNT(col) and COUNT(DISTINCT unit);
// the parser tells them apart by their syntax.
var aggNames = []AggName{
	{Name: "count", Func: Count},
	{Name: "sum", Func: Sum},
	{Name: "avg", Func: Avg},
	{Name: "min", Func: Quantile, Extreme: -1, OwnName: true},
	{Name: "max", Func: Quantile, Extreme: 1, OwnName: true},
	{Name: "var_pop", Func: VarPop},
	{Name: "var_samp", Func: VarSamp},
	{Name: "variance", Func: VarSamp, Alias: true},
	{Name: "stddev_pop", Func: StddevPop},
	{Name: "stddev_samp", Func: StddevSamp},
	{Name: "stddev", Func: StddevSamp, Alias: true},
	{Name: "median", Func: Quantile, OwnName: true},
	{Name: "percentile_cont", Func: Quantile, Ordered: true},
}

// Info is f's row of the registry; an unknown function has the zero row.
func (f AggFunc) Info() AggInfo { return aggInfos[f] }

// Funcs lists every aggregate function of the registry.
func Funcs() []AggFunc {
	out := make([]AggFunc, 0, len(aggInfos))
	for f := range aggInfos {
		out = append(out, f)
	}
	return out
}

// String returns the SQL name of the function.
func (f AggFunc) String() string {
	if i, ok := aggInfos[f]; ok {
		return i.SQL
	}
	return fmt.Sprintf("AggFunc(%d)", int(f))
}

// LookupAggregate returns the registry's spelling name (lower case), and
// whether name is an aggregate at all.
func LookupAggregate(name string) (AggName, bool) {
	for _, n := range aggNames {
		if n.Name == name {
			return n, true
		}
	}
	return AggName{}, false
}

// IsAggregate reports whether name (lower case) spells an aggregate.
func IsAggregate(name string) bool {
	_, ok := LookupAggregate(name)
	return ok
}

// AggregateList lists the supported aggregates for messages: "COUNT, SUM,
// AVG, …, percentile_cont".
func AggregateList() string {
	var out []string
	for _, n := range aggNames {
		switch {
		case n.Alias:
		case n.Ordered:
			out = append(out, n.Name)
		default:
			out = append(out, strings.ToUpper(n.Name))
		}
	}
	return strings.Join(out, ", ")
}
