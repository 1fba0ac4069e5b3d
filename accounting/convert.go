package accounting

import (
	"fmt"
	"math"
)

// checkRho reports whether rho is a finite number >= 0.
func checkRho(rho float64) error {
	if math.IsNaN(rho) || math.IsInf(rho, 0) || rho < 0 {
		return fmt.Errorf("rho = %v: want a finite number >= 0", rho)
	}
	return nil
}

// checkDelta reports whether delta is in (0, 1), as every conversion from
// zCDP to (ε, δ) needs.
func checkDelta(name string, delta float64) error {
	if math.IsNaN(delta) || delta <= 0 || delta >= 1 {
		return fmt.Errorf("%s = %v: want a number in (0, 1)", name, delta)
	}
	return nil
}

// PureToRho is the zCDP parameter of an ε-DP release: ρ = ε²/2 (Bun &
// Steinke 2016), rounded up.
func PureToRho(epsilon float64) (float64, error) {
	if err := checkEpsilon(epsilon); err != nil {
		return 0, err
	}
	return mulUp(mulUp(epsilon, epsilon), 0.5), nil
}

// checkEpsilon reports whether epsilon is a finite number >= 0.
func checkEpsilon(epsilon float64) error {
	if math.IsNaN(epsilon) || math.IsInf(epsilon, 0) || epsilon < 0 {
		return fmt.Errorf("epsilon = %v: want a finite number >= 0", epsilon)
	}
	return nil
}

// ZCDPToEpsilonSimple converts ρ-zCDP to (ε, δ)-DP with the bound of Bun &
// Steinke 2016: ε = ρ + 2·sqrt(ρ·ln(1/δ)). The result is rounded up.
func ZCDPToEpsilonSimple(rho, delta float64) (float64, error) {
	if err := checkRho(rho); err != nil {
		return 0, err
	}
	if err := checkDelta("delta", delta); err != nil {
		return 0, err
	}
	return simpleEps(rho, delta), nil
}

func simpleEps(rho, delta float64) float64 {
	if rho == 0 {
		return 0
	}
	e := rho + 2*math.Sqrt(rho*-math.Log(delta))
	return nudgeUp(e, 8)
}

// ZCDPToEpsilon converts ρ-zCDP to (ε, δ)-DP with the tighter bound of
// Canonne, Kamath & Steinke 2020 (Proposition 12 of "The Discrete Gaussian
// for Differential Privacy"):
//
//	ε = min over α > 1 of αρ + (ln(1/δ) + (α−1)·ln(1−1/α) − ln α)/(α−1).
//
// The bound holds at every α, so the numerical minimum (a scan of 81
// log-spaced values of α−1 in [1e-8, 1e12] followed by golden-section
// search) only decides how tight the answer is, never whether it is valid. The value is rounded up
// to cover floating-point error, and it is never above the simple bound.
func ZCDPToEpsilon(rho, delta float64) (float64, error) {
	if err := checkRho(rho); err != nil {
		return 0, err
	}
	if err := checkDelta("delta", delta); err != nil {
		return 0, err
	}
	return tightEps(rho, delta), nil
}

// ckBound evaluates the Canonne–Kamath–Steinke bound at α = 1 + a, with
// a > 0, together with the sum of the magnitudes of its terms (to size the
// rounding margin).
func ckBound(rho, logInvDelta, a float64) (float64, float64) {
	alpha := 1 + a
	// (α−1)·ln(1−1/α) − ln α = a·ln(a/(1+a)) − ln(1+a) = a·ln a − α·ln(1+a).
	t1 := alpha * rho
	num := logInvDelta + a*math.Log(a) - alpha*math.Log1p(a)
	t2 := num / a
	mag := math.Abs(t1) + (logInvDelta+math.Abs(a*math.Log(a))+math.Abs(alpha*math.Log1p(a)))/a
	return t1 + t2, mag
}

func tightEps(rho, delta float64) float64 {
	if rho == 0 {
		return 0
	}
	L := -math.Log(delta)
	// Scan a = α−1 over [1e-8, 1e12], four points per decade, then refine
	// the bracket around the best point by golden-section search in log a.
	// The bound is unimodal in α, so the bracket holds the minimum; and at
	// any α it is a valid bound, so the search only affects tightness.
	const (
		lo    = -8.0 * math.Ln10
		hi    = 12.0 * math.Ln10
		steps = 80
	)
	best, bestI := math.Inf(1), 0
	h := (hi - lo) / steps
	for i := 0; i <= steps; i++ {
		v, _ := ckBound(rho, L, math.Exp(lo+float64(i)*h))
		if v < best {
			best, bestI = v, i
		}
	}
	f := func(t float64) float64 {
		v, _ := ckBound(rho, L, math.Exp(t))
		return v
	}
	a, b := lo+float64(bestI-1)*h, lo+float64(bestI+1)*h
	invPhi := (math.Sqrt(5) - 1) / 2
	c, d := b-invPhi*(b-a), a+invPhi*(b-a)
	fc, fd := f(c), f(d)
	for range 64 {
		if fc < fd {
			b, d, fd = d, c, fc
			c = b - invPhi*(b-a)
			fc = f(c)
		} else {
			a, c, fc = c, d, fd
			d = a + invPhi*(b-a)
			fd = f(d)
		}
	}
	tBest := c
	if fd < fc {
		tBest = d
	}
	v, mag := ckBound(rho, L, math.Exp(tBest))
	if best < v {
		v, mag = ckBound(rho, L, math.Exp(lo+float64(bestI)*h))
	}
	// Every term carries at most a few ulps of error; a margin of 2^-40 of
	// their magnitudes covers it with room to spare.
	v += mag * 0x1p-40
	v = nudgeUp(v, 2)
	if v < 0 {
		v = 0
	}
	if s := simpleEps(rho, delta); s < v {
		v = s
	}
	return v
}

// ApproxZCDPToEpsDelta converts δ0-approximately ρ-zCDP to (ε, δ)-DP for a
// target δ > δ0: the release is (ε(ρ, δ−δ0), δ)-DP, with ε from
// ZCDPToEpsilon.
func ApproxZCDPToEpsDelta(rho, delta0, delta float64) (EpsDelta, error) {
	if err := checkRho(rho); err != nil {
		return EpsDelta{}, err
	}
	if math.IsNaN(delta0) || delta0 < 0 || delta0 >= 1 {
		return EpsDelta{}, fmt.Errorf("delta0 = %v: want a number in [0, 1)", delta0)
	}
	if err := checkDelta("delta", delta); err != nil {
		return EpsDelta{}, err
	}
	if delta <= delta0 {
		return EpsDelta{}, fmt.Errorf("delta = %v must exceed the approximate-zCDP delta0 = %v", delta, delta0)
	}
	rest := ratDown(new(ratT).Sub(ratOf(delta), ratOf(delta0)))
	if rest <= 0 {
		return EpsDelta{}, fmt.Errorf("delta = %v leaves nothing above delta0 = %v", delta, delta0)
	}
	return EpsDelta{Epsilon: tightEps(rho, rest), Delta: delta}, nil
}
