package mechanism

import (
	"math"
	"testing"

	"github.com/dpstat/dpstat/random"
)

// Mechanism benchmarks, all with the default pooled secure source:
//
//	go test -run '^$' -bench . -benchtime=200ms ./mechanism/

var sinkF float64
var sinkI int

func BenchmarkLaplaceRelease(b *testing.B) {
	m, _ := NewLaplace(LaplaceOptions{Epsilon: 1, Sensitivity: 1})
	for b.Loop() {
		v, _ := m.Release(1234.5)
		sinkF += v
	}
}

func BenchmarkGeometricRelease(b *testing.B) {
	m, _ := NewGeometric(GeometricOptions{Epsilon: 1, Sensitivity: 1})
	for b.Loop() {
		sinkI += int(m.Release(1234))
	}
}

func BenchmarkGaussianRelease(b *testing.B) {
	m, _ := NewGaussian(GaussianOptions{Epsilon: 1, Delta: 1e-5, Sensitivity: 1})
	for b.Loop() {
		v, _ := m.Release(1234.5)
		sinkF += v
	}
}

func BenchmarkNewGaussian(b *testing.B) {
	for b.Loop() {
		m, _ := NewGaussian(GaussianOptions{Epsilon: 1, Delta: 1e-5, Sensitivity: 1})
		sinkF += m.Sigma()
	}
}

func BenchmarkBinaryRR(b *testing.B) {
	m, _ := NewBinaryRR(BinaryRROptions{Epsilon: 1})
	for b.Loop() {
		if m.Randomize(true) {
			sinkI++
		}
	}
}

func BenchmarkKaryRR(b *testing.B) {
	m, _ := NewKaryRR(KaryRROptions{Epsilon: 1, K: 100})
	for b.Loop() {
		v, _ := m.Randomize(7)
		sinkI += v
	}
}

// histogramScores returns 1000 counts shaped like a real histogram: a
// heavy head and a long tail (Zipf-like, 1e5/(i+1)), plus integer jitter.
func histogramScores() []float64 {
	src := random.NewInsecureSeeded(1)
	s := make([]float64, 1000)
	for i := range s {
		s[i] = math.Floor(1e5/float64(i+1)) + float64(src.Uint64()%10)
	}
	return s
}

// flatScores returns 1000 counts close together (uniform in [0, 20)), where
// many candidates have similar weight.
func flatScores() []float64 {
	src := random.NewInsecureSeeded(2)
	s := make([]float64, 1000)
	for i := range s {
		s[i] = float64(src.Uint64() % 20)
	}
	return s
}

// dominantScores returns the worst case of the rejection sampler: one
// candidate far ahead... of candidates that are all just close enough to
// keep (exponent below the cap), so about n proposals are needed.
func dominantScores() []float64 {
	s := make([]float64, 1000)
	for i := range s {
		s[i] = 0
	}
	s[500] = 100
	return s
}

func benchSelect(b *testing.B, sel interface{ Select([]float64) (int, error) }, scores []float64) {
	for b.Loop() {
		i, _ := sel.Select(scores)
		sinkI += i
	}
}

func BenchmarkExponential1000(b *testing.B) {
	m, _ := NewExponential(ExponentialOptions{Epsilon: 1, Sensitivity: 1})
	b.Run("histogram", func(b *testing.B) { benchSelect(b, m, histogramScores()) })
	b.Run("flat", func(b *testing.B) { benchSelect(b, m, flatScores()) })
	b.Run("dominant", func(b *testing.B) { benchSelect(b, m, dominantScores()) })
}

func BenchmarkPermuteAndFlip1000(b *testing.B) {
	m, _ := NewReportNoisyMax(NoisyMaxOptions{Epsilon: 1, Sensitivity: 1})
	b.Run("histogram", func(b *testing.B) { benchSelect(b, m, histogramScores()) })
	b.Run("flat", func(b *testing.B) { benchSelect(b, m, flatScores()) })
	b.Run("dominant", func(b *testing.B) { benchSelect(b, m, dominantScores()) })
}

func BenchmarkAboveThreshold(b *testing.B) {
	m, _ := NewAboveThreshold(AboveThresholdOptions{Epsilon: 1, Sensitivity: 1, Threshold: 1e12})
	for b.Loop() {
		above, _ := m.Test(1234.5)
		if above {
			sinkI++
		}
	}
}
