package accounting

import (
	"errors"
	"strings"
	"testing"
)

// TestSpendAllMatchesSpend checks that SpendAll decides as one Spend per
// budget would: the same budgets refused, the same sums after, at
// ε = 1e20 exactly.
func TestSpendAllMatchesSpend(t *testing.T) {
	tests := []struct {
		name   string
		rule   Rule
		limit  EpsDelta
		before [][]Cost // costs already admitted by each budget
		c      Cost
		most   int // the budget with the most spent after, when all fit
	}{
		{"basic fits", Basic, EpsDelta{Epsilon: 1, Delta: 1e-6},
			[][]Cost{{Pure(0.25)}, {Pure(0.5), {Epsilon: 0.1, Delta: 1e-7}}, nil}, Pure(0.25), 1},
		{"basic exact fit at 1e20", Basic, EpsDelta{Epsilon: 2e20},
			[][]Cost{{Pure(1e20)}, nil, {Pure(1e20)}}, Pure(1e20), 0},
		{"basic one over by delta", Basic, EpsDelta{Epsilon: 10, Delta: 1e-6},
			[][]Cost{nil, {{Epsilon: 0.1, Delta: 9.5e-7}}, {Pure(9)}}, Cost{Epsilon: 0.5, Delta: 1e-7}, 0},
		{"basic over in two", Basic, EpsDelta{Epsilon: 1},
			[][]Cost{{Pure(0.75)}, {Pure(0.25)}, {Pure(0.5), Pure(0.25)}}, Pure(0.5), 0},
		{"zcdp fits", ZCDP, EpsDelta{Epsilon: 5, Delta: 1e-5},
			[][]Cost{{{Rho: 0.1}}, {{Rho: 0.2, RhoDelta: 1e-7}}, nil}, Cost{Rho: 0.05}, 1},
		{"zcdp over", ZCDP, EpsDelta{Epsilon: 5, Delta: 1e-5},
			[][]Cost{{{Rho: 0.1}}, {{Rho: 0.4}}, nil}, Cost{Rho: 0.2}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mk := func() []*Budget {
				bs := make([]*Budget, len(tc.before))
				for i, cs := range tc.before {
					b, err := NewBudget(tc.limit, tc.rule)
					if err != nil {
						t.Fatal(err)
					}
					for _, c := range cs {
						if err := b.Spend(c); err != nil {
							t.Fatal(err)
						}
					}
					bs[i] = b
				}
				return bs
			}
			one, all := mk(), mk()
			var wantRefused []int
			var wantFirst *ExceededError
			for i, b := range one {
				if err := b.Check(tc.c); err != nil {
					var ex *ExceededError
					if !errors.As(err, &ex) {
						t.Fatal(err)
					}
					wantRefused = append(wantRefused, i)
					if wantFirst == nil {
						wantFirst = ex
					}
				}
			}
			if strings.Contains(tc.name, "over") != (wantRefused != nil) {
				t.Fatalf("the case refuses in budgets %v: its name says otherwise", wantRefused)
			}
			if wantRefused == nil {
				for _, b := range one {
					if err := b.Spend(tc.c); err != nil {
						t.Fatal(err)
					}
				}
			}
			refused, first, most, err := SpendAll(all, tc.c)
			if err != nil {
				t.Fatal(err)
			}
			if len(refused) != len(wantRefused) {
				t.Fatalf("refused %v, want %v", refused, wantRefused)
			}
			for i := range refused {
				if refused[i] != wantRefused[i] {
					t.Fatalf("refused %v, want %v", refused, wantRefused)
				}
			}
			if (first == nil) != (wantFirst == nil) || (first != nil && first.Error() != wantFirst.Error()) {
				t.Fatalf("first refusal %v, want %v", first, wantFirst)
			}
			if refused == nil && most != tc.most {
				t.Errorf("most = %d, want %d", most, tc.most)
			}
			for i := range one {
				if one[i].Sums() != all[i].Sums() || one[i].Spent() != all[i].Spent() || !one[i].SameSums(all[i]) {
					t.Errorf("budget %d: SpendAll left %v (spent %v), Spend %v (spent %v)", i, all[i].Sums(), all[i].Spent(), one[i].Sums(), one[i].Spent())
				}
			}
		})
	}
}

// TestSpendAllRefusesBadInput checks the errors of SpendAll: nothing is
// spent and the error names the offending value.
func TestSpendAllRefusesBadInput(t *testing.T) {
	a, _ := NewBudget(EpsDelta{Epsilon: 1}, Basic)
	b, _ := NewBudget(EpsDelta{Epsilon: 2}, Basic)
	for _, tc := range []struct {
		name string
		bs   []*Budget
		c    Cost
	}{
		{"none", nil, Pure(0.1)},
		{"twice", []*Budget{a, a}, Pure(0.1)},
		{"limits differ", []*Budget{a, b}, Pure(0.1)},
		{"invalid cost", []*Budget{a}, Pure(-1)},
		{"rho only under basic", []*Budget{a}, Cost{Rho: 0.1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, _, err := SpendAll(tc.bs, tc.c); err == nil {
				t.Fatal("no error")
			}
			if a.Releases() != 0 || b.Releases() != 0 {
				t.Fatal("something was spent")
			}
		})
	}
}

// TestAppendSum checks AppendSum and SumIsZero against Sums.
func TestAppendSum(t *testing.T) {
	b, _ := NewBudget(EpsDelta{Epsilon: 1e21, Delta: 1e-5}, Basic)
	if err := b.Spend(Cost{Epsilon: 1e20, Delta: 1e-9}); err != nil {
		t.Fatal(err)
	}
	s := b.Sums()
	for _, tc := range []struct {
		sum  Sum
		want string
	}{{SumEpsilon, s.Epsilon}, {SumDelta, s.Delta}, {SumRho, s.Rho}, {SumRhoDelta, s.RhoDelta}} {
		if got := string(b.AppendSum([]byte("x"), tc.sum)); got != "x"+tc.want {
			t.Errorf("AppendSum(%d) = %q, want %q", tc.sum, got, "x"+tc.want)
		}
		if b.SumIsZero(tc.sum) != (tc.want == "0") {
			t.Errorf("SumIsZero(%d) = %v for %q", tc.sum, b.SumIsZero(tc.sum), tc.want)
		}
	}
}

// TestSpendAllConcurrent runs SpendAll over the same budgets in opposite
// orders at once: neither waits for the other for ever, and every charge
// is counted.
func TestSpendAllConcurrent(t *testing.T) {
	x, _ := NewBudget(EpsDelta{Epsilon: 1e6}, Basic)
	y, _ := NewBudget(EpsDelta{Epsilon: 1e6}, Basic)
	done := make(chan error, 2)
	for _, bs := range [][]*Budget{{x, y}, {y, x}} {
		go func() {
			for range 200 {
				if _, _, _, err := SpendAll(bs, Pure(1)); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if x.Releases() != 400 || y.Releases() != 400 {
		t.Fatalf("releases %d and %d, want 400 each", x.Releases(), y.Releases())
	}
}
