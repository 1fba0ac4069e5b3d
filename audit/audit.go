// Package audit checks differential-privacy claims empirically: it runs a
// mechanism many times on two neighbouring inputs and proves, with a stated
// confidence, a lower bound on the privacy loss ε that the mechanism really
// has.
//
// An audit cannot prove that a mechanism is private; it can prove that one is
// not. If the lower bound exceeds the ε a mechanism claims, the claim is false
// (up to the audit's failure probability, 1 − Confidence). Audits catch
// mis-calibrated noise, randomized response with the wrong probabilities, and
// the floating-point holes of textbook Laplace samplers (Mironov 2012).
//
// The procedure is the standard one of Jagielski et al. (2020) and
// Nasr et al. (2021), made conservative:
//
//  1. Draw Samples outputs of M(D) and Samples outputs of M(D').
//  2. On the first half of each, evaluate a family of candidate events E
//     (thresholds, exact values, "is a multiple of 2^−k", ...) and pick, for
//     each direction (D against D', and D' against D), the event whose
//     log-ratio is largest on that half, measured conservatively (by the
//     same Clopper–Pearson bound as step 3, so that an event seen a handful
//     of times cannot win by luck).
//  3. On the held-out second half, bound P[M(D) ∈ E] from below and
//     P[M(D') ∈ E] from above with one-sided Clopper–Pearson intervals, and
//     report ln((p_low − δ) / p_high). The failure probability
//     1 − Confidence is split evenly over the two directions and the two
//     intervals of each (Bonferroni), so the reported bound exceeds the true
//     ε with probability at most 1 − Confidence.
//
// Because the event is chosen on data that the bound never sees, the
// selection does not weaken the guarantee, however many candidates there are.
package audit

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpstat/dpstat/random"
)

// Sampler draws one output of a mechanism run on a fixed input, using src
// for its randomness. A sampler that wraps a mechanism whose random source
// was fixed when it was constructed may ignore src.
type Sampler[T any] func(src random.Source) T

// Event is a set of outputs: Contains reports whether an output is in it.
type Event[T any] struct {
	// Name describes the set for people, e.g. "output ≤ 1.25".
	Name string
	// Contains reports whether x is in the set.
	Contains func(x T) bool
}

// Family proposes candidate events from the selection half of the outputs
// (the outputs of both inputs, pooled). The audit never evaluates its bound
// on these outputs, so a family may look at them freely.
type Family[T any] func(selection []T) []Event[T]

// Options configures an audit. The zero value of each field selects its
// default.
type Options struct {
	// Samples is the number of outputs drawn for each of the two inputs;
	// half of them select the event and half bound its probability.
	// Default 200000; at least 2000.
	Samples int
	// Confidence is the probability, at least, with which the reported
	// lower bound does not exceed the mechanism's true ε. Default 1 − 1e-6;
	// it must lie in (0, 1).
	Confidence float64
	// Delta is the δ of an (ε, δ)-DP claim: the audit bounds
	// ln((P[M(D) ∈ E] − δ) / P[M(D') ∈ E]), which an (ε, δ)-DP mechanism
	// keeps at or below ε for every event E. Default 0 (pure DP).
	Delta float64
	// Source is the random source passed to the samplers; nil means a
	// secure source.
	Source random.Source
}

// DefaultSamples is the number of outputs drawn per input when
// Options.Samples is zero.
const DefaultSamples = 200000

// DefaultConfidence is the confidence used when Options.Confidence is zero.
const DefaultConfidence = 1 - 1e-6

// Direction names which input's output probability is the numerator of the
// audited ratio.
type Direction string

// The two directions an audit tests.
const (
	// DAgainstDPrime bounds ln(P[M(D) ∈ E] / P[M(D') ∈ E]).
	DAgainstDPrime Direction = "D vs D'"
	// DPrimeAgainstD bounds ln(P[M(D') ∈ E] / P[M(D) ∈ E]).
	DPrimeAgainstD Direction = "D' vs D"
)

// Result is the outcome of an audit: the larger of the two directions'
// bounds, with the event and counts that produced it.
type Result struct {
	// EpsilonLowerBound is a lower bound, valid with probability at least
	// Confidence, on the mechanism's true ε. It is never negative.
	EpsilonLowerBound float64
	// Event describes the event that gave the bound.
	Event string
	// Direction says which input is the numerator.
	Direction Direction
	// Hits is the number of held-out outputs of the numerator input that
	// fell in the event, out of Trials.
	Hits int
	// OtherHits is the same count for the denominator input.
	OtherHits int
	// Trials is the number of held-out outputs per input.
	Trials int
	// Empirical is the point estimate ln((Hits/Trials − δ)/(OtherHits/Trials))
	// on the held-out outputs (+Inf when OtherHits is 0); for information only.
	Empirical float64
	// Confidence is the confidence of EpsilonLowerBound.
	Confidence float64
	// Delta is the δ that was subtracted from the numerator probability.
	Delta float64
}

// String summarizes the result in one line.
func (r Result) String() string {
	return fmt.Sprintf("ε ≥ %.4f with confidence %g (%s, event %q: %d vs %d of %d; point estimate %.4f)",
		r.EpsilonLowerBound, r.Confidence, r.Direction, r.Event, r.Hits, r.OtherHits, r.Trials, r.Empirical)
}

// Refutes reports whether the audit disproves a claim of epsilon: whether
// the lower bound is strictly above it.
func (r Result) Refutes(epsilon float64) bool { return r.EpsilonLowerBound > epsilon }

func (o Options) withDefaults() (Options, error) {
	if o.Samples == 0 {
		o.Samples = DefaultSamples
	}
	if o.Samples < 2000 {
		return o, fmt.Errorf("audit: Samples = %d: want at least 2000 outputs per input", o.Samples)
	}
	if o.Confidence == 0 {
		o.Confidence = DefaultConfidence
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		return o, fmt.Errorf("audit: Confidence = %v: want a number in (0, 1)", o.Confidence)
	}
	if !(o.Delta >= 0 && o.Delta < 1) {
		return o, fmt.Errorf("audit: Delta = %v: want a number in [0, 1)", o.Delta)
	}
	if o.Source == nil {
		o.Source = random.NewSecure()
	}
	return o, nil
}

// Run audits the pair of samplers d = M(D) and dPrime = M(D') with the
// candidate events that family proposes.
func Run[T any](d, dPrime Sampler[T], family Family[T], opts Options) (Result, error) {
	if d == nil || dPrime == nil {
		return Result{}, errors.New("audit: both samplers must be non-nil")
	}
	if family == nil {
		return Result{}, errors.New("audit: the event family must be non-nil")
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return Result{}, err
	}
	xs := draw(d, opts.Samples, opts.Source)
	ys := draw(dPrime, opts.Samples, opts.Source)
	half := opts.Samples / 2
	selX, testX := xs[:half], xs[half:]
	selY, testY := ys[:half], ys[half:]

	pooled := make([]T, 0, 2*half)
	pooled = append(pooled, selX...)
	pooled = append(pooled, selY...)
	events := family(pooled)
	if len(events) == 0 {
		return Result{}, errors.New("audit: the event family proposed no events")
	}

	// Four one-sided intervals in all: two directions, two per direction.
	alpha := (1 - opts.Confidence) / 4

	// Select on the first half: for each direction, the event with the
	// largest conservative log-ratio (the same Clopper–Pearson bound the
	// test half uses), which prefers events with enough hits to be
	// confirmed over ones whose empirical ratio is large by luck.
	bestFwd, bestBwd := -1, -1
	scoreFwd, scoreBwd := math.Inf(-1), math.Inf(-1)
	for i, e := range events {
		a, b := count(selX, e), count(selY, e)
		if s := logRatioLower(a, b, len(selX), len(selY), alpha, opts.Delta); s > scoreFwd || bestFwd < 0 {
			bestFwd, scoreFwd = i, s
		}
		if s := logRatioLower(b, a, len(selY), len(selX), alpha, opts.Delta); s > scoreBwd || bestBwd < 0 {
			bestBwd, scoreBwd = i, s
		}
	}

	eval := func(num, den []T, e Event[T], dir Direction) Result {
		a, b := count(num, e), count(den, e)
		lb := logRatioLower(a, b, len(num), len(den), alpha, opts.Delta)
		if lb < 0 || math.IsNaN(lb) {
			lb = 0
		}
		emp := math.Log((float64(a)/float64(len(num)) - opts.Delta) / (float64(b) / float64(len(den))))
		return Result{
			EpsilonLowerBound: lb, Event: e.Name, Direction: dir,
			Hits: a, OtherHits: b, Trials: len(num), Empirical: emp,
			Confidence: opts.Confidence, Delta: opts.Delta,
		}
	}
	fwd := eval(testX, testY, events[bestFwd], DAgainstDPrime)
	bwd := eval(testY, testX, events[bestBwd], DPrimeAgainstD)
	if bwd.EpsilonLowerBound > fwd.EpsilonLowerBound {
		return bwd, nil
	}
	return fwd, nil
}

// Float audits a mechanism with real-valued outputs using FloatEvents.
func Float(d, dPrime Sampler[float64], opts Options) (Result, error) {
	return Run(d, dPrime, FloatEvents, opts)
}

// Discrete audits a mechanism with finitely many likely outputs (a selected
// index, a randomized answer) using ValueEvents.
func Discrete[T comparable](d, dPrime Sampler[T], opts Options) (Result, error) {
	return Run(d, dPrime, ValueEvents[T], opts)
}

func draw[T any](s Sampler[T], n int, src random.Source) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = s(src)
	}
	return out
}

func count[T any](xs []T, e Event[T]) int {
	c := 0
	for _, x := range xs {
		if e.Contains(x) {
			c++
		}
	}
	return c
}

// logRatioLower bounds ln((p1 − δ)/p2) from below, where a of n1 trials hit
// under p1 and b of n2 under p2, each interval failing with probability at
// most alpha. It returns −Inf when the lower bound of p1 does not exceed δ.
func logRatioLower(a, b, n1, n2 int, alpha, delta float64) float64 {
	p1 := ClopperPearsonLower(a, n1, alpha) - delta
	if p1 <= 0 {
		return math.Inf(-1)
	}
	p2 := ClopperPearsonUpper(b, n2, alpha)
	return math.Log(p1 / p2)
}
