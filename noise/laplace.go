package noise

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/dpstat/dpstat/random"
)

// Scale is an exact rational scale Num/Den > 0.
type Scale struct {
	// Num and Den are the numerator and the denominator; both must be
	// positive.
	Num, Den uint64
}

// Float returns Num/Den as a float64 (for display and accuracy formulas
// only; sampling uses the exact rational).
func (s Scale) Float() float64 {
	if s.Den == 0 {
		return math.Inf(1)
	}
	return float64(s.Num) / float64(s.Den)
}

// MaxScale is the largest scale ScaleAtLeast accepts, 2^52. A larger
// discrete-Laplace scale would put noise of order 2^52 or more on an int64,
// where saturation starts to matter; callers coarsen their grid instead.
const MaxScale = 1 << 52

// scaleBits is the precision of ScaleAtLeast: for scales between 2^-21 and
// 2^40 the numerator lies in [2^40, 2^41], a relative rounding of at most
// 2^-40.
const scaleBits = 41

// ScaleAtLeast returns a rational Num/Den ≥ x, rounding up (more noise, never
// less). Den is a power of two no larger than 2^62 and Num ≤ 2^52: the
// relative rounding is below 2^-40 for x ≥ 2^-21, and x below 2^-62 becomes
// 2^-62. It returns an error for NaN, ±Inf, x ≤ 0 and x > MaxScale.
func ScaleAtLeast(x float64) (Scale, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
		return Scale{}, fmt.Errorf("noise scale = %v: want a finite number > 0", x)
	}
	if x > MaxScale {
		return Scale{}, fmt.Errorf("noise scale = %v: want at most 2^52 = %v", x, float64(MaxScale))
	}
	_, e := math.Frexp(x) // x in [2^(e−1), 2^e)
	d := scaleBits - e
	if d < 0 {
		d = 0
	}
	if d > 62 {
		d = 62
	}
	// x·2^d is exact (a power-of-two scaling with no overflow or loss), and
	// so is its ceiling; it is at most 2^52 and at least 1.
	num := math.Ceil(math.Ldexp(x, d))
	return Scale{Num: uint64(num), Den: 1 << uint(d)}, nil
}

// DiscreteLaplace returns an integer k with probability proportional to
// exp(−|k|/scale), scale = Num/Den (Canonne, Kamath & Steinke 2020,
// Algorithm 2). A scale with Num or Den zero gives 0.
//
// Each round draws U uniform in [0, Num) and keeps it with probability
// exp(−U/Num), draws V geometric with P(V = v) ∝ e^−v (in constant work: a
// uniform fraction located by binary search in a table of e^-v, instead of
// a loop of Bernoulli(e^-1) trials whose length would be V), forms
// X = U + Num·V
// (so P(X = x) ∝ exp(−x/Num)), Y = floor(X/Den) and a sign; (negative, 0) is
// rejected so that 0 is not counted twice. If every round is rejected the
// result is 0 (see SamplerDelta).
func DiscreteLaplace(src random.Source, scale Scale) int64 {
	t, s := scale.Num, scale.Den
	if t == 0 || s == 0 {
		return 0
	}
	for round := 0; round < laplaceRounds; round++ {
		u := UniformInt(src, t)
		if !bernoulliExpFrac(src, u, t) {
			continue
		}
		v, ok := geometricE1(src)
		if !ok {
			continue // cut-off: the round is discarded
		}
		// X = U + t·V in 128 bits, then Y = floor(X/s), saturated.
		hi, lo := bits.Mul64(t, v)
		var c uint64
		lo, c = bits.Add64(lo, u, 0)
		hi += c
		var y uint64
		if hi >= s {
			y = math.MaxInt64
		} else {
			y, _ = bits.Div64(hi, lo, s)
			if y > math.MaxInt64 {
				y = math.MaxInt64
			}
		}
		neg := src.Uint64()&1 == 1
		if neg {
			if y == 0 {
				continue
			}
			return -int64(y)
		}
		return int64(y)
	}
	return 0 // cut-off, probability < 2^-547
}
