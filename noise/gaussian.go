package noise

import (
	"math/bits"

	"github.com/dpstat/dpstat/random"
)

// MaxSigma is the largest σ DiscreteGaussian accepts, 2^31, so that 2σ² fits
// in 64 bits.
const MaxSigma = 1 << 31

// gaussianRejectFactor: a candidate Y with |Y| − σ ≥ 24σ has acceptance
// exponent (|Y| − σ)²/(2σ²) ≥ 288 > expIntSteps, which BernoulliExp would
// answer false anyway (up to its e^-256 cut-off); it is rejected at once.
const gaussianRejectFactor = 24

// DiscreteGaussian returns an integer k with probability proportional to
// exp(−k²/(2σ²)) (Canonne, Kamath & Steinke 2020, Algorithm 3). σ is a
// positive integer in grid units, at most MaxSigma; σ ≤ 0 gives 0 and σ >
// MaxSigma is treated as MaxSigma, so callers must check the range (package
// mechanism does).
//
// Each round draws Y from the discrete Laplace distribution with scale t = σ
// and accepts it with probability exp(−(|Y| − σ²/t)²/(2σ²)). Since
// exp(−|y|/t)·exp(−(|y| − σ²/t)²/(2σ²)) = exp(−y²/(2σ²))·exp(−σ²/(2t²)), the
// accepted Y has exactly the discrete Gaussian distribution for any t > 0;
// t = σ makes σ²/t = σ an integer. All products fit: |Y| ≤ 256σ ≤ 2^39,
// (|Y| − σ)² < 2^78 is formed in 128 bits, and 2σ² ≤ 2^63.
func DiscreteGaussian(src random.Source, sigma int64) int64 {
	if sigma <= 0 {
		return 0
	}
	if sigma > MaxSigma {
		sigma = MaxSigma
	}
	sg := uint64(sigma)
	den := 2 * sg * sg
	for round := 0; round < gaussianRounds; round++ {
		y := DiscreteLaplace(src, Scale{Num: sg, Den: 1})
		a := uint64(y)
		if y < 0 {
			a = uint64(-y)
		}
		var d uint64
		if a >= sg {
			d = a - sg
		} else {
			d = sg - a
		}
		if d >= gaussianRejectFactor*sg {
			continue
		}
		hi, lo := bits.Mul64(d, d)
		// d < 24σ gives d²/den < 288, so the quotient fits and Div64
		// cannot panic.
		q, r := bits.Div64(hi, lo, den)
		if bernoulliExpParts(src, q, r, den) {
			return y
		}
	}
	return 0 // cut-off, probability < 2^-1000
}
