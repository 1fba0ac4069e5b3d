package ldp

import (
	"fmt"
	"math"

	"github.com/dpstat/dpstat/mechanism"
	"github.com/dpstat/dpstat/random"
)

// maxOLHG caps the hash range of olh (reached only for ε above ln 2^16).
const maxOLHG = 1 << 16

// olhOracle is optimized local hashing: the device draws a uniform 32-bit
// seed, hashes its value to [0, g) with Hash, and reports the seed and the
// hash perturbed by g-ary randomized response (mechanism.KaryRR with K = g).
// The seed does not depend on the value, so the report is as private as the
// g-ary randomized response, ε.
type olhOracle struct {
	d   int
	g   int
	m   *mechanism.KaryRR
	eps float64
}

// OLHRange returns g = round(e^ε) + 1, the hash range that minimises the
// variance of olh (Wang et al. 2017), capped to [2, 2^16].
func OLHRange(epsilon float64) int {
	g := math.Round(math.Exp(epsilon)) + 1
	if !(g <= maxOLHG) {
		return maxOLHG
	}
	return int(math.Max(2, g))
}

func newOLH(o Options) (*olhOracle, error) {
	g := OLHRange(o.Epsilon)
	m, err := mechanism.NewKaryRR(mechanism.KaryRROptions{Epsilon: o.Epsilon, K: g})
	if err != nil {
		return nil, fmt.Errorf("ldp olh: %w", err)
	}
	return &olhOracle{d: o.Domain, g: g, m: m, eps: m.Cost().Epsilon}, nil
}

// fmix32 is the 32-bit finalizer of MurmurHash3, a bijection with full
// avalanche.
func fmix32(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// Hash is olh's hash family: value v under seed s goes to
// floor(fmix32(fmix32(v) XOR s) · g / 2^32), in [0, g). Clients compute it
// with 32-bit integer arithmetic (the JavaScript client uses Math.imul).
func Hash(seed uint32, v uint32, g int) int {
	return int(uint64(fmix32(fmix32(v)^seed)) * uint64(g) >> 32)
}

func (h *olhOracle) pq() (float64, float64) { return h.m.P(), 1 / float64(h.g) }

// Params implements FrequencyOracle.
func (h *olhOracle) Params() Params {
	return Params{Mechanism: KindOLH, Epsilon: h.eps, Domain: h.d, P: newProb(h.m.P()), Q: newProb(h.m.Q()), G: h.g}
}

// Randomize draws the seed, hashes v and perturbs the hash.
func (h *olhOracle) Randomize(src random.Source, v int) (Report, error) {
	if err := checkValue(KindOLH, v, h.d); err != nil {
		return Report{}, err
	}
	s, b := borrow(src)
	defer giveBack(b)
	seed := uint32(s.Uint64() >> 32)
	y := karyRandomize(s, h.m.P(), h.g, Hash(seed, uint32(v), h.g))
	return Report{Seed: seed, Value: y}, nil
}

// Variance uses p = e^ε/(e^ε+g−1) and q = 1/g, the support probability of a
// value other than the true one under an ideal hash family.
func (h *olhOracle) Variance(n int64, f float64) float64 {
	return pqVariance(n, f, h.m.P(), 1/float64(h.g))
}

// olhAgg counts, for every value, the reports that support it (whose hash
// of the value under the report's seed equals the reported value); adding a
// report costs one hash per domain value.
type olhAgg struct {
	h   *olhOracle
	pre []uint32 // fmix32(v) for every v
	t   Tally
}

// NewAggregator implements FrequencyOracle.
func (h *olhOracle) NewAggregator() Aggregator {
	pre := make([]uint32, h.d)
	for v := range pre {
		pre[v] = fmix32(uint32(v))
	}
	return &olhAgg{h: h, pre: pre, t: Tally{Counts: make([]int64, h.d)}}
}

// Add implements Aggregator.
func (a *olhAgg) Add(r Report) error {
	if uint(r.Value) >= uint(a.h.g) {
		return fmt.Errorf("ldp olh: hashed value = %d: want a value in [0, %d)", r.Value, a.h.g)
	}
	if r.Bits != nil {
		return fmt.Errorf("ldp olh: report carries bits: want a seed and a value")
	}
	y, g, seed := uint64(r.Value), uint64(a.h.g), r.Seed
	counts := a.t.Counts[:len(a.pre)]
	for v, x := range a.pre {
		if uint64(fmix32(x^seed))*g>>32 == y {
			counts[v]++
		}
	}
	a.t.N++
	return nil
}

// Merge implements Aggregator.
func (a *olhAgg) Merge(t Tally) error { return mergeTally(&a.t, t) }

// Tally implements Aggregator.
func (a *olhAgg) Tally() Tally { return copyTally(a.t) }
