package audit

import (
	"math"

	"gonum.org/v1/gonum/mathext"
)

// The Clopper–Pearson bounds are quantiles of beta distributions. They are
// computed here by bisection on the regularized incomplete beta function
// rather than by an inverse-beta routine, because the library inversion
// loses all accuracy in the far tails of very skewed beta distributions
// (e.g. the 1 − 2.5e-7 quantile of Beta(4, 99997)), which is exactly where
// audits with 10⁵ samples and confidence 1 − 10⁻⁶ operate.

// ClopperPearsonLower returns the one-sided Clopper–Pearson lower confidence
// bound for a binomial proportion: with probability at least 1 − alpha over
// the k successes seen in n trials, the true success probability is at least
// the returned value. It is the alpha quantile of Beta(k, n − k + 1), and 0
// when k is 0. Arguments outside 0 ≤ k ≤ n, n ≥ 1, alpha in (0, 1) give NaN.
func ClopperPearsonLower(k, n int, alpha float64) float64 {
	if n < 1 || k < 0 || k > n || !(alpha > 0 && alpha < 1) {
		return math.NaN()
	}
	if k == 0 {
		return 0
	}
	if k == n {
		// Closed form: P(X = n | p) = p^n = alpha.
		return math.Pow(alpha, 1/float64(n))
	}
	// P(X ≥ k | p) = I_p(k, n − k + 1).
	return solveIncBeta(float64(k), float64(n-k+1), alpha)
}

// ClopperPearsonUpper returns the one-sided Clopper–Pearson upper confidence
// bound: with probability at least 1 − alpha the true success probability is
// at most the returned value. It is the 1 − alpha quantile of
// Beta(k + 1, n − k), and 1 when k is n. Arguments outside 0 ≤ k ≤ n, n ≥ 1,
// alpha in (0, 1) give NaN.
func ClopperPearsonUpper(k, n int, alpha float64) float64 {
	if n < 1 || k < 0 || k > n || !(alpha > 0 && alpha < 1) {
		return math.NaN()
	}
	if k == n {
		return 1
	}
	if k == 0 {
		// Closed form: P(X = 0 | p) = (1 − p)^n = alpha.
		return -math.Expm1(math.Log(alpha) / float64(n))
	}
	// P(X ≤ k | p) = I_{1−p}(n − k, k + 1).
	return 1 - solveIncBeta(float64(n-k), float64(k+1), alpha)
}

// solveIncBeta returns x in [0, 1] with I_x(a, b) = target, rounded down to
// a float64: the largest float64 x found with I_x(a, b) < target, or 0. It
// bisects on the bit patterns of the non-negative float64 values, which are
// ordered like the values themselves, so 62 steps reach full precision
// however close to 0 the root lies.
func solveIncBeta(a, b, target float64) float64 {
	lo, hi := uint64(0), math.Float64bits(1)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if mathext.RegIncBeta(a, b, math.Float64frombits(mid)) < target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Float64frombits(lo)
}
