package mechanism

import (
	"fmt"
	"math"

	"github.com/dpstat/dpstat/random"
)

// checkEpsilon accepts a finite ε > 0.
func checkEpsilon(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return fmt.Errorf("epsilon = %v: want a finite number > 0", v)
	}
	return nil
}

// checkSensitivity accepts a finite sensitivity > 0.
func checkSensitivity(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return fmt.Errorf("%s = %v: want a finite number > 0 (a zero sensitivity would mean no noise)", name, v)
	}
	return nil
}

// checkDelta accepts δ in (0, 1).
func checkDelta(v float64) error {
	if math.IsNaN(v) || !(v > 0 && v < 1) {
		return fmt.Errorf("delta = %v: want a number in (0, 1)", v)
	}
	return nil
}

// checkFinite accepts any finite value.
func checkFinite(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("%s = %v: want a finite number", name, v)
	}
	return nil
}

// source returns the Source to use for one call: the configured one, or a
// secure generator borrowed from the pool, which the caller gives back with
// release.
func source(s random.Source) (random.Source, *random.Secure) {
	if s != nil {
		return s, nil
	}
	b := random.Borrow()
	return b, b
}

// release returns a borrowed generator to the pool (nil is a no-op).
func release(b *random.Secure) {
	if b != nil {
		random.Return(b)
	}
}

// floorLog2 returns floor(log2 x) for a finite x > 0.
func floorLog2(x float64) int {
	_, e := math.Frexp(x)
	return e - 1
}

// roundUp nudges a computed float64 up by a relative 2^-50, more than the
// rounding error of the few operations that produced it, so that a value
// that must not be underestimated (a noise scale, a cost) is not.
func roundUp(x float64) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	return x + math.Abs(x)*0x1p-50
}

// roundDown nudges a computed float64 down by a relative 2^-50.
func roundDown(x float64) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	return x - math.Abs(x)*0x1p-50
}

// normalQuantile returns z with Φ(z) = 1 − α/2, the two-sided normal
// quantile for confidence 1 − α.
func normalQuantile(confidence float64) float64 {
	return math.Sqrt2 * math.Erfinv(confidence)
}
