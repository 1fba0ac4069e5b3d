package accounting

import "testing"

// TestRecord: Record adds past the limit (a budget rebuilt from its
// releases must hold whatever they were), RecordN(c, n) equals n Records,
// and Sums states the exact rationals.
func TestRecord(t *testing.T) {
	tests := []struct {
		name  string
		costs []Cost
		n     int
		want  ExactSums
	}{
		{"none", nil, 0, ExactSums{"0", "0", "0", "0", 0}},
		{"ten tenths: 1 + 2⁻⁵⁴", []Cost{Pure(0.1)}, 10, ExactSums{Epsilon: "18014398509481985/18014398509481984", Delta: "0", Rho: "", RhoDelta: "0", Releases: 10}},
		{"past the limit", []Cost{Pure(3), Approximate(1, 1e-6)}, 1, ExactSums{Epsilon: "4", Delta: "", Rho: "5", RhoDelta: "", Releases: 2}},
		{"rho only", []Cost{{Rho: 0.125}}, 8, ExactSums{Epsilon: "0", Delta: "0", Rho: "1", RhoDelta: "0", Releases: 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			one, _ := NewBudget(EpsDelta{Epsilon: 1, Delta: 1e-9}, Basic)
			many, _ := NewBudget(EpsDelta{Epsilon: 1, Delta: 1e-9}, Basic)
			for _, c := range tt.costs {
				for range tt.n {
					if err := one.Record(c); err != nil {
						t.Fatal(err)
					}
				}
				if err := many.RecordN(c, tt.n); err != nil {
					t.Fatal(err)
				}
			}
			got := one.Sums()
			if got != many.Sums() {
				t.Fatalf("Record n times gives %v, RecordN %v", got, many.Sums())
			}
			for _, f := range []struct{ name, got, want string }{
				{"epsilon", got.Epsilon, tt.want.Epsilon}, {"delta", got.Delta, tt.want.Delta},
				{"rho", got.Rho, tt.want.Rho}, {"rho_delta", got.RhoDelta, tt.want.RhoDelta},
			} {
				if f.want != "" && f.got != f.want {
					t.Errorf("sum_%s = %s, want %s", f.name, f.got, f.want)
				}
			}
			if got.Releases != tt.want.Releases {
				t.Errorf("releases = %d, want %d", got.Releases, tt.want.Releases)
			}
		})
	}
	b, _ := NewBudget(EpsDelta{Epsilon: 1}, Basic)
	if err := b.Record(Cost{Epsilon: -1}); err == nil {
		t.Error("Record accepted a negative cost")
	}
	if err := b.RecordN(Pure(1), -2); err == nil {
		t.Error("RecordN accepted a negative count")
	}
}

// TestBudgetFromSums: a budget rebuilt from its sums has the same sums
// and admits exactly what the original admits.
func TestBudgetFromSums(t *testing.T) {
	a, _ := NewBudget(EpsDelta{Epsilon: 1, Delta: 1e-6}, Basic)
	for range 3 {
		if err := a.Spend(Cost{Epsilon: 0.1, Delta: 1e-7}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := BudgetFromSums(a.Limit(), a.Rule(), a.Sums())
	if err != nil || b.Sums() != a.Sums() || b.Spent() != a.Spent() {
		t.Fatalf("rebuilt %v %v, want %v", b.Sums(), err, a.Sums())
	}
	if (a.Check(Pure(0.7)) == nil) != (b.Check(Pure(0.7)) == nil) {
		t.Error("the rebuilt budget admits differently")
	}
	for _, bad := range []ExactSums{{Epsilon: "-1/2"}, {Delta: "x"}, {Releases: -1}} {
		if _, err := BudgetFromSums(a.Limit(), a.Rule(), bad); err == nil {
			t.Errorf("sums %v accepted", bad)
		}
	}
}
