package ldp

import (
	"fmt"
	"math"
	"strings"

	"github.com/dpstat/dpstat/mechanism"
	"github.com/dpstat/dpstat/random"
)

// Kind names a local randomizer.
type Kind string

// The randomizers, by their short names (the command line and the collector
// use these).
const (
	// KindRR is binary randomized response over a domain of two values.
	KindRR Kind = "rr"
	// KindKRR is k-ary randomized response.
	KindKRR Kind = "krr"
	// KindOUE is optimized unary encoding (p = 1/2, q = 1/(e^ε+1)).
	KindOUE Kind = "oue"
	// KindOLH is optimized local hashing (g = round(e^ε)+1).
	KindOLH Kind = "olh"
	// KindSUE is symmetric unary encoding (basic one-time RAPPOR).
	KindSUE Kind = "sue"
	// KindHR is Hadamard randomized response.
	KindHR Kind = "hr"
	// KindMean is the Duchi et al. mean of a bounded number (not a
	// frequency oracle; see Mean).
	KindMean Kind = "mean"
)

// FrequencyKinds lists the frequency oracles in the order Recommend prefers
// them on ties (smaller reports first).
var FrequencyKinds = []Kind{KindRR, KindKRR, KindHR, KindOLH, KindOUE, KindSUE}

// ParseKind accepts a short name (case-insensitive; "rappor" is an alias
// of "sue", "hadamard" of "hr", "duchi" of "mean").
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "rr", "binary":
		return KindRR, nil
	case "krr", "kary":
		return KindKRR, nil
	case "oue":
		return KindOUE, nil
	case "olh":
		return KindOLH, nil
	case "sue", "rappor":
		return KindSUE, nil
	case "hr", "hadamard":
		return KindHR, nil
	case "mean", "duchi":
		return KindMean, nil
	}
	return "", fmt.Errorf("mechanism %q: want one of rr, krr, oue, olh, sue, hr, mean", s)
}

// MaxDomain is the largest domain a frequency oracle accepts, 2^20 values.
const MaxDomain = 1 << 20

// Options configures a frequency oracle.
type Options struct {
	// Mechanism is the randomizer.
	Mechanism Kind
	// Epsilon is the local privacy parameter ε > 0 each report satisfies.
	Epsilon float64
	// Domain is the number of values d, in [2, MaxDomain]; values are
	// 0, …, d−1. Binary randomized response needs d = 2.
	Domain int
}

// Report is one person's randomized report. Which fields are used depends
// on the mechanism: Value for rr, krr and mean (the reported value or bit),
// olh (the perturbed hash) and hr (the reported bit); Seed for olh (the
// hash function chosen) and hr (the Hadamard row); Bits for oue and sue (bit
// v is Bits[v/64]>>(v%64)&1).
type Report struct {
	// Value is the reported value (rr, krr), bit (mean) or perturbed
	// hash (olh).
	Value int `json:"value,omitempty"`
	// Seed is olh's hash seed, or hr's row.
	Seed uint32 `json:"seed,omitempty"`
	// Bits is the unary encoding's bit vector, ceil(d/64) words.
	Bits []uint64 `json:"bits,omitempty"`
}

// Tally is the sufficient statistic of a set of reports: their number N and
// one count per domain value (for rr and krr the reports of each value, for
// oue and sue the reports whose bit is set, for olh the reports that
// support the value; for mean, Counts[1] is the number of 1 bits), except
// for hr, whose tally has two counts per Hadamard row (Counts[2j+b] counts
// the reports of row j and bit b). Params.TallySize gives the length.
// Tallies of disjoint sets of reports add.
type Tally struct {
	// N is the number of reports.
	N int64 `json:"n"`
	// Counts holds one count per domain value.
	Counts []int64 `json:"counts"`
}

// Params are the public parameters of a randomizer: everything a device
// needs to randomize, with the probabilities given exactly.
type Params struct {
	// Mechanism is the randomizer's kind.
	Mechanism Kind `json:"mechanism"`
	// Epsilon is the ε each report satisfies (at most the ε requested).
	Epsilon float64 `json:"epsilon"`
	// Domain is the number of values d (2 for rr and mean).
	Domain int `json:"domain"`
	// P is the probability of keeping the truth: for rr the probability
	// of reporting the true bit, for krr and olh of reporting the true
	// (hashed) value, for oue and sue of setting the true value's bit.
	P Prob `json:"p"`
	// Q is, for oue and sue, the probability of setting any other bit;
	// for krr and olh it is the probability of each particular other
	// value (1−p)/(k−1), given for information (it is not dyadic: the
	// device draws a uniform other value instead).
	Q Prob `json:"q"`
	// G is the hash range of olh (the number of values the g-ary
	// randomized response works on).
	G int `json:"g,omitempty"`
	// Rows is the size K of hr's Hadamard matrix, the smallest power of
	// two ≥ d; a report's row is in [0, K).
	Rows int `json:"rows,omitempty"`
}

// TallySize returns the number of counts in a tally of these reports: 2K
// for hr, the domain size otherwise.
func (p Params) TallySize() int {
	if p.Mechanism == KindHR {
		return 2 * p.Rows
	}
	return p.Domain
}

// FrequencyOracle is a local randomizer for values in [0, d) together with
// its estimator.
type FrequencyOracle interface {
	// Params returns the public parameters.
	Params() Params
	// Randomize returns the report of a person whose value is v; src nil
	// means the secure pooled source.
	Randomize(src random.Source, v int) (Report, error)
	// NewAggregator returns an empty aggregator for this oracle's reports.
	NewAggregator() Aggregator
	// Variance returns the exact variance of one value's frequency
	// estimate from n reports when that value's true frequency is f (for
	// olh, under an ideal hash family).
	Variance(n int64, f float64) float64
}

// Aggregator accumulates the reports of one oracle. It is not safe for
// concurrent use; run one per goroutine and Merge their tallies.
type Aggregator interface {
	// Add validates a report and counts it; a report that does not fit the
	// oracle (wrong length, value out of range) is refused with an error
	// and not counted.
	Add(r Report) error
	// Merge adds a tally of the same oracle (from a store, or another
	// aggregator).
	Merge(t Tally) error
	// Tally returns a copy of the counts so far.
	Tally() Tally
}

// New returns the frequency oracle the options describe, or an error naming
// the invalid option.
func New(o Options) (FrequencyOracle, error) {
	if err := checkEpsilon(o.Epsilon); err != nil {
		return nil, fmt.Errorf("ldp %s: %w", o.Mechanism, err)
	}
	if o.Domain < 2 || o.Domain > MaxDomain {
		return nil, fmt.Errorf("ldp %s: domain = %d: want a number of values in [2, %d]", o.Mechanism, o.Domain, MaxDomain)
	}
	switch o.Mechanism {
	case KindRR:
		return newRR(o)
	case KindKRR:
		return newKRR(o)
	case KindOUE, KindSUE:
		return newUE(o)
	case KindOLH:
		return newOLH(o)
	case KindHR:
		return newHR(o)
	case KindMean:
		return nil, fmt.Errorf("ldp: mechanism mean estimates a mean, not frequencies: use NewMean")
	}
	return nil, fmt.Errorf("ldp: mechanism %q: want one of rr, krr, oue, olh, sue, hr", o.Mechanism)
}

// Estimates returns, for every value, the unbiased frequency estimate and
// its variance from a tally of the oracle's reports (post-processing: it
// uses only the counts and the exact probabilities of Params).
func Estimates(o FrequencyOracle, t Tally) ([]mechanism.Estimate, error) {
	p := o.Params()
	if err := checkTally(t, p.TallySize()); err != nil {
		return nil, err
	}
	switch m := o.(type) {
	case *rrOracle:
		e, err := m.m.Estimate(t.Counts[1], t.N)
		if err != nil {
			return nil, err
		}
		return []mechanism.Estimate{{Value: 1 - e.Value, Variance: e.Variance}, e}, nil
	case *krrOracle:
		return m.m.Estimate(t.Counts)
	case *hrOracle:
		return m.estimates(t), nil
	}
	pq, ok := o.(interface{ pq() (float64, float64) })
	if !ok {
		return nil, fmt.Errorf("ldp: Estimates needs an oracle made by ldp.New, not %T", o)
	}
	pp, qq := pq.pq()
	return pqEstimates(t, pp, qq), nil
}

func checkTally(t Tally, d int) error {
	if len(t.Counts) != d {
		return fmt.Errorf("ldp: tally has %d counts: want %d, one per value", len(t.Counts), d)
	}
	if t.N <= 0 {
		return fmt.Errorf("ldp: tally of %d reports: want at least one report", t.N)
	}
	for i, c := range t.Counts {
		if c < 0 || c > t.N {
			return fmt.Errorf("ldp: tally count[%d] = %d: want a count in [0, n = %d]", i, c, t.N)
		}
	}
	return nil
}

// pqEstimates returns f̂_v = (c_v/N − q)/(p − q) for reports that count
// towards v with probability p when v is the true value and q otherwise,
// with variance q(1−q)/(N(p−q)²) + f(1−p−q)/(N(p−q)) at f = f̂ clamped into
// [0, 1].
func pqEstimates(t Tally, p, q float64) []mechanism.Estimate {
	out := make([]mechanism.Estimate, len(t.Counts))
	for i, c := range t.Counts {
		f := (float64(c)/float64(t.N) - q) / (p - q)
		out[i] = mechanism.Estimate{Value: f, Variance: pqVariance(t.N, math.Min(1, math.Max(0, f)), p, q)}
	}
	return out
}

func pqVariance(n int64, f, p, q float64) float64 {
	N := float64(n)
	return q*(1-q)/(N*(p-q)*(p-q)) + f*(1-p-q)/(N*(p-q))
}

// Ranges of values: a report value must lie in [0, k).
func checkValue(kind Kind, v, k int) error {
	if v < 0 || v >= k {
		return fmt.Errorf("ldp %s: value = %d: want a value in [0, %d)", kind, v, k)
	}
	return nil
}

// borrow returns src, or a secure generator from the pool that the caller
// gives back with giveBack.
func borrow(src random.Source) (random.Source, *random.Secure) {
	if src != nil {
		return src, nil
	}
	b := random.Borrow()
	return b, b
}

func giveBack(b *random.Secure) {
	if b != nil {
		random.Return(b)
	}
}

// countAgg aggregates reports that each name one value (rr, krr).
type countAgg struct {
	kind Kind
	t    Tally
}

func newCountAgg(kind Kind, d int) *countAgg {
	return &countAgg{kind: kind, t: Tally{Counts: make([]int64, d)}}
}

// Add implements Aggregator.
func (a *countAgg) Add(r Report) error {
	if uint(r.Value) >= uint(len(a.t.Counts)) {
		return checkValue(a.kind, r.Value, len(a.t.Counts))
	}
	if r.Seed != 0 || r.Bits != nil {
		return fmt.Errorf("ldp %s: report carries a seed or bits: want a value only", a.kind)
	}
	a.t.Counts[r.Value]++
	a.t.N++
	return nil
}

// Merge implements Aggregator.
func (a *countAgg) Merge(t Tally) error { return mergeTally(&a.t, t) }

// Tally implements Aggregator.
func (a *countAgg) Tally() Tally { return copyTally(a.t) }

func mergeTally(dst *Tally, t Tally) error {
	if len(t.Counts) != len(dst.Counts) {
		return fmt.Errorf("ldp: tally has %d counts: want %d", len(t.Counts), len(dst.Counts))
	}
	if t.N < 0 {
		return fmt.Errorf("ldp: tally of %d reports: want n >= 0", t.N)
	}
	for i, c := range t.Counts {
		if c < 0 || c > t.N {
			return fmt.Errorf("ldp: tally count[%d] = %d: want a count in [0, n = %d]", i, c, t.N)
		}
	}
	dst.N += t.N
	for i, c := range t.Counts {
		dst.Counts[i] += c
	}
	return nil
}

func copyTally(t Tally) Tally {
	return Tally{N: t.N, Counts: append([]int64(nil), t.Counts...)}
}
