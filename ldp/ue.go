package ldp

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/dpstat/dpstat/noise"
	"github.com/dpstat/dpstat/random"
)

// ueOracle is unary encoding: the report is a d-bit vector whose bit v is
// set with probability p if v is the true value and q otherwise,
// independently. OUE takes p = 1/2 and q = 1/(e^ε+1) rounded up; SUE takes
// q = 1/(e^(ε/2)+1) rounded up and p = 1 − q. Both are ε-LDP with ε =
// ln(p(1−q)/((1−p)q)).
type ueOracle struct {
	kind  Kind
	d     int
	words int
	p, q  float64
	qe    expansion
	eps   float64
	last  uint64 // mask of the valid bits of the last word
}

func newUE(o Options) (*ueOracle, error) {
	u := &ueOracle{kind: o.Mechanism, d: o.Domain, words: (o.Domain + 63) / 64}
	var ok bool
	switch o.Mechanism {
	case KindOUE:
		u.p = 0.5
		u.q, ok = flipProbability(o.Epsilon)
		if ok {
			u.eps = math.Min(o.Epsilon, roundUp(ueEpsilon(u.q)))
		}
	default:
		u.q, ok = flipProbability(o.Epsilon / 2)
		// Round q up to a multiple of 2^-53 so that p = 1 − q is exact.
		u.q = math.Ceil(u.q*0x1p53) / 0x1p53
		u.p = 1 - u.q
		if ok {
			u.eps = math.Min(o.Epsilon, roundUp(2*ueEpsilon(u.q)))
		}
	}
	if !ok {
		return nil, fmt.Errorf("ldp %s: epsilon = %v gives no usable flip probability in float64; want epsilon in [1e-10, 700]", o.Mechanism, o.Epsilon)
	}
	u.qe = newExpansion(u.q)
	u.last = ^uint64(0)
	if r := o.Domain % 64; r != 0 {
		u.last = 1<<r - 1
	}
	return u, nil
}

func (u *ueOracle) pq() (float64, float64) { return u.p, u.q }

// Params implements FrequencyOracle.
func (u *ueOracle) Params() Params {
	return Params{Mechanism: u.kind, Epsilon: u.eps, Domain: u.d, P: newProb(u.p), Q: newProb(u.q)}
}

// Randomize returns the perturbed one-hot encoding of v: every bit other
// than v is set with probability q, bit v with probability p, all exactly.
func (u *ueOracle) Randomize(src random.Source, v int) (Report, error) {
	if err := checkValue(u.kind, v, u.d); err != nil {
		return Report{}, err
	}
	s, b := borrow(src)
	defer giveBack(b)
	out := make([]uint64, u.words)
	u.fill(s, v, out)
	return Report{Bits: out}, nil
}

// fill writes the randomized encoding of v into out (len u.words).
func (u *ueOracle) fill(s random.Source, v int, out []uint64) {
	for i := range out {
		out[i] = u.qe.bernoulliWord(s)
	}
	out[len(out)-1] &= u.last
	set := noise.BernoulliFloat(s, u.p)
	w, bit := v/64, uint64(1)<<(v%64)
	out[w] &^= bit
	if set {
		out[w] |= bit
	}
}

// Variance implements FrequencyOracle.
func (u *ueOracle) Variance(n int64, f float64) float64 { return pqVariance(n, f, u.p, u.q) }

// planes is the depth of the bit-sliced counters: 8 planes count up to 255
// reports per position before they are flushed into the int64 counts.
const planes = 8

// ueAgg counts set bits per position with bit-sliced (vertical) counters:
// adding a 64-bit word is a ripple-carry addition into 8 planes, which stops
// as soon as the carry is zero, so most words cost a few instructions.
type ueAgg struct {
	u       *ueOracle
	t       Tally
	planes  [][planes]uint64
	pending int
}

// NewAggregator implements FrequencyOracle.
func (u *ueOracle) NewAggregator() Aggregator {
	return &ueAgg{u: u, t: Tally{Counts: make([]int64, u.d)}, planes: make([][planes]uint64, u.words)}
}

// Add implements Aggregator.
func (a *ueAgg) Add(r Report) error {
	if len(r.Bits) != a.u.words {
		return fmt.Errorf("ldp %s: report has %d words of bits: want %d for a domain of %d values", a.u.kind, len(r.Bits), a.u.words, a.u.d)
	}
	if r.Bits[len(r.Bits)-1]&^a.u.last != 0 {
		return fmt.Errorf("ldp %s: report sets bits at or beyond position %d: want bits of values in [0, %d) only", a.u.kind, a.u.d, a.u.d)
	}
	if r.Value != 0 || r.Seed != 0 {
		return fmt.Errorf("ldp %s: report carries a value or seed: want bits only", a.u.kind)
	}
	pl := a.planes[:len(r.Bits)]
	for i, x := range r.Bits {
		c := &pl[i]
		for j := 0; x != 0 && j < planes; j++ {
			t := c[j] & x
			c[j] ^= x
			x = t
		}
	}
	a.t.N++
	a.pending++
	if a.pending == 1<<planes-1 {
		a.flush()
	}
	return nil
}

func (a *ueAgg) flush() {
	for w := range a.planes {
		c := &a.planes[w]
		for j := 0; j < planes; j++ {
			x := c[j]
			for x != 0 {
				i := bits.TrailingZeros64(x)
				a.t.Counts[w*64+i] += 1 << j
				x &= x - 1
			}
			c[j] = 0
		}
	}
	a.pending = 0
}

// Merge implements Aggregator.
func (a *ueAgg) Merge(t Tally) error { return mergeTally(&a.t, t) }

// Tally implements Aggregator.
func (a *ueAgg) Tally() Tally {
	a.flush()
	return copyTally(a.t)
}
