package clickhouse

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/engine"
)

// TestSubnormalLiterals: a subnormal is spelled as a product of two
// normal doubles that equals it exactly (18.16 refuses it as a number),
// and is still a float literal to Extremum; other doubles are
// toFloat64(text).
func TestSubnormalLiterals(t *testing.T) {
	for _, x := range []float64{5e-324, -5e-324, 1e-310, -2.225073858507201e-308, 0x1p-1050 * 3} {
		lit, err := engine.Literal(Dialect, x)
		if err != nil {
			t.Fatal(err)
		}
		if !floatLitRE.MatchString(lit) {
			t.Errorf("%g: %s is not read as a float literal", x, lit)
		}
		inner := strings.TrimSuffix(strings.TrimPrefix(lit, "(toFloat64("), "))")
		parts := strings.Split(inner, ") * toFloat64(")
		if len(parts) != 2 {
			t.Fatalf("%g: spelled %s, want a product of two toFloat64", x, lit)
		}
		a, errA := strconv.ParseFloat(parts[0], 64)
		b, errB := strconv.ParseFloat(parts[1], 64)
		if errA != nil || errB != nil || math.Abs(a) < 0x1p-1022 || math.Abs(b) < 0x1p-1022 || a*b != x {
			t.Errorf("%g: spelled %s (%v, %v): want normal factors whose product is exactly the value", x, lit, errA, errB)
		}
	}
	for x, want := range map[float64]string{0: "toFloat64(0.0)", 2.2250738585072014e-308: "toFloat64(2.2250738585072014e-308)", -1.5: "toFloat64(-1.5)"} {
		if lit, _ := engine.Literal(Dialect, x); lit != want {
			t.Errorf("%g: got %s, want %s", x, lit, want)
		}
	}
}
