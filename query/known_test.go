package query

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/ledger"
)

// countingLedger is a real ledger that counts the reads Run makes to learn
// whether a budget or a total exists.
type countingLedger struct {
	*ledger.Ledger
	mu                     sync.Mutex
	ensures, totals, stats int
}

func (c *countingLedger) EnsureBudget(k ledger.Key, def accounting.EpsDelta, rule accounting.Rule) (ledger.Status, error) {
	c.mu.Lock()
	c.ensures++
	c.mu.Unlock()
	return c.Ledger.EnsureBudget(k, def, rule)
}

func (c *countingLedger) EnsureTotal(ds string, def accounting.EpsDelta, rule accounting.Rule) (ledger.TotalStatus, error) {
	c.mu.Lock()
	c.totals++
	c.mu.Unlock()
	return c.Ledger.EnsureTotal(ds, def, rule)
}

func (c *countingLedger) Status(k ledger.Key) (ledger.Status, error) {
	c.mu.Lock()
	c.stats++
	c.mu.Unlock()
	return c.Ledger.Status(k)
}

func (c *countingLedger) reads() (ensures, totals, stats int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ensures, c.totals, c.stats
}

// TestKnownBudgets: a budget's and a total's existence is read once per
// service, never their figures: a grant that raises or lowers a limit
// after the first query decides the next one, and every figure reported is
// the charge's receipt (or, for a stored answer, the ledger's at that
// moment). An analyst without a grant is refused before anything is read
// or charged when the caller requires a grant.
func TestKnownBudgets(t *testing.T) {
	src, err := filepath.Abs("testdata/people.csv")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	yaml := "budget: {epsilon: 1}\ntotal_budget: {epsilon: 10}\ntables:\n  people:\n    source: " + src +
		"\n    columns: {age: {type: int, lower: 18, upper: 100}}\n"
	if err := os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load(filepath.Join(dir, "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := duckdb.Open(duckdb.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	real, err := ledger.Open(filepath.Join(dir, "ledger.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { real.Close() })
	led := &countingLedger{Ledger: real}
	ctx := context.Background()
	svc, err := NewService(ctx, cat, &recordingEngine{Engine: eng}, led)
	if err != nil {
		t.Fatal(err)
	}
	ann := ledger.Key{Dataset: "people", Analyst: "ann"}
	grant := func(eps float64) {
		if _, err := real.Grant(ann, accounting.EpsDelta{Epsilon: eps}, accounting.Basic); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name    string
		analyst string
		sql     string
		eps     float64
		require bool
		before  func()
		// want: the remaining ε reported, or refused (nothing charged).
		remaining float64
		refused   string // "grant": no budget; "budget": over it
		repeated  bool
		// the reads of existence so far: EnsureBudget, EnsureTotal, Status.
		ensures, totals, stats int
	}{
		{name: "no grant, grant required", analyst: "bob", sql: "SELECT COUNT(*) FROM people", eps: 0.25, require: true,
			refused: "grant", totals: 1, stats: 1},
		{name: "first query", analyst: "ann", sql: "SELECT COUNT(*) FROM people", eps: 0.25, require: true, before: func() { grant(1) },
			remaining: 0.75, totals: 1, stats: 2},
		{name: "second query reads no existence", analyst: "ann", sql: "SELECT SUM(age) FROM people", eps: 0.25, require: true,
			remaining: 0.5, totals: 1, stats: 2},
		{name: "a raised limit is the receipt's", analyst: "ann", sql: "SELECT AVG(age) FROM people", eps: 0.25, require: true, before: func() { grant(3) },
			remaining: 2.25, totals: 1, stats: 2},
		{name: "a stored answer shows the budget now", analyst: "ann", sql: "SELECT COUNT(*) FROM people", eps: 0.25, require: true, before: func() { grant(4) },
			remaining: 3.25, repeated: true, totals: 1, stats: 2, ensures: 1},
		{name: "a lowered limit refuses", analyst: "ann", sql: "SELECT COUNT(*) FROM people WHERE age >= 30", eps: 0.5, require: true, before: func() { grant(1) },
			refused: "budget", totals: 1, stats: 2, ensures: 1},
		{name: "a new analyst's budget is created once", analyst: "cat", sql: "SELECT COUNT(*) FROM people", eps: 0.25,
			remaining: 0.75, totals: 1, stats: 2, ensures: 2},
		{name: "and known after", analyst: "cat", sql: "SELECT SUM(age) FROM people", eps: 0.25,
			remaining: 0.5, totals: 1, stats: 2, ensures: 2},
	}
	charges := 0
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		res, err := svc.Answer(ctx, s.sql, Options{Epsilon: s.eps, Confidence: 0.95, Analyst: s.analyst, RequireGrant: s.require})
		var ex *accounting.ExceededError
		if s.refused != "" {
			if s.refused == "grant" && !errors.Is(err, ledger.ErrNoBudget) || s.refused == "budget" && !errors.As(err, &ex) {
				t.Fatalf("%s: %v, want a refusal for the %s", s.name, err, s.refused)
			}
		} else {
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			if res.Budget.Remaining.Epsilon != s.remaining || res.Repeated != s.repeated {
				t.Fatalf("%s: remaining %v, repeated %v; want %v, %v", s.name, res.Budget.Remaining.Epsilon, res.Repeated, s.remaining, s.repeated)
			}
			if !res.Repeated {
				charges++
			}
		}
		if e, tt, st := led.reads(); e != s.ensures || tt != s.totals || st != s.stats {
			t.Fatalf("%s: %d EnsureBudget, %d EnsureTotal, %d Status so far; want %d, %d, %d", s.name, e, tt, st, s.ensures, s.totals, s.stats)
		}
		if h, _ := real.History(ledger.Key{}, 0); len(h) != charges {
			t.Fatalf("%s: %d releases recorded, want %d", s.name, len(h), charges)
		}
	}
	if _, err := real.Status(ledger.Key{Dataset: "people", Analyst: "bob"}); !errors.Is(err, ledger.ErrNoBudget) {
		t.Fatalf("a budget was created for bob, who had no grant and was required to: %v", err)
	}
}
