package dpplan

import (
	"math"
)

// The kinds of noise law a release can have (NoiseLaw.Kind).
const (
	// LawDiscreteLaplace is step·K with P(K = k) ∝ exp(−|k|/Scale), Scale
	// in steps: the geometric mechanism of counts (step 1) and the grid
	// Laplace mechanism of sums.
	LawDiscreteLaplace = "discrete-laplace"
	// LawDiscreteGaussian is step·K with P(K = k) ∝ exp(−k²/(2·Scale²)),
	// Scale in steps: the grid Gaussian mechanism of sums.
	LawDiscreteGaussian = "discrete-gaussian"
)

// NoiseLaw is the law of the noise one release adds to its exact
// statistic, as far as an answer derived from released values needs it
// (package query/reuse): the released value is exact + Step·K + e, K of
// the law and |e| ≤ Bias a deterministic rounding of the exact value onto
// the grid.
type NoiseLaw struct {
	Kind  string  `json:"kind"`
	Step  float64 `json:"step"`
	Scale float64 `json:"scale"`
	Bias  float64 `json:"bias,omitempty"`
}

// Law returns the noise law of release i, and false when its noise has
// none that a derivation can use: a quantile's selection, a count released
// with Gaussian noise rounded to an integer (its rounding error is not
// independent of the noise), or a count that selected its keys.
func (n *Noise) Law(i int) (NoiseLaw, bool) {
	if i < 0 || i >= len(n.plan.Releases) {
		return NoiseLaw{}, false
	}
	if ks := n.plan.Selection; ks != nil && ks.Release == i {
		return NoiseLaw{}, false
	}
	if m, ok := n.Counts[i]; ok {
		if n.Gaussian {
			return NoiseLaw{}, false
		}
		return NoiseLaw{Kind: LawDiscreteLaplace, Step: 1, Scale: m.Scale()}, true
	}
	if m, ok := n.Sums[i]; ok {
		g := m.Granularity()
		if !(g > 0) {
			return NoiseLaw{}, false
		}
		kind := LawDiscreteLaplace
		if n.Gaussian {
			kind = LawDiscreteGaussian
		}
		return NoiseLaw{Kind: kind, Step: g, Scale: m.Scale() / g, Bias: g / 2}, true
	}
	return NoiseLaw{}, false
}

// Variance returns the variance of the law's noise Step·K, exactly for
// the discrete Laplace (2p/(1−p)², p = exp(−1/Scale)) and for the discrete
// Gaussian up to 2^16 steps (a sum over ±(12·Scale + 1) steps, whose
// remainder is below 1e-30); above that, Scale² (the discrete Gaussian's
// variance is at most the continuous one's).
func (l NoiseLaw) Variance() float64 {
	g2 := l.Step * l.Step
	switch l.Kind {
	case LawDiscreteLaplace:
		p := math.Exp(-1 / l.Scale)
		q := -math.Expm1(-1 / l.Scale) // 1 − p without cancellation
		return g2 * 2 * p / (q * q)
	case LawDiscreteGaussian:
		s := l.Scale
		if s > 1<<16 || s <= 0 {
			return g2 * s * s
		}
		kmax := math.Ceil(12*s + 1)
		num, den := 0.0, 1.0
		for k := 1.0; k <= kmax; k++ {
			w := math.Exp(-k * k / (2 * s * s))
			num += 2 * k * k * w
			den += 2 * w
		}
		return g2 * num / den
	}
	return math.Inf(1)
}

// LogMGF returns ln E[exp(t·Step·K)], +Inf where it does not exist. For the
// discrete Gaussian it is the bound t²σ²/2 (σ = Step·Scale), which the
// discrete Gaussian's generating function never exceeds (Canonne, Kamath
// and Steinke 2020).
func (l NoiseLaw) LogMGF(t float64) float64 {
	u := math.Abs(t) * l.Step
	switch l.Kind {
	case LawDiscreteLaplace:
		a := 1 / l.Scale // p = exp(−a)
		if u >= a {
			return math.Inf(1)
		}
		// (1−p)² / ((1−p·e^u)(1−p·e^−u))
		return 2*math.Log(-math.Expm1(-a)) - math.Log(-math.Expm1(u-a)) - math.Log(-math.Expm1(-u-a))
	case LawDiscreteGaussian:
		s := l.Step * l.Scale
		return t * t * s * s / 2
	}
	return math.Inf(1)
}

// MaxT is the supremum of the t at which LogMGF is finite (+Inf when it is
// finite everywhere).
func (l NoiseLaw) MaxT() float64 {
	if l.Kind == LawDiscreteLaplace {
		return 1 / (l.Scale * l.Step)
	}
	return math.Inf(1)
}

// HalfWidth returns the half-width of the law's own interval at the
// confidence level: the smallest whole number of steps k with
// P(|K| > k) ≤ 1 − confidence, plus Bias. For the discrete Laplace it is
// exact (P(|K| > k) = 2p^(k+1)/(1+p)); for the discrete Gaussian it is the
// bound 2·exp(−k²/(2·Scale²)) on the tail.
func (l NoiseLaw) HalfWidth(confidence float64) float64 {
	alpha := 1 - confidence
	if !(alpha > 0 && alpha < 1) {
		return math.Inf(1)
	}
	var k float64
	switch l.Kind {
	case LawDiscreteLaplace:
		p := math.Exp(-1 / l.Scale)
		x := -math.Log(alpha*(1+p)/2) * l.Scale
		k = math.Max(0, math.Ceil(x*(1+1e-12)-1))
	case LawDiscreteGaussian:
		k = math.Ceil(l.Scale * math.Sqrt(2*math.Log(2/alpha)))
	default:
		return math.Inf(1)
	}
	return k*l.Step + l.Bias
}
