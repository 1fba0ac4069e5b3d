package ledger

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/epoch"
)

// months is the range of the months of 2024 from m1 to m2 (1-based).
func months(m1, m2 int64) *epoch.Range {
	return &epoch.Range{Every: epoch.Month, From: 2024*12 + m1 - 1, To: 2024*12 + m2 - 1}
}

// epochSpent maps each charged epoch's label to its ε spent.
func epochSpent(t *testing.T, l *Ledger, k Key) map[string]float64 {
	t.Helper()
	return runSpent(t, l, k.Dataset, k.Analyst)
}

// runSpent expands the stored runs of analyst's epochs on ds (the totals
// when analyst is empty) into each epoch's ε spent.
func runSpent(t *testing.T, l *Ledger, ds, analyst string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	err := l.view(func(tx kvTx) error {
		rec, err := loadEpochs(tx, ds, analyst)
		if err != nil || rec == nil {
			return err
		}
		for _, run := range rec.Runs {
			for i := run.From; i <= run.To; i++ {
				out[epoch.Label(rec.Every, i)] = run.Budget.Spent().Epsilon
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEpochChargesExact: at ε = 1e20 a charge is its whole cost in each
// epoch it touches, exactly, and nothing outside; a charge that one epoch
// cannot pay is refused with nothing written, naming the spent epochs;
// new epochs start with full budgets; Verify rebuilds every epoch's
// budget from the release ranges.
func TestEpochChargesExact(t *testing.T) {
	const e = 1e20
	l := mustOpen(t, tempPath(t), Options{})
	k := Key{Dataset: "visits", Analyst: "alice"}
	mustGrant(t, l, k, accounting.EpsDelta{Epsilon: 3 * e}, accounting.Basic)
	if _, err := l.GrantTotal("visits", accounting.EpsDelta{Epsilon: 4 * e}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		r       *epoch.Range
		refused string // the epochs a refusal names, "" when admitted
	}{
		{months(1, 12), ""},
		{months(6, 8), ""},
		{months(8, 9), ""},
		{months(7, 10), "epoch 2024-08"},
		{months(8, 8), "epoch 2024-08"},
		{months(12, 12), ""},
		{months(1, 1), ""},
		{&epoch.Range{Every: epoch.Month, From: 2025*12 + 0, To: 2025*12 + 1}, ""}, // new months: full budgets
	}
	for i, s := range steps {
		before := epochSpent(t, l, k)
		rc, err := l.Charge(context.Background(), Charge{Key: k, Cost: accounting.Pure(e), Epochs: s.r})
		if s.refused == "" {
			if err != nil {
				t.Fatalf("step %d (%v): %v", i, s.r, err)
			}
			if *rc.Epochs != *s.r {
				t.Errorf("step %d: receipt epochs %v, want %v", i, rc.Epochs, s.r)
			}
			continue
		}
		var ee *EpochsExceededError
		var ex *accounting.ExceededError
		if !errors.As(err, &ee) || !errors.As(err, &ex) || !strings.Contains(err.Error(), "spent in "+s.refused) {
			t.Fatalf("step %d (%v): error %v; want a refusal naming epochs %s", i, s.r, err, s.refused)
		}
		after := epochSpent(t, l, k)
		if len(after) != len(before) {
			t.Fatalf("step %d: a refused charge created epoch budgets: %v -> %v", i, before, after)
		}
		for lab, v := range before {
			if after[lab] != v {
				t.Errorf("step %d: a refused charge changed epoch %s: %g -> %g", i, lab, v, after[lab])
			}
		}
	}
	want := map[string]float64{"2024-01": 2 * e, "2024-02": e, "2024-03": e, "2024-04": e, "2024-05": e, "2024-06": 2 * e,
		"2024-07": 2 * e, "2024-08": 3 * e, "2024-09": 2 * e, "2024-10": e, "2024-11": e, "2024-12": 2 * e, "2025-01": e, "2025-02": e}
	got := epochSpent(t, l, k)
	if len(got) != len(want) {
		t.Errorf("epoch budgets %v, want %v", got, want)
	}
	for lab, w := range want {
		if got[lab] != w {
			t.Errorf("epoch %s spent ε=%g, want %g exactly", lab, got[lab], w)
		}
	}
	if st, _ := l.Status(k); st.Releases != 0 || st.Spent.Epsilon != 0 {
		t.Errorf("the template budget was charged: %+v", st)
	}
	for lab, v := range runSpent(t, l, "visits", "") {
		if v != want[lab] {
			t.Errorf("total of %s spent %g, want %g", lab, v, want[lab])
		}
	}
	if sts, err := l.EpochBudgets(k); err != nil || len(sts) != 8 || sts[0].Key.Epoch != "2024-01" || sts[1].Key.Epoch != "2024-02..2024-05" {
		t.Errorf("epoch budgets as runs: %v, %+v", err, sts)
	}
	if _, err := l.Verify(); err != nil {
		t.Fatal(err)
	}
	// The template's grant is every epoch's: lowering it below an epoch's
	// spending is refused, naming the epoch; raising it raises them all.
	if _, err := l.Grant(k, accounting.EpsDelta{Epsilon: 2 * e}, accounting.Basic); err == nil || !strings.Contains(err.Error(), "in epoch 2024-08") {
		t.Errorf("lowering below epoch 2024-08's spending: %v", err)
	}
	mustGrant(t, l, k, accounting.EpsDelta{Epsilon: 5 * e}, accounting.Basic)
	sts, _ := l.EpochBudgets(k)
	for _, st := range sts {
		if st.Limit.Epsilon != 5*e {
			t.Errorf("epoch %s kept limit %g after the grant", st.Key.Epoch, st.Limit.Epsilon)
		}
	}
	if _, err := l.Grant(Key{Dataset: "visits", Analyst: "alice", Epoch: "2024-01"}, accounting.EpsDelta{Epsilon: 1}, accounting.Basic); err == nil {
		t.Error("an epoch's budget was granted on its own")
	}
	// The total is checked per epoch too: 2024-08 has 3e of 4e.
	if _, err := l.Charge(context.Background(), Charge{Key: k, Cost: accounting.Pure(2 * e), Epochs: months(8, 8)}); !errors.Is(err, ErrTotalExceeded) || !strings.Contains(err.Error(), "2024-08") {
		t.Errorf("charge over the total in 2024-08: %v", err)
	}
	if _, err := l.Verify(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	// Reopened, the ledger checks itself against the records again.
	l2 := mustOpen(t, l.Path(), Options{})
	if got := epochSpent(t, l2, k); got["2024-08"] != 3*e {
		t.Errorf("after reopening, 2024-08 spent %g", got["2024-08"])
	}
}

// TestEpochTotalCountsEarlierReleases: a total declared after releases to
// epochs counts them in each epoch's total.
func TestEpochTotalCountsEarlierReleases(t *testing.T) {
	l := mustOpen(t, tempPath(t), Options{})
	k := Key{Dataset: "visits", Analyst: "bob"}
	mustGrant(t, l, k, accounting.EpsDelta{Epsilon: 10}, accounting.Basic)
	for range 3 {
		if _, err := l.Charge(context.Background(), Charge{Key: k, Cost: accounting.Pure(1), Epochs: months(2, 3)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.GrantTotal("visits", accounting.EpsDelta{Epsilon: 2}, accounting.Basic); err == nil || !strings.Contains(err.Error(), "epoch 2024-02") {
		t.Errorf("a total below what epoch 2024-02 spent: %v", err)
	}
	if _, err := l.EnsureTotal("visits", accounting.EpsDelta{Epsilon: 4}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Charge(context.Background(), Charge{Key: k, Cost: accounting.Pure(1.5), Epochs: months(1, 4)}); !errors.Is(err, ErrTotalExceeded) || !strings.Contains(err.Error(), "cannot pay in 2 epochs (month): spent in epochs 2024-02..2024-03") {
		t.Errorf("charge of 1.5 where the total of 2024-03 has 1 left: %v", err)
	}
	if _, err := l.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestEpochRace: analysts race on two overlapping ranges of months for
// a total of 5 charges per month: no month is ever overspent, every
// month's total equals the admitted charges that touched it, and the
// ledger verifies.
func TestEpochRace(t *testing.T) {
	l := mustOpen(t, tempPath(t), Options{})
	if _, err := l.GrantTotal("visits", accounting.EpsDelta{Epsilon: 5}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	ranges := []*epoch.Range{months(1, 8), months(5, 12)}
	const analysts = 6
	for a := range analysts {
		mustGrant(t, l, Key{Dataset: "visits", Analyst: string(rune('a' + a))}, accounting.EpsDelta{Epsilon: 100}, accounting.Basic)
	}
	var admitted [2]atomic.Int64
	var wg sync.WaitGroup
	for a := range analysts {
		for j := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				which := (a + j) % 2
				_, err := l.Charge(context.Background(), Charge{Key: Key{Dataset: "visits", Analyst: string(rune('a' + a))}, Cost: accounting.Pure(1), Epochs: ranges[which]})
				switch {
				case err == nil:
					admitted[which].Add(1)
				case !errors.Is(err, ErrTotalExceeded):
					t.Errorf("refusal not by the total: %v", err)
				}
			}()
		}
	}
	wg.Wait()
	for lab, spent := range runSpent(t, l, "visits", "") {
		var want int64
		for w, r := range ranges {
			for m := r.From; m <= r.To; m++ {
				if epoch.Label(epoch.Month, m) == lab {
					want += admitted[w].Load()
				}
			}
		}
		if spent > 5 || spent != float64(want) {
			t.Errorf("epoch %s: total spent %g, want %d (at most 5)", lab, spent, want)
		}
	}
	if n := admitted[0].Load() + admitted[1].Load(); n != 5 {
		t.Errorf("%d charges admitted over the overlapping months; want 5", n)
	}
	if _, err := l.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestEpochKindChange: a charge by days where months were charged is
// refused, with nothing written.
func TestEpochKindChange(t *testing.T) {
	l := mustOpen(t, tempPath(t), Options{})
	k := Key{Dataset: "visits", Analyst: "ann"}
	mustGrant(t, l, k, accounting.EpsDelta{Epsilon: 10}, accounting.Basic)
	if _, err := l.Charge(context.Background(), Charge{Key: k, Cost: accounting.Pure(1), Epochs: months(1, 2)}); err != nil {
		t.Fatal(err)
	}
	_, err := l.Charge(context.Background(), Charge{Key: k, Cost: accounting.Pure(1), Epochs: &epoch.Range{Every: epoch.Day, From: 19723, To: 19724}})
	if err == nil || !strings.Contains(err.Error(), "were charged by month and this charge is by day") {
		t.Fatalf("charge by days after months: %v", err)
	}
	if h, _ := l.History(Key{}, 0); len(h) != 1 {
		t.Errorf("%d releases; want 1", len(h))
	}
}
