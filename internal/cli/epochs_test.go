package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/epoch"
	"github.com/dpstat/dpstat/ledger"
)

// TestBudgetShowEpochs: budget show lists the charged epochs of a dataset
// that declares epochs as runs, each with a gauge, its analysts' and its
// totals'.
func TestBudgetShowEpochs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	mustRun(t, "budget", "grant", "--ledger", path, "--dataset", "visits", "--analyst", "ann", "--epsilon", "2")
	mustRun(t, "budget", "grant", "--ledger", path, "--dataset", "visits", "--total", "--epsilon", "4")
	l, err := ledger.Open(path, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := ledger.Key{Dataset: "visits", Analyst: "ann"}
	for _, r := range []epoch.Range{{Every: epoch.Month, From: 2024 * 12, To: 2024*12 + 11}, {Every: epoch.Month, From: 2024*12 + 2, To: 2024*12 + 3}} {
		if _, err := l.Charge(context.Background(), ledger.Charge{Key: k, Cost: accounting.Pure(1), Epochs: &r}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	out := mustRun(t, "budget", "show", "--ledger", path)
	for _, want := range []string{
		"epochs (each epoch of a dataset that declares epochs has a budget of its own",
		"visits  ann      2024-03..2024-04  [##########]  2        0            2",
		"visits  ann      2024-05..2024-12  [#####.....]  1        1            1",
		"visits  total    2024-03..2024-04  [#####.....]  2        2            2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("budget show lacks %q:\n%s", want, out)
		}
	}
	js := mustRun(t, "budget", "show", "--ledger", path, "--json")
	if !strings.Contains(js, `"epoch_budgets"`) || !strings.Contains(js, `"epoch": "2024-01..2024-02"`) {
		t.Errorf("budget show --json lacks the epochs:\n%s", js)
	}
	mustRun(t, "budget", "verify", "--ledger", path)
	if h := mustRun(t, "budget", "history", "--ledger", path); !strings.Contains(h, "visits(2024-03..2024-04)") {
		t.Errorf("budget history does not name the epochs charged:\n%s", h)
	}
}
