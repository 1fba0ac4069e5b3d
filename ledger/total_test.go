package ledger

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dpstat/dpstat/accounting"
)

// TestTotalBudgetRace: 8 analysts, each with a budget that holds 20
// charges, race for a total budget that holds exactly 40 charges of
// ε = 0.125. Exactly 40 succeed (the total is never exceeded and fully
// used), every refusal past the 40th names the total budget, and the
// total's figures equal the sum over the analysts.
func TestTotalBudgetRace(t *testing.T) {
	tests := []struct {
		name  string
		rule  accounting.Rule
		cost  accounting.Cost
		limit accounting.EpsDelta
	}{
		{"basic", accounting.Basic, accounting.Pure(0.125), accounting.EpsDelta{Epsilon: 5}},
		{"zcdp", accounting.ZCDP, accounting.Cost{Rho: 1.0 / 128}, accounting.EpsDelta{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := mustOpen(t, tempPath(t), Options{})
			limit := tt.limit
			if tt.rule == accounting.ZCDP {
				// the ε that 40 charges of ρ = 2⁻⁷ (Σρ = 0.3125) convert to
				eps, err := accounting.ZCDPToEpsilon(40.0/128, 1e-5)
				if err != nil {
					t.Fatal(err)
				}
				limit = accounting.EpsDelta{Epsilon: eps, Delta: 1e-5}
				probe, _ := accounting.NewBudget(limit, accounting.ZCDP)
				for i := range 41 {
					if err := probe.Spend(tt.cost); (err == nil) != (i < 40) {
						t.Fatalf("the zCDP limit does not hold exactly 40 charges: charge %d: %v", i+1, err)
					}
				}
			}
			if _, err := l.GrantTotal("census", limit, tt.rule); err != nil {
				t.Fatal(err)
			}
			perAnalyst := accounting.EpsDelta{Epsilon: 100, Delta: 1e-3}
			const analysts = 8
			for a := range analysts {
				mustGrant(t, l, Key{Dataset: "census", Analyst: string(rune('a' + a))}, perAnalyst, tt.rule)
			}
			var ok, refusedTotal atomic.Int64
			var wg sync.WaitGroup
			for a := range analysts {
				for range 4 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range 5 {
							_, err := l.Charge(bg, Charge{Key: Key{Dataset: "census", Analyst: string(rune('a' + a))}, Cost: tt.cost})
							var ex *accounting.ExceededError
							switch {
							case err == nil:
								ok.Add(1)
							case errors.Is(err, ErrTotalExceeded) && errors.As(err, &ex):
								refusedTotal.Add(1)
							default:
								t.Errorf("charge: %v", err)
							}
						}
					}()
				}
			}
			wg.Wait()
			if ok.Load() != 40 || refusedTotal.Load() != analysts*4*5-40 {
				t.Fatalf("%d charges succeeded and %d were refused by the total, want 40 and %d", ok.Load(), refusedTotal.Load(), analysts*4*5-40)
			}
			tot, err := l.Total("census")
			if err != nil || tot.Releases != 40 {
				t.Fatalf("total: %+v, %v", tot, err)
			}
			sum := 0
			for a := range analysts {
				st, err := l.Status(Key{Dataset: "census", Analyst: string(rune('a' + a))})
				if err != nil || st.Total == nil || st.Total.Releases != 40 {
					t.Fatalf("status of analyst %d: %+v, %v", a, st, err)
				}
				sum += st.Releases
			}
			if sum != 40 {
				t.Fatalf("analysts' releases add to %d, want 40", sum)
			}
			if _, err := l.Verify(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestTotalRefusalSaysWhichBudget: the analyst's own budget and the total
// each refuse with their own message; a refusal writes nothing.
func TestTotalRefusalSaysWhichBudget(t *testing.T) {
	l := mustOpen(t, tempPath(t), Options{})
	alice, bob := Key{Dataset: "census", Analyst: "alice"}, Key{Dataset: "census", Analyst: "bob"}
	mustGrant(t, l, alice, accounting.EpsDelta{Epsilon: 0.5}, accounting.Basic)
	mustGrant(t, l, bob, accounting.EpsDelta{Epsilon: 2}, accounting.Basic)
	if _, err := l.GrantTotal("census", accounting.EpsDelta{Epsilon: 1}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name  string
		k     Key
		eps   float64
		total bool // refused by the total
		ok    bool
	}{
		{"alice within both", alice, 0.5, false, true},
		{"alice over her own", alice, 0.25, false, false},
		{"bob within both", bob, 0.5, false, true},
		{"bob over the total, within his own", bob, 0.25, true, false},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			chkErr := l.Check(s.k, accounting.Pure(s.eps))
			_, err := l.Charge(bg, Charge{Key: s.k, Cost: accounting.Pure(s.eps)})
			for _, e := range []error{chkErr, err} {
				if s.ok {
					if e != nil {
						t.Fatal(e)
					}
					continue
				}
				var ex *accounting.ExceededError
				if !errors.As(e, &ex) || errors.Is(e, ErrTotalExceeded) != s.total {
					t.Fatalf("error %v: want a refusal by the total = %v", e, s.total)
				}
				want := `the budget of analyst "alice" on "census"`
				if s.total {
					want = "total budget (every analyst together)"
				}
				if !strings.Contains(e.Error(), want) {
					t.Fatalf("error %q does not say %q", e, want)
				}
			}
		})
	}
	tot, _ := l.Total("census")
	if tot.Releases != 2 || tot.Spent.Epsilon != 1 {
		t.Fatalf("total after the refusals: %+v", tot)
	}
}

// TestGrantTotalCountsEarlierReleases: a total declared after releases
// counts them; one below them is refused by GrantTotal and created
// exhausted by EnsureTotal; it may be raised but not lowered below spent.
func TestGrantTotalCountsEarlierReleases(t *testing.T) {
	l := mustOpen(t, tempPath(t), Options{})
	k := Key{Dataset: "census", Analyst: "alice"}
	mustGrant(t, l, k, accounting.EpsDelta{Epsilon: 10}, accounting.Basic)
	for range 3 {
		if _, err := l.Charge(bg, Charge{Key: k, Cost: accounting.Pure(0.5)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.GrantTotal("census", accounting.EpsDelta{Epsilon: 1}, accounting.Basic); err == nil || !strings.Contains(err.Error(), "3 releases already charged") {
		t.Fatalf("GrantTotal below the releases: %v", err)
	}
	st, err := l.EnsureTotal("census", accounting.EpsDelta{Epsilon: 1}, accounting.Basic)
	if err != nil || st.Releases != 3 || st.Spent.Epsilon != 1.5 || st.Remaining.Epsilon != 0 {
		t.Fatalf("EnsureTotal: %+v, %v", st, err)
	}
	if _, err := l.Charge(bg, Charge{Key: k, Cost: accounting.Pure(0.125)}); !errors.Is(err, ErrTotalExceeded) {
		t.Fatalf("charge over an exhausted total: %v", err)
	}
	if st, err := l.EnsureTotal("census", accounting.EpsDelta{Epsilon: 50}, accounting.Basic); err != nil || st.Limit.Epsilon != 1 {
		t.Fatalf("EnsureTotal changed an existing total: %+v, %v", st, err)
	}
	if _, err := l.GrantTotal("census", accounting.EpsDelta{Epsilon: 1.25}, accounting.Basic); err == nil {
		t.Fatal("a total was lowered... to a limit below its spending")
	}
	if st, err := l.GrantTotal("census", accounting.EpsDelta{Epsilon: 2}, accounting.Basic); err != nil || st.Remaining.Epsilon != 0.5 {
		t.Fatalf("raising the total: %+v, %v", st, err)
	}
	if _, err := l.Charge(bg, Charge{Key: k, Cost: accounting.Pure(0.5)}); err != nil {
		t.Fatal(err)
	}
	all, err := l.Totals()
	if err != nil || len(all) != 1 || all[0].Releases != 4 {
		t.Fatalf("Totals: %+v, %v", all, err)
	}
	if _, err := l.Total("other"); !errors.Is(err, ErrNoBudget) {
		t.Fatalf("Total of a dataset without one: %v", err)
	}
	for _, bad := range []struct {
		ds    string
		limit accounting.EpsDelta
		want  string
	}{
		{"", accounting.EpsDelta{Epsilon: 1}, "dataset is empty"},
		{"census", accounting.EpsDelta{Epsilon: -1}, "epsilon = -1"},
		{"census", accounting.EpsDelta{Epsilon: 1, Delta: 1}, "delta = 1"},
	} {
		if _, err := l.GrantTotal(bad.ds, bad.limit, accounting.Basic); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("GrantTotal(%q, %+v) = %v, want an error saying %q", bad.ds, bad.limit, err, bad.want)
		}
	}
}
