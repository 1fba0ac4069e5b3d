package mechanism

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"sync"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/noise"
	"github.com/dpstat/dpstat/random"
)

// AboveThresholdOptions configures sparse vector (AboveThreshold).
type AboveThresholdOptions struct {
	// Epsilon is ε > 0, the total cost however many queries are tested.
	Epsilon float64
	// Sensitivity is the sensitivity Δ > 0 of every query.
	Sensitivity float64
	// Threshold is the public threshold T.
	Threshold float64
	// Source is the random source; nil means the secure pooled source.
	Source random.Source
}

// ErrAboveThresholdDone is returned by Test after a query was reported
// above the threshold: AboveThreshold answers once.
var ErrAboveThresholdDone = errors.New("above threshold: a query was already reported above the threshold; the mechanism answers only once")

// AboveThreshold is the sparse vector technique (Dwork & Roth 2014,
// Algorithm 1): a noisy threshold T + Lap(2Δ/ε) is drawn once, and each query
// q is reported above when q + Lap(4Δ/ε) reaches it. After the first "above"
// it refuses further queries. The whole run is ε-DP (up to
// noise.SamplerDelta). Values are rounded to the grid 2^(floor(log2 Δ) − 20)
// with the sensitivity grown by one step, and the noise is discrete Laplace
// in grid steps. It is safe for concurrent use when Source is nil.
type AboveThreshold struct {
	eps, sens      float64
	grid           noise.Grid
	thresholdScale noise.Scale
	queryScale     noise.Scale
	src            random.Source

	mu        sync.Mutex
	threshold *big.Int // round(T/g) + noise, in grid steps
	thrSmall  int64    // the same, when it lies within ±2^62
	thrFits   bool
	done      bool
}

// NewAboveThreshold returns an AboveThreshold mechanism with its noisy
// threshold drawn, or an error naming the invalid option.
func NewAboveThreshold(o AboveThresholdOptions) (*AboveThreshold, error) {
	if err := checkEpsilon(o.Epsilon); err != nil {
		return nil, fmt.Errorf("above threshold: %w", err)
	}
	if err := checkSensitivity("sensitivity", o.Sensitivity); err != nil {
		return nil, fmt.Errorf("above threshold: %w", err)
	}
	if err := checkFinite("threshold", o.Threshold); err != nil {
		return nil, fmt.Errorf("above threshold: %w", err)
	}
	g, ts, err := laplaceGrid(o.Epsilon, o.Sensitivity, 2)
	if err != nil {
		return nil, fmt.Errorf("above threshold: %w", err)
	}
	// The query noise has exactly twice the threshold's scale; ts.Num ≤
	// 2^52, so the doubled numerator fits.
	qs := noise.Scale{Num: 2 * ts.Num, Den: ts.Den}
	t, _ := g.Round(o.Threshold)
	src, b := source(o.Source)
	t.Add(t, big.NewInt(noise.DiscreteLaplace(src, ts)))
	release(b)
	m := &AboveThreshold{eps: o.Epsilon, sens: o.Sensitivity, grid: g, thresholdScale: ts, queryScale: qs, src: o.Source, threshold: t}
	if t.IsInt64() && t.Int64() <= 1<<62 && t.Int64() >= -1<<62 {
		m.thrSmall, m.thrFits = t.Int64(), true
	}
	return m, nil
}

// Test reports whether the noisy query value reaches the noisy threshold.
// After the first true it returns ErrAboveThresholdDone; a NaN or infinite
// value is an error (and does not use up the mechanism).
func (m *AboveThreshold) Test(queryValue float64) (above bool, err error) {
	if err := checkFinite("above threshold: query value", queryValue); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done {
		return false, ErrAboveThresholdDone
	}
	src, b := source(m.src)
	k := noise.DiscreteLaplace(src, m.queryScale)
	release(b)
	if r, ok := m.grid.RoundInt64(queryValue); ok && m.thrFits {
		above = reaches(r, k, m.thrSmall)
	} else {
		q, _ := m.grid.Round(queryValue)
		q.Add(q, big.NewInt(k))
		above = q.Cmp(m.threshold) >= 0
	}
	if above {
		m.done = true
	}
	return above, nil
}

// reaches reports whether r + k ≥ t without overflow, for |r|, |t| ≤ 2^62
// and any k: it compares r with t − k, whose overflow shows as a sign change.
func reaches(r, k, t int64) bool {
	d := t - k
	switch {
	case k > 0 && d > t: // t − k < −2^63 ≤ r
		return true
	case k < 0 && d < t: // t − k > 2^63 − 1 ≥ r
		return false
	}
	return r >= d
}

// Cost returns Pure(ε).
func (m *AboveThreshold) Cost() accounting.Cost { return accounting.Pure(m.eps) }

// Granularity returns the grid step onto which values are rounded.
func (m *AboveThreshold) Granularity() float64 { return m.grid.Granularity() }

// ThresholdScale returns the scale of the threshold noise in value units,
// at least 2(Δ + g)/ε.
func (m *AboveThreshold) ThresholdScale() float64 {
	return m.thresholdScale.Float() * m.grid.Granularity()
}

// QueryScale returns the scale of each query's noise in value units, at
// least 4(Δ + g)/ε.
func (m *AboveThreshold) QueryScale() float64 {
	return m.queryScale.Float() * m.grid.Granularity()
}

// Accuracy returns α such that, over numQueries queries, except with
// probability failure: a query reported above has a true value of at least
// T − α, and every query tested before it had a true value below T + α.
// It uses the exact discrete-Laplace tails: the threshold noise within h_T
// steps with probability 1 − failure/2 and every query's noise within h_q
// steps with probability 1 − failure/(2·numQueries), so α = (h_T + h_q)·g
// plus one step for rounding T and the query to the grid: about
// (2 ln(2/β) + 4 ln(2k/β))(Δ + g)/ε, below the textbook 8(Δ/ε)·ln(2k/β). It returns NaN for
// numQueries < 1 or failure outside (0, 1).
func (m *AboveThreshold) Accuracy(numQueries int, failure float64) float64 {
	if numQueries < 1 || math.IsNaN(failure) || !(failure > 0 && failure < 1) {
		return math.NaN()
	}
	hT := dlapTailSteps(m.thresholdScale, 1-failure/2)
	hQ := dlapTailSteps(m.queryScale, 1-failure/(2*float64(numQueries)))
	g := m.grid.Granularity()
	return (hT+hQ)*g + g
}
