package dpplan

import (
	"math"
	"testing"
)

// TestSmallestEpsilon: for monotone predicates with a threshold anywhere in
// the search range, the ε found has at most EpsilonDigits significant
// digits, meets the predicate, and ε·(1 − 1e-3) does not; the number of
// calls is bounded; a predicate nothing meets is reported.
func TestSmallestEpsilon(t *testing.T) {
	tests := []struct {
		name      string
		threshold float64
		want      float64 // 0: only check the properties
	}{
		{"on the grid", 0.25, 0.25},
		{"just above a grid value", 0.250000001, 0.2501},
		{"just below a power of ten", 0.99995, 1},
		{"a power of ten", 1, 1},
		{"just above a power of ten", 1.0000001, 1.001},
		{"small", 3.3333e-7, 3.334e-7},
		{"large", 12345.6, 12350},
		{"irrational", math.Pi, 3.142},
		{"smallest", MinSearchEpsilon / 2, MinSearchEpsilon},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			meets := func(e float64) bool { calls++; return e >= tt.threshold }
			eps, ok := SmallestEpsilon(meets)
			if !ok || !meets(eps) {
				t.Fatalf("ε=%v, ok=%v: want one that meets ε ≥ %v", eps, ok, tt.threshold)
			}
			if tt.want != 0 && eps != tt.want {
				t.Errorf("ε=%v, want %v", eps, tt.want)
			}
			if eps > MinSearchEpsilon && meets(eps*(1-1e-3)) {
				t.Errorf("ε·(1−1e-3)=%v also meets", eps*(1-1e-3))
			}
			if calls > SearchSteps+8 {
				t.Errorf("%d calls, want at most %d", calls, SearchSteps+8)
			}
		})
	}
	if eps, ok := SmallestEpsilon(func(float64) bool { return false }); ok || eps != MaxSearchEpsilon {
		t.Errorf("a predicate nothing meets: %v, %v", eps, ok)
	}
}

// TestGridAbove: the grid of EpsilonDigits significant digits.
func TestGridAbove(t *testing.T) {
	for _, tc := range []struct{ x, want float64 }{
		{0.18429641, 0.1843}, {0.1843, 0.1843}, {9.9991, 10}, {1e-9, 1e-9}, {123456, 123500}, {7, 7},
	} {
		if got := gridAbove(tc.x).value(); got != tc.want {
			t.Errorf("gridAbove(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
	g := gridAbove(1)
	if p := g.prev().value(); p != 0.9999 {
		t.Errorf("the grid value below 1 is %v, want 0.9999", p)
	}
}
