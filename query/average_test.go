package query

import (
	"math"
	"testing"

	"github.com/dpstat/dpstat/query/dpplan"
)

// laplaceMixTailSum is LaplaceMixTail by direct summation over the count's
// noise (|y| ≤ 40·bn + 200, beyond which the mass is below e^−40).
func laplaceMixTailSum(t, mu, b, bn float64) float64 {
	a := math.Exp(-1 / bn)
	c0 := (1 - a) / (1 + a)
	lim := int(40*bn) + 200
	var total float64
	for y := -lim; y <= lim; y++ {
		u := t - mu*float64(y)
		tail := 0.5 * math.Exp(-u/b)
		if u < 0 {
			tail = 1 - 0.5*math.Exp(u/b)
		}
		total += c0 * math.Pow(a, math.Abs(float64(y))) * tail
	}
	return total
}

// TestLaplaceMixTail checks the closed form of P(X + mu·Y > t) against the
// direct sum over Y, across scales where either noise dominates, where
// a·e^(mu/b) is below, at and above 1, and at t = 0 (where it is ½).
func TestLaplaceMixTail(t *testing.T) {
	for _, b := range []float64{1, 73, 300} {
		for _, bn := range []float64{0.5, 2, 6, 30} {
			for _, mu := range []float64{0, 1e-3, 0.3, b / bn, 5, 50} {
				for _, tt := range []float64{0, 0.5, b, 3 * b, 10 * b} {
					got, want := dpplan.LaplaceMixTail(tt, mu, b, bn), laplaceMixTailSum(tt, mu, b, bn)
					if math.Abs(got-want) > 1e-9*math.Max(1e-3, want) {
						t.Errorf("b=%v bn=%v mu=%v t=%v: closed form %v, direct sum %v", b, bn, mu, tt, got, want)
					}
				}
			}
		}
	}
	if got := dpplan.LaplaceMixTail(0, 7, 73, 6); math.Abs(got-0.5) > 1e-12 {
		t.Errorf("P(X + mu·Y > 0) = %v, want 0.5", got)
	}
}
