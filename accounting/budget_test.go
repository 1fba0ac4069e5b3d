package accounting

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func mustBudget(t *testing.T, limit EpsDelta, rule Rule) *Budget {
	t.Helper()
	b, err := NewBudget(limit, rule)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestNewBudgetErrors(t *testing.T) {
	tests := []struct {
		name    string
		limit   EpsDelta
		rule    Rule
		wantErr string
	}{
		{"negative epsilon", EpsDelta{Epsilon: -1}, Basic, "epsilon = -1"},
		{"NaN epsilon", EpsDelta{Epsilon: math.NaN()}, Basic, "epsilon = NaN"},
		{"infinite epsilon", EpsDelta{Epsilon: math.Inf(1)}, Basic, "epsilon = +Inf"},
		{"delta one", EpsDelta{Epsilon: 1, Delta: 1}, Basic, "delta = 1"},
		{"unknown rule", EpsDelta{Epsilon: 1}, Rule("renyi"), `unknown budget rule "renyi"`},
		{"zcdp without delta", EpsDelta{Epsilon: 1}, ZCDP, "zCDP needs a delta"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewBudget(tt.limit, tt.rule)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewBudget error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestSpendRefusesBadCosts(t *testing.T) {
	tests := []struct {
		name    string
		rule    Rule
		cost    Cost
		wantErr string
	}{
		{"negative", Basic, Cost{Epsilon: -0.1}, "epsilon = -0.1"},
		{"NaN", Basic, Cost{Epsilon: math.NaN()}, "epsilon = NaN"},
		{"+Inf", ZCDP, Cost{Rho: math.Inf(1)}, "rho = +Inf"},
		{"-Inf", Basic, Cost{Delta: math.Inf(-1)}, "delta = -Inf"},
		{"delta one", Basic, Cost{Epsilon: 0.1, Delta: 1}, "delta = 1"},
		{"rho only to basic", Basic, Cost{Rho: 0.01}, "states only a zCDP rho"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustBudget(t, EpsDelta{Epsilon: 10, Delta: 1e-5}, tt.rule)
			err := b.Spend(tt.cost)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Spend(%+v) error = %v, want one containing %q", tt.cost, err, tt.wantErr)
			}
			if b.Releases() != 0 || b.Spent() != (EpsDelta{}) {
				t.Fatalf("a refused cost was charged: spent %v", b.Spent())
			}
		})
	}
}

func TestBasicBudget(t *testing.T) {
	b := mustBudget(t, EpsDelta{Epsilon: 1, Delta: 1e-6}, Basic)
	steps := []struct {
		cost    Cost
		fits    bool
		spent   EpsDelta
		remains EpsDelta
	}{
		{Pure(0.5), true, EpsDelta{0.5, 0}, EpsDelta{0.5, 1e-6}},
		{Approximate(0.25, 5e-7), true, EpsDelta{0.75, 5e-7}, EpsDelta{0.25, 5e-7}},
		{Approximate(0.125, 6e-7), false, EpsDelta{0.75, 5e-7}, EpsDelta{0.25, 5e-7}},
		{Pure(0.375), false, EpsDelta{0.75, 5e-7}, EpsDelta{0.25, 5e-7}},
		{Approximate(0.25, 5e-7), true, EpsDelta{1, 1e-6}, EpsDelta{0, 0}},
		{Cost{}, true, EpsDelta{1, 1e-6}, EpsDelta{0, 0}},
		{Pure(math.SmallestNonzeroFloat64), false, EpsDelta{1, 1e-6}, EpsDelta{0, 0}},
	}
	for i, s := range steps {
		err := b.Spend(s.cost)
		var ee *ExceededError
		if s.fits && err != nil {
			t.Fatalf("step %d: Spend(%v) = %v, want it to fit", i, s.cost, err)
		}
		if !s.fits {
			if !errors.As(err, &ee) {
				t.Fatalf("step %d: Spend(%v) = %v, want *ExceededError", i, s.cost, err)
			}
			if ee.Requested != s.cost || ee.Limit != (EpsDelta{1, 1e-6}) || ee.Rule != Basic || ee.Spent != s.spent || ee.Remaining != s.remains {
				t.Fatalf("step %d: ExceededError = %+v", i, ee)
			}
			for _, part := range []string{"exceeded", "limit ε=1", "basic composition", "remaining"} {
				if !strings.Contains(err.Error(), part) {
					t.Fatalf("step %d: message %q lacks %q", i, err, part)
				}
			}
		}
		if got := b.Spent(); got != s.spent {
			t.Fatalf("step %d: Spent() = %v, want %v", i, got, s.spent)
		}
		if got := b.Remaining(); got != s.remains {
			t.Fatalf("step %d: Remaining() = %v, want %v", i, got, s.remains)
		}
	}
}

// TestRoundingNeverUnderCounts: the float sum of ten 0.1's is
// 0.9999999999999999, which would leave room for 1e-16 more in a budget of
// 1. The exact sum is 1 + 5.55e-17 (float64(0.1) is above 1/10), so a
// budget of 1 admits nine and refuses the tenth, and a budget just big
// enough for ten refuses 1e-16 more.
func TestRoundingNeverUnderCounts(t *testing.T) {
	naive := 0.0
	for range 10 {
		naive += 0.1
	}
	if naive+1e-16 > 1 {
		t.Fatalf("the float sum of ten 0.1's is %v; this test assumes it is below 1", naive)
	}

	b := mustBudget(t, EpsDelta{Epsilon: 1}, Basic)
	for i := range 9 {
		if err := b.Spend(Pure(0.1)); err != nil {
			t.Fatalf("spend %d: %v", i, err)
		}
	}
	var ee *ExceededError
	if err := b.Spend(Pure(0.1)); !errors.As(err, &ee) {
		t.Fatalf("tenth 0.1 in a budget of 1: %v, want refused (exact sum 1 + 5.55e-17)", err)
	}

	// The smallest float64 budget that holds ten 0.1's exactly.
	exact := ratOf(0.1)
	exact.Mul(exact, ratOf(10))
	limit := ratUp(exact)
	b = mustBudget(t, EpsDelta{Epsilon: limit}, Basic)
	for i := range 10 {
		if err := b.Spend(Pure(0.1)); err != nil {
			t.Fatalf("spend %d of 10 in a budget of %v: %v", i, limit, err)
		}
	}
	if got := b.Spent().Epsilon; got < 1 || ratOf(got).Cmp(exact) < 0 {
		t.Fatalf("Spent() = %v, want at least the exact sum", got)
	}
	left := b.Remaining().Epsilon
	if ratOf(left).Cmp(new(ratT).Sub(ratOf(limit), exact)) > 0 {
		t.Fatalf("Remaining() = %v is more than is left", left)
	}
	// What a float running total would think is left.
	naiveLeft := limit - naive
	if err := b.Check(Pure(left + 1e-16)); !errors.As(err, &ee) {
		t.Fatalf("1e-16 more than the remaining %v: %v, want refused", left, err)
	}
	if err := b.Check(Pure(naiveLeft)); !errors.As(err, &ee) {
		t.Fatalf("the %v a float total would leave: %v, want refused", naiveLeft, err)
	}
	if err := b.Spend(Pure(left)); err != nil {
		t.Fatalf("exactly the remaining %v: %v, want it to fit", left, err)
	}
}

// TestThirdsFitExactly: float64(1/3) is 1/3 − 1/(3·2^54), so three of them
// add to 1 − 2^-54 exactly, which is genuinely below 1: they fit a budget of
// 1, and nothing more does except what fits in 2^-54.
func TestThirdsFitExactly(t *testing.T) {
	b := mustBudget(t, EpsDelta{Epsilon: 1}, Basic)
	for i := range 3 {
		if err := b.Spend(Pure(1.0 / 3)); err != nil {
			t.Fatalf("third %d: %v", i, err)
		}
	}
	if got := b.Spent().Epsilon; got != 1 {
		t.Fatalf("Spent() = %v, want 1 (1 − 2^-54 rounded up)", got)
	}
	if got := b.Remaining().Epsilon; got != 0x1p-54 {
		t.Fatalf("Remaining() = %v, want 2^-54", got)
	}
	var ee *ExceededError
	if err := b.Spend(Pure(0x1p-53)); !errors.As(err, &ee) {
		t.Fatalf("2^-53 more: %v, want refused", err)
	}
	if err := b.Spend(Pure(0x1p-54)); err != nil {
		t.Fatalf("exactly the 2^-54 left: %v, want it to fit", err)
	}
}

func TestZCDPBudget(t *testing.T) {
	// ρ = 0.5 at δ = 1e-5 converts to ε ≈ 4.72839: 100 releases of ε = 0.1
	// (ρ = 0.005 each) fit a budget of ε = 4.7285 and the 101st does not.
	b := mustBudget(t, EpsDelta{Epsilon: 4.7285, Delta: 1e-5}, ZCDP)
	for i := range 100 {
		if err := b.Spend(Pure(0.1)); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
	}
	spent := b.Spent()
	if !near(spent.Epsilon, 4.7284, 1e-4) || spent.Delta != 1e-5 {
		t.Fatalf("Spent() = %v, want ε ≈ 4.7284, δ = 1e-5", spent)
	}
	var ee *ExceededError
	err := b.Spend(Pure(0.1))
	if !errors.As(err, &ee) || ee.Rule != ZCDP || ee.Would.Epsilon <= 4.7285 {
		t.Fatalf("release 101: %v, want *ExceededError under zcdp", err)
	}
	if tot := b.Totals(); !near(tot.Rho, 0.5, 1e-12) || !near(tot.Epsilon, 10, 1e-12) {
		t.Fatalf("Totals() = %v, want ρ = 0.5, ε = 10", tot)
	}

	// Approximate-zCDP δ's come off the conversion's δ.
	b = mustBudget(t, EpsDelta{Epsilon: 100, Delta: 1e-5}, ZCDP)
	if err := b.Spend(Cost{Epsilon: 1, Delta: 4e-6, Rho: 0.5, RhoDelta: 4e-6}); err != nil {
		t.Fatal(err)
	}
	want, _ := ZCDPToEpsilon(0.5, 6e-6)
	if got := b.Spent(); !near(got.Epsilon, want, 1e-12) {
		t.Fatalf("Spent() = %v, want ε(0.5, 6e-6) = %v", got, want)
	}
	if err := b.Spend(Cost{Epsilon: 1, Delta: 7e-6, Rho: 0.01, RhoDelta: 7e-6}); !errors.As(err, &ee) {
		t.Fatalf("Σδ0 reaching the budget δ: %v, want refused", err)
	}

	// A cost with ρ = 0 but ε > 0 is never free: it is charged as
	// δ-approximately ε²/2-zCDP, whatever approximate-zCDP δ it states.
	b = mustBudget(t, EpsDelta{Epsilon: 100, Delta: 1e-5}, ZCDP)
	if err := b.Spend(Cost{Epsilon: 2, Delta: 1e-6, RhoDelta: 1e-7}); err != nil {
		t.Fatal(err)
	}
	if tot := b.Totals(); tot.Rho != 2 || tot.RhoDelta != 1e-6 {
		t.Fatalf("Totals() after an ε-only cost = %v, want ρ = 2, δ0 = 1e-6", tot)
	}

	// A cost with only (ε, δ) is charged as δ-approximately ε²/2-zCDP.
	b = mustBudget(t, EpsDelta{Epsilon: 4.7285, Delta: 1e-5}, ZCDP)
	for i := range 100 {
		if err := b.Spend(Cost{Epsilon: 0.1}); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
	}
	if err := b.Spend(Cost{Epsilon: 0.1}); !errors.As(err, &ee) {
		t.Fatalf("release 101 of ε-only costs: %v, want refused", err)
	}
}

func TestSetLimit(t *testing.T) {
	b := mustBudget(t, EpsDelta{Epsilon: 1}, Basic)
	if err := b.Spend(Pure(0.5)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		limit   EpsDelta
		rule    Rule
		wantErr string
	}{
		{"raise", EpsDelta{Epsilon: 2}, Basic, ""},
		{"lower to spent", EpsDelta{Epsilon: 0.5}, Basic, ""},
		{"below spent", EpsDelta{Epsilon: 0.25}, Basic, "below what is already spent"},
		{"change rule", EpsDelta{Epsilon: 2, Delta: 1e-5}, ZCDP, "cannot change"},
		{"invalid", EpsDelta{Epsilon: math.NaN()}, Basic, "epsilon = NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := b.SetLimit(tt.limit, tt.rule)
			if tt.wantErr == "" {
				if err != nil || b.Limit() != tt.limit {
					t.Fatalf("SetLimit(%v) = %v, limit now %v", tt.limit, err, b.Limit())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("SetLimit(%v) = %v, want an error containing %q", tt.limit, err, tt.wantErr)
			}
		})
	}
}

func TestBudgetJSONRoundTrip(t *testing.T) {
	b := mustBudget(t, EpsDelta{Epsilon: 5, Delta: 1e-5}, ZCDP)
	for range 7 {
		if err := b.Spend(Cost{Epsilon: 0.1, Delta: 1e-7, Rho: 1.0 / 300, RhoDelta: 1e-8}); err != nil {
			t.Fatal(err)
		}
	}
	data, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var c Budget
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	if c.Spent() != b.Spent() || c.Remaining() != b.Remaining() || c.Totals() != b.Totals() || c.Releases() != 7 || c.Rule() != ZCDP {
		t.Fatalf("round trip changed the budget: %s", data)
	}
	if c.eps.Cmp(&b.eps) != 0 || c.rho.Cmp(&b.rho) != 0 {
		t.Fatal("round trip lost exactness")
	}
	for _, bad := range []string{
		`{"rule":"basic","limit":{"epsilon":1,"delta":0},"sum_epsilon":"-1/2","sum_delta":"0","sum_rho":"0","sum_rho_delta":"0"}`,
		`{"rule":"basic","limit":{"epsilon":1,"delta":0},"sum_epsilon":"x","sum_delta":"0","sum_rho":"0","sum_rho_delta":"0"}`,
		`{"rule":"other","limit":{"epsilon":1,"delta":0},"sum_epsilon":"0","sum_delta":"0","sum_rho":"0","sum_rho_delta":"0"}`,
		`[]`,
	} {
		var d Budget
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("Unmarshal(%s) accepted a bad budget", bad)
		}
	}
}

// TestBudgetConcurrentSpend: 64 goroutines race to spend a budget that
// holds exactly 40 costs of ε = 0.125 (exactly representable).
func TestBudgetConcurrentSpend(t *testing.T) {
	for round := range 5 {
		b := mustBudget(t, EpsDelta{Epsilon: 5}, Basic)
		var ok atomic.Int64
		var wg sync.WaitGroup
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					err := b.Spend(Pure(0.125))
					if err != nil {
						return
					}
					ok.Add(1)
				}
			}()
		}
		wg.Wait()
		if ok.Load() != 40 {
			t.Fatalf("round %d: %d spends succeeded, want 40", round, ok.Load())
		}
	}
}

func TestParseRule(t *testing.T) {
	for _, s := range []string{"basic", "zcdp"} {
		if r, err := ParseRule(s); err != nil || string(r) != s {
			t.Errorf("ParseRule(%q) = %v, %v", s, r, err)
		}
	}
	if _, err := ParseRule("ZCDP "); err == nil {
		t.Error(`ParseRule("ZCDP ") accepted`)
	}
}

// TestBudgetMatchesExactReference spends random costs (a fixed seed) and
// checks every decision of a basic budget against a reference computed
// with exact rationals, and that a zCDP budget's spent ε never exceeds its
// limit.
func TestBudgetMatchesExactReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 50 {
		limit := EpsDelta{Epsilon: rng.Float64() * 3, Delta: rng.Float64() * 1e-4}
		b := mustBudget(t, limit, Basic)
		sumE, sumD := new(big.Rat), new(big.Rat)
		for i := range 200 {
			c := Approximate(rng.Float64()*0.2, rng.Float64()*2e-6)
			if rng.IntN(4) == 0 {
				c = Pure(rng.Float64() * 0.05)
			}
			e := new(big.Rat).Add(sumE, ratOf(c.Epsilon))
			d := new(big.Rat).Add(sumD, ratOf(c.Delta))
			wantFit := e.Cmp(ratOf(limit.Epsilon)) <= 0 && d.Cmp(ratOf(limit.Delta)) <= 0
			err := b.Spend(c)
			if (err == nil) != wantFit {
				t.Fatalf("trial %d step %d: Spend(%v) = %v, exact reference says fit = %v", trial, i, c, err, wantFit)
			}
			if wantFit {
				sumE, sumD = e, d
			}
			sp := b.Spent()
			if ratOf(sp.Epsilon).Cmp(sumE) < 0 || ratOf(sp.Delta).Cmp(sumD) < 0 {
				t.Fatalf("trial %d step %d: Spent() = %v under-counts", trial, i, sp)
			}
			rem := b.Remaining()
			if new(big.Rat).Add(ratOf(rem.Epsilon), sumE).Cmp(ratOf(limit.Epsilon)) > 0 {
				t.Fatalf("trial %d step %d: Remaining() = %v over-counts", trial, i, rem)
			}
		}

		if trial >= 20 {
			continue
		}
		z := mustBudget(t, EpsDelta{Epsilon: 0.5 + rng.Float64()*5, Delta: 1e-6 + rng.Float64()*1e-4}, ZCDP)
		for i := range 100 {
			c := Cost{Epsilon: 1, Rho: rng.Float64() * 0.05}
			if rng.IntN(3) == 0 {
				c = Approximate(rng.Float64()*0.3, rng.Float64()*1e-6)
			}
			_ = z.Spend(c)
			if sp := z.Spent(); sp.Epsilon > z.Limit().Epsilon || sp.Delta > z.Limit().Delta || math.IsNaN(sp.Epsilon) {
				t.Fatalf("trial %d step %d: zCDP spent %v exceeds the limit %v", trial, i, sp, z.Limit())
			}
			if fresh := z.computeSpent(); fresh != z.Spent() {
				t.Fatalf("trial %d step %d: cached spent %v, recomputed %v", trial, i, z.Spent(), fresh)
			}
		}
	}
}
