package mechanism

import (
	"fmt"
	"math"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/noise"
	"github.com/dpstat/dpstat/random"
)

// rrEpsilon returns ln(p(k−1)/(1−p)), the ε of keeping the truth with
// probability p among k values, for p in (0, 1) and km1 = k − 1.
func rrEpsilon(p, km1 float64) float64 {
	return math.Log(p) + math.Log(km1) - math.Log1p(-p)
}

// keepProbability returns the largest float64 p found below
// e^ε/(e^ε + k − 1) whose ε' = ln(p(k−1)/(1−p)), as computed, is at most
// ε·(1 − 2^-48): the margin exceeds the rounding error of computing ε', so
// the true ε' of the exact dyadic p used is below ε. It steps p down one ulp
// at a time, a bounded number of times.
func keepProbability(eps, km1 float64) (float64, bool) {
	p := 1 / (1 + km1*math.Exp(-eps))
	if p >= 1 {
		p = math.Nextafter(1, 0)
	}
	limit := eps - eps*0x1p-48
	for i := 0; i < 1<<16; i++ {
		if !(p > 0) {
			return 0, false
		}
		if rrEpsilon(p, km1) <= limit {
			return p, true
		}
		p = math.Nextafter(p, 0)
	}
	return 0, false
}

// Estimate is an unbiased estimate and its variance.
type Estimate struct {
	// Value is the unbiased estimate.
	Value float64
	// Variance is the variance of Value (estimated by plugging Value in).
	Variance float64
}

// Interval returns the normal-approximation interval Value ± z·sqrt(Variance)
// with z the two-sided normal quantile of the confidence. confidence ≤ 0
// gives (Value, Value), confidence ≥ 1 gives (−Inf, +Inf), NaN gives NaNs.
func (e Estimate) Interval(confidence float64) (lo, hi float64) {
	switch {
	case math.IsNaN(confidence):
		return math.NaN(), math.NaN()
	case confidence <= 0:
		return e.Value, e.Value
	case confidence >= 1:
		return math.Inf(-1), math.Inf(1)
	}
	h := normalQuantile(confidence) * math.Sqrt(e.Variance)
	return e.Value - h, e.Value + h
}

// BinaryRROptions configures binary randomized response. Set exactly one of
// Epsilon and P.
type BinaryRROptions struct {
	// Epsilon is ε > 0; the keep probability is e^ε/(1+e^ε), rounded down
	// to a float64.
	Epsilon float64
	// P is the probability in (1/2, 1) of reporting the truth, taken as the
	// exact dyadic rational the float64 is.
	P float64
	// Source is the random source; nil means the secure pooled source.
	Source random.Source
}

// BinaryRR is binary randomized response: it reports the truth with
// probability p and the opposite otherwise, which is ln(p/(1−p))-DP for the
// person reporting. Methods are safe for concurrent use when Source is nil.
type BinaryRR struct {
	p   float64
	eps float64
	src random.Source
}

// NewBinaryRR returns binary randomized response, or an error naming the
// invalid option.
func NewBinaryRR(o BinaryRROptions) (*BinaryRR, error) {
	hasEps, hasP := o.Epsilon != 0, o.P != 0
	switch {
	case hasEps && hasP:
		return nil, fmt.Errorf("binary randomized response: epsilon = %v and p = %v: set exactly one of them", o.Epsilon, o.P)
	case !hasEps && !hasP:
		return nil, fmt.Errorf("binary randomized response: neither epsilon nor p is set: set exactly one (epsilon > 0, or p in (1/2, 1))")
	}
	var p, eps float64
	if hasP {
		if math.IsNaN(o.P) || !(o.P > 0.5 && o.P < 1) {
			return nil, fmt.Errorf("binary randomized response: p = %v: want a probability in (1/2, 1)", o.P)
		}
		p = o.P
		eps = roundUp(rrEpsilon(p, 1))
	} else {
		if err := checkEpsilon(o.Epsilon); err != nil {
			return nil, fmt.Errorf("binary randomized response: %w", err)
		}
		var ok bool
		p, ok = keepProbability(o.Epsilon, 1)
		if !ok || !(p > 0.5) {
			return nil, fmt.Errorf("binary randomized response: epsilon = %v is too small to give a keep probability above 1/2 in float64; want epsilon >= 1e-10", o.Epsilon)
		}
		eps = math.Min(o.Epsilon, roundUp(rrEpsilon(p, 1)))
	}
	return &BinaryRR{p: p, eps: eps, src: o.Source}, nil
}

// Randomize returns truth with probability p and !truth otherwise.
func (m *BinaryRR) Randomize(truth bool) bool {
	src, b := source(m.src)
	keep := noise.BernoulliFloat(src, m.p)
	release(b)
	return truth == keep
}

// P returns the probability of reporting the truth.
func (m *BinaryRR) P() float64 { return m.p }

// Cost returns Pure(ε) with ε = ln(p/(1−p)) rounded up (never above the ε
// requested).
func (m *BinaryRR) Cost() accounting.Cost { return accounting.Pure(m.eps) }

// Estimate returns the unbiased estimate of the true proportion of "yes"
// from yes reports out of n: π̂ = (y/N − (1−p))/(2p−1), with variance
// π(1−π)/N + p(1−p)/(N(2p−1)²). π̂ itself is not clamped (clamping would
// bias it); π̂ clamped into [0, 1] is plugged in for π in the variance.
func (m *BinaryRR) Estimate(yes, n int64) (Estimate, error) {
	if n <= 0 {
		return Estimate{}, fmt.Errorf("binary randomized response: n = %d: want a number of reports >= 1", n)
	}
	if yes < 0 || yes > n {
		return Estimate{}, fmt.Errorf("binary randomized response: yes = %d: want a count in [0, n = %d]", yes, n)
	}
	p, N := m.p, float64(n)
	pi := (float64(yes)/N - (1 - p)) / (2*p - 1)
	c := math.Min(1, math.Max(0, pi))
	v := c*(1-c)/N + p*(1-p)/(N*(2*p-1)*(2*p-1))
	return Estimate{Value: pi, Variance: v}, nil
}

// KaryRROptions configures k-ary randomized response.
type KaryRROptions struct {
	// Epsilon is ε > 0.
	Epsilon float64
	// K is the number of possible values, at least 2.
	K int
	// Source is the random source; nil means the secure pooled source.
	Source random.Source
}

// KaryRR is k-ary randomized response: it reports the true value v in
// [0, K) with probability p = e^ε/(e^ε+K−1) (rounded down to a float64) and
// each other value with probability q = (1−p)/(K−1). Methods are safe for
// concurrent use when Source is nil.
type KaryRR struct {
	k   int
	p   float64
	eps float64
	src random.Source
}

// maxKaryK bounds K so that counts and UniformInt stay far from any limit.
const maxKaryK = 1 << 40

// NewKaryRR returns k-ary randomized response, or an error naming the invalid
// option.
func NewKaryRR(o KaryRROptions) (*KaryRR, error) {
	if err := checkEpsilon(o.Epsilon); err != nil {
		return nil, fmt.Errorf("k-ary randomized response: %w", err)
	}
	if o.K < 2 || int64(o.K) > maxKaryK {
		return nil, fmt.Errorf("k-ary randomized response: k = %d: want a number of values in [2, 2^40]", o.K)
	}
	km1 := float64(o.K - 1)
	p, ok := keepProbability(o.Epsilon, km1)
	if !ok || !(p > 1/float64(o.K)) {
		return nil, fmt.Errorf("k-ary randomized response: epsilon = %v with k = %d gives no usable keep probability in float64; want a larger epsilon", o.Epsilon, o.K)
	}
	eps := math.Min(o.Epsilon, roundUp(rrEpsilon(p, km1)))
	return &KaryRR{k: o.K, p: p, eps: eps, src: o.Source}, nil
}

// Randomize returns v with probability p and otherwise a uniformly chosen
// other value; v must be in [0, K).
func (m *KaryRR) Randomize(v int) (int, error) {
	if v < 0 || v >= m.k {
		return 0, fmt.Errorf("k-ary randomized response: value = %d: want a value in [0, %d)", v, m.k)
	}
	src, b := source(m.src)
	defer release(b)
	if noise.BernoulliFloat(src, m.p) {
		return v, nil
	}
	r := int(noise.UniformInt(src, uint64(m.k-1)))
	if r >= v {
		r++
	}
	return r, nil
}

// K returns the number of values.
func (m *KaryRR) K() int { return m.k }

// P returns the probability of reporting the true value.
func (m *KaryRR) P() float64 { return m.p }

// Q returns the probability of reporting one particular other value,
// (1 − p)/(K − 1).
func (m *KaryRR) Q() float64 { return (1 - m.p) / float64(m.k-1) }

// Cost returns Pure(ε) with ε = ln(p(K−1)/(1−p)) rounded up (never above the
// ε requested).
func (m *KaryRR) Cost() accounting.Cost { return accounting.Pure(m.eps) }

// Estimate returns, for each value v, the unbiased frequency estimate
// f̂_v = (c_v/N − q)/(p − q) from the counts of reports per value, with
// variance q(1−q)/(N(p−q)²) + f(1−p−q)/(N(p−q)), f̂ clamped into [0, 1]
// plugged in for f. (Reports of v are independent Bernoulli trials with
// probability p for people whose value is v and q for the others.)
func (m *KaryRR) Estimate(counts []int64) ([]Estimate, error) {
	if len(counts) != m.k {
		return nil, fmt.Errorf("k-ary randomized response: %d counts: want one count per value, %d", len(counts), m.k)
	}
	var n int64
	for i, c := range counts {
		if c < 0 {
			return nil, fmt.Errorf("k-ary randomized response: counts[%d] = %d: want a count >= 0", i, c)
		}
		if n > math.MaxInt64-c {
			return nil, fmt.Errorf("k-ary randomized response: counts add up to more than 2^63-1")
		}
		n += c
	}
	if n == 0 {
		return nil, fmt.Errorf("k-ary randomized response: counts add up to 0: want at least one report")
	}
	p, q, N := m.p, m.Q(), float64(n)
	out := make([]Estimate, m.k)
	for i, c := range counts {
		f := (float64(c)/N - q) / (p - q)
		fc := math.Min(1, math.Max(0, f))
		v := q*(1-q)/(N*(p-q)*(p-q)) + fc*(1-p-q)/(N*(p-q))
		out[i] = Estimate{Value: f, Variance: v}
	}
	return out, nil
}
