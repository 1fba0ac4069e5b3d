package mechanism

import (
	"sync"
	"testing"
)

// TestConcurrentUse runs every mechanism from several goroutines with the
// default (pooled secure) source; run with -race.
func TestConcurrentUse(t *testing.T) {
	lap, _ := NewLaplace(LaplaceOptions{Epsilon: 1, Sensitivity: 1})
	geo, _ := NewGeometric(GeometricOptions{Epsilon: 1, Sensitivity: 1})
	gau, _ := NewGaussian(GaussianOptions{Epsilon: 1, Delta: 1e-5, Sensitivity: 1})
	brr, _ := NewBinaryRR(BinaryRROptions{Epsilon: 1})
	krr, _ := NewKaryRR(KaryRROptions{Epsilon: 1, K: 4})
	em, _ := NewExponential(ExponentialOptions{Epsilon: 1, Sensitivity: 1})
	pf, _ := NewReportNoisyMax(NoisyMaxOptions{Epsilon: 1, Sensitivity: 1})
	at, _ := NewAboveThreshold(AboveThresholdOptions{Epsilon: 1, Sensitivity: 1, Threshold: 1e9})
	scores := []float64{1, 2, 3}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if _, err := lap.Release(1); err != nil {
					t.Error(err)
				}
				geo.Release(1)
				if _, err := gau.Release(1); err != nil {
					t.Error(err)
				}
				brr.Randomize(true)
				if _, err := krr.Randomize(2); err != nil {
					t.Error(err)
				}
				if _, err := em.Select(scores); err != nil {
					t.Error(err)
				}
				if _, err := pf.Select(scores); err != nil {
					t.Error(err)
				}
				if _, err := at.Test(0); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}
