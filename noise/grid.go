package noise

import (
	"errors"
	"fmt"
	"math"
	"math/big"
)

// Grid is the set of multiples of the power of two 2^Exp. Real values are
// released as round(x/2^Exp) + k grid steps, computed exactly on integers,
// and converted to float64 only at the end.
//
// Rounding x to the nearest grid point moves two values that differ by Δ
// to points that differ by at most Δ + 2^Exp, so a mechanism on the grid
// calibrates its noise to the sensitivity Δ + 2^Exp.
type Grid struct {
	// Exp is the base-2 exponent of the grid step 2^Exp.
	Exp int
}

// Granularity returns 2^Exp (0 if it underflows float64, +Inf if it
// overflows).
func (g Grid) Granularity() float64 { return math.Ldexp(1, g.Exp) }

var errNotFinite = errors.New("not a finite number")

// RoundInt64 returns round(x/2^Exp) (halves away from zero) when it fits in
// 63 bits, and false otherwise (also for NaN and ±Inf). x/2^Exp is exact in
// float64 arithmetic, since the divisor is a power of two.
func (g Grid) RoundInt64(x float64) (int64, bool) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, false
	}
	if x == 0 {
		return 0, true
	}
	frac, e := math.Frexp(x) // |x| = |frac|·2^e, |frac| in [1/2, 1)
	m := e - g.Exp           // |x/g| < 2^m
	if m > 62 {
		return 0, false
	}
	return int64(math.Round(math.Ldexp(frac, m))), true
}

// Round returns round(x/2^Exp) exactly (halves away from zero), however
// large. It returns an error for NaN and ±Inf.
func (g Grid) Round(x float64) (*big.Int, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil, fmt.Errorf("grid round x = %v: %w", x, errNotFinite)
	}
	if r, ok := g.RoundInt64(x); ok {
		return big.NewInt(r), nil
	}
	// |x/g| ≥ 2^62: x/g = mant·2^(m−53) with m − 53 ≥ 10, an integer.
	frac, e := math.Frexp(x)
	mant := int64(math.Ldexp(frac, 53)) // exact: |mant| in [2^52, 2^53)
	b := big.NewInt(mant)
	return b.Lsh(b, uint(e-g.Exp-53)), nil
}

// AddNoise returns (round(x/2^Exp) + k)·2^Exp, computed exactly on integers
// and rounded to the nearest float64 only at the end (results beyond the
// float64 range become ±math.MaxFloat64). x must be finite; NaN and ±Inf are
// returned unchanged.
func (g Grid) AddNoise(x float64, k int64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	if r, ok := g.RoundInt64(x); ok {
		n := r + k
		// |r| ≤ 2^62 and |k| < 2^63: overflow shows as a sign change.
		if (k >= 0 && n >= r) || (k < 0 && n < r) {
			return clampFinite(math.Ldexp(float64(n), g.Exp))
		}
	}
	b, _ := g.Round(x)
	b.Add(b, big.NewInt(k))
	f := new(big.Float).SetInt(b) // exact: big.Float takes the precision it needs
	f.SetMantExp(f, g.Exp)
	v, _ := f.Float64()
	return clampFinite(v)
}

// clampFinite maps ±Inf to ±math.MaxFloat64.
func clampFinite(v float64) float64 {
	if math.IsInf(v, 1) {
		return math.MaxFloat64
	}
	if math.IsInf(v, -1) {
		return -math.MaxFloat64
	}
	return v
}
