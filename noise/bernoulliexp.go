package noise

import (
	"math/bits"

	"github.com/dpstat/dpstat/random"
)

// BernoulliExp returns true with probability exactly exp(−num/den)
// (Canonne, Kamath & Steinke 2020, Algorithm 1). den = 0 gives false.
//
// For the fractional part f = γ − floor(γ) < 1 it runs the von Neumann style
// loop: K = 1, 2, ... with trials A_K ~ Bernoulli(f/K) until the first
// failure, and answers whether the K that failed is odd; P(K odd) =
// Σ (−f)^j/j! = exp(−f). The integer part q = floor(γ) costs one trial with
// probability e^-q, decided by comparing uniform words with
// ⌊e^-q·2^192⌋ from a table (equivalent to CKS's q trials of
// Bernoulli(exp(−1)), and faster); a tie in all 192 bits answers false
// (probability 2^-192), and q > 256 answers false. Arithmetic is on uint64
// with 128-bit products, so there is no overflow for any num and den.
func BernoulliExp(src random.Source, num, den uint64) bool {
	if den == 0 {
		return false
	}
	q, r := num/den, num%den
	return bernoulliExpParts(src, q, r, den)
}

// bernoulliExpParts returns true with probability exp(−(q + r/den)), r < den:
// a trial with probability e^-q for the integer part, then one with
// exp(−r/den).
func bernoulliExpParts(src random.Source, q, r, den uint64) bool {
	if !bernoulliExpInt(src, q) {
		return false
	}
	return bernoulliExpFrac(src, r, den)
}

// bernoulliExpFrac returns true with probability exp(−num/den), num ≤ den.
func bernoulliExpFrac(src random.Source, num, den uint64) bool {
	if num == 0 {
		return true
	}
	for k := uint64(1); k <= expFracSteps; k++ {
		// A_k ~ Bernoulli(num/(den·k)).
		var a bool
		hi, lo := bits.Mul64(den, k)
		if hi == 0 {
			a = UniformInt(src, lo) < num
		} else {
			// den·k overflows: the product of two independent trials has
			// the same success probability.
			a = UniformInt(src, k) == 0 && UniformInt(src, den) < num
		}
		if !a {
			return k&1 == 1
		}
	}
	return false // cut-off, probability ≤ 1/65!
}

// BernoulliExpSplit returns true with probability exactly
// exp(−(whole + num/den)), for num < den; it is BernoulliExp with the integer
// part of the exponent already separated, for callers whose exponent does
// not fit one uint64 fraction. den = 0 gives false.
func BernoulliExpSplit(src random.Source, whole, num, den uint64) bool {
	if den == 0 {
		return false
	}
	if num >= den {
		whole += num / den
		num %= den
	}
	return bernoulliExpParts(src, whole, num, den)
}

// ExpNeverTrue reports whether BernoulliExpSplit(whole, ·, ·) always answers
// false because the integer part reaches the cap of its Bernoulli(exp(−1))
// loop: such an exponent is at least 257 and the exact success probability
// is below e^-256, which SamplerDelta covers. Selection samplers use it to
// skip candidates that can never be chosen.
func ExpNeverTrue(whole uint64) bool { return whole > expIntSteps }
