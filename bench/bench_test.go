package bench

import (
	"math"
	"testing"

	"github.com/google/differential-privacy/go/v3/noise"

	"github.com/dpstat/dpstat/mechanism"
	dpnoise "github.com/dpstat/dpstat/noise"
	"github.com/dpstat/dpstat/random"
)

// All benchmarks draw from production randomness: dpstat from a secure
// source borrowed from its pool, Google's library from its own
// crypto/rand-backed source. Every case releases with ε = 1 and
// sensitivity 1 (δ = 1e-5 for the Gaussian ones), so that the scales
// compared are the same.

var sinkF float64
var sinkI int64

func BenchmarkDpstatDiscreteLaplaceSample(b *testing.B) {
	src := random.Borrow()
	defer random.Return(src)
	scale := dpnoise.Scale{Num: 1, Den: 1}
	var s int64
	for i := 0; i < b.N; i++ {
		s += dpnoise.DiscreteLaplace(src, scale)
	}
	sinkI = s
}

// BenchmarkDpstatDiscreteLaplaceSampleLargeScale samples at the scale the
// Laplace mechanism uses for ε = 1, Δ = 1: about 2^20 grid steps.
func BenchmarkDpstatDiscreteLaplaceSampleLargeScale(b *testing.B) {
	src := random.Borrow()
	defer random.Return(src)
	scale := dpnoise.Scale{Num: 1<<20 + 1, Den: 1}
	var s int64
	for i := 0; i < b.N; i++ {
		s += dpnoise.DiscreteLaplace(src, scale)
	}
	sinkI = s
}

func BenchmarkDpstatDiscreteGaussianSample(b *testing.B) {
	src := random.Borrow()
	defer random.Return(src)
	var s int64
	for i := 0; i < b.N; i++ {
		s += dpnoise.DiscreteGaussian(src, 4)
	}
	sinkI = s
}

// BenchmarkDpstatDiscreteGaussianSampleLargeSigma samples at about the σ in
// grid steps that the Gaussian mechanism uses for ε = 1, δ = 1e-5, Δ₂ = 1.
func BenchmarkDpstatDiscreteGaussianSampleLargeSigma(b *testing.B) {
	src := random.Borrow()
	defer random.Return(src)
	var s int64
	for i := 0; i < b.N; i++ {
		s += dpnoise.DiscreteGaussian(src, 3911894)
	}
	sinkI = s
}

func BenchmarkDpstatLaplaceRelease(b *testing.B) {
	src := random.Borrow()
	defer random.Return(src)
	m, err := mechanism.NewLaplace(mechanism.LaplaceOptions{Epsilon: 1, Sensitivity: 1, Source: src})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v, _ := m.Release(100)
		sinkF += v
	}
}

// BenchmarkDpstatLaplaceReleasePooled uses the default source (nil), which
// borrows from the pool on every call, as concurrent callers do.
func BenchmarkDpstatLaplaceReleasePooled(b *testing.B) {
	m, err := mechanism.NewLaplace(mechanism.LaplaceOptions{Epsilon: 1, Sensitivity: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v, _ := m.Release(100)
		sinkF += v
	}
}

func BenchmarkDpstatGeometricRelease(b *testing.B) {
	src := random.Borrow()
	defer random.Return(src)
	m, err := mechanism.NewGeometric(mechanism.GeometricOptions{Epsilon: 1, Sensitivity: 1, Source: src})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sinkI += m.Release(100)
	}
}

func BenchmarkDpstatGaussianRelease(b *testing.B) {
	src := random.Borrow()
	defer random.Return(src)
	m, err := mechanism.NewGaussian(mechanism.GaussianOptions{Epsilon: 1, Delta: 1e-5, Sensitivity: 1, Source: src})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v, _ := m.Release(100)
		sinkF += v
	}
}

func scores1000() []float64 {
	s := make([]float64, 1000)
	for i := range s {
		s[i] = float64((i * 7919) % 1000)
	}
	return s
}

func BenchmarkDpstatExponential1000(b *testing.B) {
	src := random.Borrow()
	defer random.Return(src)
	m, err := mechanism.NewExponential(mechanism.ExponentialOptions{Epsilon: 1, Sensitivity: 1, Source: src})
	if err != nil {
		b.Fatal(err)
	}
	scores := scores1000()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j, _ := m.Select(scores)
		sinkI += int64(j)
	}
}

func BenchmarkDpstatReportNoisyMax1000(b *testing.B) {
	src := random.Borrow()
	defer random.Return(src)
	m, err := mechanism.NewReportNoisyMax(mechanism.NoisyMaxOptions{Epsilon: 1, Sensitivity: 1, Source: src})
	if err != nil {
		b.Fatal(err)
	}
	scores := scores1000()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j, _ := m.Select(scores)
		sinkI += int64(j)
	}
}

func BenchmarkGoogleLaplaceFloat64(b *testing.B) {
	lap := noise.Laplace()
	for i := 0; i < b.N; i++ {
		v, _ := lap.AddNoiseFloat64(100, 1, 1, 1, 0)
		sinkF += v
	}
}

func BenchmarkGoogleLaplaceInt64(b *testing.B) {
	lap := noise.Laplace()
	for i := 0; i < b.N; i++ {
		v, _ := lap.AddNoiseInt64(100, 1, 1, 1, 0)
		sinkI += v
	}
}

func BenchmarkGoogleGaussianFloat64(b *testing.B) {
	g := noise.Gaussian()
	for i := 0; i < b.N; i++ {
		v, _ := g.AddNoiseFloat64(100, 1, 1, 1, 1e-5)
		sinkF += v
	}
}

func BenchmarkGoogleGaussianInt64(b *testing.B) {
	g := noise.Gaussian()
	for i := 0; i < b.N; i++ {
		v, _ := g.AddNoiseInt64(100, 1, 1, 1, 1e-5)
		sinkI += v
	}
}

func TestBothLibrariesReleaseFiniteValues(t *testing.T) {
	lap, err := mechanism.NewLaplace(mechanism.LaplaceOptions{Epsilon: 1, Sensitivity: 1})
	if err != nil {
		t.Fatal(err)
	}
	gau, err := mechanism.NewGaussian(mechanism.GaussianOptions{Epsilon: 1, Delta: 1e-5, Sensitivity: 1})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		release func() (float64, error)
	}{
		{name: "dpstat laplace", release: func() (float64, error) { return lap.Release(100) }},
		{name: "dpstat gaussian", release: func() (float64, error) { return gau.Release(100) }},
		{name: "google laplace", release: func() (float64, error) { return noise.Laplace().AddNoiseFloat64(100, 1, 1, 1, 0) }},
		{name: "google gaussian", release: func() (float64, error) { return noise.Gaussian().AddNoiseFloat64(100, 1, 1, 1, 1e-5) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < 100; i++ {
				v, err := tc.release()
				if err != nil {
					t.Fatal(err)
				}
				// A release of 100 with noise of scale ≈ 1–4 lies in
				// (0, 200) except with probability far below 1e-9.
				if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || v >= 200 {
					t.Fatalf("release %d = %v, want a finite value near 100", i, v)
				}
			}
		})
	}
}
