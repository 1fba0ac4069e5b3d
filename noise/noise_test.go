package noise

import (
	"math"
	"math/big"
	"testing"

	"github.com/dpstat/dpstat/internal/stattest"
	"github.com/dpstat/dpstat/random"
)

// falseFailure is the per-check false-failure probability used by the
// statistical tests below. Each test states how many checks it makes; with
// fixed seeds the outcome is deterministic anyway, and this is the
// probability that a correct sampler would have failed for a random seed.
const falseFailure = 1e-8

// longFactor multiplies the statistical tests' sample sizes (20 with
// DPSTAT_LONG=1); zLimit is the two-sided normal quantile for falseFailure.
var (
	longFactor = stattest.LongFactor()
	zLimit     = stattest.ZLimit(falseFailure)
)

// chiSquareCheck is stattest.ChiSquare at this file's falseFailure.
func chiSquareCheck(t *testing.T, name string, observed []int, probs []float64, n int) {
	t.Helper()
	stattest.ChiSquare(t, name, observed, probs, n, falseFailure)
}

// binomialCheck fails if hits out of n is more than zLimit standard
// deviations from n·p (normal approximation; n·p(1−p) ≥ 50 in every use).
func binomialCheck(t *testing.T, name string, hits, n int, p float64) {
	t.Helper()
	mean := float64(n) * p
	sd := math.Sqrt(float64(n) * p * (1 - p))
	if sd == 0 {
		if float64(hits) != mean {
			t.Errorf("%s: %d hits of %d, want exactly %v", name, hits, n, mean)
		}
		return
	}
	if z := (float64(hits) - mean) / sd; math.Abs(z) > zLimit {
		t.Errorf("%s: %d hits of %d, want about %.1f (z = %.2f, limit %.2f)", name, hits, n, mean, z, zLimit)
	}
}

// scripted is a Source that returns fixed words, then zeros.
type scripted struct {
	words []uint64
	i     int
}

func (s *scripted) Uint64() uint64 {
	if s.i >= len(s.words) {
		return 0
	}
	w := s.words[s.i]
	s.i++
	return w
}

// TestUniformIntUniform: one chi-square check per case (8 cases), false
// failure below 8e-8 in total.
func TestUniformIntUniform(t *testing.T) {
	draws := 60000 * longFactor
	cases := []struct {
		name    string
		n       uint64
		buckets uint64
		bucket  func(v uint64) uint64
	}{
		{"n=2", 2, 2, nil},
		{"n=3", 3, 3, nil},
		{"n=7", 7, 7, nil},
		{"n=10", 10, 10, nil},
		{"n=1000 by hundreds", 1000, 10, func(v uint64) uint64 { return v / 100 }},
		{"n=3·2^62 by thirds", 3 << 62, 3, func(v uint64) uint64 { return v >> 62 }},
		{"n=2^63+1 low bit", 1<<63 + 1, 2, func(v uint64) uint64 { return v & 1 }},
		{"n=5·2^60 by fifths", 5 << 60, 5, func(v uint64) uint64 { return v >> 60 }},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := random.NewInsecureSeeded(uint64(100 + i))
			obs := make([]int, c.buckets)
			for j := 0; j < draws; j++ {
				v := UniformInt(src, c.n)
				if v >= c.n {
					t.Fatalf("UniformInt(%d) = %d, out of range", c.n, v)
				}
				b := v
				if c.bucket != nil {
					b = c.bucket(v)
				}
				obs[b]++
			}
			probs := make([]float64, c.buckets)
			for j := range probs {
				probs[j] = 1 / float64(c.buckets)
			}
			if c.name == "n=2^63+1 low bit" {
				// Values 0..2^63 contain 2^62+1 even and 2^62 odd ones.
				probs[0], probs[1] = 0.5, 0.5
			}
			chiSquareCheck(t, c.name, obs, probs, draws)
		})
	}
}

func TestUniformIntDegenerate(t *testing.T) {
	src := random.NewInsecureSeeded(1)
	for _, n := range []uint64{0, 1} {
		for i := 0; i < 10; i++ {
			if v := UniformInt(src, n); v != 0 {
				t.Fatalf("UniformInt(%d) = %d, want 0", n, v)
			}
		}
	}
	// A source that always lands in the rejection zone reaches the cap and
	// returns 0 instead of looping for ever.
	if v := UniformInt(&scripted{}, 3); v != 0 {
		t.Fatalf("UniformInt with a stuck source = %d, want 0", v)
	}
}

// TestBernoulli: one binomial check per random case (7), false failure
// below 7e-8.
func TestBernoulli(t *testing.T) {
	draws := 100000 * longFactor
	cases := []struct {
		name     string
		num, den uint64
	}{
		{"0/1", 0, 1},
		{"1/1", 1, 1},
		{"5/3", 5, 3},
		{"den 0", 1, 0},
		{"1/2", 1, 2},
		{"1/3", 1, 3},
		{"2/7", 2, 7},
		{"999/1000", 999, 1000},
		{"2^62/(3·2^62)", 1 << 62, 3 << 62},
		{"(2^64−2)/(2^64−1)", math.MaxUint64 - 1, math.MaxUint64},
		{"1/100", 1, 100},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := random.NewInsecureSeeded(uint64(200 + i))
			hits := 0
			for j := 0; j < draws; j++ {
				if Bernoulli(src, c.num, c.den) {
					hits++
				}
			}
			p := 0.0
			switch {
			case c.den == 0:
				p = 0
			case c.num >= c.den:
				p = 1
			default:
				p, _ = new(big.Rat).SetFrac(new(big.Int).SetUint64(c.num), new(big.Int).SetUint64(c.den)).Float64()
			}
			binomialCheck(t, c.name, hits, draws, p)
		})
	}
}

// TestBernoulliFloat: one binomial check per random case (8), false failure
// below 8e-8.
func TestBernoulliFloat(t *testing.T) {
	draws := 100000 * longFactor
	cases := []struct {
		name string
		p    float64
	}{
		{"0", 0}, {"negative", -0.5}, {"NaN", math.NaN()}, {"1", 1}, {"2", 2},
		{"1/2", 0.5}, {"1/4", 0.25}, {"0.1", 0.1}, {"1/3", 1.0 / 3}, {"0.999", 0.999},
		{"0.001", 0.001}, {"0.7311", 0.7310585786300049}, {"2^-70", 0x1p-70},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := random.NewInsecureSeeded(uint64(300 + i))
			hits := 0
			for j := 0; j < draws; j++ {
				if BernoulliFloat(src, c.p) {
					hits++
				}
			}
			p := c.p
			if !(p > 0) {
				p = 0
			}
			if p > 1 {
				p = 1
			}
			if p < 1e-10 {
				// Expected hits 1e5·2^-70: any hit would be a failure of
				// probability below 1e-16.
				if hits != 0 {
					t.Errorf("p = %v: %d hits", c.p, hits)
				}
				return
			}
			binomialCheck(t, c.name, hits, draws, p)
		})
	}
}

// TestBernoulliFloatExactComparison drives BernoulliFloat with chosen words
// to check that it compares the uniform expansion with p's bits exactly.
func TestBernoulliFloatExactComparison(t *testing.T) {
	cases := []struct {
		name  string
		p     float64
		words []uint64
		want  bool
	}{
		{"3/4, just below", 0.75, []uint64{0xBFFFFFFFFFFFFFFF}, true},
		{"3/4, equal prefix then stop", 0.75, []uint64{0xC000000000000000}, false},
		{"3/4, above", 0.75, []uint64{0xC000000000000001}, false},
		{"1/2+2^-53, equal first word", 0.5 + 0x1p-53, []uint64{0x8000000000000800}, false},
		{"1/2+2^-53, below", 0.5 + 0x1p-53, []uint64{0x80000000000007FF}, true},
		{"2^-64, first word 0", 0x1p-64, []uint64{0}, true},
		{"2^-64, first word 1", 0x1p-64, []uint64{1}, false},
		{"2^-65, first word 0 then below", 0x1p-65, []uint64{0, 0x7FFFFFFFFFFFFFFF}, true},
		{"2^-65, first word 1", 0x1p-65, []uint64{1}, false},
		{"2^-65, equal", 0x1p-65, []uint64{0, 0x8000000000000000}, false},
		{"smallest subnormal, all zero", 5e-324, nil, true},
		{"smallest subnormal, last word 1<<14", 5e-324, append(make([]uint64, 16), 1<<14), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := BernoulliFloat(&scripted{words: c.words}, c.p); got != c.want {
				t.Errorf("BernoulliFloat(%v) = %v, want %v", c.p, got, c.want)
			}
		})
	}
}

// TestBernoulliExp: one binomial check per case (12), false failure below
// 1.2e-7.
func TestBernoulliExp(t *testing.T) {
	draws := 100000 * longFactor
	cases := []struct {
		name     string
		num, den uint64
	}{
		{"γ=0", 0, 1},
		{"γ=0 big den", 0, 1 << 62},
		{"γ=1/3", 1, 3},
		{"γ=1/2", 1, 2},
		{"γ=0.9", 9, 10},
		{"γ=1", 1, 1},
		{"γ=1 big den", 1 << 62, 1 << 62},
		{"γ=3/2", 3, 2},
		{"γ=2", 2, 1},
		{"γ=7/3", 7, 3},
		{"γ=5", 5, 1},
		{"γ=(2^64−1)/(2^63)", math.MaxUint64, 1 << 63},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := random.NewInsecureSeeded(uint64(400 + i))
			hits := 0
			for j := 0; j < draws; j++ {
				if BernoulliExp(src, c.num, c.den) {
					hits++
				}
			}
			g, _ := new(big.Rat).SetFrac(new(big.Int).SetUint64(c.num), new(big.Int).SetUint64(c.den)).Float64()
			binomialCheck(t, c.name, hits, draws, math.Exp(-g))
		})
	}
}

func TestBernoulliExpExtremes(t *testing.T) {
	src := random.NewInsecureSeeded(5)
	// γ = 2^63: e^-γ is 0 to any precision; the integer loop stops at the
	// first failure, so this is quick.
	for i := 0; i < 1000; i++ {
		if BernoulliExp(src, 1<<63, 1) {
			t.Fatal("BernoulliExp(2^63) returned true")
		}
		if BernoulliExp(src, 1, 0) {
			t.Fatal("BernoulliExp(den = 0) returned true")
		}
		if BernoulliExpSplit(src, 300, 0, 1) {
			t.Fatal("BernoulliExpSplit(300) returned true")
		}
	}
	if !ExpNeverTrue(257) || ExpNeverTrue(256) {
		t.Fatal("ExpNeverTrue must be true exactly above the cap 256")
	}
	// A source stuck at zero makes every Bernoulli trial succeed: the K
	// loop hits its cap and returns false.
	if BernoulliExp(&scripted{}, 1, 2) {
		t.Fatal("capped BernoulliExp with a stuck source must return false")
	}
	// The integer part compares uniform words with floor(e^-q·2^192): a
	// tie of all three words is a cut-off (false); one unit below is true.
	w := expTable[3]
	if BernoulliExpSplit(&scripted{words: w[:]}, 3, 0, 1) {
		t.Fatal("a tie with e^-3's 192 bits must answer false")
	}
	if !BernoulliExpSplit(&scripted{words: []uint64{w[0], w[1], w[2] - 1}}, 3, 0, 1) {
		t.Fatal("a uniform fraction just below e^-3's bits must answer true")
	}
	if BernoulliExpSplit(&scripted{words: []uint64{w[0] + 1}}, 3, 0, 1) {
		t.Fatal("a uniform fraction above e^-3 must answer false")
	}
}

// TestBernoulliExpSplitMatches: a binomial check for exp(−(2 + 1/4)),
// false failure below 1e-8.
func TestBernoulliExpSplitMatches(t *testing.T) {
	src := random.NewInsecureSeeded(6)
	draws := 100000 * longFactor
	hits := 0
	for i := 0; i < draws; i++ {
		if BernoulliExpSplit(src, 2, 1, 4) {
			hits++
		}
	}
	binomialCheck(t, "split 2+1/4", hits, draws, math.Exp(-2.25))
}

// dlapPMF returns P(k) = (1−p)/(1+p)·p^|k|, p = e^(−1/scale).
func dlapPMF(scale float64, k int64) float64 {
	p := math.Exp(-1 / scale)
	return (1 - p) / (1 + p) * math.Pow(p, math.Abs(float64(k)))
}

// TestDiscreteLaplacePMF: one chi-square check per scale (5), false failure
// below 5e-8. Cells are k = −K..K with both tails lumped.
func TestDiscreteLaplacePMF(t *testing.T) {
	draws := 100000 * longFactor
	cases := []struct {
		name  string
		scale Scale
	}{
		{"1", Scale{1, 1}},
		{"5/2", Scale{5, 2}},
		{"1/3", Scale{1, 3}},
		{"10", Scale{10, 1}},
		{"7.5 as 2^40 fraction", Scale{15 << 39, 1 << 40}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := random.NewInsecureSeeded(uint64(500 + i))
			b := c.scale.Float()
			// K: the largest k with expected count ≥ 5 in the cell.
			var K int64
			for float64(draws)*dlapPMF(b, K+1) >= 5 {
				K++
			}
			obs := make([]int, 2*K+3) // [−∞,−K−1], −K..K, [K+1, ∞]
			for j := 0; j < draws; j++ {
				k := DiscreteLaplace(src, c.scale)
				switch {
				case k < -K:
					obs[0]++
				case k > K:
					obs[2*K+2]++
				default:
					obs[k+K+1]++
				}
			}
			probs := make([]float64, len(obs))
			p := math.Exp(-1 / b)
			tail := p * math.Pow(p, float64(K)) / (1 + p) // P(Z > K) = p^(K+1)/(1+p)
			probs[0], probs[2*K+2] = tail, tail
			for k := -K; k <= K; k++ {
				probs[k+K+1] = dlapPMF(b, k)
			}
			if tail*float64(draws) < 5 {
				// Merge the tails into the outermost cells.
				probs[1] += probs[0]
				probs[2*K+1] += probs[2*K+2]
				obs[1] += obs[0]
				obs[2*K+1] += obs[2*K+2]
				probs, obs = probs[1:2*K+2], obs[1:2*K+2]
			}
			chiSquareCheck(t, c.name, obs, probs, draws)
		})
	}
}

// TestDiscreteLaplaceVariance: the variance 2p/(1−p)² for a large scale,
// checked to 6 standard errors of the sample variance (the fourth moment of
// a Laplace is 24b⁴, so the standard error is sqrt(20/n)·b² roughly);
// false failure below 1e-8 (Chebyshev-free: the normal approximation holds
// at n = 200000).
func TestDiscreteLaplaceVariance(t *testing.T) {
	src := random.NewInsecureSeeded(7)
	s, _ := ScaleAtLeast(2097153.25)
	b := s.Float()
	n := 200000 * longFactor
	var sum2 float64
	for i := 0; i < n; i++ {
		k := float64(DiscreteLaplace(src, s))
		sum2 += k * k
	}
	v := sum2 / float64(n)
	p := math.Exp(-1 / b)
	want := 2 * p / ((1 - p) * (1 - p))
	se := math.Sqrt(20/float64(n)) * b * b
	if math.Abs(v-want) > 6*se {
		t.Errorf("variance %v, want %v ± %v", v, want, 6*se)
	}
}

// TestExpTable compares the 192-bit table of e^-q with math.Exp.
func TestExpTable(t *testing.T) {
	for q := 1; q <= expIntSteps; q++ {
		w := expTable[q]
		v := math.Ldexp(float64(w[0]), -64) + math.Ldexp(float64(w[1]), -128) + math.Ldexp(float64(w[2]), -192)
		want := math.Exp(-float64(q))
		if math.Abs(v-want) > math.Max(1e-15*want, 0x1p-190) {
			t.Errorf("e^-%d: table %v, want %v", q, v, want)
		}
		if q > 133 && (w[0]|w[1]|w[2]) != 0 {
			t.Errorf("e^-%d < 2^-192 but the table is nonzero", q)
		}
	}
}

func TestDiscreteLaplaceDegenerate(t *testing.T) {
	src := random.NewInsecureSeeded(8)
	for _, s := range []Scale{{0, 1}, {1, 0}, {0, 0}} {
		if k := DiscreteLaplace(src, s); k != 0 {
			t.Errorf("DiscreteLaplace(%v) = %d, want 0", s, k)
		}
	}
	// Tiny scale: 2^-62 gives 0 except with probability ~2e^(-2^62).
	for i := 0; i < 1000; i++ {
		if k := DiscreteLaplace(src, Scale{1, 1 << 62}); k != 0 {
			t.Fatalf("scale 2^-62 gave %d", k)
		}
	}
	// Huge scale and numerator: no overflow, values stay in range.
	for i := 0; i < 1000; i++ {
		DiscreteLaplace(src, Scale{math.MaxUint64, 1})
		DiscreteLaplace(src, Scale{MaxScale, 1})
	}
	// A stuck source hits the caps and returns 0.
	if k := DiscreteLaplace(&scripted{}, Scale{3, 1}); k != 0 {
		t.Errorf("stuck source gave %d, want 0", k)
	}
}

// dgPMF returns the discrete Gaussian pmf for σ, normalised over |k| ≤ 40σ.
func dgPMF(sigma float64) func(int64) float64 {
	var z float64
	lim := int64(40 * sigma)
	for k := -lim; k <= lim; k++ {
		z += math.Exp(-float64(k*k) / (2 * sigma * sigma))
	}
	return func(k int64) float64 { return math.Exp(-float64(k*k)/(2*sigma*sigma)) / z }
}

// TestDiscreteGaussianPMF: one chi-square check per σ (4), false failure
// below 4e-8.
func TestDiscreteGaussianPMF(t *testing.T) {
	draws := 100000 * longFactor
	for i, sigma := range []int64{1, 2, 3, 7} {
		src := random.NewInsecureSeeded(uint64(600 + i))
		pmf := dgPMF(float64(sigma))
		var K int64
		for float64(draws)*pmf(K+1) >= 5 {
			K++
		}
		obs := make([]int, 2*K+1)
		probs := make([]float64, 2*K+1)
		for k := -K; k <= K; k++ {
			probs[k+K] = pmf(k)
		}
		// Lump the tails into the outermost cells.
		var tail float64
		for k := K + 1; k <= 40*sigma; k++ {
			tail += pmf(k)
		}
		probs[0] += tail
		probs[2*K] += tail
		for j := 0; j < draws; j++ {
			k := DiscreteGaussian(src, sigma)
			if k < -K {
				k = -K
			}
			if k > K {
				k = K
			}
			obs[k+K]++
		}
		chiSquareCheck(t, "σ="+string(rune('0'+sigma)), obs, probs, draws)
	}
}

// TestDiscreteGaussianVariance: the variance of N_Z(0, σ²) is σ² to within
// e^(−2π²σ²)-relative for σ ≥ 1; the sample variance of n = 40000 draws has
// relative standard error sqrt(2/n) ≈ 0.71%, and the test allows 6 of them:
// false failure below 1e-8 per σ, 3 σ's.
func TestDiscreteGaussianVariance(t *testing.T) {
	n := 40000 * longFactor
	for i, sigma := range []int64{100, 1 << 20, MaxSigma} {
		src := random.NewInsecureSeeded(uint64(700 + i))
		var sum2 float64
		for j := 0; j < n; j++ {
			k := float64(DiscreteGaussian(src, sigma))
			sum2 += k * k
		}
		v := sum2 / float64(n) / (float64(sigma) * float64(sigma))
		if math.Abs(v-1) > 6*math.Sqrt(2/float64(n)) {
			t.Errorf("σ = %d: variance/σ² = %v, want 1 ± %v", sigma, v, 6*math.Sqrt(2/float64(n)))
		}
	}
}

// TestDiscreteGaussianAcceptance checks, by exact summation, the bound
// behind gaussianRounds: a round of DiscreteGaussian accepts with
// probability above 1/2 for every σ in a range of small and large values.
func TestDiscreteGaussianAcceptance(t *testing.T) {
	for _, sigma := range []float64{1, 2, 3, 5, 10, 30, 100, 1000, 1 << 15} {
		p := math.Exp(-1 / sigma)
		norm := (1 - p) / (1 + p)
		var acc float64
		for y := 0.0; y <= 60*sigma; y++ {
			w := norm * math.Pow(p, y)
			if y > 0 {
				w *= 2
			}
			d := y - sigma
			acc += w * math.Exp(-d*d/(2*sigma*sigma))
		}
		// DiscreteLaplace's own rounds are separate; here acceptance is the
		// Gaussian step alone.
		if acc <= 0.5 {
			t.Errorf("σ = %v: acceptance %v, want > 1/2", sigma, acc)
		}
	}
}

func TestDiscreteGaussianDegenerate(t *testing.T) {
	src := random.NewInsecureSeeded(9)
	for _, s := range []int64{0, -1, math.MinInt64} {
		if k := DiscreteGaussian(src, s); k != 0 {
			t.Errorf("DiscreteGaussian(%d) = %d, want 0", s, k)
		}
	}
	// σ above MaxSigma is treated as MaxSigma: no overflow.
	for i := 0; i < 100; i++ {
		DiscreteGaussian(src, math.MaxInt64)
	}
}

func TestScaleAtLeast(t *testing.T) {
	cases := []struct {
		name    string
		x       float64
		wantErr bool
	}{
		{"1", 1, false},
		{"0.1", 0.1, false},
		{"1/3", 1.0 / 3, false},
		{"2^21+2", 2097154, false},
		{"1e-20", 1e-20, false},
		{"smallest subnormal", 5e-324, false},
		{"2^40+0.5", 1<<40 + 0.5, false},
		{"2^52", MaxScale, false},
		{"pi·1e9", math.Pi * 1e9, false},
		{"zero", 0, true},
		{"negative", -1, true},
		{"NaN", math.NaN(), true},
		{"+Inf", math.Inf(1), true},
		{"above MaxScale", MaxScale * 2, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := ScaleAtLeast(c.x)
			if c.wantErr {
				if err == nil {
					t.Fatalf("ScaleAtLeast(%v) = %v, want an error", c.x, s)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Den == 0 || s.Den&(s.Den-1) != 0 || s.Den > 1<<62 || s.Num == 0 || s.Num > MaxScale {
				t.Fatalf("ScaleAtLeast(%v) = %v: want Den a power of two ≤ 2^62, 1 ≤ Num ≤ 2^52", c.x, s)
			}
			got := new(big.Rat).SetFrac(new(big.Int).SetUint64(s.Num), new(big.Int).SetUint64(s.Den))
			x := new(big.Rat).SetFloat64(c.x)
			if got.Cmp(x) < 0 {
				t.Fatalf("ScaleAtLeast(%v) = %v < x", c.x, s)
			}
			if c.x >= 0x1p-21 {
				rel, _ := new(big.Rat).Quo(new(big.Rat).Sub(got, x), x).Float64()
				if rel > 0x1p-39 {
					t.Errorf("ScaleAtLeast(%v) = %v: relative rounding %v, want ≤ 2^-39", c.x, s, rel)
				}
			}
		})
	}
	if s, _ := ScaleAtLeast(1e-20); s != (Scale{1, 1 << 62}) {
		t.Errorf("ScaleAtLeast(1e-20) = %v, want 1/2^62", s)
	}
}

func TestGridAddNoise(t *testing.T) {
	big62 := float64(1 << 62)
	cases := []struct {
		name string
		exp  int
		x    float64
		k    int64
		want float64
	}{
		{"quarter steps", -2, 1.3, 3, 2},
		{"negative", -2, -1.3, -1, -1.5},
		{"half rounds away from zero", -2, 0.125, 0, 0.25},
		{"negative half", -2, -0.125, 0, -0.25},
		{"zero", -20, 0, 0, 0},
		{"zero plus noise", -20, 0, 5, 5 * 0x1p-20},
		{"coarse grid", 30, 3e10, 1, 29 * 0x1p30},
		{"tiny x on coarse grid", 30, 1e-300, -2, -2 * 0x1p30},
		{"exact big value", -20, 1e300, 0, 1e300},
		{"big value, noise lost in rounding", -20, 1e300, 1, 1e300},
		{"big negative", -20, -1e300, -7, -1e300},
		{"2^62 steps plus MaxInt64", 0, big62, math.MaxInt64, big62 + float64(math.MaxInt64)},
		{"near MaxFloat64 saturates", 0, math.MaxFloat64, math.MaxInt64, math.MaxFloat64},
		// 3·2^62 − 1025 exactly, whose nearest float64 is 3·2^62 − 2048.
		{"overflowing int64 sum", 0, big62 - 1024, math.MaxInt64, float64(uint64(3<<62 - 2048))},
		{"subnormal grid", -1074, 5e-324, 1, 1e-323},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := Grid{Exp: c.exp}
			got := g.AddNoise(c.x, c.k)
			if got != c.want {
				t.Errorf("Grid{%d}.AddNoise(%v, %d) = %v, want %v", c.exp, c.x, c.k, got, c.want)
			}
		})
	}
}

// TestGridRoundExact compares Round with big.Float arithmetic and checks
// that AddNoise lands on multiples of the grid.
func TestGridRoundExact(t *testing.T) {
	src := random.NewInsecureSeeded(10)
	for i := 0; i < 2000; i++ {
		x := math.Float64frombits(src.Uint64())
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		exp := int(int64(src.Uint64()%2000) - 1000)
		g := Grid{Exp: exp}
		r, err := g.Round(x)
		if err != nil {
			t.Fatal(err)
		}
		// Exact x/g as a big.Float, then round half away from zero.
		q := new(big.Float).SetPrec(2000).SetFloat64(x)
		q.SetMantExp(q, -exp)
		abs := new(big.Float).SetPrec(2000).Abs(q)
		abs.Add(abs, big.NewFloat(0.5))
		want, _ := abs.Int(nil)
		if q.Sign() < 0 {
			want.Neg(want)
		}
		if r.Cmp(want) != 0 {
			t.Fatalf("Grid{%d}.Round(%v) = %v, want %v", exp, x, r, want)
		}
		k := int64(src.Uint64()>>2) - 1<<61
		out := g.AddNoise(x, k)
		if out == 0 || math.Abs(out) == math.MaxFloat64 {
			continue
		}
		// out / g must be an integer (when out/g is representable).
		frac, e := math.Frexp(out)
		if e-exp >= 53 {
			continue // an integer multiple automatically
		}
		steps := math.Ldexp(frac, e-exp)
		if steps != math.Trunc(steps) {
			t.Fatalf("AddNoise(%v, %d) on grid 2^%d = %v, not a multiple of the grid", x, k, exp, out)
		}
	}
}

func TestGridRoundErrors(t *testing.T) {
	g := Grid{Exp: -10}
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := g.Round(x); err == nil {
			t.Errorf("Round(%v): want an error", x)
		}
		if _, ok := g.RoundInt64(x); ok {
			t.Errorf("RoundInt64(%v): want false", x)
		}
		if got := g.AddNoise(x, 1); !(math.IsNaN(got) && math.IsNaN(x)) && got != x {
			t.Errorf("AddNoise(%v) = %v, want it unchanged", x, got)
		}
	}
	if g := (Grid{Exp: -3}).Granularity(); g != 0.125 {
		t.Errorf("Granularity = %v, want 0.125", g)
	}
}

// TestDiscreteLaplaceLargeScaleShape checks the whole distribution at the
// scale the Laplace mechanism uses (about 2^20 steps, a rational scale with
// a power-of-two denominator): 100000 draws binned at multiples of b/2
// over ±4b, tails lumped, against the exact CDF P(Z ≤ k) = 1 −
// p^(k+1)/(1+p) for k ≥ 0 and p^(−k)/(1+p) for k < 0. One chi-square
// check: false failure below 1e-8.
func TestDiscreteLaplaceLargeScaleShape(t *testing.T) {
	src := random.NewInsecureSeeded(11)
	s, _ := ScaleAtLeast(1048577.3)
	b := s.Float()
	p := math.Exp(-1 / b)
	cdf := func(k float64) float64 { // P(Z ≤ k), k integer
		if k >= 0 {
			return 1 - math.Pow(p, k+1)/(1+p)
		}
		return math.Pow(p, -k) / (1 + p)
	}
	var edges []float64 // bin i is (edges[i-1], edges[i]]
	for j := -8; j <= 8; j++ {
		edges = append(edges, math.Floor(float64(j)*b/2))
	}
	stattest.Binned(t, "discrete Laplace, scale 2^20", cdf, edges, 100000*longFactor,
		func() float64 { return float64(DiscreteLaplace(src, s)) }, falseFailure)
}

// dgTailEM returns P(Z ≥ m), m ≥ 1, for the discrete Gaussian with a large σ,
// by the Euler–Maclaurin formula (remainder negligible for σ ≥ 1000).
func dgTailEM(sigma, m float64) float64 {
	f := math.Exp(-m * m / (2 * sigma * sigma))
	integral := sigma * math.Sqrt(math.Pi/2) * math.Erfc(m/(sigma*math.Sqrt2))
	return (integral + f/2 + m/(sigma*sigma)*f/12) / (sigma * math.Sqrt(2*math.Pi))
}

// TestDiscreteGaussianLargeSigmaShape checks the whole distribution at the
// σ the Gaussian mechanism uses (2^20 to 2^21 steps): 100000 draws binned at
// multiples of σ/2 over ±3.5σ, tails lumped. One chi-square check: false
// failure below 1e-8.
func TestDiscreteGaussianLargeSigmaShape(t *testing.T) {
	src := random.NewInsecureSeeded(12)
	const sigma = 1572869
	cdf := func(k float64) float64 { // P(Z ≤ k)
		if k >= 0 {
			return 1 - dgTailEM(sigma, k+1)
		}
		return dgTailEM(sigma, -k)
	}
	var edges []float64
	for j := -7; j <= 7; j++ {
		edges = append(edges, math.Floor(float64(j)*sigma/2))
	}
	stattest.Binned(t, "discrete Gaussian, σ ≈ 1.5·2^20", cdf, edges, 100000*longFactor,
		func() float64 { return float64(DiscreteGaussian(src, sigma)) }, falseFailure)
}

// TestGeometricE1: P(V = v) = (1 − e^-1)e^-v, chi-square over v = 0..7 and
// v ≥ 8 with 100000 draws (one check, false failure below 1e-8); a source
// stuck at zero gives U = 0 < e^-v for every v, a cut-off; a fraction equal
// to a table entry is a tie, a cut-off.
func TestGeometricE1(t *testing.T) {
	src := random.NewInsecureSeeded(13)
	n := 100000 * longFactor
	obs := make([]int, 9)
	for i := 0; i < n; i++ {
		v, ok := geometricE1(src)
		if !ok {
			t.Fatal("unexpected cut-off")
		}
		if v > 8 {
			v = 8
		}
		obs[v]++
	}
	probs := make([]float64, 9)
	for v := 0; v < 8; v++ {
		probs[v] = (1 - math.Exp(-1)) * math.Exp(-float64(v))
	}
	probs[8] = math.Exp(-8)
	chiSquareCheck(t, "geometric e^-1", obs, probs, n)
	if _, ok := geometricE1(&scripted{}); ok {
		t.Error("U = 0 must be a cut-off (V ≥ 256)")
	}
	w := expTable[5]
	if _, ok := geometricE1(&scripted{words: w[:]}); ok {
		t.Error("U equal to the e^-5 entry must be a cut-off")
	}
	if v, ok := geometricE1(&scripted{words: []uint64{w[0], w[1], w[2] - 1}}); !ok || v != 5 {
		t.Errorf("U just below e^-5: V = %d, %v; want 5", v, ok)
	}
	if v, ok := geometricE1(&scripted{words: []uint64{w[0], w[1], w[2] + 1}}); !ok || v != 4 {
		t.Errorf("U just above e^-5: V = %d, %v; want 4", v, ok)
	}
}

// TestSampleExpWeighted: chi-square of the selection frequencies against
// exact probabilities ∝ exp(−(Whole + Frac/den)) for mixed levels and
// fractions (one check per case, three cases: false failure below 3e-8).
func TestSampleExpWeighted(t *testing.T) {
	const den = 1 << 40
	cases := []struct {
		name string
		w    []ExpWeight
	}{
		{"fractions only", []ExpWeight{{0, 0}, {0, den / 2}, {0, den - 1}, {0, den / 3}}},
		{"levels", []ExpWeight{{1, 0}, {0, 0}, {2, den / 4}, {1, den / 2}, {3, 0}, {0, den / 8}}},
		{"dominant with far tail", append([]ExpWeight{{0, 0}, {1, 0}}, func() []ExpWeight {
			var w []ExpWeight
			for i := 0; i < 60; i++ {
				w = append(w, ExpWeight{Whole: uint32(20 + 3*i), Frac: uint64(i) * 1234567})
			}
			return w
		}()...)},
	}
	draws := 100000 * longFactor
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := random.NewInsecureSeeded(uint64(1400 + ci))
			probs := make([]float64, len(c.w))
			var z float64
			for i, w := range c.w {
				probs[i] = math.Exp(-(float64(w.Whole) + float64(w.Frac)/den))
				z += probs[i]
			}
			obs := make([]int, len(c.w))
			for j := 0; j < draws; j++ {
				i, ok := SampleExpWeighted(src, c.w, den)
				if !ok {
					t.Fatal("unexpected cut-off")
				}
				obs[i]++
			}
			// Merge cells with tiny expected counts into one.
			var mObs []int
			var mProbs []float64
			var restObs int
			var restP float64
			for i := range obs {
				p := probs[i] / z
				if p*float64(draws) >= 5 {
					mObs = append(mObs, obs[i])
					mProbs = append(mProbs, p)
				} else {
					restObs += obs[i]
					restP += p
				}
			}
			if restP*float64(draws) >= 5 {
				mObs = append(mObs, restObs)
				mProbs = append(mProbs, restP)
			} else if restObs > 5 {
				t.Errorf("%d draws in cells of total probability %v", restObs, restP)
			} else {
				mProbs[len(mProbs)-1] += restP
				mObs[len(mObs)-1] += restObs
			}
			chiSquareCheck(t, c.name, mObs, mProbs, draws)
		})
	}
	if _, ok := SampleExpWeighted(random.NewInsecureSeeded(1), []ExpWeight{{1, 0}}, den); ok {
		t.Error("no weight at level 0: want a refusal")
	}
	if _, ok := SampleExpWeighted(random.NewInsecureSeeded(1), nil, den); ok {
		t.Error("no weights: want a refusal")
	}
	if i, ok := SampleExpWeighted(random.NewInsecureSeeded(1), []ExpWeight{{300, 0}, {0, 5}}, den); !ok || i != 1 {
		t.Errorf("only one choosable weight: got %d, %v", i, ok)
	}
}

// TestU256 checks the 256-bit helpers against math/big.
func TestU256(t *testing.T) {
	toBig := func(a u256) *big.Int {
		b := new(big.Int)
		for i := 3; i >= 0; i-- {
			b.Lsh(b, 64)
			b.Or(b, new(big.Int).SetUint64(a[i]))
		}
		return b
	}
	src := random.NewInsecureSeeded(15)
	for i := 0; i < 500; i++ {
		q := 1 + int(src.Uint64()%expIntSteps)
		c := src.Uint64() >> 32
		got := toBig(mulTable(&expTable[q], c))
		tb := new(big.Int)
		for _, w := range expTable[q] {
			tb.Lsh(tb, 64)
			tb.Or(tb, new(big.Int).SetUint64(w))
		}
		if want := tb.Mul(tb, new(big.Int).SetUint64(c)); got.Cmp(want) != 0 {
			t.Fatalf("mulTable(e^-%d, %d) = %v, want %v", q, c, got, want)
		}
		a := u256{src.Uint64(), src.Uint64(), src.Uint64(), src.Uint64() >> 1}
		b := u256{src.Uint64(), src.Uint64(), src.Uint64(), src.Uint64() >> 1}
		sum := toBig(add256(a, b))
		if want := new(big.Int).Add(toBig(a), toBig(b)); sum.Cmp(want) != 0 {
			t.Fatalf("add256 wrong")
		}
		if less256(a, b) != (toBig(a).Cmp(toBig(b)) < 0) {
			t.Fatalf("less256 wrong")
		}
		if !less256(a, b) {
			a, b = b, a
		}
		if d := toBig(sub256(b, a)); d.Cmp(new(big.Int).Sub(toBig(b), toBig(a))) != 0 {
			t.Fatalf("sub256 wrong")
		}
		r, ok := uniformBelow256(src, b)
		if !ok || !less256(r, b) {
			t.Fatalf("uniformBelow256 out of range")
		}
	}
}
