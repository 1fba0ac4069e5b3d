package ledger

import (
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/dpstat/dpstat/accounting"
)

// TestBudgetRecordsStoredForm: an analyst's budget and a total budget,
// both stored through a book, keep their stored forms (the analyst's
// under dataset NUL analyst as {"key": …, "budget": …}, the total under
// the dataset as {"dataset": …, "budget": …}) and read back the same.
func TestBudgetRecordsStoredForm(t *testing.T) {
	path := tempPath(t)
	l := mustOpen(t, path, Options{})
	alice := Key{Dataset: "census", Analyst: "alice"}
	mustGrant(t, l, alice, accounting.EpsDelta{Epsilon: 0.5}, accounting.Basic)
	if _, err := l.GrantTotal("census", accounting.EpsDelta{Epsilon: 1}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		bucket, key []byte
		prefix      string
	}{
		{bucketBudgets, []byte("census\x00alice"), `{"key":{"dataset":"census","analyst":"alice"},"budget":{`},
		{bucketTotals, []byte("census"), `{"dataset":"census","budget":{`},
	}
	editBolt(t, path, func(tx *bolt.Tx) error {
		for _, tt := range tests {
			if v := string(tx.Bucket(tt.bucket).Get(tt.key)); !strings.HasPrefix(v, tt.prefix) {
				t.Errorf("stored under %q in %s: %s, want it to begin %s", tt.key, tt.bucket, v, tt.prefix)
			}
		}
		return nil
	})
	l = mustOpen(t, path, Options{})
	defer l.Close()
	if st, err := l.Status(alice); err != nil || st.Limit.Epsilon != 0.5 {
		t.Errorf("Status(alice) = %+v, %v: want a limit of ε=0.5", st, err)
	}
	if st, err := l.Total("census"); err != nil || st.Limit.Epsilon != 1 {
		t.Errorf("Total(census) = %+v, %v: want a limit of ε=1", st, err)
	}
	if bs, err := l.Budgets(); err != nil || len(bs) != 1 || bs[0].Key != alice || bs[0].Total == nil {
		t.Errorf("Budgets() = %+v, %v: want alice's with the total", bs, err)
	}
	if ts, err := l.Totals(); err != nil || len(ts) != 1 || ts[0].Dataset != "census" {
		t.Errorf("Totals() = %+v, %v: want census's", ts, err)
	}
}
