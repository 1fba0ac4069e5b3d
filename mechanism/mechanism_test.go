package mechanism

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/internal/stattest"
)

// falseFailure is the false-failure probability of each statistical check
// in this file; each test says how many checks it makes.
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

var badEpsilons = []float64{0, -1, math.NaN(), math.Inf(1), math.Inf(-1)}
var badSensitivities = []float64{0, -2, math.NaN(), math.Inf(1)}

// TestConstructorsRejectBadOptions checks that every constructor returns an
// error (never a panic, never an endless loop) naming the bad parameter.
func TestConstructorsRejectBadOptions(t *testing.T) {
	type tc struct {
		name string
		make func() error
		want string // a fragment the error must contain
	}
	var cases []tc
	for _, e := range badEpsilons {
		e := e
		cases = append(cases,
			tc{"laplace eps " + ftoa(e), func() error { _, err := NewLaplace(LaplaceOptions{Epsilon: e, Sensitivity: 1}); return err }, "epsilon"},
			tc{"geometric eps " + ftoa(e), func() error {
				_, err := NewGeometric(GeometricOptions{Epsilon: e, Sensitivity: 1})
				return err
			}, "epsilon"},
			tc{"gaussian eps " + ftoa(e), func() error {
				_, err := NewGaussian(GaussianOptions{Epsilon: e, Delta: 1e-5, Sensitivity: 1})
				return err
			}, "epsilon"},
			tc{"binary rr eps " + ftoa(e), func() error { _, err := NewBinaryRR(BinaryRROptions{Epsilon: e}); return err }, ""},
			tc{"kary rr eps " + ftoa(e), func() error { _, err := NewKaryRR(KaryRROptions{Epsilon: e, K: 3}); return err }, "epsilon"},
			tc{"exponential eps " + ftoa(e), func() error {
				_, err := NewExponential(ExponentialOptions{Epsilon: e, Sensitivity: 1})
				return err
			}, "epsilon"},
			tc{"noisy max eps " + ftoa(e), func() error {
				_, err := NewReportNoisyMax(NoisyMaxOptions{Epsilon: e, Sensitivity: 1})
				return err
			}, "epsilon"},
			tc{"above threshold eps " + ftoa(e), func() error {
				_, err := NewAboveThreshold(AboveThresholdOptions{Epsilon: e, Sensitivity: 1})
				return err
			}, "epsilon"},
			tc{"analytic sigma eps " + ftoa(e), func() error { _, err := AnalyticGaussianSigma(e, 1e-5, 1); return err }, "epsilon"},
			tc{"classic sigma eps " + ftoa(e), func() error { _, err := ClassicGaussianSigma(e, 1e-5, 1); return err }, "epsilon"},
		)
	}
	for _, s := range badSensitivities {
		s := s
		cases = append(cases,
			tc{"laplace sensitivity " + ftoa(s), func() error { _, err := NewLaplace(LaplaceOptions{Epsilon: 1, Sensitivity: s}); return err }, "sensitivity"},
			tc{"gaussian sensitivity " + ftoa(s), func() error {
				_, err := NewGaussian(GaussianOptions{Epsilon: 1, Delta: 1e-5, Sensitivity: s})
				return err
			}, "sensitivity"},
			tc{"exponential sensitivity " + ftoa(s), func() error {
				_, err := NewExponential(ExponentialOptions{Epsilon: 1, Sensitivity: s})
				return err
			}, "sensitivity"},
			tc{"noisy max sensitivity " + ftoa(s), func() error {
				_, err := NewReportNoisyMax(NoisyMaxOptions{Epsilon: 1, Sensitivity: s})
				return err
			}, "sensitivity"},
			tc{"above threshold sensitivity " + ftoa(s), func() error {
				_, err := NewAboveThreshold(AboveThresholdOptions{Epsilon: 1, Sensitivity: s})
				return err
			}, "sensitivity"},
		)
	}
	for _, d := range []float64{0, 1, 1.5, -1e-5, math.NaN(), math.Inf(1)} {
		d := d
		cases = append(cases,
			tc{"gaussian delta " + ftoa(d), func() error {
				_, err := NewGaussian(GaussianOptions{Epsilon: 1, Delta: d, Sensitivity: 1})
				return err
			}, "delta"},
			tc{"classic delta " + ftoa(d), func() error { _, err := ClassicGaussianSigma(0.5, d, 1); return err }, "delta"},
		)
	}
	cases = append(cases,
		tc{"geometric sensitivity 0", func() error { _, err := NewGeometric(GeometricOptions{Epsilon: 1}); return err }, "sensitivity = 0"},
		tc{"geometric sensitivity -3", func() error {
			_, err := NewGeometric(GeometricOptions{Epsilon: 1, Sensitivity: -3})
			return err
		}, "sensitivity = -3"},
		tc{"geometric scale too large", func() error {
			_, err := NewGeometric(GeometricOptions{Epsilon: 1e-9, Sensitivity: math.MaxInt64})
			return err
		}, "2^52"},
		tc{"laplace epsilon too small", func() error {
			_, err := NewLaplace(LaplaceOptions{Epsilon: 1e-20, Sensitivity: 1})
			return err
		}, "epsilon"},
		tc{"gaussian epsilon too small", func() error {
			_, err := NewGaussian(GaussianOptions{Epsilon: 1e-10, Delta: 1e-12, Sensitivity: 1})
			return err
		}, "larger epsilon"},
		tc{"classic epsilon 1", func() error { _, err := ClassicGaussianSigma(1, 1e-5, 1); return err }, "epsilon < 1"},
		tc{"classic epsilon 2", func() error { _, err := ClassicGaussianSigma(2, 1e-5, 1); return err }, "epsilon < 1"},
		tc{"binary rr neither", func() error { _, err := NewBinaryRR(BinaryRROptions{}); return err }, "neither"},
		tc{"binary rr both", func() error { _, err := NewBinaryRR(BinaryRROptions{Epsilon: 1, P: 0.7}); return err }, "exactly one"},
		tc{"binary rr p 0.5", func() error { _, err := NewBinaryRR(BinaryRROptions{P: 0.5}); return err }, "p = 0.5"},
		tc{"binary rr p 1", func() error { _, err := NewBinaryRR(BinaryRROptions{P: 1}); return err }, "p = 1"},
		tc{"binary rr p 0.3", func() error { _, err := NewBinaryRR(BinaryRROptions{P: 0.3}); return err }, "p = 0.3"},
		tc{"binary rr p NaN", func() error { _, err := NewBinaryRR(BinaryRROptions{P: math.NaN()}); return err }, "NaN"},
		tc{"binary rr eps tiny", func() error { _, err := NewBinaryRR(BinaryRROptions{Epsilon: 1e-300}); return err }, "too small"},
		tc{"kary rr k 1", func() error { _, err := NewKaryRR(KaryRROptions{Epsilon: 1, K: 1}); return err }, "k = 1"},
		tc{"kary rr k 0", func() error { _, err := NewKaryRR(KaryRROptions{Epsilon: 1}); return err }, "k = 0"},
		tc{"kary rr k -4", func() error { _, err := NewKaryRR(KaryRROptions{Epsilon: 1, K: -4}); return err }, "k = -4"},
		tc{"noisy max noise 7", func() error {
			_, err := NewReportNoisyMax(NoisyMaxOptions{Epsilon: 1, Sensitivity: 1, Noise: 7})
			return err
		}, "noise = 7"},
		tc{"above threshold NaN threshold", func() error {
			_, err := NewAboveThreshold(AboveThresholdOptions{Epsilon: 1, Sensitivity: 1, Threshold: math.NaN()})
			return err
		}, "threshold = NaN"},
		tc{"above threshold Inf threshold", func() error {
			_, err := NewAboveThreshold(AboveThresholdOptions{Epsilon: 1, Sensitivity: 1, Threshold: math.Inf(-1)})
			return err
		}, "threshold = -Inf"},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.make()
			if err == nil {
				t.Fatal("want an error")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
		})
	}
}

func ftoa(v float64) string { return fmt.Sprint(v) }

// TestReleaseErrors: NaN and ±Inf values and scores are errors, never a
// silent 0.
func TestReleaseErrors(t *testing.T) {
	lap, _ := NewLaplace(LaplaceOptions{Epsilon: 1, Sensitivity: 1})
	gau, _ := NewGaussian(GaussianOptions{Epsilon: 1, Delta: 1e-5, Sensitivity: 1})
	em, _ := NewExponential(ExponentialOptions{Epsilon: 1, Sensitivity: 1})
	pf, _ := NewReportNoisyMax(NoisyMaxOptions{Epsilon: 1, Sensitivity: 1})
	at, _ := NewAboveThreshold(AboveThresholdOptions{Epsilon: 1, Sensitivity: 1})
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := lap.Release(x); err == nil {
			t.Errorf("laplace Release(%v): want an error", x)
		}
		if _, err := gau.Release(x); err == nil {
			t.Errorf("gaussian Release(%v): want an error", x)
		}
		if _, err := em.Select([]float64{1, x}); err == nil {
			t.Errorf("exponential Select with %v: want an error", x)
		}
		if _, err := pf.Select([]float64{x}); err == nil {
			t.Errorf("noisy max Select with %v: want an error", x)
		}
		if _, err := at.Test(x); err == nil {
			t.Errorf("above threshold Test(%v): want an error", x)
		}
	}
	if _, err := em.Select(nil); err == nil {
		t.Error("exponential Select(nil): want an error")
	}
	if _, err := pf.Select([]float64{}); err == nil {
		t.Error("noisy max Select(empty): want an error")
	}
}

// TestExactWithHugeEpsilon: with ε = 1e20 the numeric mechanisms return x
// exactly (x on the grid) and the selections return the best candidate.
func TestExactWithHugeEpsilon(t *testing.T) {
	const eps = 1e20
	xs := []float64{0, 1.5, -3.25, 1e6 + 0.5, -123456.75, 0x1p-20, 1e15}
	for _, sens := range []float64{1, 0.001, 1000} {
		lap, err := NewLaplace(LaplaceOptions{Epsilon: eps, Sensitivity: sens})
		if err != nil {
			t.Fatal(err)
		}
		gau, err := NewGaussian(GaussianOptions{Epsilon: eps, Delta: 1e-5, Sensitivity: sens})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range xs {
			want := lap.grid.AddNoise(x, 0)
			for i := 0; i < 20; i++ {
				if got, _ := lap.Release(x); got != want {
					t.Fatalf("laplace Δ=%v Release(%v) = %v, want %v", sens, x, got, want)
				}
				wantG := gau.grid.AddNoise(x, 0)
				if got, _ := gau.Release(x); got != wantG {
					t.Fatalf("gaussian Δ=%v Release(%v) = %v, want %v", sens, x, got, wantG)
				}
			}
		}
		if iv := lap.Interval(0.99); iv != lap.Granularity()/2 {
			t.Errorf("laplace Δ=%v Interval(0.99) = %v, want half a grid step %v", sens, iv, lap.Granularity()/2)
		}
	}
	// On the sensitivity-1 grid (2^-20) these values are exact.
	lap, _ := NewLaplace(LaplaceOptions{Epsilon: eps, Sensitivity: 1})
	for _, x := range xs {
		if got, _ := lap.Release(x); got != x {
			t.Errorf("laplace Release(%v) = %v, want x", x, got)
		}
	}
	geo, err := NewGeometric(GeometricOptions{Epsilon: eps, Sensitivity: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []int64{0, 5, -7, 1 << 62, math.MaxInt64, math.MinInt64} {
		for i := 0; i < 20; i++ {
			if got := geo.Release(x); got != x {
				t.Fatalf("geometric Release(%d) = %d, want x", x, got)
			}
		}
	}
	scores := []float64{3, 9.5, -2, 9.25, 0}
	em, _ := NewExponential(ExponentialOptions{Epsilon: eps, Sensitivity: 1})
	pf, _ := NewReportNoisyMax(NoisyMaxOptions{Epsilon: eps, Sensitivity: 1})
	gu, _ := NewReportNoisyMax(NoisyMaxOptions{Epsilon: eps, Sensitivity: 1, Noise: GumbelNoise})
	for i := 0; i < 50; i++ {
		for name, sel := range map[string]interface{ Select([]float64) (int, error) }{"exponential": em, "permute-and-flip": pf, "gumbel": gu} {
			if got, err := sel.Select(scores); err != nil || got != 1 {
				t.Fatalf("%s Select = %d, %v; want 1", name, got, err)
			}
		}
	}
	at, _ := NewAboveThreshold(AboveThresholdOptions{Epsilon: eps, Sensitivity: 1, Threshold: 10})
	for _, q := range []float64{1, 9.9, -1e9, 9.999} {
		if above, err := at.Test(q); err != nil || above {
			t.Fatalf("above threshold Test(%v) = %v, %v; want false", q, above, err)
		}
	}
	if above, err := at.Test(10); err != nil || !above {
		t.Fatalf("above threshold Test(10) = %v, %v; want true", above, err)
	}
	if _, err := at.Test(0); !errors.Is(err, ErrAboveThresholdDone) {
		t.Fatalf("a second Test after true: err = %v, want ErrAboveThresholdDone", err)
	}
}

// TestGaussianSigmaReferences checks the reference values of the analytic
// and classic calibrations (Δ₂ = 1, δ = 1e-5) and the direction of the
// analytic condition: the returned σ satisfies it, a slightly smaller one
// does not.
func TestGaussianSigmaReferences(t *testing.T) {
	cases := []struct {
		eps               float64
		classic, analytic float64
	}{
		{1, 4.8448, 3.7306},
		{0.1, 48.448, 30.750},
		{2, 2.4224, 1.9938},
	}
	for _, c := range cases {
		t.Run(ftoa(c.eps), func(t *testing.T) {
			a, err := AnalyticGaussianSigma(c.eps, 1e-5, 1)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(a-c.analytic) > 1e-4*c.analytic {
				t.Errorf("analytic σ = %v, want %v", a, c.analytic)
			}
			if d := analyticDelta(c.eps, a); d > 1e-5 {
				t.Errorf("analytic σ = %v gives δ = %v > 1e-5", a, d)
			}
			if d := analyticDelta(c.eps, a*(1-1e-6)); d <= 1e-5 {
				t.Errorf("σ·(1−1e-6) still gives δ = %v ≤ 1e-5: σ is not the smallest", d)
			}
			if cl := classicSigma(c.eps, 1e-5, 1); math.Abs(cl-c.classic) > 1e-4*c.classic {
				t.Errorf("classic formula σ = %v, want %v", cl, c.classic)
			}
			_, err = ClassicGaussianSigma(c.eps, 1e-5, 1)
			if (err == nil) != (c.eps < 1) {
				t.Errorf("ClassicGaussianSigma(ε = %v) error = %v; want an error exactly when ε ≥ 1", c.eps, err)
			}
			// σ scales linearly with the sensitivity.
			a3, _ := AnalyticGaussianSigma(c.eps, 1e-5, 3)
			if math.Abs(a3-3*a) > 1e-9*a3 {
				t.Errorf("σ(Δ=3) = %v, want 3σ(Δ=1) = %v", a3, 3*a)
			}
		})
	}
	if c, _ := ClassicGaussianSigma(0.5, 1e-5, 2); math.Abs(c-2*2*4.8448) > 1e-3 {
		t.Errorf("ClassicGaussianSigma(0.5, 1e-5, 2) = %v, want %v", c, 4*4.8448)
	}
	// Extreme parameters give finite, positive σ.
	for _, p := range [][2]float64{{1e20, 1e-5}, {1e-6, 1e-5}, {1, 1e-300}, {50, 0.999}} {
		s, err := AnalyticGaussianSigma(p[0], p[1], 1)
		if err != nil || !(s > 0) || math.IsInf(s, 0) {
			t.Errorf("AnalyticGaussianSigma(%v, %v) = %v, %v", p[0], p[1], s, err)
		}
		if d := analyticDelta(p[0], s); d > p[1] {
			t.Errorf("AnalyticGaussianSigma(%v, %v) = %v gives δ = %v", p[0], p[1], s, d)
		}
	}
}

// TestCosts checks each mechanism's stated cost, including the known
// permute-and-flip bug (claiming ε²/8).
func TestCosts(t *testing.T) {
	lap, _ := NewLaplace(LaplaceOptions{Epsilon: 0.5, Sensitivity: 1})
	geo, _ := NewGeometric(GeometricOptions{Epsilon: 0.5, Sensitivity: 1})
	em, _ := NewExponential(ExponentialOptions{Epsilon: 0.5, Sensitivity: 1})
	pf, _ := NewReportNoisyMax(NoisyMaxOptions{Epsilon: 0.5, Sensitivity: 1})
	gu, _ := NewReportNoisyMax(NoisyMaxOptions{Epsilon: 0.5, Sensitivity: 1, Noise: GumbelNoise})
	at, _ := NewAboveThreshold(AboveThresholdOptions{Epsilon: 0.5, Sensitivity: 1})
	cases := []struct {
		name string
		got  accounting.Cost
		want accounting.Cost
	}{
		{"laplace", lap.Cost(), accounting.Pure(0.5)},
		{"geometric", geo.Cost(), accounting.Pure(0.5)},
		{"exponential", em.Cost(), accounting.Cost{Epsilon: 0.5, Rho: 0.5 * 0.5 / 8}},
		{"permute-and-flip", pf.Cost(), accounting.Cost{Epsilon: 0.5, Rho: 0.5 * 0.5 / 2}},
		{"gumbel", gu.Cost(), accounting.Cost{Epsilon: 0.5, Rho: 0.5 * 0.5 / 8}},
		{"above threshold", at.Cost(), accounting.Pure(0.5)},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s cost = %v, want %v", c.name, c.got, c.want)
		}
		if err := c.got.Validate(); err != nil {
			t.Errorf("%s cost: %v", c.name, err)
		}
	}
	gau, _ := NewGaussian(GaussianOptions{Epsilon: 1, Delta: 1e-5, Sensitivity: 1})
	c := gau.Cost()
	d := 1 + gau.Granularity()
	if c.Epsilon != 1 || c.Delta != 1e-5 || c.RhoDelta != 0 {
		t.Errorf("gaussian cost = %v, want ε=1 δ=1e-5", c)
	}
	if want := d * d / (2 * gau.Sigma() * gau.Sigma()); c.Rho < want || c.Rho > want*(1+1e-12) {
		t.Errorf("gaussian ρ = %v, want Δ'²/(2σ²) = %v", c.Rho, want)
	}
	// σ as used is the analytic σ for Δ + g, raised by 2^-16, and rounded up
	// by less than 2^-19 more.
	a, _ := AnalyticGaussianSigma(1, 1e-5, d)
	if gau.Sigma() < a*(1+0x1p-16) || gau.Sigma() > a*(1+0x1p-16+0x1p-19) {
		t.Errorf("gaussian σ = %v, want in [%v, %v·(1+2^-16+2^-19)]", gau.Sigma(), a*(1+0x1p-16), a)
	}
	// Randomized response: ε of the probability used, never above the ε
	// requested and within 1e-9 of it.
	for _, eps := range []float64{0.01, 0.5, 1, 3, 10, 50} {
		b, err := NewBinaryRR(BinaryRROptions{Epsilon: eps})
		if err != nil {
			t.Fatal(err)
		}
		p := b.P()
		if got := math.Log(p / (1 - p)); got > eps {
			t.Errorf("binary rr ε=%v: p = %v has ε' = %v > ε", eps, p, got)
		}
		if ce := b.Cost().Epsilon; ce > eps || (eps < 20 && ce < eps*(1-1e-12)) {
			t.Errorf("binary rr ε=%v: cost ε = %v", eps, ce)
		}
		k, err := NewKaryRR(KaryRROptions{Epsilon: eps, K: 7})
		if err != nil {
			t.Fatal(err)
		}
		if got := math.Log(k.P() / k.Q()); got > eps {
			t.Errorf("k-ary rr ε=%v: p/q gives ε' = %v > ε", eps, got)
		}
		if ce := k.Cost().Epsilon; ce > eps {
			t.Errorf("k-ary rr ε=%v: cost ε = %v", eps, ce)
		}
	}
	b, _ := NewBinaryRR(BinaryRROptions{P: 0.75})
	if ce := b.Cost().Epsilon; ce < math.Log(3) || ce > math.Log(3)*(1+1e-12) {
		t.Errorf("binary rr p = 3/4: cost ε = %v, want ln 3 rounded up", ce)
	}
}

// TestScalesIncludeTheGrid: the Laplace scale is at least (Δ + g)/ε and
// within 2^-39 of it; the grid depends on Δ only.
func TestScalesIncludeTheGrid(t *testing.T) {
	for _, c := range []struct{ eps, delta, sens float64 }{{1e-6, 1e-5, 1}, {1e-8, 1e-5, 3}, {1e3, 1e-5, 1}, {1e-3, 1e-12, 1e-300}, {0.5, 0.5, 1e300}} {
		m, err := NewGaussian(GaussianOptions{Epsilon: c.eps, Delta: c.delta, Sensitivity: c.sens})
		if err != nil {
			t.Fatalf("gaussian ε=%v δ=%v Δ=%v: %v", c.eps, c.delta, c.sens, err)
		}
		if v, err := m.Release(1); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("gaussian ε=%v δ=%v Δ=%v: Release = %v, %v", c.eps, c.delta, c.sens, v, err)
		}
		if c := m.Cost(); c.Validate() != nil {
			t.Errorf("gaussian cost %v: %v", c, c.Validate())
		}
	}
	for _, c := range []struct{ eps, sens float64 }{{1, 1}, {0.1, 3}, {2, 1e-300}, {0.5, 1e300}, {1e-9, 1}, {0x1p-40, 7}} {
		lap, err := NewLaplace(LaplaceOptions{Epsilon: c.eps, Sensitivity: c.sens})
		if err != nil {
			t.Fatalf("ε=%v Δ=%v: %v", c.eps, c.sens, err)
		}
		g := lap.Granularity()
		want := (c.sens + g) / c.eps
		if b := lap.Scale(); !(b >= want*(1-1e-15)) || b > want*(1+0x1p-30) {
			t.Errorf("ε=%v Δ=%v: scale %v, want (Δ+g)/ε = %v", c.eps, c.sens, b, want)
		}
		if g > c.sens*0x1p-19 && c.eps > 1e-6 {
			t.Errorf("ε=%v Δ=%v: grid %v coarser than Δ·2^-19", c.eps, c.sens, g)
		}
		if v, err := lap.Release(1); err != nil || math.IsNaN(v) {
			t.Errorf("ε=%v Δ=%v: Release = %v, %v", c.eps, c.sens, v, err)
		}
	}
	geo, _ := NewGeometric(GeometricOptions{Epsilon: 0.3, Sensitivity: 3})
	if b := geo.Scale(); b < 10 || b > 10*(1+0x1p-39) {
		t.Errorf("geometric scale %v, want 10", b)
	}
}
