package audit

import (
	"math"
	"testing"
)

func TestClopperPearsonKnownValues(t *testing.T) {
	// Published two-sided 95% Clopper–Pearson intervals (each side 2.5%).
	tests := []struct {
		name   string
		k, n   int
		lo, hi float64
	}{
		{name: "5 of 10", k: 5, n: 10, lo: 0.187086, hi: 0.812914},
		{name: "0 of 10", k: 0, n: 10, lo: 0, hi: 0.308497},
		{name: "10 of 10", k: 10, n: 10, lo: 0.691503, hi: 1},
		{name: "1 of 20", k: 1, n: 20, lo: 0.001265, hi: 0.248733},
		{name: "50 of 100", k: 50, n: 100, lo: 0.398321, hi: 0.601679},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lo := ClopperPearsonLower(tc.k, tc.n, 0.025)
			hi := ClopperPearsonUpper(tc.k, tc.n, 0.025)
			if math.Abs(lo-tc.lo) > 1e-6 || math.Abs(hi-tc.hi) > 1e-6 {
				t.Errorf("interval = [%.6f, %.6f], want [%.6f, %.6f]", lo, hi, tc.lo, tc.hi)
			}
		})
	}
}

// The defining property: at the lower bound p, P(X ≥ k) = alpha; at the
// upper bound, P(X ≤ k) = alpha. Checked against gonum's binomial CDF at
// the sample sizes and failure probabilities the audits use.
func TestClopperPearsonDefiningTails(t *testing.T) {
	const alpha = 2.5e-7
	tests := []struct {
		name string
		k, n int
	}{
		{name: "rare", k: 3, n: 100000},
		{name: "one", k: 1, n: 100000},
		{name: "middle", k: 30000, n: 100000},
		{name: "almost all", k: 99990, n: 100000},
		{name: "small n", k: 4, n: 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lo := ClopperPearsonLower(tc.k, tc.n, alpha)
			upperTail := binomialTail(tc.k, tc.n, tc.n, lo)
			if math.Abs(upperTail-alpha)/alpha > 1e-4 {
				t.Errorf("P(X ≥ %d | p = %g) = %g, want %g", tc.k, lo, upperTail, alpha)
			}
			hi := ClopperPearsonUpper(tc.k, tc.n, alpha)
			lowerTail := binomialTail(0, tc.k, tc.n, hi)
			if math.Abs(lowerTail-alpha)/alpha > 1e-4 {
				t.Errorf("P(X ≤ %d | p = %g) = %g, want %g", tc.k, hi, lowerTail, alpha)
			}
			if !(lo < float64(tc.k)/float64(tc.n) && float64(tc.k)/float64(tc.n) < hi) {
				t.Errorf("interval [%g, %g] does not contain k/n = %g", lo, hi, float64(tc.k)/float64(tc.n))
			}
		})
	}
}

func TestClopperPearsonEdges(t *testing.T) {
	tests := []struct {
		name       string
		k, n       int
		alpha      float64
		wantLo     float64
		wantHi     float64
		wantNaN    bool
		closedForm bool
	}{
		{name: "zero successes", k: 0, n: 1000, alpha: 0.01, wantLo: 0, wantHi: 1 - math.Pow(0.01, 1.0/1000)},
		{name: "all successes", k: 1000, n: 1000, alpha: 0.01, wantLo: math.Pow(0.01, 1.0/1000), wantHi: 1},
		{name: "k above n", k: 11, n: 10, alpha: 0.01, wantNaN: true},
		{name: "negative k", k: -1, n: 10, alpha: 0.01, wantNaN: true},
		{name: "no trials", k: 0, n: 0, alpha: 0.01, wantNaN: true},
		{name: "alpha zero", k: 1, n: 10, alpha: 0, wantNaN: true},
		{name: "alpha NaN", k: 1, n: 10, alpha: math.NaN(), wantNaN: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lo := ClopperPearsonLower(tc.k, tc.n, tc.alpha)
			hi := ClopperPearsonUpper(tc.k, tc.n, tc.alpha)
			if tc.wantNaN {
				if !math.IsNaN(lo) || !math.IsNaN(hi) {
					t.Errorf("got [%g, %g], want NaN", lo, hi)
				}
				return
			}
			if math.Abs(lo-tc.wantLo) > 1e-12 || math.Abs(hi-tc.wantHi) > 1e-12 {
				t.Errorf("got [%g, %g], want [%g, %g]", lo, hi, tc.wantLo, tc.wantHi)
			}
		})
	}
}

// binomialTail returns P(from ≤ X ≤ to) for X ~ Binomial(n, p), summing the
// probability mass function term by term in log space.
func binomialTail(from, to, n int, p float64) float64 {
	lgn, _ := math.Lgamma(float64(n + 1))
	sum := 0.0
	for j := from; j <= to; j++ {
		lj, _ := math.Lgamma(float64(j + 1))
		lnj, _ := math.Lgamma(float64(n - j + 1))
		sum += math.Exp(lgn - lj - lnj + float64(j)*math.Log(p) + float64(n-j)*math.Log1p(-p))
	}
	return sum
}
