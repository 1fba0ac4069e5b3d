package mechanism

import (
	"fmt"
	"math"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/noise"
	"github.com/dpstat/dpstat/random"
)

// GaussianOptions configures a Gaussian mechanism.
type GaussianOptions struct {
	// Epsilon is ε > 0.
	Epsilon float64
	// Delta is δ in (0, 1).
	Delta float64
	// Sensitivity is the L2 sensitivity Δ₂ > 0.
	Sensitivity float64
	// Source is the random source; nil means the secure pooled source.
	Source random.Source
}

// Gaussian releases real values with discrete Gaussian noise on a
// power-of-two grid. σ is the analytic Gaussian calibration (Balle & Wang
// 2018) for the sensitivity Δ' = Δ + g, raised by a relative 2^-16 and
// rounded up to a whole number of grid steps. The release is (ε, δ)-DP and
// Δ'²/(2σ²)-zCDP (up to noise.SamplerDelta). Methods are safe for concurrent
// use when Source is nil.
type Gaussian struct {
	eps, delta, sens float64
	grid             noise.Grid
	sigmaSteps       int64   // σ in grid steps; 0 means σ below 1/16 step (see NewGaussian)
	sigma            float64 // σ in value units, as used
	src              random.Source
}

// Grid precision of the Gaussian: σ is between 2^20 and 2^30 grid steps
// whenever that is compatible with g ≤ Δ·2^-20.
const (
	gaussMinSteps = 1 << 20
	gaussMaxSteps = 1 << 30
)

// NewGaussian returns a Gaussian mechanism, or an error naming the invalid
// option.
//
// The grid: with g_Δ = 2^(floor(log2 Δ) − 20),
//   - if σ ≥ 2^20·g_Δ, g = g_Δ, coarsened if needed so that σ ≤ 2^30 g;
//   - if g_Δ/32 < σ < 2^20·g_Δ, g = 2^(floor(log2 σ) − 20), so σ has 20 bits
//     of precision in grid steps;
//   - if σ ≤ g_Δ/32 (ε enormous, such as 1e20), g = g_Δ and σ is below 1/16
//     step: the discrete Gaussian is then 0 except with probability below
//     2e^-128, and the release returns x on the grid without drawing noise
//     (that probability is part of noise.SamplerDelta).
func NewGaussian(o GaussianOptions) (*Gaussian, error) {
	sigma0, err := AnalyticGaussianSigma(o.Epsilon, o.Delta, o.Sensitivity)
	if err != nil {
		return nil, fmt.Errorf("gaussian: %w", err)
	}
	eD := floorLog2(o.Sensitivity) - gridBits
	if eD < -1074 {
		eD = -1074
	}
	gD := math.Ldexp(1, eD)
	m := &Gaussian{eps: o.Epsilon, delta: o.Delta, sens: o.Sensitivity, src: o.Source}
	var exp int
	switch {
	case sigma0 <= gD/32:
		exp = eD
	case sigma0 < gD*gaussMinSteps:
		exp = floorLog2(sigma0) - gridBits
		if exp < -1074 {
			exp = -1074
		}
	default:
		exp = eD
		if sigma0 > math.Ldexp(gaussMaxSteps, exp) {
			exp = floorLog2(sigma0) - 29
		}
	}
	// σ for Δ + g in grid steps is σ0/g + σ0/Δ: coarsening the grid helps
	// only while σ0/g dominates, so a few steps suffice or nothing will.
	for tries := 0; ; tries++ {
		m.grid = noise.Grid{Exp: exp}
		g := m.grid.Granularity()
		sigma1, err := AnalyticGaussianSigma(o.Epsilon, o.Delta, roundUp(o.Sensitivity+g))
		if err != nil {
			return nil, fmt.Errorf("gaussian: %w", err)
		}
		steps := sigma1 / g
		if steps <= 1.0/16 {
			m.sigmaSteps = 0
			m.sigma = sigma1
			return m, nil
		}
		// The margin 2^-16 covers the difference between the discrete and
		// the continuous Gaussian's δ (Canonne, Kamath & Steinke 2020 give
		// it exactly), which at 2^20 or more steps is of relative order
		// 1e-8: the margin lowers δ by a relative 1e-4 or more. A test
		// recomputes the discrete δ.
		st := math.Ceil(roundUp(steps * (1 + 0x1p-16)))
		if st > noise.MaxSigma {
			if tries < 8 {
				exp++
				continue
			}
			return nil, fmt.Errorf("gaussian: epsilon = %v, delta = %v: sigma = %v is %v times the sensitivity, more than 2^31 grid steps can hold; want a larger epsilon", o.Epsilon, o.Delta, sigma1, sigma1/o.Sensitivity)
		}
		m.sigmaSteps = int64(st)
		m.sigma = st * g
		return m, nil
	}
}

// Release returns x plus discrete Gaussian noise, on the grid. The error is
// only for x NaN or ±Inf.
func (m *Gaussian) Release(x float64) (float64, error) {
	if err := checkFinite("gaussian: value", x); err != nil {
		return 0, err
	}
	if m.sigmaSteps == 0 {
		return m.grid.AddNoise(x, 0), nil
	}
	src, b := source(m.src)
	k := noise.DiscreteGaussian(src, m.sigmaSteps)
	release(b)
	return m.grid.AddNoise(x, k), nil
}

// Sigma returns σ in value units as used (rounded up to whole grid steps).
func (m *Gaussian) Sigma() float64 { return m.sigma }

// Granularity returns the grid step g; every release is a multiple of it.
func (m *Gaussian) Granularity() float64 { return m.grid.Granularity() }

// Cost returns ε and δ as requested, Rho = Δ'²/(2σ²) for Δ' = Δ + g and the
// σ actually used, and RhoDelta = 0.
func (m *Gaussian) Cost() accounting.Cost {
	d := m.sens + m.grid.Granularity()
	r := d / m.sigma
	return accounting.Cost{Epsilon: m.eps, Delta: m.delta, Rho: roundUp(r * r / 2)}
}

// Interval returns the half-width h with P(|release − x| ≤ h) ≥ confidence:
// k grid steps, k the smallest integer with P(|Z| > k) ≤ 1 − confidence for
// the discrete Gaussian Z actually used, plus half a step for the rounding
// of x. The tail is computed by the Euler–Maclaurin formula
// P(Z ≥ m) = (∫_m^∞ f + f(m)/2 + m·f(m)/(12σ²))/(σ√(2π)), f(y) =
// exp(−y²/(2σ²)), whose remainder is negligible at 2^20 steps and more.
// confidence ≤ 0 gives g/2, confidence ≥ 1 gives +Inf and NaN gives NaN.
func (m *Gaussian) Interval(confidence float64) float64 {
	g := m.grid.Granularity()
	switch {
	case math.IsNaN(confidence):
		return math.NaN()
	case confidence <= 0:
		return g / 2
	case confidence >= 1:
		return math.Inf(1)
	}
	if m.sigmaSteps == 0 {
		return g / 2
	}
	s := float64(m.sigmaSteps)
	alpha := 1 - confidence
	// ok(k): P(|Z| > k) = 2·P(Z ≥ k+1) ≤ α.
	ok := func(k float64) bool { return 2*dgTail(s, k+1) <= alpha }
	k := math.Ceil(normalQuantile(confidence) * s)
	for i := 0; i < 64 && !ok(k); i++ {
		k++
	}
	for i := 0; i < 64 && k > 0 && ok(k-1); i++ {
		k--
	}
	return k*g + g/2
}

// dgTail returns P(Z ≥ m) for the discrete Gaussian with σ steps, by the
// Euler–Maclaurin formula (see Interval), nudged up by a relative 1e-9.
func dgTail(sigma, m float64) float64 {
	f := math.Exp(-m * m / (2 * sigma * sigma))
	integral := sigma * math.Sqrt(math.Pi/2) * math.Erfc(m/(sigma*math.Sqrt2))
	t := (integral + f/2 + m/(sigma*sigma)*f/12) / (sigma * math.Sqrt(2*math.Pi))
	return t * (1 + 1e-9)
}

// ClassicGaussianSigma returns the classic calibration σ = Δ₂·sqrt(2
// ln(1.25/δ))/ε (Dwork & Roth 2014), which is valid only for ε < 1.
func ClassicGaussianSigma(epsilon, delta, l2Sensitivity float64) (float64, error) {
	if err := checkEpsilon(epsilon); err != nil {
		return 0, err
	}
	if epsilon >= 1 {
		return 0, fmt.Errorf("epsilon = %v: the classic Gaussian calibration needs epsilon < 1 (use AnalyticGaussianSigma)", epsilon)
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if err := checkSensitivity("l2 sensitivity", l2Sensitivity); err != nil {
		return 0, err
	}
	return classicSigma(epsilon, delta, l2Sensitivity), nil
}

// classicSigma is the classic formula without its validity check.
func classicSigma(epsilon, delta, l2 float64) float64 {
	return l2 * math.Sqrt(2*math.Log(1.25/delta)) / epsilon
}

// AnalyticGaussianSigma returns the smallest σ (to a relative 1e-12, rounded
// up) for which the Gaussian mechanism with L2 sensitivity Δ is (ε, δ)-DP,
// by Balle & Wang's (2018) exact condition
//
//	Φ(Δ/(2σ) − εσ/Δ) − e^ε·Φ(−Δ/(2σ) − εσ/Δ) ≤ δ,
//
// whose left side decreases in σ. It is found by bisection on s = σ/Δ, with
// the second term evaluated in log space so that e^ε cannot overflow.
func AnalyticGaussianSigma(epsilon, delta, l2Sensitivity float64) (float64, error) {
	if err := checkEpsilon(epsilon); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if err := checkSensitivity("l2 sensitivity", l2Sensitivity); err != nil {
		return 0, err
	}
	ok := func(s float64) bool { return analyticDeltaUpper(epsilon, s) <= delta }
	hi := 1.0
	for i := 0; !ok(hi); i++ {
		if i > 2000 {
			return 0, fmt.Errorf("epsilon = %v, delta = %v: no sigma satisfies the analytic Gaussian condition", epsilon, delta)
		}
		hi *= 2
	}
	lo := hi / 2
	for i := 0; ok(lo); i++ {
		if i > 2000 {
			return 0, fmt.Errorf("epsilon = %v, delta = %v: the analytic Gaussian bisection found no lower bound", epsilon, delta)
		}
		lo /= 2
	}
	// Invariant: ok(hi), !ok(lo).
	for i := 0; i < 200 && hi-lo > hi*1e-13; i++ {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	sigma := roundUp(hi * l2Sensitivity)
	if math.IsInf(sigma, 0) {
		return 0, fmt.Errorf("epsilon = %v, delta = %v, l2 sensitivity = %v: sigma overflows", epsilon, delta, l2Sensitivity)
	}
	return sigma, nil
}

// analyticDelta returns Φ(1/(2s) − εs) − e^ε·Φ(−1/(2s) − εs), the δ of the
// Gaussian mechanism with σ = s·Δ.
func analyticDelta(eps, s float64) float64 {
	a := 1/(2*s) - eps*s
	b := -1/(2*s) - eps*s
	first := normalCDF(a)
	second := math.Exp(eps + logNormalCDF(b))
	return first - second
}

// analyticDeltaUpper is analyticDelta plus a bound on its rounding error
// (2^-50 of the two terms), so that a σ accepted by the bisection satisfies
// the exact condition even when the two terms nearly cancel (small ε).
func analyticDeltaUpper(eps, s float64) float64 {
	a := 1/(2*s) - eps*s
	b := -1/(2*s) - eps*s
	first := normalCDF(a)
	second := math.Exp(eps + logNormalCDF(b))
	return first - second + (first+second)*0x1p-50
}

// normalCDF returns Φ(x) = erfc(−x/√2)/2, accurate in the lower tail.
func normalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// logNormalCDF returns ln Φ(x), using the asymptotic series below −30 where
// Φ underflows.
func logNormalCDF(x float64) float64 {
	if x > -30 {
		return math.Log(normalCDF(x))
	}
	// Φ(x) = φ(x)/|x| · (1 − 1/x² + 3/x⁴ − 15/x⁶ + …) for x → −∞.
	x2 := x * x
	series := 1 - 1/x2 + 3/(x2*x2) - 15/(x2*x2*x2)
	return -x2/2 - math.Log(-x) - 0.5*math.Log(2*math.Pi) + math.Log(series)
}
