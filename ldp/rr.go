package ldp

import (
	"fmt"

	"github.com/dpstat/dpstat/mechanism"
	"github.com/dpstat/dpstat/noise"
	"github.com/dpstat/dpstat/random"
)

// rrOracle is binary randomized response (mechanism.BinaryRR) over the
// values 0 and 1.
type rrOracle struct {
	m   *mechanism.BinaryRR
	eps float64
}

func newRR(o Options) (*rrOracle, error) {
	if o.Domain != 2 {
		return nil, fmt.Errorf("ldp rr: domain = %d: binary randomized response needs exactly 2 values (use krr for more)", o.Domain)
	}
	m, err := mechanism.NewBinaryRR(mechanism.BinaryRROptions{Epsilon: o.Epsilon})
	if err != nil {
		return nil, fmt.Errorf("ldp rr: %w", err)
	}
	return &rrOracle{m: m, eps: m.Cost().Epsilon}, nil
}

// Params implements FrequencyOracle.
func (r *rrOracle) Params() Params {
	return Params{Mechanism: KindRR, Epsilon: r.eps, Domain: 2, P: newProb(r.m.P()), Q: newProb(1 - r.m.P())}
}

// Randomize reports v with probability p and 1−v otherwise, sampled as the
// BinaryRR does (one exact Bernoulli(p) trial).
func (r *rrOracle) Randomize(src random.Source, v int) (Report, error) {
	if err := checkValue(KindRR, v, 2); err != nil {
		return Report{}, err
	}
	s, b := borrow(src)
	keep := noise.BernoulliFloat(s, r.m.P())
	giveBack(b)
	if keep {
		return Report{Value: v}, nil
	}
	return Report{Value: 1 - v}, nil
}

// NewAggregator implements FrequencyOracle.
func (r *rrOracle) NewAggregator() Aggregator { return newCountAgg(KindRR, 2) }

// Variance implements FrequencyOracle.
func (r *rrOracle) Variance(n int64, f float64) float64 {
	p := r.m.P()
	return pqVariance(n, f, p, 1-p)
}

// krrOracle is k-ary randomized response (mechanism.KaryRR).
type krrOracle struct {
	m   *mechanism.KaryRR
	eps float64
}

func newKRR(o Options) (*krrOracle, error) {
	m, err := mechanism.NewKaryRR(mechanism.KaryRROptions{Epsilon: o.Epsilon, K: o.Domain})
	if err != nil {
		return nil, fmt.Errorf("ldp krr: %w", err)
	}
	return &krrOracle{m: m, eps: m.Cost().Epsilon}, nil
}

// Params implements FrequencyOracle.
func (k *krrOracle) Params() Params {
	return Params{Mechanism: KindKRR, Epsilon: k.eps, Domain: k.m.K(), P: newProb(k.m.P()), Q: newProb(k.m.Q())}
}

// Randomize reports v with probability p and otherwise a uniformly chosen
// other value, sampled exactly as mechanism.KaryRR does.
func (k *krrOracle) Randomize(src random.Source, v int) (Report, error) {
	if err := checkValue(KindKRR, v, k.m.K()); err != nil {
		return Report{}, err
	}
	s, b := borrow(src)
	defer giveBack(b)
	return Report{Value: karyRandomize(s, k.m.P(), k.m.K(), v)}, nil
}

// karyRandomize keeps v with probability p (exact Bernoulli on the dyadic
// p) and otherwise returns a uniform value of [0, k) other than v. The
// other value is drawn whether or not it is used, so that the running time
// does not tell whether the truth was kept.
func karyRandomize(s random.Source, p float64, k, v int) int {
	keep := noise.BernoulliFloat(s, p)
	r := int(noise.UniformInt(s, uint64(k-1)))
	if r >= v {
		r++
	}
	if keep {
		return v
	}
	return r
}

// NewAggregator implements FrequencyOracle.
func (k *krrOracle) NewAggregator() Aggregator { return newCountAgg(KindKRR, k.m.K()) }

// Variance implements FrequencyOracle.
func (k *krrOracle) Variance(n int64, f float64) float64 {
	return pqVariance(n, f, k.m.P(), k.m.Q())
}
