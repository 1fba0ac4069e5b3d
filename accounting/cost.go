// Package accounting states what a release costs in privacy and adds those
// costs up: the cost type with its conversions between pure DP, approximate
// (ε, δ)-DP and zero-concentrated DP (zCDP), the composition rules
// (sequential, parallel, advanced, zCDP), group privacy, and budgets that
// refuse a cost which does not fit.
//
// All budget arithmetic rounds against the data subject: a spent amount is
// rounded up and a remaining amount down, so floating-point drift can never
// give budget back.
package accounting

import (
	"fmt"
	"math"
)

// Cost is the privacy cost of one release, stated in every form that applies
// to it, so that a budget can add costs with whichever rule it uses.
//
// The release is (Epsilon, Delta)-differentially private, and it is
// RhoDelta-approximately Rho-zCDP. A pure ε-DP release has Delta = 0,
// Rho = ε²/2 and RhoDelta = 0 (the exponential mechanism has the tighter
// Rho = ε²/8); a Gaussian release has the (ε, δ) of its calibration and
// Rho = Δ₂²/(2σ²); a release that is only known to be (ε, δ)-DP has
// Rho = ε²/2 with RhoDelta = δ.
type Cost struct {
	Epsilon  float64 `json:"epsilon"`
	Delta    float64 `json:"delta"`
	Rho      float64 `json:"rho"`
	RhoDelta float64 `json:"rho_delta"`
}

// Pure is the cost of an ε-DP release that has no tighter zCDP statement.
func Pure(epsilon float64) Cost {
	return Cost{Epsilon: epsilon, Rho: epsilon * epsilon / 2}
}

// Approximate is the cost of an (ε, δ)-DP release that has no tighter zCDP
// statement: as zCDP it is δ-approximately (ε²/2)-zCDP.
func Approximate(epsilon, delta float64) Cost {
	return Cost{Epsilon: epsilon, Delta: delta, Rho: epsilon * epsilon / 2, RhoDelta: delta}
}

// Validate reports whether every field is a finite, non-negative number and
// both deltas are below 1. The error names the offending field and value.
func (c Cost) Validate() error {
	fields := []struct {
		name string
		v    float64
	}{{"epsilon", c.Epsilon}, {"delta", c.Delta}, {"rho", c.Rho}, {"rho_delta", c.RhoDelta}}
	for _, f := range fields {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return fmt.Errorf("cost %s = %v: want a finite number >= 0", f.name, f.v)
		}
	}
	if c.Delta >= 1 {
		return fmt.Errorf("cost delta = %v: want a number in [0, 1)", c.Delta)
	}
	if c.RhoDelta >= 1 {
		return fmt.Errorf("cost rho_delta = %v: want a number in [0, 1)", c.RhoDelta)
	}
	return nil
}

// String formats the cost for people, e.g. "ε=0.5 δ=0 ρ=0.125".
func (c Cost) String() string {
	s := fmt.Sprintf("ε=%g δ=%g ρ=%g", c.Epsilon, c.Delta, c.Rho)
	if c.RhoDelta > 0 {
		s += fmt.Sprintf(" (approximate zCDP δ=%g)", c.RhoDelta)
	}
	return s
}
