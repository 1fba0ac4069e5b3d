package noise

import (
	"math"
	"math/bits"

	"github.com/dpstat/dpstat/random"
)

// SamplerDelta bounds the probability that any loop cap (or other cut-off)
// is reached while one sample is drawn by a sampler of this package, or one
// release is made by a mechanism of package mechanism. The implemented
// output distribution is therefore within statistical distance SamplerDelta
// of the exact one on every input, so a release that is (ε, δ)-DP with the
// exact distribution is (ε, δ + (1 + e^ε)·SamplerDelta)-DP as implemented
// (below δ + 2^-85 for ε ≤ 10). It is a deliberately loose union bound: the
// largest single term, the round cap of SampleExpWeighted, is below 2^-169;
// every other cut-off contributes below 2^-180 per sample (see the caps
// below and docs/privacy.md).
const SamplerDelta float64 = 0x1p-100

// Loop caps. Each is chosen so that reaching it has probability far below
// SamplerDelta; the bound for each is stated beside it.
const (
	// uniformTries caps the rejection loop of UniformInt. Each try is
	// rejected with probability (2^64 mod n)/2^64, which is below 1/2 for
	// every n and below n/2^64 in general, so all tries are rejected with
	// probability below 2^-256 (and far less for the n ≤ 2^52 that the
	// samplers mostly use).
	uniformTries = 256
	// expFracSteps caps the K loop of Bernoulli(exp(−γ)) for γ ≤ 1. The loop
	// passes step k with probability γ^k/k! ≤ 1/k!, and 1/64! < 2^-295.
	expFracSteps = 64
	// expIntSteps is the largest integer part q of an exponent γ for which
	// Bernoulli(exp(−γ)) is sampled; for q > 256 it answers false, whose
	// exact probability of being wrong is below e^-257 < 2^-370. For
	// q ≤ 256, e^-q is known to 192 bits and a tie of all 192 uniform bits
	// with it (probability 2^-192) answers false.
	expIntSteps = 256
	// laplaceRounds caps the outer rejection loop of DiscreteLaplace. A round
	// is accepted with probability at least (1 − 1/e)/2 > 0.316, so 1000
	// rounds all fail with probability below 0.684^1000 < 2^-547.
	laplaceRounds = 1000
	// gaussianRounds caps the rejection loop of DiscreteGaussian. A round is
	// accepted with probability above 1/2 for every σ ≥ 1 (about 0.76 for
	// large σ), so 1000 rounds all fail with probability below 2^-1000.
	gaussianRounds = 1000
)

// UniformInt returns an integer uniformly distributed in [0, n), without
// modulo bias (Lemire's multiply-and-shift with rejection). n = 0 is treated
// as n = 1 and returns 0.
func UniformInt(src random.Source, n uint64) uint64 {
	if n <= 1 {
		return 0
	}
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		// 2^64 mod n, computed without 128-bit arithmetic.
		thresh := -n % n
		for try := 1; lo < thresh; try++ {
			if try == uniformTries {
				return 0 // cut-off, probability < 2^-256
			}
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}

// Bernoulli returns true with probability exactly num/den. num ≥ den gives
// true; den = 0 gives false.
func Bernoulli(src random.Source, num, den uint64) bool {
	if den == 0 {
		return false
	}
	if num >= den {
		return true
	}
	if num == 0 {
		return false
	}
	return UniformInt(src, den) < num
}

// BernoulliFloat returns true with probability exactly p, taking p as the
// dyadic rational m·2^e that the float64 represents. p ≤ 0 and NaN give
// false; p ≥ 1 gives true.
//
// It compares a uniformly random binary expansion with the expansion of p,
// 64 bits at a time, and stops at the first difference; p has at most 1074
// fractional bits, so at most 17 words are drawn.
func BernoulliFloat(src random.Source, p float64) bool {
	if !(p > 0) {
		return false
	}
	if p >= 1 {
		return true
	}
	// p = mant · 2^-sh with mant < 2^53 and sh ≥ 1.
	b := math.Float64bits(p)
	exp := int(b>>52) & 0x7ff
	mant := b & (1<<52 - 1)
	var sh int
	if exp == 0 {
		sh = 1074
	} else {
		mant |= 1 << 52
		sh = 1075 - exp
	}
	// Word i holds bits 64i+1 .. 64i+64 of p's expansion, that is
	// floor(p · 2^(64(i+1))) mod 2^64 = (mant · 2^(64(i+1) − sh)) mod 2^64.
	for i := 0; ; i++ {
		s := 64*(i+1) - sh
		var w uint64
		last := false
		switch {
		case s <= -64:
			w = 0
		case s < 0:
			w = mant >> uint(-s)
		case s < 64:
			w = mant << uint(s)
			// Bits of mant below the word: present only if s < 0, so none.
			last = true
		default:
			last = true
		}
		if s < 0 && s > -64 {
			// Does any bit of mant remain below this word?
			if mant&(1<<uint(-s)-1) == 0 {
				last = true
			}
		}
		u := src.Uint64()
		if u != w {
			return u < w
		}
		if last {
			// The uniform expansion agrees with all of p's bits so far and
			// p has no more: the uniform value is ≥ p.
			return false
		}
	}
}
