package random

import (
	"math/bits"
	"sync"
	"testing"
)

func TestInsecureSeededIsDeterministic(t *testing.T) {
	a, b := NewInsecureSeeded(7), NewInsecureSeeded(7)
	c := NewInsecureSeeded(8)
	same := true
	for i := 0; i < 100; i++ {
		x, y, z := a.Uint64(), b.Uint64(), c.Uint64()
		if x != y {
			t.Fatalf("draw %d: same seed gave %d and %d", i, x, y)
		}
		if x != z {
			same = false
		}
	}
	if same {
		t.Fatal("seeds 7 and 8 gave the same stream")
	}
}

// TestSecureBitBalance checks that each of the 64 bit positions is set about
// half the time. With n = 1<<16 draws, a position's count is Binomial(n, 1/2)
// with standard deviation 128; the test fails beyond 7 standard deviations,
// a false-failure probability below 64 * 2.6e-12 < 2e-10.
func TestSecureBitBalance(t *testing.T) {
	const n = 1 << 16
	var counts [64]int
	s := NewSecure()
	for i := 0; i < n; i++ {
		v := s.Uint64()
		for v != 0 {
			j := bits.TrailingZeros64(v)
			counts[j]++
			v &= v - 1
		}
	}
	for j, c := range counts {
		if d := c - n/2; d > 7*128 || d < -7*128 {
			t.Errorf("bit %d set %d times of %d", j, c, n)
		}
	}
}

func TestSharedIsSafeForConcurrentUse(t *testing.T) {
	var wg sync.WaitGroup
	var src Shared
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				src.Uint64()
			}
		}()
	}
	wg.Wait()
}

func BenchmarkSecure(b *testing.B) {
	s := NewSecure()
	for i := 0; i < b.N; i++ {
		s.Uint64()
	}
}

func BenchmarkBorrowReturn(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s := Borrow()
			s.Uint64()
			Return(s)
		}
	})
}
