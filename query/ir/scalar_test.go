package ir

import (
	"math"
	"testing"

	"github.com/dpstat/dpstat/schema"
)

// TestScalarRangeFollowsSQL checks the spans of the constructs whose SQL
// meaning the interval arithmetic once missed: LEAST and GREATEST skip
// NULL arguments, a CASE's NULL arm makes it nullable wherever it comes,
// and % and ROUND(x, n) computed in doubles may step past the exact
// result's range.
func TestScalarRangeFollowsSQL(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tbl := &Table{Name: "t", Columns: []*Column{
		{Name: "a", Type: schema.Int, Lower: f(0), Upper: f(5), Nullable: true},
		{Name: "c", Type: schema.Int, Lower: f(0), Upper: f(100)},
		{Name: "big", Type: schema.Float, Lower: f(0), Upper: f(9.005e15)},
		{Name: "h", Type: schema.Float, Lower: f(9007199254740000), Upper: f(9007199254740977)},
		{Name: "s", Type: schema.Float, Lower: f(-10), Upper: f(10)},
	}}
	a, c, big, h, s := ColumnValue{"a"}, ColumnValue{"c"}, ColumnValue{"big"}, ColumnValue{"h"}, ColumnValue{"s"}
	one, zero := Constant{Value: 1, Int: true}, Constant{Value: 0, Int: true}
	nullOrZero := Cond{Whens: []Expr{nil}, Thens: []Scalar{nil}, Else: zero}
	tests := []struct {
		name     string
		s        Scalar
		lo, hi   float64
		nullable bool
	}{
		// Both columns can be NULL: each may be the only value.
		{"LEAST(a, c)", Call{Func: "least", Args: []Scalar{a, c}}, 0, 100, true},
		{"GREATEST(a, c)", Call{Func: "greatest", Args: []Scalar{a, c}}, 0, 100, true},
		// A literal is never NULL: it bounds the result.
		{"LEAST(a, 1)", Call{Func: "least", Args: []Scalar{a, one}}, 0, 1, false},
		{"GREATEST(a, 1)", Call{Func: "greatest", Args: []Scalar{a, one}}, 1, 5, false},
		{"LEAST(NULL-or-0, 1)", Call{Func: "least", Args: []Scalar{nullOrZero, one}}, 0, 1, false},
		{"CASE WHEN … THEN NULL ELSE 0 END", nullOrZero, 0, 0, true},
		{"COALESCE(a, 1)", Call{Func: "coalesce", Args: []Scalar{a, one}}, 0, 5, false},
		// Whole numbers below 2^53: exact.
		{"c % 7", Arith{Op: "%", L: c, R: Constant{Value: 7, Int: true}}, 0, 7, true},
		// Large doubles: the remainder may take the other sign.
		{"big % 1.5", Arith{Op: "%", L: big, R: Constant{Value: 1.5}}, -0x1p-51 * (9.005e15 + 3), 1.5 + 0x1p-51*(9.005e15+3), true},
		{"ROUND(s, 2)", Call{Func: "round", Args: []Scalar{s, Constant{Value: 2, Int: true}}}, -10, 10, true},
		{"ROUND(h, 1)", Call{Func: "round", Args: []Scalar{h, Constant{Value: 1, Int: true}}}, 9007199254739995, 9007199254740982, true},
		{"CAST(big % 1.5 AS int)", Cast{Type: schema.Int, Arg: Arith{Op: "%", L: big, R: Constant{Value: 1.5}}}, -4, 6, true},
	}
	for _, tt := range tests {
		sp, err := ScalarRange(tt.s, tbl)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if math.Abs(sp.Lo-tt.lo) > 1e-9*math.Max(1, math.Abs(tt.lo)) || math.Abs(sp.Hi-tt.hi) > 1e-9*math.Max(1, math.Abs(tt.hi)) || sp.nullable != tt.nullable {
			t.Errorf("%s: span [%v, %v] nullable %v, want [%v, %v] nullable %v", tt.name, sp.Lo, sp.Hi, sp.nullable, tt.lo, tt.hi, tt.nullable)
		}
	}
}
