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
