package ldp

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/dpstat/dpstat/mechanism"
	"github.com/dpstat/dpstat/noise"
	"github.com/dpstat/dpstat/random"
)

// hrOracle is Hadamard randomized response (Cormode, Kulkarni and
// Srivastava, "Marginal Release Under Local Differential Privacy", SIGMOD
// 2018): the device draws a uniform row j of the K×K Hadamard matrix
// (K the smallest power of two ≥ d), computes the entry H[v][j] =
// (−1)^popcount(v AND j) and reports (j, that sign through binary randomized
// response with p = e^ε/(e^ε+1), rounded down). The row does not depend on
// v, so the report is as private as binary randomized response, ε. A report
// is log2(K)+1 bits and aggregation is O(1) per report; the estimates come
// from one fast Walsh–Hadamard transform of the per-row sums. Its variance
// is (e^ε+1)²/(e^ε−1)² per report, more than oue's: it trades accuracy for
// small reports and cheap aggregation.
type hrOracle struct {
	d, k int
	m    *mechanism.BinaryRR
	eps  float64
}

func newHR(o Options) (*hrOracle, error) {
	m, err := mechanism.NewBinaryRR(mechanism.BinaryRROptions{Epsilon: o.Epsilon})
	if err != nil {
		return nil, fmt.Errorf("ldp hr: %w", err)
	}
	k := 1 << bits.Len(uint(o.Domain-1))
	return &hrOracle{d: o.Domain, k: k, m: m, eps: m.Cost().Epsilon}, nil
}

// HadamardBit returns 1 if the Hadamard entry H[v][j] is +1 (an even
// number of common one bits) and 0 if it is −1.
func HadamardBit(v, j int) int { return 1 - bits.OnesCount(uint(v&j))&1 }

// Params implements FrequencyOracle.
func (h *hrOracle) Params() Params {
	p := h.m.P()
	return Params{Mechanism: KindHR, Epsilon: h.eps, Domain: h.d, P: newProb(p), Q: newProb(1 - p), Rows: h.k}
}

// Randomize draws the row, then reports its sign for v through randomized
// response. Report.Seed holds the row, Report.Value the reported bit.
func (h *hrOracle) Randomize(src random.Source, v int) (Report, error) {
	if err := checkValue(KindHR, v, h.d); err != nil {
		return Report{}, err
	}
	s, b := borrow(src)
	defer giveBack(b)
	j := int(noise.UniformInt(s, uint64(h.k)))
	bit := HadamardBit(v, j)
	if !noise.BernoulliFloat(s, h.m.P()) {
		bit = 1 - bit
	}
	return Report{Seed: uint32(j), Value: bit}, nil
}

// Variance is (1 − (2p−1)²f)/(N(2p−1)²): each report contributes ±1 with
// mean (2p−1) if its value is v and 0 otherwise.
func (h *hrOracle) Variance(n int64, f float64) float64 {
	c := 2*h.m.P() - 1
	return (1 - c*c*f) / (float64(n) * c * c)
}

// hrAgg counts, for every row j, the reports of bit 0 (Counts[2j]) and bit
// 1 (Counts[2j+1]).
type hrAgg struct {
	h *hrOracle
	t Tally
}

// NewAggregator implements FrequencyOracle.
func (h *hrOracle) NewAggregator() Aggregator {
	return &hrAgg{h: h, t: Tally{Counts: make([]int64, 2*h.k)}}
}

// Add implements Aggregator.
func (a *hrAgg) Add(r Report) error {
	if uint64(r.Seed) >= uint64(a.h.k) {
		return fmt.Errorf("ldp hr: row = %d: want a row in [0, %d)", r.Seed, a.h.k)
	}
	if r.Value != 0 && r.Value != 1 {
		return fmt.Errorf("ldp hr: value = %d: want a bit, 0 or 1", r.Value)
	}
	if r.Bits != nil {
		return fmt.Errorf("ldp hr: report carries bits: want a row and a bit")
	}
	a.t.Counts[2*int(r.Seed)+r.Value]++
	a.t.N++
	return nil
}

// Merge implements Aggregator.
func (a *hrAgg) Merge(t Tally) error { return mergeTally(&a.t, t) }

// Tally implements Aggregator.
func (a *hrAgg) Tally() Tally { return copyTally(a.t) }

// estimates transforms the per-row sums Σ(±1) with a fast Walsh–Hadamard
// transform: f̂_v = Σ_j H[v][j]·s_j / (N(2p−1)), for v < d.
func (h *hrOracle) estimates(t Tally) []mechanism.Estimate {
	s := make([]int64, h.k)
	for j := range s {
		s[j] = t.Counts[2*j+1] - t.Counts[2*j]
	}
	for w := 1; w < h.k; w <<= 1 {
		for i := 0; i < h.k; i += 2 * w {
			for j := i; j < i+w; j++ {
				a, b := s[j], s[j+w]
				s[j], s[j+w] = a+b, a-b
			}
		}
	}
	c := 2*h.m.P() - 1
	out := make([]mechanism.Estimate, h.d)
	for v := range out {
		f := float64(s[v]) / (float64(t.N) * c)
		out[v] = mechanism.Estimate{Value: f, Variance: h.Variance(t.N, math.Min(1, math.Max(0, f)))}
	}
	return out
}
