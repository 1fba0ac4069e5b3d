package dpplan

import (
	"testing"
)

// BenchmarkAverageExact times one AVG interval by test inversion (Adult's
// ages at a third of ε = 1, a group of 311 people).
func BenchmarkAverageExact(b *testing.B) {
	for i := 0; i < b.N; i++ {
		averageExact(311*(38.6-53.5)+float64(i%97), 311+float64(i%7), 219, 1.0/(1<<14), 6, 0.05, 17, 90)
	}
}
