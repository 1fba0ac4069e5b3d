package audit

import (
	"math"
	"testing"

	"github.com/dpstat/dpstat/mechanism"
	"github.com/dpstat/dpstat/random"
)

// auditCase audits one mechanism on one pair of neighbouring inputs.
type auditCase struct {
	name  string
	claim float64 // the ε the mechanism claims
	delta float64 // the δ it claims (0 for pure DP)
	// run builds the mechanism with src and audits it with opts.
	run func(t *testing.T, src random.Source, opts Options) Result
}

// must returns v, and stops the test (by panicking, which fails it) if
// err is not nil: the constructors below are given valid options.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func floatRelease(t *testing.T, release func(float64) (float64, error), x float64) Sampler[float64] {
	return func(random.Source) float64 {
		v, err := release(x)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// emScores are the neighbouring score vectors that make the exponential
// mechanism's privacy loss on candidate 0 largest for ten candidates: every
// score moves by Δu = 1, in opposite directions for candidate 0 and the
// others. The true loss for ε = 1 is ln 2.453 ≈ 0.897.
var (
	emScoresD      = []float64{1, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	emScoresDPrime = []float64{0, 1, 1, 1, 1, 1, 1, 1, 1, 1}
)

func selector(t *testing.T, sel func([]float64) (int, error), scores []float64) Sampler[int] {
	return func(random.Source) int {
		i, err := sel(scores)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
}

// firstAbove runs AboveThreshold over a stream of query answers and returns
// the index of the first one reported above the threshold, or len(queries).
func firstAbove(t *testing.T, queries []float64) Sampler[int] {
	return func(src random.Source) int {
		at := must(mechanism.NewAboveThreshold(mechanism.AboveThresholdOptions{
			Epsilon: 1, Sensitivity: 1, Threshold: 2, Source: src,
		}))
		for i, q := range queries {
			above, err := at.Test(q)
			if err != nil {
				t.Fatal(err)
			}
			if above {
				return i
			}
		}
		return len(queries)
	}
}

func correctMechanisms() []auditCase {
	return []auditCase{
		{
			name: "Laplace ε=1 Δ=1, inputs 0 and 1", claim: 1,
			run: func(t *testing.T, src random.Source, opts Options) Result {
				m := must(mechanism.NewLaplace(mechanism.LaplaceOptions{Epsilon: 1, Sensitivity: 1, Source: src}))
				return must(Float(floatRelease(t, m.Release, 0), floatRelease(t, m.Release, 1), opts))
			},
		},
		{
			// Inputs off the grid: rounding to it must not leak.
			name: "Laplace ε=1 Δ=1, inputs 0.1 and 1.0999", claim: 1,
			run: func(t *testing.T, src random.Source, opts Options) Result {
				m := must(mechanism.NewLaplace(mechanism.LaplaceOptions{Epsilon: 1, Sensitivity: 1, Source: src}))
				return must(Float(floatRelease(t, m.Release, 0.1), floatRelease(t, m.Release, 1.0999), opts))
			},
		},
		{
			name: "Laplace ε=4 Δ=0.25, inputs 0 and 0.25", claim: 4,
			run: func(t *testing.T, src random.Source, opts Options) Result {
				m := must(mechanism.NewLaplace(mechanism.LaplaceOptions{Epsilon: 4, Sensitivity: 0.25, Source: src}))
				return must(Float(floatRelease(t, m.Release, 0), floatRelease(t, m.Release, 0.25), opts))
			},
		},
		{
			name: "Geometric ε=1 Δ=1, inputs 0 and 1", claim: 1,
			run: func(t *testing.T, src random.Source, opts Options) Result {
				m := must(mechanism.NewGeometric(mechanism.GeometricOptions{Epsilon: 1, Sensitivity: 1, Source: src}))
				s := func(x int64) Sampler[float64] {
					return func(random.Source) float64 { return float64(m.Release(x)) }
				}
				return must(Float(s(0), s(1), opts))
			},
		},
		{
			name: "Gaussian ε=1 δ=1e-5 Δ₂=1, inputs 0 and 1", claim: 1, delta: 1e-5,
			run: func(t *testing.T, src random.Source, opts Options) Result {
				m := must(mechanism.NewGaussian(mechanism.GaussianOptions{Epsilon: 1, Delta: 1e-5, Sensitivity: 1, Source: src}))
				return must(Float(floatRelease(t, m.Release, 0), floatRelease(t, m.Release, 1), opts))
			},
		},
		{
			name: "BinaryRR ε=1, answers yes and no", claim: 1,
			run: func(t *testing.T, src random.Source, opts Options) Result {
				m := must(mechanism.NewBinaryRR(mechanism.BinaryRROptions{Epsilon: 1, Source: src}))
				s := func(b bool) Sampler[bool] { return func(random.Source) bool { return m.Randomize(b) } }
				return must(Discrete(s(true), s(false), opts))
			},
		},
		{
			name: "BinaryRR p=0.75 (ε=ln 3), answers yes and no", claim: math.Log(3),
			run: func(t *testing.T, src random.Source, opts Options) Result {
				m := must(mechanism.NewBinaryRR(mechanism.BinaryRROptions{P: 0.75, Source: src}))
				s := func(b bool) Sampler[bool] { return func(random.Source) bool { return m.Randomize(b) } }
				return must(Discrete(s(true), s(false), opts))
			},
		},
		{
			name: "KaryRR ε=1 K=4, values 0 and 1", claim: 1,
			run: func(t *testing.T, src random.Source, opts Options) Result {
				m := must(mechanism.NewKaryRR(mechanism.KaryRROptions{Epsilon: 1, K: 4, Source: src}))
				s := func(v int) Sampler[int] {
					return func(random.Source) int { return must(m.Randomize(v)) }
				}
				return must(Discrete(s(0), s(1), opts))
			},
		},
		{
			name: "Exponential ε=1 Δu=1, 10 candidates", claim: 1,
			run: func(t *testing.T, src random.Source, opts Options) Result {
				m := must(mechanism.NewExponential(mechanism.ExponentialOptions{Epsilon: 1, Sensitivity: 1, Source: src}))
				return must(Discrete(selector(t, m.Select, emScoresD), selector(t, m.Select, emScoresDPrime), opts))
			},
		},
		{
			name: "ReportNoisyMax exponential noise ε=1 Δu=1, 10 candidates", claim: 1,
			run: func(t *testing.T, src random.Source, opts Options) Result {
				m := must(mechanism.NewReportNoisyMax(mechanism.NoisyMaxOptions{Epsilon: 1, Sensitivity: 1, Noise: mechanism.ExponentialNoise, Source: src}))
				return must(Discrete(selector(t, m.Select, emScoresD), selector(t, m.Select, emScoresDPrime), opts))
			},
		},
		{
			name: "ReportNoisyMax Gumbel noise ε=1 Δu=1, 10 candidates", claim: 1,
			run: func(t *testing.T, src random.Source, opts Options) Result {
				m := must(mechanism.NewReportNoisyMax(mechanism.NoisyMaxOptions{Epsilon: 1, Sensitivity: 1, Noise: mechanism.GumbelNoise, Source: src}))
				return must(Discrete(selector(t, m.Select, emScoresD), selector(t, m.Select, emScoresDPrime), opts))
			},
		},
		{
			name: "ReportNoisyMax exponential noise ε=1, two candidates", claim: 1,
			run: func(t *testing.T, src random.Source, opts Options) Result {
				m := must(mechanism.NewReportNoisyMax(mechanism.NoisyMaxOptions{Epsilon: 1, Sensitivity: 1, Noise: mechanism.ExponentialNoise, Source: src}))
				return must(Discrete(selector(t, m.Select, []float64{1, 0}), selector(t, m.Select, []float64{0, 1}), opts))
			},
		},
		{
			name: "AboveThreshold ε=1 Δ=1 T=2, streams shifted by 1", claim: 1,
			run: func(t *testing.T, _ random.Source, opts Options) Result {
				opts.Samples = 100000 // a fresh mechanism per sample; fewer samples keep it fast
				return must(Discrete(firstAbove(t, []float64{1, 1, 1, 2, 3}), firstAbove(t, []float64{2, 2, 2, 1, 2}), opts))
			},
		},
	}
}

func TestCorrectMechanismsStayWithinTheirClaims(t *testing.T) {
	// For each mechanism the audit's lower bound exceeds the true ε, which
	// is at most the claim, with probability at most 1e-6 (Clopper–Pearson
	// at confidence 1 − 1e-6, split over both directions and both
	// intervals); over the cases below, at most 1.3e-5 in all.
	for i, tc := range correctMechanisms() {
		t.Run(tc.name, func(t *testing.T) {
			src := random.NewInsecureSeeded(uint64(1000 + i))
			res := tc.run(t, src, Options{Source: src, Delta: tc.delta})
			t.Logf("claimed ε = %.4f: %v", tc.claim, res)
			if res.Refutes(tc.claim) {
				t.Errorf("audit refutes the claim ε = %g: %v", tc.claim, res)
			}
		})
	}
}

func TestBrokenDpstatConfigurationsAreCaught(t *testing.T) {
	// Mechanisms used with parameters other than the ones claimed. Each
	// bound observed clears the claim by a margin of many standard errors
	// (see the logged counts); for a fresh seed, the probability that it
	// does not is below 1e-9 in every case.
	tests := []auditCase{
		{
			// Noise calibrated for ε = 2 (half the noise) while claiming 1.
			name: "Laplace with half the noise", claim: 1,
			run: func(t *testing.T, src random.Source, opts Options) Result {
				m := must(mechanism.NewLaplace(mechanism.LaplaceOptions{Epsilon: 2, Sensitivity: 1, Source: src}))
				return must(Float(floatRelease(t, m.Release, 0), floatRelease(t, m.Release, 1), opts))
			},
		},
		{
			name: "Geometric with half the noise", claim: 1,
			run: func(t *testing.T, src random.Source, opts Options) Result {
				m := must(mechanism.NewGeometric(mechanism.GeometricOptions{Epsilon: 2, Sensitivity: 1, Source: src}))
				s := func(x int64) Sampler[float64] {
					return func(random.Source) float64 { return float64(m.Release(x)) }
				}
				return must(Float(s(0), s(1), opts))
			},
		},
		{
			// p = 0.8 is ε = ln 4 ≈ 1.386, not the claimed 1.
			name: "BinaryRR with p larger than claimed", claim: 1,
			run: func(t *testing.T, src random.Source, opts Options) Result {
				m := must(mechanism.NewBinaryRR(mechanism.BinaryRROptions{P: 0.8, Source: src}))
				s := func(b bool) Sampler[bool] { return func(random.Source) bool { return m.Randomize(b) } }
				return must(Discrete(s(true), s(false), opts))
			},
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := random.NewInsecureSeeded(uint64(2000 + i))
			res := tc.run(t, src, Options{Source: src})
			t.Logf("claimed ε = %.4f: %v", tc.claim, res)
			if !res.Refutes(tc.claim) {
				t.Errorf("audit does not refute the false claim ε = %g: %v", tc.claim, res)
			}
		})
	}
}
