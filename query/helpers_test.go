package query

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/ledger"
)

// recordingEngine wraps an engine and records every statement it runs.
type recordingEngine struct {
	*duckdb.Engine
	mu      sync.Mutex
	queries []string
}

func (r *recordingEngine) Query(ctx context.Context, sql string, args ...any) (*engine.Rows, error) {
	r.mu.Lock()
	r.queries = append(r.queries, sql)
	r.mu.Unlock()
	return r.Engine.Query(ctx, sql, args...)
}

func (r *recordingEngine) calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.queries)
}

// fakeLedger records budgets and charges without a limit, unless exceed is
// set, in which case every charge is refused as over budget.
type fakeLedger struct {
	mu      sync.Mutex
	charges []ledger.Charge
	exceed  bool
	spent   float64
}

func (f *fakeLedger) EnsureBudget(k ledger.Key, def accounting.EpsDelta, rule accounting.Rule) (ledger.Status, error) {
	return ledger.Status{Key: k, Rule: rule, Limit: def}, nil
}

func (f *fakeLedger) Charge(ctx context.Context, c ledger.Charge) (ledger.Receipt, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.exceed {
		return ledger.Receipt{}, &accounting.ExceededError{Requested: c.Cost, Limit: accounting.EpsDelta{Epsilon: 1}}
	}
	f.charges = append(f.charges, c)
	f.spent += c.Cost.Epsilon
	return ledger.Receipt{ReleaseID: uint64(len(f.charges)), Key: c.Key, Cost: c.Cost, Rule: accounting.Basic,
		Spent: accounting.EpsDelta{Epsilon: f.spent}}, nil
}

func (f *fakeLedger) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.charges)
}

func loadCatalog(t testing.TB, path string) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// newTestService opens DuckDB over the catalog with a recording engine and
// a fake ledger.
func newTestService(t testing.TB, catalogPath string) (*Service, *recordingEngine, *fakeLedger) {
	t.Helper()
	cat := loadCatalog(t, catalogPath)
	eng, err := duckdb.Open(duckdb.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	rec := &recordingEngine{Engine: eng}
	led := &fakeLedger{}
	svc, err := NewService(context.Background(), cat, rec, led)
	if err != nil {
		t.Fatal(err)
	}
	rec.queries = nil
	return svc, rec, led
}

// exactOpts answers with ε = 1e20: noise far below every tolerance.
func exactOpts() Options {
	return Options{Epsilon: 1e20, Confidence: 0.95, Analyst: "tester"}
}

// ledgerService opens a service over the test catalog with a real ledger
// in which analyst a has a budget of eps on people, and a recording
// engine.
func ledgerService(t *testing.T, eps float64) (*Service, *recordingEngine, *ledger.Ledger) {
	t.Helper()
	cat := loadCatalog(t, "testdata/catalog.yaml")
	eng, err := duckdb.Open(duckdb.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	rec := &recordingEngine{Engine: eng}
	led, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	if _, err := led.Grant(ledger.Key{Dataset: "people", Analyst: "a"}, accounting.EpsDelta{Epsilon: eps}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	svc, err := NewService(context.Background(), cat, rec, led)
	if err != nil {
		t.Fatal(err)
	}
	return svc, rec, led
}
