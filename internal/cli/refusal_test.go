package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestBudgetRefusalReads checks what a person reads when a budget
// refuses: numbers without float drift, no ρ under a basic budget, and
// advice that names the table and the budget that refused.
func TestBudgetRefusalReads(t *testing.T) {
	led := filepath.Join(t.TempDir(), "l.db")
	q := func(analyst, eps, where string) (string, string, int) {
		return runQueryCLI("query", "--catalog", exampleCatalog, "--ledger", led, "--analyst", analyst, "--epsilon", eps,
			"SELECT COUNT(*) FROM adult WHERE age > "+where)
	}
	// 3 + 3 + 3.6 in doubles is 9.600000000000001.
	for i, eps := range []string{"3", "3", "3.6"} {
		if _, errOut, code := q("ana", eps, string(rune('0'+i))); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	}
	_, errOut, code := q("ana", "0.7", "9")
	if code == 0 {
		t.Fatal("a query over the analyst's budget was answered")
	}
	for _, want := range []string{"spent ε=9.6 δ=0", "remaining ε=0.4 δ=1e-05", "the request (ε=0.7 δ=0)", "dpstat budget grant --table adult --analyst ana --epsilon E"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("refusal lacks %q:\n%s", want, errOut)
		}
	}
	for _, bad := range []string{"00000", "99999", "ρ=", "TABLE", "dataset"} {
		if strings.Contains(errOut, bad) {
			t.Errorf("refusal says %q:\n%s", bad, errOut)
		}
	}
	// The table's total budget (30 for every analyst together) refuses
	// another analyst: the advice is to raise the total.
	out, errOut, code := runQueryCLI("budget", "grant", "--ledger", led, "--table", "adult", "--total", "--epsilon", "10")
	if code != 0 {
		t.Fatalf("grant --total: exit %d: %s%s", code, errOut, out)
	}
	_, errOut, code = q("bo", "0.5", "9")
	if code == 0 {
		t.Fatal("a query over the total budget was answered")
	}
	if !strings.Contains(errOut, "dpstat budget grant --table adult --total --epsilon E") || strings.Contains(errOut, "--analyst bo") {
		t.Errorf("total refusal's advice:\n%s", errOut)
	}
}
