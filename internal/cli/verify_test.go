package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/ledger"
)

// TestBudgetTotalGrantShow: grant --total, show lists the total beside the
// analysts' budgets, and the total refuses what the analyst's budget
// would admit.
func TestBudgetTotalGrantShow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	mustRun(t, "budget", "grant", "--ledger", path, "--dataset", "census", "--analyst", "alice", "--epsilon", "1")
	chargeDirect(t, path, ledger.Key{Dataset: "census", Analyst: "alice"}, 0.25, "count")
	out := mustRun(t, "budget", "grant", "--ledger", path, "--dataset", "census", "--total", "--epsilon", "0.5")
	if !strings.Contains(out, `granted the total budget of dataset "census" (all analysts together): limit ε=0.5 δ=0 (rule basic); spent ε=0.25 δ=0, remaining ε=0.25 δ=0, 1 releases`) {
		t.Fatalf("grant --total output:\n%s", out)
	}
	out = mustRun(t, "budget", "show", "--ledger", path)
	if !strings.Contains(out, "TOTAL (ALL ANALYSTS)") || !strings.Contains(strings.Join(strings.Fields(out), " "), "census total basic 0.5 0 0.25 0 0.25 0 1") {
		t.Fatalf("show output:\n%s", out)
	}
	var js budgetShowJSON
	if err := json.Unmarshal([]byte(mustRun(t, "budget", "show", "--ledger", path, "--json")), &js); err != nil || len(js.Totals) != 1 || js.Budgets[0].Total == nil || js.Budgets[0].Total.Limit.Epsilon != 0.5 {
		t.Fatalf("show --json: %+v, %v", js, err)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--dataset", "census", "--total", "--analyst", "bob", "--epsilon", "1"}, `--total with --analyst "bob"`},
		{[]string{"--dataset", "census", "--epsilon", "1"}, "--analyst is required (or --total"},
		{[]string{"--total", "--epsilon", "1"}, "--table is required"},
		{[]string{"--dataset", "census", "--total", "--epsilon", "0.125"}, "below what is already spent"},
	} {
		_, errOut, code := runBudgetCLI(append([]string{"budget", "grant", "--ledger", path}, bad.args...)...)
		if code != 1 || !strings.Contains(errOut, bad.want) {
			t.Errorf("grant %v: exit %d, %q; want %q", bad.args, code, errOut, bad.want)
		}
	}
}

// TestBudgetVerify: verify passes on a good ledger, names the budget of an
// edited sum (and dpstat then refuses to open the ledger at all), and
// seals with a key file.
func TestBudgetVerify(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "l.db")
	mustRun(t, "budget", "grant", "--ledger", path, "--dataset", "census", "--analyst", "alice", "--epsilon", "4")
	for range 2 {
		chargeDirect(t, path, ledger.Key{Dataset: "census", Analyst: "alice"}, 1, "count")
	}
	out := mustRun(t, "budget", "verify", "--ledger", path)
	if !strings.Contains(out, "verified") || !strings.Contains(out, "1 budgets and 0 total budgets match their 2 release records and 1 grant records (a chain of 3 records)") || !strings.Contains(out, "not sealed") {
		t.Fatalf("verify output:\n%s", out)
	}

	keyFile := filepath.Join(dir, "ledger.key")
	if err := os.WriteFile(keyFile, []byte("c2VjcmV0IGtleSBmb3IgdGhlIGxlZGdlcgo=\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(ledger.KeyFileEnv, keyFile)
	if _, errOut, code := runBudgetCLI("budget", "verify", "--ledger", path, "--seal"); code != 1 || !strings.Contains(errOut, "has mode 0644: want it readable by its owner only") {
		t.Fatalf("a readable key file: exit %d, %s", code, errOut)
	}
	if err := os.Chmod(keyFile, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runBudgetCLI("budget", "verify", "--ledger", path); code != 1 || !strings.Contains(errOut, "not sealed") {
		t.Fatalf("verify with a key of an unsealed ledger: exit %d, %s", code, errOut)
	}
	if out := mustRun(t, "budget", "verify", "--ledger", path, "--seal"); !strings.Contains(out, "sealed: the seal verifies") {
		t.Fatalf("verify --seal:\n%s", out)
	}
	chargeDirectKeyed(t, path)
	if out := mustRun(t, "budget", "show", "--ledger", path); !strings.Contains(out, "census") {
		t.Fatalf("show with the key:\n%s", out)
	}
	t.Setenv(ledger.KeyFileEnv, "")
	if out := mustRun(t, "budget", "verify", "--ledger", path); !strings.Contains(out, "the seal was not checked") {
		t.Fatalf("verify without the key:\n%s", out)
	}
	if _, errOut, code := runBudgetCLI("budget", "grant", "--ledger", path, "--dataset", "census", "--analyst", "bob", "--epsilon", "1"); code != 1 || !strings.Contains(errOut, "is sealed with a key") {
		t.Fatalf("a write without the key: exit %d, %s", code, errOut)
	}

	// An edited sum.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("budgets"))
		k := []byte("census\x00alice")
		return b.Put(k, bytes.Replace(b.Get(k), []byte(`"sum_epsilon":"3"`), []byte(`"sum_epsilon":"0"`), 1))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, args := range [][]string{{"budget", "verify"}, {"budget", "show"}, {"budget", "history"}} {
		_, errOut, code := runBudgetCLI(append(args, "--ledger", path)...)
		if code != 1 || !strings.Contains(errOut, `budget of analyst "alice" on "census": stored sum_epsilon=0`) || !strings.Contains(errOut, "add up to sum_epsilon=3") {
			t.Fatalf("%v on an edited ledger: exit %d, %s", args, code, errOut)
		}
	}
}

// chargeDirectKeyed charges once with the key of $DPSTAT_LEDGER_KEY_FILE.
func chargeDirectKeyed(t *testing.T, path string) {
	t.Helper()
	l, err := openLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Charge(t.Context(), ledger.Charge{Key: ledger.Key{Dataset: "census", Analyst: "alice"}, Cost: accounting.Pure(1)}); err != nil {
		t.Fatal(err)
	}
}
