package ldp

import (
	"fmt"
	"math"

	"github.com/dpstat/dpstat/mechanism"
	"github.com/dpstat/dpstat/noise"
	"github.com/dpstat/dpstat/random"
)

// MeanOptions configures Mean.
type MeanOptions struct {
	// Epsilon is the local privacy parameter ε > 0.
	Epsilon float64
	// Lo and Hi are the declared range of the number, finite, Lo < Hi.
	// Values outside it are refused (never clamped silently).
	Lo, Hi float64
}

// Mean estimates the mean of a number x in [lo, hi] from ε-LDP reports of
// one bit each: the device rounds x to hi with probability
// t = (x − lo)/(hi − lo) and to lo otherwise (exact Bernoulli(t) on the
// float64 t), then reports the rounded bit through binary randomized
// response with keep probability p = e^ε/(e^ε+1) rounded down
// (mechanism.BinaryRR). The bit is 1 with probability (1−p) + t(2p−1), which
// is Duchi et al.'s one-dimensional mechanism: its output ±(e^ε+1)/(e^ε−1)
// is an affine function of the bit. The privacy comes from the randomized
// response alone, so it holds whatever the rounding does.
type Mean struct {
	lo, hi float64
	rr     *mechanism.BinaryRR
	eps    float64
}

// NewMean returns the mean mechanism, or an error naming the invalid option.
func NewMean(o MeanOptions) (*Mean, error) {
	if err := checkEpsilon(o.Epsilon); err != nil {
		return nil, fmt.Errorf("ldp mean: %w", err)
	}
	if math.IsNaN(o.Lo) || math.IsNaN(o.Hi) || math.IsInf(o.Lo, 0) || math.IsInf(o.Hi, 0) || !(o.Lo < o.Hi) || math.IsInf(o.Hi-o.Lo, 0) {
		return nil, fmt.Errorf("ldp mean: range [%v, %v]: want finite bounds with lo < hi", o.Lo, o.Hi)
	}
	rr, err := mechanism.NewBinaryRR(mechanism.BinaryRROptions{Epsilon: o.Epsilon})
	if err != nil {
		return nil, fmt.Errorf("ldp mean: %w", err)
	}
	return &Mean{lo: o.Lo, hi: o.Hi, rr: rr, eps: rr.Cost().Epsilon}, nil
}

// Params returns the public parameters (domain 2: the reported bit).
func (m *Mean) Params() Params {
	p := m.rr.P()
	return Params{Mechanism: KindMean, Epsilon: m.eps, Domain: 2, P: newProb(p), Q: newProb(1 - p)}
}

// Range returns the declared range.
func (m *Mean) Range() (lo, hi float64) { return m.lo, m.hi }

// Randomize returns the one-bit report (Report.Value 0 or 1) of x.
func (m *Mean) Randomize(src random.Source, x float64) (Report, error) {
	if math.IsNaN(x) || x < m.lo || x > m.hi {
		return Report{}, fmt.Errorf("ldp mean: value = %v: want a number in [%v, %v]", x, m.lo, m.hi)
	}
	s, b := borrow(src)
	defer giveBack(b)
	t := (x - m.lo) / (m.hi - m.lo)
	bit := noise.BernoulliFloat(s, t)
	if noise.BernoulliFloat(s, m.rr.P()) {
		return Report{Value: b2i(bit)}, nil
	}
	return Report{Value: b2i(!bit)}, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// NewAggregator returns an aggregator of the one-bit reports (Counts[0] and
// Counts[1] count the reported 0s and 1s).
func (m *Mean) NewAggregator() Aggregator { return newCountAgg(KindMean, 2) }

// Estimate returns the unbiased estimate of the mean and its variance:
// with t̂ the binary randomized response estimate of the proportion of 1s
// after rounding, the mean is lo + (hi − lo)·t̂. The variance is
// (hi − lo)²·r(1−r)/(N(2p−1)²) with r the observed rate of 1s, an upper bound
// on the exact variance (Σ r_i(1−r_i)/N² ≤ r̄(1−r̄)/N by concavity).
func (m *Mean) Estimate(t Tally) (mechanism.Estimate, error) {
	if err := checkTally(t, 2); err != nil {
		return mechanism.Estimate{}, err
	}
	e, err := m.rr.Estimate(t.Counts[1], t.N)
	if err != nil {
		return mechanism.Estimate{}, err
	}
	w := m.hi - m.lo
	p, N := m.rr.P(), float64(t.N)
	r := float64(t.Counts[1]) / N
	v := w * w * r * (1 - r) / (N * (2*p - 1) * (2*p - 1))
	return mechanism.Estimate{Value: m.lo + w*e.Value, Variance: v}, nil
}

// Variance returns the exact variance of the estimate from n reports of
// people who all hold a number whose rounding probability is t (for a
// population with mixed values it is an upper bound with t their mean).
func (m *Mean) Variance(n int64, t float64) float64 {
	p := m.rr.P()
	r := (1 - p) + t*(2*p-1)
	w := m.hi - m.lo
	return w * w * r * (1 - r) / (float64(n) * (2*p - 1) * (2*p - 1))
}
