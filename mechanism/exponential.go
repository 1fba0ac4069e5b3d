package mechanism

import (
	"fmt"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/random"
)

// ExponentialOptions configures the exponential mechanism.
type ExponentialOptions struct {
	// Epsilon is ε > 0.
	Epsilon float64
	// Sensitivity is the sensitivity Δu > 0 of every candidate's score.
	Sensitivity float64
	// Source is the random source; nil means the secure pooled source.
	Source random.Source
}

// Exponential is the exponential mechanism (McSherry & Talwar 2007):
// candidate i is selected with probability proportional to
// exp(ε·u_i/(2Δu)), sampled exactly (scores rounded to a grid of Δu·2^-20,
// sensitivity grown by one grid step, then noise.SampleExpWeighted: a level
// chosen with exact integer arithmetic and an exact Bernoulli(exp(−f))
// trial; no floating-point Gumbel noise). It is ε-DP and ε²/8-zCDP (up to
// noise.SamplerDelta). Methods are safe for concurrent use when Source is
// nil.
//
// The running time is linear in the number of candidates, plus an expected
// e rounds (at most 256) over the distinct integer levels of the scaled
// scores.
type Exponential struct {
	sel selector
	src random.Source
}

// NewExponential returns an exponential mechanism, or an error naming the
// invalid option.
func NewExponential(o ExponentialOptions) (*Exponential, error) {
	s, err := newSelector("exponential mechanism", o.Epsilon, o.Sensitivity)
	if err != nil {
		return nil, err
	}
	return &Exponential{sel: s, src: o.Source}, nil
}

// Select returns the index of the selected candidate. It returns an error
// for an empty slice or a NaN or infinite score.
func (m *Exponential) Select(scores []float64) (int, error) {
	w, err := m.sel.prepare("exponential mechanism", scores)
	if err != nil {
		return 0, err
	}
	src, b := source(m.src)
	i := m.sel.sampleExponential(src, w, len(scores))
	release(b)
	w.done()
	return i, nil
}

// Cost returns ε-DP with Rho = ε²/8: the exponential mechanism is ε-bounded
// range, hence ε²/8-zCDP (Cesar & Rogers 2021).
func (m *Exponential) Cost() accounting.Cost {
	return accounting.Cost{Epsilon: m.sel.eps, Rho: m.sel.eps * m.sel.eps / 8}
}

// UtilityBound returns t such that the selected score is at least the best
// score minus t except with probability failure:
// (2(Δu + g)/ε)(ln n + ln(1/failure)) + g, the textbook bound
// (2Δu/ε)(ln|O| + ln(1/failure)) with the sensitivity grown by the grid step
// g = Granularity() and one step for rounding. It returns NaN for
// numCandidates < 1 or failure outside (0, 1).
func (m *Exponential) UtilityBound(numCandidates int, failure float64) float64 {
	return m.sel.utilityBound(numCandidates, failure)
}

// Granularity returns the grid step onto which scores are rounded.
func (m *Exponential) Granularity() float64 { return m.sel.grid.Granularity() }

// NoisyMaxNoise names the noise of report-noisy-max.
type NoisyMaxNoise int

const (
	// ExponentialNoise is report-noisy-max with exponential noise, sampled
	// as the equivalent permute-and-flip (McKenna & Sheldon 2020). It is
	// ε-DP and ε²/2-zCDP, and never less accurate than the exponential
	// mechanism.
	ExponentialNoise NoisyMaxNoise = iota
	// GumbelNoise is report-noisy-max with Gumbel noise, which has exactly
	// the distribution of the exponential mechanism; it is sampled with the
	// exact exponential-mechanism sampler. It is ε-DP and ε²/8-zCDP.
	GumbelNoise
)

// String returns "exponential" or "gumbel".
func (n NoisyMaxNoise) String() string {
	switch n {
	case ExponentialNoise:
		return "exponential"
	case GumbelNoise:
		return "gumbel"
	}
	return fmt.Sprintf("NoisyMaxNoise(%d)", int(n))
}

// NoisyMaxOptions configures report-noisy-max.
type NoisyMaxOptions struct {
	// Epsilon is ε > 0.
	Epsilon float64
	// Sensitivity is the sensitivity Δu > 0 of every candidate's score.
	Sensitivity float64
	// Noise chooses exponential noise (permute-and-flip) or Gumbel noise
	// (the exponential mechanism).
	Noise NoisyMaxNoise
	// Source is the random source; nil means the secure pooled source.
	Source random.Source
}

// ReportNoisyMax returns the index of the candidate with the largest noisy
// score, sampled exactly through its equivalent form (see NoisyMaxNoise).
// Methods are safe for concurrent use when Source is nil.
type ReportNoisyMax struct {
	sel   selector
	noise NoisyMaxNoise
	src   random.Source
}

// NewReportNoisyMax returns report-noisy-max, or an error naming the invalid
// option.
func NewReportNoisyMax(o NoisyMaxOptions) (*ReportNoisyMax, error) {
	if o.Noise != ExponentialNoise && o.Noise != GumbelNoise {
		return nil, fmt.Errorf("report noisy max: noise = %d: want ExponentialNoise (0) or GumbelNoise (1)", int(o.Noise))
	}
	s, err := newSelector("report noisy max", o.Epsilon, o.Sensitivity)
	if err != nil {
		return nil, err
	}
	return &ReportNoisyMax{sel: s, noise: o.Noise, src: o.Source}, nil
}

// Select returns the index of the selected candidate. It returns an error
// for an empty slice or a NaN or infinite score.
func (m *ReportNoisyMax) Select(scores []float64) (int, error) {
	w, err := m.sel.prepare("report noisy max", scores)
	if err != nil {
		return 0, err
	}
	src, b := source(m.src)
	var i int
	if m.noise == GumbelNoise {
		i = m.sel.sampleExponential(src, w, len(scores))
	} else {
		i = m.sel.samplePermuteAndFlip(src, w)
	}
	release(b)
	w.done()
	return i, nil
}

// Cost returns Pure(ε) (ρ = ε²/2) for exponential noise, and ε with
// ρ = ε²/8 for Gumbel noise (the exponential mechanism). Permute-and-flip is
// not known to be ε-bounded range, so it is not given ε²/8.
func (m *ReportNoisyMax) Cost() accounting.Cost {
	if m.noise == GumbelNoise {
		return accounting.Cost{Epsilon: m.sel.eps, Rho: m.sel.eps * m.sel.eps / 8}
	}
	return accounting.Pure(m.sel.eps)
}

// UtilityBound returns t such that the selected score is at least the best
// score minus t except with probability failure (the exponential
// mechanism's bound, which permute-and-flip also meets).
func (m *ReportNoisyMax) UtilityBound(numCandidates int, failure float64) float64 {
	return m.sel.utilityBound(numCandidates, failure)
}

// Noise returns the kind of noise.
func (m *ReportNoisyMax) Noise() NoisyMaxNoise { return m.noise }
