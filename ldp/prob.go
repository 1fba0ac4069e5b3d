package ldp

import (
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/dpstat/dpstat/random"
)

// Prob is a probability as published to clients: the exact dyadic rational
// a float64 holds, written three ways that all denote the same number.
type Prob struct {
	// Value is the probability as a float64 (exact).
	Value float64 `json:"value"`
	// Hex is the float64 in Go's hexadecimal notation, e.g. "0x1.1ap-02".
	Hex string `json:"hex"`
	// Num and Log2Den give the probability as Num/2^Log2Den, Num an odd
	// integer (or 0) written in decimal.
	Num string `json:"num"`
	// Log2Den is the exponent of the power-of-two denominator.
	Log2Den int `json:"log2den"`
}

// newProb returns the published form of p, a float64 in [0, 1].
func newProb(p float64) Prob {
	pr := Prob{Value: p, Hex: strconv.FormatFloat(p, 'x', -1, 64), Num: "0"}
	if p == 0 {
		return pr
	}
	frac, exp := math.Frexp(p) // p = frac·2^exp, frac in [1/2, 1)
	m := uint64(frac * (1 << 53))
	k := 53 - exp // p = m / 2^k
	for m&1 == 0 && k > 0 {
		m >>= 1
		k--
	}
	pr.Num = strconv.FormatUint(m, 10)
	pr.Log2Den = k
	return pr
}

// Rat returns the probability as an exact big.Rat (for tests and checks).
func (p Prob) Rat() (*big.Rat, error) {
	n, ok := new(big.Int).SetString(p.Num, 10)
	if !ok {
		return nil, fmt.Errorf("probability numerator %q is not a decimal integer", p.Num)
	}
	d := new(big.Int).Lsh(big.NewInt(1), uint(p.Log2Den))
	return new(big.Rat).SetFrac(n, d), nil
}

// checkEpsilon accepts a finite ε > 0.
func checkEpsilon(eps float64) error {
	if math.IsNaN(eps) || math.IsInf(eps, 0) || eps <= 0 {
		return fmt.Errorf("epsilon = %v: want a finite number > 0", eps)
	}
	return nil
}

// roundUp nudges a computed ε up by a relative 2^-50, more than the rounding
// error of the few operations that produced it.
func roundUp(x float64) float64 { return x + math.Abs(x)*0x1p-50 }

// ueEpsilon returns ln((1−q)/q), the ε of flipping a bit with probability q
// in each direction.
func ueEpsilon(q float64) float64 { return math.Log1p(-q) - math.Log(q) }

// flipProbability returns the smallest float64 q found at or above
// 1/(e^t + 1) whose ln((1−q)/q), as computed, is at most t·(1 − 2^-48): the
// margin exceeds the rounding error of the computation, so the exact dyadic
// q keeps ln((1−q)/q) below t. It steps q up one ulp at a time, a bounded
// number of times.
func flipProbability(t float64) (float64, bool) {
	q := 1 / (math.Exp(t) + 1)
	if !(q > 0) {
		q = math.SmallestNonzeroFloat64
	}
	limit := t - t*0x1p-48
	for i := 0; i < 1<<16; i++ {
		if !(q < 0.5) {
			return 0, false
		}
		if ueEpsilon(q) <= limit {
			return q, true
		}
		q = math.Nextafter(q, 1)
	}
	return 0, false
}

// expansion is the binary expansion of a dyadic probability in (0, 1):
// bit j (j ≥ 1, the weight 2^-j) is digits[j-1].
type expansion []bool

func newExpansion(p float64) expansion {
	pr := newProb(p)
	m, _ := strconv.ParseUint(pr.Num, 10, 64)
	e := make(expansion, pr.Log2Den)
	for j := pr.Log2Den; j >= 1 && m != 0; j-- {
		e[j-1] = m&1 == 1
		m >>= 1
	}
	return e
}

// bernoulliWord returns 64 independent bits, each 1 with probability
// exactly p (the expansion's value). Lane i compares a uniform binary
// expansion U_i, drawn one bit per word, with p's expansion and stops at the
// first difference (U_i < p gives 1); all 64 lanes advance together, so a
// word costs about log2(64)+2 draws on average and at most len(e). The loop
// depends on the random draws and on the public p only.
func (e expansion) bernoulliWord(src random.Source) uint64 {
	undecided := ^uint64(0)
	var out uint64
	for _, one := range e {
		r := src.Uint64()
		if one {
			out |= undecided &^ r
			undecided &= r
		} else {
			undecided &^= r
		}
		if undecided == 0 {
			break
		}
	}
	return out
}
