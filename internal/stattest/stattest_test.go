package stattest

import (
	"math"
	"testing"
)

func TestZLimit(t *testing.T) {
	if z := ZLimit(1e-8); math.Abs(z-5.7307) > 1e-3 {
		t.Fatalf("ZLimit(1e-8) = %v, want 5.7307", z)
	}
}

// TestChiSquareAcceptsExactCounts checks that counts equal to their
// expectations pass (statistic 0).
func TestChiSquareAcceptsExactCounts(t *testing.T) {
	ChiSquare(t, "exact", []int{250, 250, 500}, []float64{0.25, 0.25, 0.5}, 1000, 1e-8)
}

// TestChiSquareRejectsSkew checks that a grossly skewed sample fails.
func TestChiSquareRejectsSkew(t *testing.T) {
	ft := &testing.T{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		ChiSquare(ft, "skewed", []int{900, 50, 50}, []float64{0.25, 0.25, 0.5}, 1000, 1e-8)
	}()
	<-done
	if !ft.Failed() {
		t.Fatal("a skewed sample passed the chi-square check")
	}
}

// TestBinned checks that draws from the stated distribution pass and draws
// from another fail: a deterministic stream of evenly spread points in
// [0, 1) against the uniform CDF, then against the CDF of x².
func TestBinned(t *testing.T) {
	edges := []float64{0.1, 0.25, 0.5, 0.75, 0.9}
	const n = 20000
	stream := func() func() float64 {
		i := 0
		return func() float64 { i++; return math.Mod(float64(i)*0.6180339887498949, 1) }
	}
	uniform := func(x float64) float64 { return math.Min(math.Max(x, 0), 1) }
	Binned(t, "uniform", uniform, edges, n, stream(), 1e-8)

	ft := &testing.T{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		square := func(x float64) float64 { return math.Sqrt(uniform(x)) } // P(U² ≤ x)
		Binned(ft, "not squared", square, edges, n, stream(), 1e-8)
	}()
	<-done
	if !ft.Failed() {
		t.Fatal("uniform draws passed as the square of a uniform")
	}
}
