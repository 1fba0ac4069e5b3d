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

// TestExampleEpochs: the bundled example with daily epochs
// (examples/epochs.yaml) answers a query over three days, charges it in
// those days only, and budget show lists them; a later query over the
// whole week is charged in every day, and one that a spent day cannot pay
// is refused, free, naming it.
func TestExampleEpochs(t *testing.T) {
	const cat = "../../examples/epochs.yaml"
	led := filepath.Join(t.TempDir(), "l.db")
	ask := func(eps, sql string) (string, string, int) {
		return runQueryCLI("query", "--catalog", cat, "--ledger", led, "--analyst", "ana", "--epsilon", eps, sql)
	}
	out, errOut, code := ask("0.5", "SELECT date_trunc('day', visit_date) AS day, COUNT(*), AVG(euros_spent) FROM daily_visits WHERE visit_date >= DATE '2024-03-08' GROUP BY date_trunc('day', visit_date)")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := strings.Count(out, "\n2024-03-"); n != 3 {
		t.Errorf("want the 3 days read, one row each:\n%s", out)
	}
	if !strings.Contains(errOut+out, "this query reads 3 day(s), 2024-03-08..2024-03-10, and is charged ε=0.5 in each") ||
		!strings.Contains(errOut+out, "a person present in all 7 declared days (2024-03-04..2024-03-10) has, over all of them, at most 7 × 3 = 21") {
		t.Errorf("the query does not state the days charged and the guarantee:\n%s\n%s", out, errOut)
	}
	if _, errOut, code := ask("0.25", "SELECT COUNT(*), SUM(minutes_spent) FROM daily_visits"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	show := mustRun(t, "budget", "show", "--ledger", led)
	for _, want := range []string{"daily_visits  ana      2024-03-04..2024-03-07  [##........]  0.25     0.75", "daily_visits  ana      2024-03-08..2024-03-10  [#######...]  0.75     0.25"} {
		if !strings.Contains(show, want) {
			t.Errorf("budget show lacks %q:\n%s", want, show)
		}
	}
	// March 8 to 10 have 0.25 left of ana's 1; March 4 to 7 have 0.75.
	if _, errOut, code := ask("0.5", "SELECT COUNT(*) FROM daily_visits WHERE visit_date >= DATE '2024-03-07'"); code == 0 || !strings.Contains(errOut, "2024-03-08..2024-03-10") {
		t.Errorf("a query the spent days cannot pay: exit %d, %s; want a refusal naming 2024-03-08..2024-03-10", code, errOut)
	}
	if _, errOut, code := ask("0.5", "SELECT COUNT(*) FROM daily_visits WHERE visit_date < DATE '2024-03-08'"); code != 0 {
		t.Errorf("the days with budget left: exit %d: %s", code, errOut)
	}
	mustRun(t, "budget", "verify", "--ledger", led)
}
