package mechanism

import (
	"math"
	"math/big"
	"testing"

	"github.com/dpstat/dpstat/random"
)

// coverageCheck fails if the share of hits among n is below confidence by
// more than zLimit binomial standard deviations, or above the interval's own
// exact coverage bound upper by as much (so the interval is neither too
// narrow nor needlessly wide).
func coverageCheck(t *testing.T, name string, hits, n int, confidence, upper float64) {
	t.Helper()
	sd := math.Sqrt(confidence * (1 - confidence) / float64(n))
	share := float64(hits) / float64(n)
	if share < confidence-zLimit*sd {
		t.Errorf("%s: coverage %v, want ≥ %v", name, share, confidence)
	}
	if share > upper+zLimit*sd {
		t.Errorf("%s: coverage %v, want ≤ %v: interval too wide", name, share, upper)
	}
}

// TestLaplaceNoise checks the variance of the Laplace release (2b² for the
// scale b, the discrete Laplace variance 2p/(1−p)² times g², within 6
// standard errors; standard error sqrt(20/n)·b² from the Laplace fourth
// moment 24b⁴) and the coverage of its 95% interval (binomial check).
// Two checks per case, three cases: false failure below 6e-8.
func TestLaplaceNoise(t *testing.T) {
	n := 40000 * longFactor
	for i, c := range []struct{ eps, sens, x float64 }{{1, 1, 10}, {0.3, 5, -1234.5}, {2, 0.01, 0.125}} {
		m, err := NewLaplace(LaplaceOptions{Epsilon: c.eps, Sensitivity: c.sens, Source: random.NewInsecureSeeded(uint64(1000 + i))})
		if err != nil {
			t.Fatal(err)
		}
		b := m.Scale()
		g := m.Granularity()
		x0 := m.grid.AddNoise(c.x, 0)
		h := m.Interval(0.95)
		var sum2 float64
		hits := 0
		for j := 0; j < n; j++ {
			y, _ := m.Release(c.x)
			d := y - x0
			sum2 += d * d
			if math.Abs(y-c.x) <= h {
				hits++
			}
		}
		p := math.Exp(-g / b)
		want := 2 * p / ((1 - p) * (1 - p)) * g * g
		if v := sum2 / float64(n); math.Abs(v-want) > 6*math.Sqrt(20/float64(n))*b*b {
			t.Errorf("ε=%v Δ=%v: variance %v, want %v", c.eps, c.sens, v, want)
		}
		coverageCheck(t, "laplace", hits, n, 0.95, 0.95+0.002)
		if rel := h / (b * math.Log(1/0.05)); rel < 0.99 || rel > 1.01 {
			t.Errorf("ε=%v Δ=%v: interval %v, want about b·ln(20) = %v", c.eps, c.sens, h, b*math.Log(20))
		}
	}
}

// TestGeometricNoise: variance and 90% interval coverage, as for Laplace.
// Two checks per case, three cases: false failure below 6e-8.
func TestGeometricNoise(t *testing.T) {
	n := 40000 * longFactor
	for i, c := range []struct {
		eps  float64
		sens int64
	}{{1, 1}, {0.1, 3}, {2, 1}} {
		m, err := NewGeometric(GeometricOptions{Epsilon: c.eps, Sensitivity: c.sens, Source: random.NewInsecureSeeded(uint64(1100 + i))})
		if err != nil {
			t.Fatal(err)
		}
		b := m.Scale()
		h := m.Interval(0.9)
		var sum2 float64
		hits := 0
		for j := 0; j < n; j++ {
			d := float64(m.Release(100) - 100)
			sum2 += d * d
			if math.Abs(d) <= h {
				hits++
			}
		}
		p := math.Exp(-1 / b)
		want := 2 * p / ((1 - p) * (1 - p))
		if v := sum2 / float64(n); math.Abs(v-want) > 6*math.Sqrt(20/float64(n))*(want/2+1) {
			t.Errorf("ε=%v Δ=%d: variance %v, want %v", c.eps, c.sens, v, want)
		}
		// The exact coverage of the integer interval is 1 − 2p^(h+1)/(1+p),
		// which may exceed 0.9 by up to one step's mass.
		exact := 1 - 2*math.Pow(p, h+1)/(1+p)
		coverageCheck(t, "geometric", hits, n, 0.9, exact)
	}
}

// TestGeometricSaturates: releases near the int64 limits saturate instead
// of wrapping (no statistics: any wrap is a failure).
func TestGeometricSaturates(t *testing.T) {
	m, _ := NewGeometric(GeometricOptions{Epsilon: 0.001, Sensitivity: 1000, Source: random.NewInsecureSeeded(1200)})
	sawMax, sawMin := false, false
	for j := 0; j < 2000; j++ {
		hi := m.Release(math.MaxInt64)
		lo := m.Release(math.MinInt64)
		if hi < math.MaxInt64/2 || lo > math.MinInt64/2 {
			t.Fatalf("wrapped: %d, %d", hi, lo)
		}
		sawMax = sawMax || hi == math.MaxInt64
		sawMin = sawMin || lo == math.MinInt64
	}
	if !sawMax || !sawMin {
		t.Error("expected some saturated releases")
	}
	if saturatingAdd(math.MaxInt64, 1) != math.MaxInt64 || saturatingAdd(math.MinInt64, -1) != math.MinInt64 || saturatingAdd(-5, 3) != -2 {
		t.Error("saturatingAdd is wrong")
	}
}

// TestGaussianNoise: the sample variance of n = 40000 releases is σ² within
// 6 relative standard errors sqrt(2/n), and the 95% interval covers
// (binomial check). Two checks per case, three cases: false failure below
// 6e-8.
func TestGaussianNoise(t *testing.T) {
	n := 40000 * longFactor
	for i, c := range []struct{ eps, delta, sens float64 }{{1, 1e-5, 1}, {0.1, 1e-6, 100}, {5, 1e-3, 0.5}} {
		m, err := NewGaussian(GaussianOptions{Epsilon: c.eps, Delta: c.delta, Sensitivity: c.sens, Source: random.NewInsecureSeeded(uint64(1300 + i))})
		if err != nil {
			t.Fatal(err)
		}
		s := m.Sigma()
		if steps := s / m.Granularity(); steps < 1<<20 || steps > 1<<31 {
			t.Errorf("ε=%v: σ is %v grid steps, want in [2^20, 2^31]", c.eps, steps)
		}
		h := m.Interval(0.95)
		var sum2 float64
		hits := 0
		x0 := m.grid.AddNoise(7, 0)
		for j := 0; j < n; j++ {
			y, _ := m.Release(7)
			d := y - x0
			sum2 += d * d
			if math.Abs(y-7) <= h {
				hits++
			}
		}
		if v := sum2 / float64(n) / (s * s); math.Abs(v-1) > 6*math.Sqrt(2/float64(n)) {
			t.Errorf("ε=%v: variance/σ² = %v, want 1", c.eps, v)
		}
		coverageCheck(t, "gaussian", hits, n, 0.95, 0.95+1e-4)
	}
}

// TestBinaryRRUnbiased: for true proportions 0.1 and 0.7, the estimate from
// n = 50000 randomized answers lies within zLimit standard deviations
// (its stated variance) of the truth; the interval at confidence 1 −
// falseFailure therefore covers it. Two cases: false failure below 2e-8.
func TestBinaryRRUnbiased(t *testing.T) {
	n := 50000 * longFactor
	for i, c := range []struct{ eps, p, pi float64 }{{1, 0, 0.1}, {0, 0.75, 0.7}} {
		m, err := NewBinaryRR(BinaryRROptions{Epsilon: c.eps, P: c.p, Source: random.NewInsecureSeeded(uint64(1400 + i))})
		if err != nil {
			t.Fatal(err)
		}
		truths := int(c.pi * float64(n))
		var yes int64
		for j := 0; j < n; j++ {
			if m.Randomize(j < truths) {
				yes++
			}
		}
		e, err := m.Estimate(yes, int64(n))
		if err != nil {
			t.Fatal(err)
		}
		if z := (e.Value - c.pi) / math.Sqrt(e.Variance); math.Abs(z) > zLimit {
			t.Errorf("π = %v: estimate %v ± %v (z = %v)", c.pi, e.Value, math.Sqrt(e.Variance), z)
		}
		lo, hi := e.Interval(1 - falseFailure)
		if lo > c.pi || hi < c.pi {
			t.Errorf("π = %v: interval [%v, %v] misses it", c.pi, lo, hi)
		}
	}
	m, _ := NewBinaryRR(BinaryRROptions{P: 0.75})
	for _, bad := range [][2]int64{{1, 0}, {-1, 5}, {6, 5}} {
		if _, err := m.Estimate(bad[0], bad[1]); err == nil {
			t.Errorf("Estimate(%d, %d): want an error", bad[0], bad[1])
		}
	}
	// The estimator formula on exact expectations.
	e, _ := m.Estimate(60, 100) // E[y/N] = 0.25 + 0.5π ⇒ π = 0.7
	if math.Abs(e.Value-0.7) > 1e-12 {
		t.Errorf("Estimate(60, 100) = %v, want 0.7", e.Value)
	}
	if want := 0.7*0.3/100 + 0.75*0.25/(100*0.25); math.Abs(e.Variance-want) > 1e-15 {
		t.Errorf("variance %v, want %v", e.Variance, want)
	}
}

// TestKaryRRUnbiased: k = 5 values with frequencies (0.4, 0.3, 0.2, 0.1, 0)
// and n = 50000 reports; each estimate lies within zLimit of its stated
// standard deviation. Five checks: false failure below 5e-8. The variance
// formula is also checked against the empirical variance over repetitions.
func TestKaryRRUnbiased(t *testing.T) {
	n := 50000 * longFactor
	freq := []float64{0.4, 0.3, 0.2, 0.1, 0}
	m, err := NewKaryRR(KaryRROptions{Epsilon: 1, K: 5, Source: random.NewInsecureSeeded(1500)})
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int64, 5)
	j := 0
	for v, f := range freq {
		for c := 0; c < int(f*float64(n)); c++ {
			r, err := m.Randomize(v)
			if err != nil {
				t.Fatal(err)
			}
			counts[r]++
			j++
		}
	}
	est, err := m.Estimate(counts)
	if err != nil {
		t.Fatal(err)
	}
	for v, e := range est {
		if z := (e.Value - freq[v]) / math.Sqrt(e.Variance); math.Abs(z) > zLimit {
			t.Errorf("value %d: estimate %v ± %v, want %v (z = %v)", v, e.Value, math.Sqrt(e.Variance), freq[v], z)
		}
	}
	// P and Q: p/q = e^ε' with ε' ≤ ε, and p + (k−1)q = 1.
	if s := m.P() + 4*m.Q(); math.Abs(s-1) > 1e-15 {
		t.Errorf("p + (k−1)q = %v", s)
	}
	for _, v := range []int{-1, 5, 100} {
		if _, err := m.Randomize(v); err == nil {
			t.Errorf("Randomize(%d): want an error", v)
		}
	}
	for _, bad := range [][]int64{{1, 2}, {0, 0, 0, 0, 0}, {1, -1, 0, 0, 0}, {math.MaxInt64, 1, 0, 0, 0}} {
		if _, err := m.Estimate(bad); err == nil {
			t.Errorf("Estimate(%v): want an error", bad)
		}
	}
	// Variance formula equals the direct form [f p(1−p) + (1−f) q(1−q)] /
	// (N(p−q)²).
	p, q := m.P(), m.Q()
	for _, f := range []float64{0, 0.25, 1} {
		direct := (f*p*(1-p) + (1-f)*q*(1-q)) / (1000 * (p - q) * (p - q))
		formula := q*(1-q)/(1000*(p-q)*(p-q)) + f*(1-p-q)/(1000*(p-q))
		if math.Abs(direct-formula) > 1e-15 {
			t.Errorf("f = %v: variance forms differ: %v vs %v", f, direct, formula)
		}
	}
}

// emProbs returns the exact selection probabilities of the implemented
// exponential mechanism: ∝ exp(−c·k_i) with k_i the grid-step distance to
// the best rounded score.
func emProbs(s selector, scores []float64) []float64 {
	w := make([]float64, len(scores))
	var max int64 = math.MinInt64
	r := make([]int64, len(scores))
	for i, u := range scores {
		r[i], _ = s.grid.RoundInt64(u)
		if r[i] > max {
			max = r[i]
		}
	}
	var z float64
	for i := range w {
		w[i] = math.Exp(-s.c * float64(max-r[i]))
		z += w[i]
	}
	for i := range w {
		w[i] /= z
	}
	return w
}

// pfProbs returns the exact selection probabilities of permute-and-flip by
// enumerating all orders (small n only).
func pfProbs(s selector, scores []float64) []float64 {
	n := len(scores)
	em := emProbs(s, scores)
	var best float64
	for _, v := range em {
		best = math.Max(best, v)
	}
	acc := make([]float64, n) // acceptance probability exp(−c·k_i)
	for i := range acc {
		acc[i] = em[i] / best
	}
	out := make([]float64, n)
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	var count float64
	var rec func(k int)
	rec = func(k int) {
		if k == n {
			count++
			reach := 1.0
			for _, c := range perm {
				out[c] += reach * acc[c]
				reach *= 1 - acc[c]
			}
			return
		}
		for i := k; i < n; i++ {
			perm[k], perm[i] = perm[i], perm[k]
			rec(k + 1)
			perm[k], perm[i] = perm[i], perm[k]
		}
	}
	rec(0)
	for i := range out {
		out[i] /= count
	}
	return out
}

// TestSelectionDistributions: chi-square checks of the exponential
// mechanism, Gumbel report-noisy-max and permute-and-flip against their
// exact distributions (3 checks per score set, 2 sets: false failure below
// 6e-8), and permute-and-flip picks the best at least as often as the
// exponential mechanism (by the exact probabilities).
func TestSelectionDistributions(t *testing.T) {
	n := 60000 * longFactor
	sets := []struct {
		name   string
		eps    float64
		sens   float64
		scores []float64
	}{
		{"counts", 1, 1, []float64{0, 1, 2, 3, 5}},
		{"fractions", 2, 0.5, []float64{0.25, -1, 0.5, 0.1}},
	}
	for si, set := range sets {
		src := random.NewInsecureSeeded(uint64(1600 + si))
		em, _ := NewExponential(ExponentialOptions{Epsilon: set.eps, Sensitivity: set.sens, Source: src})
		gu, _ := NewReportNoisyMax(NoisyMaxOptions{Epsilon: set.eps, Sensitivity: set.sens, Noise: GumbelNoise, Source: src})
		pf, _ := NewReportNoisyMax(NoisyMaxOptions{Epsilon: set.eps, Sensitivity: set.sens, Source: src})
		// The implemented weights are those of ε/(2Δ) per unit of score,
		// up to the grid: c/g = ε/(2(Δ + g)) rounded down.
		if got, want := em.sel.c/em.Granularity(), set.eps/(2*(set.sens+em.Granularity())); got > want || got < want*(1-1e-12) {
			t.Errorf("%s: c/g = %v, want ε/(2(Δ+g)) = %v", set.name, got, want)
		}
		emP := emProbs(em.sel, set.scores)
		pfP := pfProbs(pf.sel, set.scores)
		for _, c := range []struct {
			name  string
			sel   interface{ Select([]float64) (int, error) }
			probs []float64
		}{{"exponential", em, emP}, {"gumbel", gu, emP}, {"permute-and-flip", pf, pfP}} {
			obs := make([]int, len(set.scores))
			for j := 0; j < n; j++ {
				i, err := c.sel.Select(set.scores)
				if err != nil {
					t.Fatal(err)
				}
				obs[i]++
			}
			chiSquareCheck(t, set.name+" "+c.name, obs, c.probs, n)
		}
		best := 0
		for i, u := range set.scores {
			if u > set.scores[best] {
				best = i
			}
		}
		if pfP[best] < emP[best] {
			t.Errorf("%s: permute-and-flip picks the best with %v < exponential mechanism's %v", set.name, pfP[best], emP[best])
		}
	}
}

// TestSelectionExtremes: huge score ranges (big-integer path), one dominant
// candidate among many, equal scores, a single candidate.
func TestSelectionExtremes(t *testing.T) {
	src := random.NewInsecureSeeded(1700)
	em, _ := NewExponential(ExponentialOptions{Epsilon: 1, Sensitivity: 1, Source: src})
	pf, _ := NewReportNoisyMax(NoisyMaxOptions{Epsilon: 1, Sensitivity: 1, Source: src})
	huge := []float64{-1e300, 1e300, 0, 1e299}
	for j := 0; j < 100; j++ {
		if i, _ := em.Select(huge); i != 1 {
			t.Fatalf("exponential with scores %v chose %d", huge, i)
		}
		if i, _ := pf.Select(huge); i != 1 {
			t.Fatalf("permute-and-flip with scores %v chose %d", huge, i)
		}
	}
	dominant := make([]float64, 1000)
	dominant[617] = 1e6
	for j := 0; j < 20; j++ {
		if i, _ := em.Select(dominant); i != 617 {
			t.Fatalf("dominant candidate not chosen: %d", i)
		}
	}
	if i, err := em.Select([]float64{42}); i != 0 || err != nil {
		t.Fatalf("single candidate: %d, %v", i, err)
	}
	// Equal scores: uniform choice; any index must be possible and valid.
	seen := map[int]bool{}
	for j := 0; j < 200; j++ {
		i, _ := pf.Select([]float64{1, 1, 1})
		seen[i] = true
	}
	if len(seen) != 3 {
		t.Errorf("equal scores chose only %v", seen)
	}
	// UtilityBound: the textbook bound with the grid.
	g := em.Granularity()
	want := 2*(1+g)/1*(math.Log(100)+math.Log(1/0.01)) + g
	if ub := em.UtilityBound(100, 0.01); ub < want || ub > want*(1+1e-9) {
		t.Errorf("UtilityBound = %v, want %v", ub, want)
	}
	for _, bad := range []struct {
		n int
		f float64
	}{{0, 0.1}, {10, 0}, {10, 1}, {10, math.NaN()}} {
		if ub := em.UtilityBound(bad.n, bad.f); !math.IsNaN(ub) {
			t.Errorf("UtilityBound(%d, %v) = %v, want NaN", bad.n, bad.f, ub)
		}
	}
}

// TestAboveThreshold: with threshold 0, ε = 1, Δ = 1 the noise scales are
// about 2 (threshold) and 4 (queries); a query of −200 is reported above, or
// one of +200 below, only if the noise difference exceeds 200, which has
// probability below 2e^-40. Over 55 tests: false failure below 1e-15.
func TestAboveThreshold(t *testing.T) {
	for i := 0; i < 5; i++ {
		m, err := NewAboveThreshold(AboveThresholdOptions{Epsilon: 1, Sensitivity: 1, Threshold: 0, Source: random.NewInsecureSeeded(uint64(1800 + i))})
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 10; j++ {
			if above, err := m.Test(-200); err != nil || above {
				t.Fatalf("run %d: Test(−200) = %v, %v", i, above, err)
			}
		}
		if above, err := m.Test(200); err != nil || !above {
			t.Fatalf("run %d: Test(200) = %v, %v", i, above, err)
		}
		if _, err := m.Test(-200); err == nil {
			t.Fatalf("run %d: Test after true: want an error", i)
		}
		if s := m.ThresholdScale(); s < 2*(1+m.Granularity()) {
			t.Errorf("threshold scale %v, want ≥ 2(Δ+g)", s)
		}
		if s := m.QueryScale(); s != 2*m.ThresholdScale() {
			t.Errorf("query scale %v, want twice the threshold scale", s)
		}
		// Accuracy is the continuous-Laplace value 2Δ'ln(2/β)/ε +
		// 4Δ'ln(2k/β)/ε to within a step or two (below the textbook
		// 8Δ'ln(2k/β)/ε, which splits α evenly).
		d := 1 + m.Granularity()
		want := 2*d*math.Log(2/0.05) + 4*d*math.Log(2*100/0.05)
		if a := m.Accuracy(100, 0.05); math.Abs(a-want) > 0.01*want {
			t.Errorf("Accuracy(100, 0.05) = %v, want about %v", a, want)
		}
		if a := m.Accuracy(0, 0.05); !math.IsNaN(a) {
			t.Errorf("Accuracy(0, ·) = %v, want NaN", a)
		}
	}
}

// discreteGaussianDelta returns the exact δ of the discrete Gaussian
// mechanism with σ and integer sensitivity d (both in grid steps) at ε
// (Canonne, Kamath & Steinke 2020 give it exactly):
// P[Y > εσ²/d − d/2] − e^ε·P[Y > εσ²/d + d/2], Y ~ N_Z(0, σ²). Tails are
// summed directly when sum is true, else by Euler–Maclaurin:
// Σ_{y≥m} f(y) = ∫_m^∞ f + f(m)/2 − f'(m)/12 + R with |R| far below 1e-20
// relative for σ ≥ 1000; the normaliser is σ√(2π) up to e^(−2π²σ²).
func discreteGaussianDelta(sigma, d, eps float64, sum bool) float64 {
	z := sigma * math.Sqrt(2*math.Pi)
	tail := func(a float64) float64 {
		m := math.Floor(a) + 1
		if sum {
			var s float64
			for y := m; ; y++ {
				t := math.Exp(-y * y / (2 * sigma * sigma))
				s += t
				if t < 1e-30*s {
					break
				}
			}
			return s / z
		}
		f := math.Exp(-m * m / (2 * sigma * sigma))
		integral := sigma * math.Sqrt(math.Pi/2) * math.Erfc(m/(sigma*math.Sqrt2))
		return (integral + f/2 + m/(sigma*sigma)*f/12) / z
	}
	return tail(eps*sigma*sigma/d-d/2) - math.Exp(eps)*tail(eps*sigma*sigma/d+d/2)
}

// TestGaussianDiscreteDelta recomputes the δ of the discrete Gaussian noise
// actually used (σ in grid steps, sensitivity floor(Δ/g) + 1 steps) and
// checks that it does not exceed the δ requested. The Euler–Maclaurin tail
// is first checked against direct summation at σ = 3000. Deterministic.
func TestGaussianDiscreteDelta(t *testing.T) {
	direct := discreteGaussianDelta(3000, 1000, 1, true)
	em := discreteGaussianDelta(3000, 1000, 1, false)
	if math.Abs(direct-em) > 1e-12*direct {
		t.Fatalf("Euler–Maclaurin δ %v, direct %v", em, direct)
	}
	for _, c := range []struct{ eps, delta, sens float64 }{
		{1, 1e-5, 1}, {0.1, 1e-6, 100}, {5, 1e-3, 0.5}, {2, 1e-5, 1}, {0.5, 1e-9, 3}, {0.01, 1e-5, 1}, {20, 1e-10, 7},
	} {
		m, err := NewGaussian(GaussianOptions{Epsilon: c.eps, Delta: c.delta, Sensitivity: c.sens})
		if err != nil {
			t.Fatal(err)
		}
		g := m.Granularity()
		steps := float64(m.sigmaSteps)
		d := math.Floor(c.sens/g) + 1
		if got := discreteGaussianDelta(steps, d, c.eps, false); got > c.delta {
			t.Errorf("ε=%v δ=%v Δ=%v: discrete δ = %v exceeds δ", c.eps, c.delta, c.sens, got)
		}
	}
}

// TestReachesMatchesBigIntegers compares the overflow-free int64 comparison
// of AboveThreshold with big-integer arithmetic on extreme and random
// values (deterministic).
func TestReachesMatchesBigIntegers(t *testing.T) {
	vals := []int64{0, 1, -1, 1 << 62, -1 << 62, 1<<62 - 1, math.MaxInt64, math.MinInt64 + 1, math.MinInt64, 12345, -98765}
	src := random.NewInsecureSeeded(1900)
	for i := 0; i < 200; i++ {
		vals = append(vals, int64(src.Uint64()))
	}
	clamp := func(v int64) int64 { return max(-1<<62, min(1<<62, v)) }
	for _, r := range vals {
		for _, k := range vals {
			for _, th := range vals[:12] {
				r, th := clamp(r), clamp(th)
				sum := new(big.Int).Add(big.NewInt(r), big.NewInt(k))
				want := sum.Cmp(big.NewInt(th)) >= 0
				if got := reaches(r, k, th); got != want {
					t.Fatalf("reaches(%d, %d, %d) = %v, want %v", r, k, th, got, want)
				}
			}
		}
	}
}
