package mechanism

import (
	"fmt"
	"math"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/noise"
	"github.com/dpstat/dpstat/random"
)

// gridBits is how much finer than the sensitivity the grid of a real-valued
// mechanism is: g = 2^(floor(log2 Δ) − gridBits), so the grid adds at most
// 2^-20 of the sensitivity.
const gridBits = 20

// maxGridScale bounds a Laplace scale in grid steps; above it the grid is
// coarsened (only for ε below about 2^-27).
const maxGridScale = 1 << 48

// minScale is the smallest discrete-Laplace scale used; a smaller one is
// raised to it (more noise, and still no visible noise at all).
const minScale = 0x1p-62

// LaplaceOptions configures a Laplace mechanism.
type LaplaceOptions struct {
	// Epsilon is the privacy parameter ε > 0.
	Epsilon float64
	// Sensitivity is the L1 sensitivity Δ > 0 of the released value.
	Sensitivity float64
	// Source is the random source; nil means the secure pooled source.
	Source random.Source
}

// Laplace releases real values with discrete Laplace noise on a power-of-two
// grid: x is rounded to the grid g and k·g is added, where k has P(k) ∝
// exp(−|k|·gε/Δ') with Δ' = Δ + g. The release is ε-DP (up to
// noise.SamplerDelta). Methods are safe for concurrent use when Source is nil.
type Laplace struct {
	eps, sens float64
	grid      noise.Grid
	scale     noise.Scale
	src       random.Source
}

// laplaceGrid chooses the grid and the exact scale in grid steps for a
// Laplace-type noise of scale mult·Δ'/ε, Δ' = Δ + g. The grid depends only
// on Δ (and on ε when ε is so small that the scale would not fit).
func laplaceGrid(eps, sens, mult float64) (noise.Grid, noise.Scale, error) {
	exp := floorLog2(sens) - gridBits
	if exp < -1074 {
		exp = -1074
	}
	for tries := 0; ; tries++ {
		ratio := math.Ldexp(sens, -exp) // Δ/g, exact
		x := roundUp(mult * (ratio + 1) / eps)
		if x > maxGridScale && tries < 4 {
			exp += floorLog2(x) - floorLog2(maxGridScale) + 1
			continue
		}
		if x > noise.MaxScale {
			return noise.Grid{}, noise.Scale{}, fmt.Errorf("epsilon = %v with sensitivity %v: the noise scale %v grid steps is too large; want epsilon of at least %v", eps, sens, x, mult/float64(noise.MaxScale))
		}
		if x < minScale {
			x = minScale
		}
		s, err := noise.ScaleAtLeast(x)
		return noise.Grid{Exp: exp}, s, err
	}
}

// NewLaplace returns a Laplace mechanism, or an error naming the invalid
// option.
func NewLaplace(o LaplaceOptions) (*Laplace, error) {
	if err := checkEpsilon(o.Epsilon); err != nil {
		return nil, fmt.Errorf("laplace: %w", err)
	}
	if err := checkSensitivity("sensitivity", o.Sensitivity); err != nil {
		return nil, fmt.Errorf("laplace: %w", err)
	}
	g, s, err := laplaceGrid(o.Epsilon, o.Sensitivity, 1)
	if err != nil {
		return nil, fmt.Errorf("laplace: %w", err)
	}
	return &Laplace{eps: o.Epsilon, sens: o.Sensitivity, grid: g, scale: s, src: o.Source}, nil
}

// Release returns x plus Laplace noise, on the grid. The error is only for
// x NaN or ±Inf.
func (m *Laplace) Release(x float64) (float64, error) {
	if err := checkFinite("laplace: value", x); err != nil {
		return 0, err
	}
	src, b := source(m.src)
	k := noise.DiscreteLaplace(src, m.scale)
	release(b)
	return m.grid.AddNoise(x, k), nil
}

// Scale returns the noise scale b in value units, after accounting for the
// grid: b = (Num/Den)·g ≥ (Δ + g)/ε.
func (m *Laplace) Scale() float64 { return m.scale.Float() * m.grid.Granularity() }

// Granularity returns the grid step g; every release is a multiple of it.
func (m *Laplace) Granularity() float64 { return m.grid.Granularity() }

// Cost returns Pure(ε).
func (m *Laplace) Cost() accounting.Cost { return accounting.Pure(m.eps) }

// Interval returns the half-width h with P(|release − x| ≤ h) ≥ confidence,
// from the exact discrete-Laplace tail plus half a grid step for the
// rounding of x. confidence ≤ 0 gives g/2, confidence ≥ 1 gives +Inf and NaN
// gives NaN.
func (m *Laplace) Interval(confidence float64) float64 {
	g := m.grid.Granularity()
	k := dlapTailSteps(m.scale, confidence)
	return k*g + g/2
}

// dlapTailSteps returns the smallest k ≥ 0 with P(|Z| > k) ≤ 1 − confidence
// for the discrete Laplace Z of the given scale b, using the exact tail
// P(|Z| > k) = 2p^(k+1)/(1+p), p = exp(−1/b).
func dlapTailSteps(s noise.Scale, confidence float64) float64 {
	switch {
	case math.IsNaN(confidence):
		return math.NaN()
	case confidence <= 0:
		return 0
	case confidence >= 1:
		return math.Inf(1)
	}
	b := s.Float()
	p := math.Exp(-1 / b)
	alpha := 1 - confidence
	// 2p^(k+1)/(1+p) ≤ α  ⟺  k + 1 ≥ b·(−ln(α(1+p)/2)).
	l := -math.Log(alpha * (1 + p) / 2)
	if l <= 0 {
		return 0
	}
	k := math.Ceil(roundUp(b*l) - 1)
	if k < 0 {
		k = 0
	}
	return k
}

// GeometricOptions configures a geometric (discrete Laplace) mechanism.
type GeometricOptions struct {
	// Epsilon is the privacy parameter ε > 0.
	Epsilon float64
	// Sensitivity is the L1 sensitivity Δ ≥ 1 of the released integer.
	Sensitivity int64
	// Source is the random source; nil means the secure pooled source.
	Source random.Source
}

// Geometric releases integers with discrete Laplace noise, P(k) ∝
// exp(−|k|/b) with b ≥ Δ/ε (rounded up to an exact rational). The release is
// ε-DP (up to noise.SamplerDelta). Methods are safe for concurrent use when
// Source is nil.
type Geometric struct {
	eps   float64
	sens  int64
	scale noise.Scale
	src   random.Source
}

// NewGeometric returns a geometric mechanism, or an error naming the invalid
// option.
func NewGeometric(o GeometricOptions) (*Geometric, error) {
	if err := checkEpsilon(o.Epsilon); err != nil {
		return nil, fmt.Errorf("geometric: %w", err)
	}
	if o.Sensitivity <= 0 {
		return nil, fmt.Errorf("geometric: sensitivity = %d: want an integer >= 1 (a zero sensitivity would mean no noise)", o.Sensitivity)
	}
	x := roundUp(float64(o.Sensitivity) / o.Epsilon)
	if x < minScale {
		x = minScale
	}
	if x > noise.MaxScale {
		return nil, fmt.Errorf("geometric: sensitivity %d / epsilon %v = scale %v: want a scale of at most 2^52 (raise epsilon)", o.Sensitivity, o.Epsilon, x)
	}
	s, err := noise.ScaleAtLeast(x)
	if err != nil {
		return nil, fmt.Errorf("geometric: %w", err)
	}
	return &Geometric{eps: o.Epsilon, sens: o.Sensitivity, scale: s, src: o.Source}, nil
}

// Release returns x plus discrete Laplace noise, saturating at the int64
// range instead of overflowing.
func (m *Geometric) Release(x int64) int64 {
	src, b := source(m.src)
	k := noise.DiscreteLaplace(src, m.scale)
	release(b)
	return saturatingAdd(x, k)
}

// saturatingAdd returns x + k clamped to [math.MinInt64, math.MaxInt64].
func saturatingAdd(x, k int64) int64 {
	s := x + k
	if k > 0 && s < x {
		return math.MaxInt64
	}
	if k < 0 && s > x {
		return math.MinInt64
	}
	return s
}

// Scale returns the noise scale b ≥ Δ/ε.
func (m *Geometric) Scale() float64 { return m.scale.Float() }

// Cost returns Pure(ε).
func (m *Geometric) Cost() accounting.Cost { return accounting.Pure(m.eps) }

// Interval returns the integer half-width h with P(|release − x| ≤ h) ≥
// confidence, from the exact discrete-Laplace tail.
func (m *Geometric) Interval(confidence float64) float64 {
	return dlapTailSteps(m.scale, confidence)
}
