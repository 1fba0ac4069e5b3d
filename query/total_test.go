package query

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/ledger"
)

// TestIDSpaceSharesBudgets: two tables of one id space draw on one
// analyst budget and one total; a third table outside it has its own.
// Each query costs ε = 0.5; each analyst may spend 1 and the id space 1.5
// in all.
func TestIDSpaceSharesBudgets(t *testing.T) {
	src, err := filepath.Abs("testdata/people.csv")
	if err != nil {
		t.Fatal(err)
	}
	yaml := `budget: {epsilon: 1}
total_budget: {epsilon: 1.5}
tables:
  visits:
    source: ` + src + `
    id_space: persons
    columns: {age: {type: int, lower: 18, upper: 100}}
  payments:
    source: ` + src + `
    id_space: persons
    columns: {age: {type: int, lower: 18, upper: 100}}
  other:
    source: ` + src + `
    columns: {age: {type: int, lower: 18, upper: 100}}
`
	dir := t.TempDir()
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
	led, err := ledger.Open(filepath.Join(dir, "ledger.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	ctx := context.Background()
	svc, err := NewService(ctx, cat, eng, led)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		analyst, table string
		refused        string // "" answered, "analyst" or "total"
		dataset        string
		totalSpent     float64
	}{
		{"ann", "visits", "", "persons", 0.5},
		{"ann", "payments", "", "persons", 1},
		{"ann", "visits", "analyst", "", 0}, // ann's one budget on the id space is spent
		{"ann", "other", "", "other", 0.5},  // another id space
		{"bob", "payments", "", "persons", 1.5},
		{"bob", "visits", "total", "", 0}, // bob has 0.5 left, the id space nothing
		{"bob", "other", "", "other", 1},
		{"cat", "other", "", "other", 1.5},
		{"cat", "other", "total", "", 0},
	}
	// A different question at each step: a repeated one is answered from
	// the ledger at no cost.
	selects := []string{"COUNT(*)", "SUM(age)", "AVG(age)", "COUNT(*), SUM(age)"}
	for i, s := range steps {
		res, err := svc.Answer(ctx, "SELECT "+selects[i%len(selects)]+" FROM "+s.table, Options{Epsilon: 0.5, Confidence: 0.95, Analyst: s.analyst})
		switch s.refused {
		case "":
			if err != nil {
				t.Fatalf("step %d (%s on %s): %v", i, s.analyst, s.table, err)
			}
			if res.Budget.Dataset != s.dataset || res.Budget.Total == nil || res.Budget.Total.Spent.Epsilon != s.totalSpent {
				t.Fatalf("step %d: budget %+v total %+v; want dataset %s, total spent %g", i, res.Budget, res.Budget.Total, s.dataset, s.totalSpent)
			}
		case "analyst", "total":
			if err == nil || errors.Is(err, ledger.ErrTotalExceeded) != (s.refused == "total") {
				t.Fatalf("step %d (%s on %s): %v; want a refusal by the %s budget", i, s.analyst, s.table, err, s.refused)
			}
		}
	}
	h, _ := led.History(ledger.Key{}, 0)
	if len(h) != 6 {
		t.Fatalf("%d releases recorded, want 6", len(h))
	}
	if _, err := led.Status(ledger.Key{Dataset: "visits", Analyst: "ann"}); !errors.Is(err, ledger.ErrNoBudget) {
		t.Fatalf("a budget was kept under the table's name instead of its id space: %v", err)
	}
}
