package accounting

import (
	"math"
	"math/big"
)

// Directed rounding helpers. Privacy arithmetic must never under-count a
// cost, so sums and products of costs are rounded toward +Inf and the
// amounts left are rounded toward 0.

// addUp returns the smallest float64 that is >= a + b computed exactly.
func addUp(a, b float64) float64 {
	s := a + b
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return s
	}
	// Knuth's TwoSum: err is exactly (a + b) - s.
	bb := s - a
	err := (a - (s - bb)) + (b - bb)
	if err > 0 {
		s = math.Nextafter(s, math.Inf(1))
	}
	return s
}

// mulUp returns the smallest float64 that is >= a * b computed exactly.
func mulUp(a, b float64) float64 {
	p := a * b
	if math.IsInf(p, 0) || math.IsNaN(p) {
		return p
	}
	if math.FMA(a, b, -p) > 0 {
		p = math.Nextafter(p, math.Inf(1))
	}
	return p
}

// nudgeUp moves x up by n units in the last place. It covers the error of
// library functions (exp, log, sqrt are accurate to within one or two ulps).
func nudgeUp(x float64, n int) float64 {
	for range n {
		x = math.Nextafter(x, math.Inf(1))
	}
	return x
}

// ratUp returns the smallest float64 >= r.
func ratUp(r *big.Rat) float64 {
	f, _ := r.Float64()
	if math.IsInf(f, 0) {
		return f
	}
	if new(big.Rat).SetFloat64(f).Cmp(r) < 0 {
		f = math.Nextafter(f, math.Inf(1))
	}
	return f
}

// ratDown returns the largest float64 <= r.
func ratDown(r *big.Rat) float64 {
	f, _ := r.Float64()
	if math.IsInf(f, 0) {
		return f
	}
	if new(big.Rat).SetFloat64(f).Cmp(r) > 0 {
		f = math.Nextafter(f, math.Inf(-1))
	}
	return f
}

// ratOf returns x as an exact rational. x must be finite.
func ratOf(x float64) *big.Rat {
	return new(big.Rat).SetFloat64(x)
}
