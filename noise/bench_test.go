package noise

import (
	"testing"

	"github.com/dpstat/dpstat/random"
)

// Benchmarks run each sampler with a dedicated secure source ("secure") and
// with a source borrowed from the pool for each sample, as the mechanisms do
// ("pooled").
//
//	go test -run '^$' -bench . -benchtime=200ms ./noise/

var sink int64

func benchBoth(b *testing.B, f func(random.Source) int64) {
	b.Run("secure", func(b *testing.B) {
		src := random.NewSecure()
		for b.Loop() {
			sink += f(src)
		}
	})
	b.Run("pooled", func(b *testing.B) {
		for b.Loop() {
			s := random.Borrow()
			sink += f(s)
			random.Return(s)
		}
	})
}

func BenchmarkUniformInt(b *testing.B) {
	benchBoth(b, func(s random.Source) int64 { return int64(UniformInt(s, 1000003)) })
}

func BenchmarkBernoulliFloat(b *testing.B) {
	benchBoth(b, func(s random.Source) int64 {
		if BernoulliFloat(s, 0.7310585786300049) {
			return 1
		}
		return 0
	})
}

func BenchmarkBernoulliExp(b *testing.B) {
	for _, c := range []struct {
		name     string
		num, den uint64
	}{{"γ=0.5", 1 << 40, 1 << 41}, {"γ=1", 1, 1}, {"γ=3.7", 37, 10}} {
		b.Run(c.name, func(b *testing.B) {
			benchBoth(b, func(s random.Source) int64 {
				if BernoulliExp(s, c.num, c.den) {
					return 1
				}
				return 0
			})
		})
	}
}

func BenchmarkDiscreteLaplace(b *testing.B) {
	// The scale a Laplace mechanism with ε = 1 uses in grid steps:
	// (2^20 + 1)/ε rounded up.
	s, _ := ScaleAtLeast(1<<20 + 1)
	benchBoth(b, func(src random.Source) int64 { return DiscreteLaplace(src, s) })
}

func BenchmarkDiscreteLaplaceSmallScale(b *testing.B) {
	s := Scale{Num: 3, Den: 2}
	benchBoth(b, func(src random.Source) int64 { return DiscreteLaplace(src, s) })
}

func BenchmarkDiscreteGaussian(b *testing.B) {
	// σ of a Gaussian mechanism in grid steps, between 2^20 and 2^21.
	const sigma = 3911837
	benchBoth(b, func(src random.Source) int64 { return DiscreteGaussian(src, sigma) })
}

func BenchmarkDiscreteGaussianSmallSigma(b *testing.B) {
	benchBoth(b, func(src random.Source) int64 { return DiscreteGaussian(src, 3) })
}

func BenchmarkGridAddNoise(b *testing.B) {
	g := Grid{Exp: -20}
	x := 12345.678
	for b.Loop() {
		x = g.AddNoise(x, 3) - 3*0x1p-20
	}
}
