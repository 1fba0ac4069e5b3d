// Package stattest holds the checks that dpstat's statistical tests share:
// a chi-square goodness-of-fit check with a stated false-failure
// probability, the matching normal quantile, and the switch for longer
// runs.
package stattest

import (
	"os"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// LongFactor returns 20 when the environment sets DPSTAT_LONG=1 and 1
// otherwise. Statistical tests multiply their sample sizes by it for a
// slower, more sensitive run; their stated false-failure probabilities hold
// for either size.
func LongFactor() int {
	if os.Getenv("DPSTAT_LONG") == "1" {
		return 20
	}
	return 1
}

// ZLimit returns the two-sided standard normal quantile for falseFailure:
// a correct estimator lands more than ZLimit standard errors from its
// expectation with probability falseFailure (≈ 5.73 for 1e-8).
func ZLimit(falseFailure float64) float64 {
	return distuv.UnitNormal.Quantile(1 - falseFailure/2)
}

// ChiSquare compares observed counts of n draws with the probabilities of
// their cells (which must sum to 1, tails lumped by the caller) and fails
// t if the chi-square statistic exceeds its 1 − falseFailure quantile. A
// cell with an expected count below 5 is a mistake in the test and stops
// it.
func ChiSquare(t testing.TB, name string, observed []int, probs []float64, n int, falseFailure float64) {
	t.Helper()
	var stat float64
	for i, o := range observed {
		e := probs[i] * float64(n)
		if e < 5 {
			t.Fatalf("%s: cell %d has expected count %v < 5", name, i, e)
		}
		d := float64(o) - e
		stat += d * d / e
	}
	df := float64(len(observed) - 1)
	limit := distuv.ChiSquared{K: df}.Quantile(1 - falseFailure)
	if stat > limit {
		t.Errorf("%s: chi-square %.2f with %v degrees of freedom exceeds %.2f (observed %v, probabilities %v)", name, stat, df, limit, observed, probs)
	}
}

// Binned draws n values, counts them in the bins (−∞, edges[0]],
// (edges[0], edges[1]], …, (edges[len−1], +∞), and runs ChiSquare against
// the bin probabilities that cdf (P(X ≤ x)) gives. edges must increase.
func Binned(t testing.TB, name string, cdf func(x float64) float64, edges []float64, n int, draw func() float64, falseFailure float64) {
	t.Helper()
	probs := make([]float64, len(edges)+1)
	prev := 0.0
	for i, e := range edges {
		c := cdf(e)
		probs[i] = c - prev
		prev = c
	}
	probs[len(edges)] = 1 - prev
	obs := make([]int, len(probs))
	for i := 0; i < n; i++ {
		x := draw()
		j := 0
		for j < len(edges) && x > edges[j] {
			j++
		}
		obs[j]++
	}
	ChiSquare(t, name, obs, probs, n, falseFailure)
}
