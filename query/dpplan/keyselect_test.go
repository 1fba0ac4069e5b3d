package dpplan

import (
	"math"
	"testing"
)

// TestSelectionThreshold checks the threshold formula against direct
// evaluation of the discrete-Laplace tail: τ is the smallest integer with
// L0·P(Z ≥ τ − 1) ≤ δ.
func TestSelectionThreshold(t *testing.T) {
	tests := []struct {
		name  string
		b     float64
		l0    int64
		delta float64
	}{
		{"scale 2", 2, 1, 1e-6},
		{"scale 6, L0 3", 6, 3, 1e-6},
		{"large delta", 2, 1, 0.3},
		{"tiny scale", 1e-3, 1, 1e-9},
		{"huge delta", 1, 1, 0.9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tau, single := selectionThreshold(tt.b, tt.l0, tt.delta)
			a := math.Exp(-1 / tt.b)
			tail := func(k int64) float64 { // P(Z ≥ k), by summing the pmf
				s := 0.0
				for j := k; j < k+100000; j++ {
					aj := math.Pow(a, math.Abs(float64(j)))
					s += (1 - a) / (1 + a) * aj
					if aj < 1e-300 {
						break
					}
				}
				return s
			}
			if got := float64(tt.l0) * tail(tau-1); got > tt.delta*(1+1e-9) {
				t.Errorf("τ = %d: L0·P(Z ≥ τ−1) = %v > δ", tau, got)
			}
			if tau > 1 && float64(tt.l0)*tail(tau-2) <= tt.delta*(1-1e-9) {
				t.Errorf("τ = %d is not the smallest: τ−1 also meets δ", tau)
			}
			if math.Abs(single-tail(tau-1)) > 1e-9*math.Max(single, 1e-300)+1e-300 {
				t.Errorf("single = %v, tail = %v", single, tail(tau-1))
			}
		})
	}
}
