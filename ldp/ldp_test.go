package ldp

import (
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/audit"
	"github.com/dpstat/dpstat/random"
)

func TestBadParameters(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"zero epsilon", Options{KindOUE, 0, 10}, "epsilon = 0"},
		{"negative epsilon", Options{KindKRR, -1, 10}, "epsilon = -1"},
		{"NaN epsilon", Options{KindOLH, math.NaN(), 10}, "epsilon = NaN"},
		{"infinite epsilon", Options{KindSUE, math.Inf(1), 10}, "epsilon = +Inf"},
		{"domain 1", Options{KindKRR, 1, 1}, "domain = 1"},
		{"domain 0", Options{KindOUE, 1, 0}, "domain = 0"},
		{"domain too large", Options{KindOLH, 1, MaxDomain + 1}, "domain = 1048577"},
		{"rr with 3 values", Options{KindRR, 1, 3}, "exactly 2 values"},
		{"unknown mechanism", Options{"hx", 1, 10}, `mechanism "hx"`},
		{"mean is not an oracle", Options{KindMean, 1, 10}, "NewMean"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New(%+v) error = %v, want one containing %q", tc.o, err, tc.want)
			}
		})
	}
}

func TestBadMeanParameters(t *testing.T) {
	tests := []struct {
		name string
		o    MeanOptions
		want string
	}{
		{"NaN epsilon", MeanOptions{math.NaN(), 0, 1}, "epsilon = NaN"},
		{"empty range", MeanOptions{1, 1, 1}, "range [1, 1]"},
		{"reversed range", MeanOptions{1, 2, 1}, "range [2, 1]"},
		{"infinite bound", MeanOptions{1, 0, math.Inf(1)}, "range [0, +Inf]"},
		{"NaN bound", MeanOptions{1, math.NaN(), 1}, "range [NaN, 1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewMean(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewMean(%+v) error = %v, want one containing %q", tc.o, err, tc.want)
			}
		})
	}
	m, err := NewMean(MeanOptions{Epsilon: 1, Lo: 0, Hi: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []float64{-0.5, 10.5, math.NaN(), math.Inf(1)} {
		if _, err := m.Randomize(nil, x); err == nil || !strings.Contains(err.Error(), "want a number in [0, 10]") {
			t.Errorf("Randomize(%v) error = %v, want an out-of-range error", x, err)
		}
	}
}

func TestValueOutOfDomain(t *testing.T) {
	for _, k := range FrequencyKinds {
		d := 10
		if k == KindRR {
			d = 2
		}
		o, err := New(Options{Mechanism: k, Epsilon: 1, Domain: d})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []int{-1, d, 1 << 40} {
			if _, err := o.Randomize(nil, v); err == nil || !strings.Contains(err.Error(), "want a value in [0,") {
				t.Errorf("%s: Randomize(%d) error = %v, want an out-of-domain error", k, v, err)
			}
		}
	}
}

func TestAggregatorRefusesMalformedReports(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		r    Report
		want string
	}{
		{"krr value too large", Options{KindKRR, 1, 5}, Report{Value: 5}, "value = 5"},
		{"krr negative value", Options{KindKRR, 1, 5}, Report{Value: -1}, "value = -1"},
		{"krr with bits", Options{KindKRR, 1, 5}, Report{Value: 1, Bits: []uint64{1}}, "want a value only"},
		{"oue too few words", Options{KindOUE, 1, 100}, Report{Bits: []uint64{1}}, "has 1 words"},
		{"oue stray bit", Options{KindOUE, 1, 100}, Report{Bits: []uint64{0, 1 << 40}}, "beyond position 100"},
		{"sue no bits", Options{KindSUE, 1, 10}, Report{Value: 3}, "has 0 words"},
		{"olh hash out of range", Options{KindOLH, 1, 10}, Report{Value: 4, Seed: 7}, "hashed value = 4"},
		{"hr row out of range", Options{KindHR, 1, 10}, Report{Value: 1, Seed: 16}, "row = 16"},
		{"hr value not a bit", Options{KindHR, 1, 10}, Report{Value: 2, Seed: 3}, "value = 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := New(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			a := o.NewAggregator()
			if err := a.Add(tc.r); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Add(%+v) error = %v, want one containing %q", tc.r, err, tc.want)
			}
			if n := a.Tally().N; n != 0 {
				t.Fatalf("refused report was counted: n = %d", n)
			}
		})
	}
}

// TestProbabilitiesKeepEpsilon checks, in exact rational arithmetic, that the
// probabilities each mechanism uses give a likelihood ratio at most e^ε.
func TestProbabilitiesKeepEpsilon(t *testing.T) {
	for _, eps := range []float64{0.01, 0.5, 1, 2, 4, 8} {
		for _, k := range FrequencyKinds {
			d := 16
			if k == KindRR {
				d = 2
			}
			o, err := New(Options{Mechanism: k, Epsilon: eps, Domain: d})
			if err != nil {
				t.Fatal(err)
			}
			p := o.Params()
			if p.Epsilon > eps {
				t.Errorf("%s ε=%v: claims %v > requested", k, eps, p.Epsilon)
			}
			pr, err := p.P.Rat()
			if err != nil {
				t.Fatal(err)
			}
			if f, _ := pr.Float64(); f != p.P.Value {
				t.Errorf("%s: published p %v ≠ %v", k, pr, p.P.Value)
			}
			one := big.NewRat(1, 1)
			var ratio *big.Rat
			switch k {
			case KindOUE, KindSUE:
				qr, _ := p.Q.Rat()
				num := new(big.Rat).Mul(pr, new(big.Rat).Sub(one, qr))
				den := new(big.Rat).Mul(new(big.Rat).Sub(one, pr), qr)
				ratio = num.Quo(num, den)
			case KindOLH:
				ratio = new(big.Rat).Quo(new(big.Rat).Mul(pr, big.NewRat(int64(p.G-1), 1)), new(big.Rat).Sub(one, pr))
			case KindHR:
				ratio = new(big.Rat).Quo(pr, new(big.Rat).Sub(one, pr))
			default:
				ratio = new(big.Rat).Quo(new(big.Rat).Mul(pr, big.NewRat(int64(d-1), 1)), new(big.Rat).Sub(one, pr))
			}
			// ln of the exact ratio as log1p(ratio − 1), with ratio − 1
			// exact: a relative error far below the 2^-48 margin the
			// constructors keep.
			r, _ := new(big.Rat).Sub(ratio, one).Float64()
			if got := math.Log1p(r); got > p.Epsilon || got > eps {
				t.Errorf("%s ε=%v: exact ratio gives ε = %v, claimed %v", k, eps, got, p.Epsilon)
			}
			if got := math.Log1p(r); got < eps*0.999 {
				t.Errorf("%s ε=%v: exact ratio gives ε = %v, wastefully far below", k, eps, got)
			}
		}
	}
}

// TestBernoulliWord checks the 64-lane sampler's rate against the exact p
// with a normal bound at z = 5.3 per case (false-failure probability below
// 1.2e-7 per case, 1e-6 for the table).
func TestBernoulliWord(t *testing.T) {
	for i, p := range []float64{0.5, 0.25, 1 / (math.E + 1), 0x1p-10, 0.999, 1.0 / 3} {
		src := random.NewInsecureSeeded(uint64(100 + i))
		e := newExpansion(p)
		const words = 20000
		ones := 0
		perLane := make([]int, 64)
		for range words {
			x := e.bernoulliWord(src)
			for l := range 64 {
				if x>>l&1 == 1 {
					ones++
					perLane[l]++
				}
			}
		}
		n := float64(words * 64)
		if z := (float64(ones) - n*p) / math.Sqrt(n*p*(1-p)); math.Abs(z) > 5.3 {
			t.Errorf("p = %v: %d ones of %v, z = %.2f", p, ones, n, z)
		}
		// Lane 0 and lane 63 alone (catch a lane-dependent bug).
		for _, l := range []int{0, 63} {
			if z := (float64(perLane[l]) - words*p) / math.Sqrt(words*p*(1-p)); math.Abs(z) > 5.3 {
				t.Errorf("p = %v lane %d: %d ones of %d, z = %.2f", p, l, perLane[l], words, z)
			}
		}
	}
}

func TestPublishedProbabilityIsExact(t *testing.T) {
	for _, p := range []float64{0.5, 0x1p-60, 1 / (math.E + 1), 0.75, math.Nextafter(1, 0), 0x1p-1074} {
		pr := newProb(p)
		r, err := pr.Rat()
		if err != nil {
			t.Fatal(err)
		}
		if f, exact := r.Float64(); f != p || !exact {
			t.Errorf("newProb(%v) = %+v, denotes %v", p, pr, r)
		}
	}
}

// population returns n values with counts proportional to weights.
func population(weights []int, n int) ([]int, []float64) {
	total := 0
	for _, w := range weights {
		total += w
	}
	var vals []int
	f := make([]float64, len(weights))
	for v, w := range weights {
		c := n * w / total
		f[v] = float64(c) / float64(n)
		for range c {
			vals = append(vals, v)
		}
	}
	for len(vals) < n {
		vals = append(vals, 0)
		f[0] += 1 / float64(n)
	}
	return vals, f
}

// TestUnbiasedWithTheoreticalVariance runs every frequency oracle R = 400
// times on a fixed population of N = 2000 and checks
//   - unbiasedness: for every value, the mean of the R estimates lies within
//     5.3 standard errors (sqrt(Var/R)) of the truth (z-test; false-failure
//     probability below 1.2e-7 per value, about 1e-6 for 8 values);
//   - variance: the sum over runs of z² = (f̂₀ − f₀)²/Var(N, f₀) for the most
//     frequent value lies within the Wilson–Hilferty 1 − 1e-6 two-sided
//     interval of χ²(400), [274, 558] (the estimates are sums of ≥ 2000
//     independent Bernoulli trials, so the normal approximation is good).
func TestUnbiasedWithTheoreticalVariance(t *testing.T) {
	const R, N = 400, 2000
	weights := []int{8, 4, 3, 2, 1, 1, 1, 0}
	vals, f := population(weights, N)
	for i, k := range FrequencyKinds {
		t.Run(string(k), func(t *testing.T) {
			d := len(weights)
			vs, fs := vals, f
			if k == KindRR {
				d = 2
				vs, fs = population([]int{3, 1}, N)
			}
			o, err := New(Options{Mechanism: k, Epsilon: 1, Domain: d})
			if err != nil {
				t.Fatal(err)
			}
			src := random.NewInsecureSeeded(uint64(7000 + i))
			sum := make([]float64, d)
			chi := 0.0
			for range R {
				a := o.NewAggregator()
				for _, v := range vs {
					r, err := o.Randomize(src, v)
					if err != nil {
						t.Fatal(err)
					}
					if err := a.Add(r); err != nil {
						t.Fatal(err)
					}
				}
				est, err := Estimates(o, a.Tally())
				if err != nil {
					t.Fatal(err)
				}
				for v, e := range est {
					sum[v] += e.Value
				}
				z := (est[0].Value - fs[0]) / math.Sqrt(o.Variance(N, fs[0]))
				chi += z * z
			}
			for v := range d {
				se := math.Sqrt(o.Variance(N, fs[v]) / R)
				if z := (sum[v]/R - fs[v]) / se; math.Abs(z) > 5.3 {
					t.Errorf("value %d: mean estimate %.5f, truth %.5f, z = %.2f", v, sum[v]/R, fs[v], z)
				}
			}
			if chi < 274 || chi > 558 {
				t.Errorf("Σz² = %.1f over %d runs: variance does not match theory (want [274, 558])", chi, R)
			}
		})
	}
}

// TestMeanUnbiasedWithTheoreticalVariance does the same for Mean, with the
// exact variance Σ r_i(1−r_i)·w²/(N²(2p−1)²); the same bounds and
// false-failure probabilities as above.
func TestMeanUnbiasedWithTheoreticalVariance(t *testing.T) {
	const R, N = 400, 2000
	m, err := NewMean(MeanOptions{Epsilon: 1, Lo: -5, Hi: 15})
	if err != nil {
		t.Fatal(err)
	}
	xs := make([]float64, N)
	mean := 0.0
	for i := range xs {
		xs[i] = -5 + 20*float64(i%97)/96*float64(i%3)/2
		mean += xs[i] / N
	}
	p := m.Params().P.Value
	exactVar := 0.0
	for _, x := range xs {
		r := (1 - p) + (x+5)/20*(2*p-1)
		exactVar += r * (1 - r)
	}
	exactVar *= 400 / (N * N * (2*p - 1) * (2*p - 1))
	src := random.NewInsecureSeeded(99)
	sum, chi := 0.0, 0.0
	for range R {
		a := m.NewAggregator()
		for _, x := range xs {
			r, err := m.Randomize(src, x)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Add(r); err != nil {
				t.Fatal(err)
			}
		}
		e, err := m.Estimate(a.Tally())
		if err != nil {
			t.Fatal(err)
		}
		if e.Variance < exactVar*0.9 {
			t.Fatalf("reported variance %v below the exact %v", e.Variance, exactVar)
		}
		sum += e.Value
		z := (e.Value - mean) / math.Sqrt(exactVar)
		chi += z * z
	}
	if z := (sum/R - mean) / math.Sqrt(exactVar/R); math.Abs(z) > 5.3 {
		t.Errorf("mean estimate %.4f, truth %.4f, z = %.2f", sum/R, mean, z)
	}
	if chi < 274 || chi > 558 {
		t.Errorf("Σz² = %.1f: variance does not match theory (want [274, 558])", chi)
	}
}

// TestUnaryAggregatorMatchesNaiveCount checks the bit-sliced counters
// (which flush every 255 reports) against a plain count.
func TestUnaryAggregatorMatchesNaiveCount(t *testing.T) {
	for _, d := range []int{2, 63, 64, 65, 1024, 1000} {
		o, err := New(Options{Mechanism: KindOUE, Epsilon: 0.5, Domain: d})
		if err != nil {
			t.Fatal(err)
		}
		src := random.NewInsecureSeeded(uint64(d))
		a := o.NewAggregator()
		want := make([]int64, d)
		const n = 1000
		for i := range n {
			r, _ := o.Randomize(src, i%d)
			for v := range d {
				want[v] += int64(r.Bits[v/64] >> (v % 64) & 1)
			}
			if err := a.Add(r); err != nil {
				t.Fatal(err)
			}
			if i == 300 {
				_ = a.Tally() // an intermediate flush must not disturb the counts
			}
		}
		got := a.Tally()
		if got.N != n {
			t.Fatalf("d=%d: n = %d, want %d", d, got.N, n)
		}
		for v := range d {
			if got.Counts[v] != want[v] {
				t.Fatalf("d=%d: count[%d] = %d, want %d", d, v, got.Counts[v], want[v])
			}
		}
	}
}

func TestMergeAddsTallies(t *testing.T) {
	o, _ := New(Options{Mechanism: KindKRR, Epsilon: 1, Domain: 3})
	a := o.NewAggregator()
	if err := a.Merge(Tally{N: 5, Counts: []int64{1, 2, 2}}); err != nil {
		t.Fatal(err)
	}
	if err := a.Add(Report{Value: 2}); err != nil {
		t.Fatal(err)
	}
	if got := a.Tally(); got.N != 6 || got.Counts[2] != 3 {
		t.Fatalf("tally = %+v", got)
	}
	if err := a.Merge(Tally{N: 1, Counts: []int64{1, 1}}); err == nil {
		t.Fatal("merged a tally of the wrong length")
	}
	if err := a.Merge(Tally{N: 1, Counts: []int64{2, 0, 0}}); err == nil {
		t.Fatal("merged a tally whose count exceeds n")
	}
}

// TestExactAtHugeEpsilon: at ε = 1e20 randomized response and symmetric
// unary encoding report the truth (up to probabilities below 2^-50), so the
// estimates are exact. (OUE keeps the true bit with probability 1/2 at any
// ε, and olh's hash collides, so neither is exact.)
func TestExactAtHugeEpsilon(t *testing.T) {
	for _, k := range []Kind{KindRR, KindKRR, KindSUE} {
		d := 5
		if k == KindRR {
			d = 2
		}
		o, err := New(Options{Mechanism: k, Epsilon: 1e20, Domain: d})
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		a := o.NewAggregator()
		src := random.NewInsecureSeeded(1)
		for i := range 100 {
			r, _ := o.Randomize(src, i%d)
			if err := a.Add(r); err != nil {
				t.Fatal(err)
			}
		}
		est, err := Estimates(o, a.Tally())
		if err != nil {
			t.Fatal(err)
		}
		for v, e := range est {
			if math.Abs(e.Value-1/float64(d)) > 1e-9 {
				t.Errorf("%s: value %d estimate %v, want %v", k, v, e.Value, 1/float64(d))
			}
		}
	}
}

// TestAuditEachRandomizer runs the statistical privacy audit (confidence
// 1 − 1e-6, so a false failure of the "below ε" check has probability at
// most 1e-6 per mechanism) on each randomizer with two different true
// values, observing the report (or, for olh and unary encodings, a
// post-processing of it that keeps the worst-case ratio: the bits of the two
// values, the support of the first value). It also checks that the audit has
// power: the bound reaches 0.7ε where the observed event is tight (a
// failure there would mean a weak audit, not a privacy bug).
func TestAuditEachRandomizer(t *testing.T) {
	const eps = 1.0
	type sampler = func(v int) audit.Sampler[int]
	tests := []struct {
		name  string
		kind  Kind
		d     int
		tight bool
	}{
		{"binary rr", KindRR, 2, true},
		{"k-ary rr", KindKRR, 4, true},
		{"oue", KindOUE, 16, true},
		{"sue", KindSUE, 16, true},
		{"olh", KindOLH, 16, false},
		{"hr", KindHR, 16, true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := New(Options{Mechanism: tc.kind, Epsilon: eps, Domain: tc.d})
			if err != nil {
				t.Fatal(err)
			}
			g := o.Params().G
			var mk sampler = func(v int) audit.Sampler[int] {
				return func(src random.Source) int {
					r, err := o.Randomize(src, v)
					if err != nil {
						panic(err)
					}
					switch tc.kind {
					case KindOUE, KindSUE:
						return int(r.Bits[0]&1) + 2*int(r.Bits[0]>>1&1)
					case KindOLH:
						return b2i(Hash(r.Seed, 0, g) == r.Value)
					case KindHR:
						// Rows of odd index separate the values 0 and 1.
						return 2*int(r.Seed&1) + r.Value
					}
					return r.Value
				}
			}
			res, err := audit.Discrete(mk(0), mk(1), audit.Options{Samples: 100000, Source: random.NewInsecureSeeded(uint64(500 + i))})
			if err != nil {
				t.Fatal(err)
			}
			if res.Refutes(o.Params().Epsilon) {
				t.Fatalf("audit refutes ε = %v: %v", o.Params().Epsilon, res)
			}
			if tc.tight && res.EpsilonLowerBound < 0.7*eps {
				t.Errorf("audit lower bound %v is weak (want ≥ %v): %v", res.EpsilonLowerBound, 0.7*eps, res)
			}
		})
	}
	t.Run("mean", func(t *testing.T) {
		m, err := NewMean(MeanOptions{Epsilon: eps, Lo: 0, Hi: 1})
		if err != nil {
			t.Fatal(err)
		}
		mk := func(x float64) audit.Sampler[int] {
			return func(src random.Source) int {
				r, _ := m.Randomize(src, x)
				return r.Value
			}
		}
		res, err := audit.Discrete(mk(0), mk(1), audit.Options{Samples: 100000, Source: random.NewInsecureSeeded(600)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Refutes(m.Params().Epsilon) {
			t.Fatalf("audit refutes ε = %v: %v", m.Params().Epsilon, res)
		}
		if res.EpsilonLowerBound < 0.7*eps {
			t.Errorf("audit lower bound %v is weak: %v", res.EpsilonLowerBound, res)
		}
	})
}

func TestRecommend(t *testing.T) {
	tests := []struct {
		name string
		eps  float64
		d    int
		want []Kind
	}{
		{"two values", 1, 2, []Kind{KindRR}},
		{"small domain, high epsilon", 4, 10, []Kind{KindKRR}},
		{"large domain", 1, 1024, []Kind{KindOUE}},
		{"large domain, moderate epsilon", 2, 100, []Kind{KindOUE, KindOLH}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, v, err := Recommend(tc.eps, tc.d)
			if err != nil {
				t.Fatal(err)
			}
			ok := false
			for _, w := range tc.want {
				ok = ok || k == w
			}
			if !ok {
				t.Fatalf("Recommend(%v, %d) = %s (variance %v), want one of %v", tc.eps, tc.d, k, v, tc.want)
			}
		})
	}
	if _, _, err := Recommend(math.NaN(), 10); err == nil {
		t.Error("Recommend(NaN) gave no error")
	}
	if _, _, err := Recommend(1, 1); err == nil {
		t.Error("Recommend(domain 1) gave no error")
	}
}

// TestApproxVarianceMatchesPaper compares the exact-probability variances
// with the closed forms of Wang et al. (2017).
func TestApproxVarianceMatchesPaper(t *testing.T) {
	for _, eps := range []float64{0.5, 1, 3} {
		e := math.Exp(eps)
		d := 100
		g := float64(OLHRange(eps))
		es := math.Exp(eps / 2)
		want := map[Kind]float64{
			KindKRR: (float64(d) - 2 + e) / ((e - 1) * (e - 1)),
			KindOUE: 4 * e / ((e - 1) * (e - 1)),
			KindOLH: (e - 1 + g) * (e - 1 + g) / ((e - 1) * (e - 1) * (g - 1)),
			KindSUE: es / ((es - 1) * (es - 1)),
			KindHR:  (e + 1) * (e + 1) / ((e - 1) * (e - 1)),
		}
		for k, w := range want {
			got, err := ApproxVariance(k, eps, d)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-w) > 1e-9*w {
				t.Errorf("%s ε=%v: variance %v, paper %v", k, eps, got, w)
			}
		}
	}
}

func TestOLHHashGolden(t *testing.T) {
	// Golden values shared with the JavaScript client's tests.
	tests := []struct {
		seed, v uint32
		g, want int
	}{
		{0, 0, 4, 0}, {1, 0, 4, 1}, {12345, 7, 4, 1}, {0xffffffff, 99, 8, 4}, {42, 1000, 1 << 16, 19078},
	}
	for _, tc := range tests {
		got := Hash(tc.seed, tc.v, tc.g)
		if got != tc.want {
			t.Errorf("Hash(%d, %d, %d) = %d, want %d", tc.seed, tc.v, tc.g, got, tc.want)
		}
	}
}
