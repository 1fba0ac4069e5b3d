package accounting

import "testing"

func BenchmarkZCDPToEpsilon(b *testing.B) {
	for b.Loop() {
		if _, err := ZCDPToEpsilon(0.5, 1e-5); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSpendZCDP is one admission to a zCDP budget, which converts the
// new total to (ε, δ), plus reading the spent amount.
func BenchmarkSpendZCDP(b *testing.B) {
	bud, err := NewBudget(EpsDelta{Epsilon: 1e9, Delta: 1e-5}, ZCDP)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := bud.Spend(Cost{Epsilon: 0.1, Rho: 0x1p-10}); err != nil {
			b.Fatal(err)
		}
		_ = bud.Spent()
	}
}

func BenchmarkSpendBasic(b *testing.B) {
	bud, err := NewBudget(EpsDelta{Epsilon: 1e15}, Basic)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := bud.Spend(Pure(0.1)); err != nil {
			b.Fatal(err)
		}
		_ = bud.Spent()
	}
}
