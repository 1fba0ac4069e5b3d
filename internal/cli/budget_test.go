package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/ledger"
)

func runBudgetCLI(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = Execute(args, &out, &errb)
	return out.String(), errb.String(), code
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := runBudgetCLI(args...)
	if code != 0 {
		t.Fatalf("dpstat %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// chargeDirect charges the ledger as the query engine would.
func chargeDirect(t *testing.T, path string, k ledger.Key, eps float64, desc string) {
	t.Helper()
	l, err := ledger.Open(path, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Charge(context.Background(), ledger.Charge{Key: k, Cost: accounting.Pure(eps), Description: desc}); err != nil {
		t.Fatal(err)
	}
}

func TestBudgetGrantShow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	out := mustRun(t, "budget", "grant", "--ledger", path, "--dataset", "census", "--analyst", "alice", "--epsilon", "1")
	if !strings.Contains(out, `granted analyst "alice" on "census": limit ε=1 δ=0 (rule basic)`) || !strings.Contains(out, path) {
		t.Fatalf("grant output:\n%s", out)
	}
	mustRun(t, "budget", "grant", "--ledger", path, "--dataset", "census", "--analyst", "bob", "--epsilon", "3", "--delta", "1e-6", "--rule", "zcdp")
	mustRun(t, "budget", "grant", "--ledger", path, "--dataset", "taxes", "--analyst", "alice", "--epsilon", "2")
	chargeDirect(t, path, ledger.Key{Dataset: "census", Analyst: "alice"}, 0.25, "count")

	out = mustRun(t, "budget", "show", "--ledger", path)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || lines[0] != "ledger "+path || !strings.HasPrefix(lines[1], "TABLE") {
		t.Fatalf("show output:\n%s", out)
	}
	if f := strings.Fields(lines[2]); strings.Join(f, " ") != "census alice basic 1 0 0.25 0 0.75 0 1" {
		t.Fatalf("alice's row: %q", lines[2])
	}
	if f := strings.Fields(lines[3]); strings.Join(f, " ") != "census bob zcdp 3 1e-06 0 0 3 1e-06 0" {
		t.Fatalf("bob's row: %q", lines[3])
	}

	out = mustRun(t, "budget", "show", "--ledger", path, "--analyst", "alice", "--json")
	var js struct {
		Ledger  string          `json:"ledger"`
		Budgets []ledger.Status `json:"budgets"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil {
		t.Fatalf("show --json: %v\n%s", err, out)
	}
	if js.Ledger != path || len(js.Budgets) != 2 || js.Budgets[0].Spent.Epsilon != 0.25 || js.Budgets[1].Key.Dataset != "taxes" {
		t.Fatalf("show --json = %+v", js)
	}
	out = mustRun(t, "budget", "show", "--ledger", path, "--dataset", "nothing")
	if !strings.Contains(out, `no budgets match dataset "nothing"`) {
		t.Fatalf("show with no match:\n%s", out)
	}

	// Raise, and refuse to lower below what is spent.
	mustRun(t, "budget", "grant", "--ledger", path, "--dataset", "census", "--analyst", "alice", "--epsilon", "2")
	_, errOut, code := runBudgetCLI("budget", "grant", "--ledger", path, "--dataset", "census", "--analyst", "alice", "--epsilon", "0.125")
	if code == 0 || !strings.Contains(errOut, "below what is already spent") {
		t.Fatalf("lowering below spent: exit %d, %s", code, errOut)
	}
}

func TestBudgetBadFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	grant := []string{"budget", "grant", "--ledger", path}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no dataset", append(grant, "--analyst", "a", "--epsilon", "1"), "--table is required"},
		{"no analyst", append(grant, "--dataset", "d", "--epsilon", "1"), "--analyst is required"},
		{"no epsilon", append(grant, "--dataset", "d", "--analyst", "a"), "--epsilon is required"},
		{"negative epsilon", append(grant, "--dataset", "d", "--analyst", "a", "--epsilon", "-1"), "--epsilon -1"},
		{"NaN epsilon", append(grant, "--dataset", "d", "--analyst", "a", "--epsilon", "NaN"), "--epsilon NaN"},
		{"infinite epsilon", append(grant, "--dataset", "d", "--analyst", "a", "--epsilon", "+Inf"), "--epsilon +Inf"},
		{"not a number", append(grant, "--dataset", "d", "--analyst", "a", "--epsilon", "lots"), `--epsilon "lots": want a number such as 0.5`},
		{"delta one", append(grant, "--dataset", "d", "--analyst", "a", "--epsilon", "1", "--delta", "1"), "--delta 1"},
		{"unknown rule", append(grant, "--dataset", "d", "--analyst", "a", "--epsilon", "1", "--rule", "renyi"), `unknown budget rule "renyi"`},
		{"zcdp without delta", append(grant, "--dataset", "d", "--analyst", "a", "--epsilon", "1", "--rule", "zcdp"), "zCDP needs a delta"},
		{"empty dataset", append(grant, "--dataset", "", "--analyst", "a", "--epsilon", "1"), "dataset is empty"},
		{"extra argument", []string{"budget", "show", "--ledger", path, "extra"}, `unknown command "extra"`},
		{"negative limit", []string{"budget", "history", "--ledger", path, "--limit", "-1"}, "--limit -1"},
		{"no subcommand", []string{"budget"}, "missing subcommand"},
		{"unknown flag", []string{"budget", "show", "--ledger", path, "--verbose"}, "unknown flag: --verbose"},
		{"empty ledger path", []string{"budget", "grant", "--ledger", "", "--dataset", "d", "--analyst", "a", "--epsilon", "1"}, "ledger path is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runBudgetCLI(tt.args...)
			if code == 0 || !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("exit %d, stderr %q; want a failure saying %q", code, errOut, tt.wantErr)
			}
		})
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("a refused command created the ledger")
	}
}

func TestBudgetHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	alice, bob := ledger.Key{Dataset: "census", Analyst: "alice"}, ledger.Key{Dataset: "census", Analyst: "bob"}
	mustRun(t, "budget", "grant", "--ledger", path, "--dataset", "census", "--analyst", "alice", "--epsilon", "5")
	mustRun(t, "budget", "grant", "--ledger", path, "--dataset", "census", "--analyst", "bob", "--epsilon", "5")
	chargeDirect(t, path, alice, 0.5, "SELECT count(*)\nFROM people")
	chargeDirect(t, path, bob, 0.25, "SELECT avg(age) FROM people")
	chargeDirect(t, path, alice, 0.125, "SELECT sum(income) FROM people")

	out := mustRun(t, "budget", "history", "--ledger", path)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || lines[0] != "ledger "+path || !strings.HasPrefix(lines[1], "ID") {
		t.Fatalf("history output:\n%s", out)
	}
	for i, want := range []string{"3 ", "2 ", "1 "} {
		if !strings.HasPrefix(lines[2+i], want) {
			t.Fatalf("history is not newest first:\n%s", out)
		}
	}
	if !strings.Contains(lines[4], "SELECT count(*) FROM people") {
		t.Fatalf("multi-line description not kept on one row: %q", lines[4])
	}

	out = mustRun(t, "budget", "history", "--ledger", path, "--analyst", "alice", "--limit", "1", "--json")
	var js struct {
		Ledger   string           `json:"ledger"`
		Releases []ledger.Release `json:"releases"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil {
		t.Fatalf("history --json: %v\n%s", err, out)
	}
	if js.Ledger != path || len(js.Releases) != 1 || js.Releases[0].ID != 3 || js.Releases[0].Cost.Epsilon != 0.125 {
		t.Fatalf("history --json = %+v", js)
	}
}

func TestBudgetMissingAndForeignLedger(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none", "l.db")
	for _, args := range [][]string{{"budget", "show"}, {"budget", "history"}} {
		out := mustRun(t, append(args, "--ledger", missing)...)
		if !strings.Contains(out, "does not exist yet") {
			t.Fatalf("%v on a missing ledger:\n%s", args, out)
		}
		out = mustRun(t, append(args, "--ledger", missing, "--json")...)
		if !strings.Contains(out, `"ledger": "`+missing+`"`) {
			t.Fatalf("%v --json on a missing ledger:\n%s", args, out)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("reading created the ledger")
	}
	foreign := filepath.Join(dir, "notes.txt")
	content := []byte("these are my notes, not a ledger\n")
	if err := os.WriteFile(foreign, content, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"budget", "show", "--ledger", foreign},
		{"budget", "grant", "--ledger", foreign, "--dataset", "d", "--analyst", "a", "--epsilon", "1"},
	} {
		_, errOut, code := runBudgetCLI(args...)
		if code == 0 || !strings.Contains(errOut, foreign) || !strings.Contains(errOut, "not a dpstat ledger") {
			t.Fatalf("%v: exit %d, %s", args, code, errOut)
		}
	}
	if got, _ := os.ReadFile(foreign); !bytes.Equal(got, content) {
		t.Fatal("the foreign file was modified")
	}
}

func TestBudgetLedgerFromEnvironment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "env.db")
	t.Setenv("DPSTAT_LEDGER", path)
	out := mustRun(t, "budget", "grant", "--dataset", "d", "--analyst", "a", "--epsilon", "1")
	if !strings.Contains(out, "ledger "+path) {
		t.Fatalf("grant did not use $DPSTAT_LEDGER:\n%s", out)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}
