package ledger

import (
	"errors"
	"reflect"
	"testing"

	"github.com/dpstat/dpstat/accounting"
)

// TestCopy copies file ledgers (sealed and not) into PostgreSQL and into
// another file: budgets, totals, history, stored answers, analysts and the
// chain arrive unchanged, the copy verifies, and charging goes on where
// the source stopped. A destination with records is refused untouched.
func TestCopy(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	alice, bob := Key{Dataset: "census", Analyst: "alice"}, Key{Dataset: "census", Analyst: "bob"}
	build := func(t *testing.T, opts Options) *Ledger {
		src := mustOpen(t, tempPath(t), opts)
		mustGrant(t, src, alice, accounting.EpsDelta{Epsilon: 10}, accounting.Basic)
		mustGrant(t, src, bob, accounting.EpsDelta{Epsilon: 3, Delta: 1e-5}, accounting.ZCDP)
		if _, err := src.GrantTotal("census", accounting.EpsDelta{Epsilon: 12}, accounting.Basic); err != nil {
			t.Fatal(err)
		}
		for i, c := range []Charge{
			{RequestID: "r1", Key: alice, Cost: accounting.Pure(0.5), Description: "q1", AnswerKey: "a1", Answer: []byte(`{"n":1}`)},
			{RequestID: "r2", Key: bob, Cost: accounting.Cost{Epsilon: 0.25, Rho: 0x1p-6}},
			{RequestID: "r3", Key: alice, Cost: accounting.Pure(0.125), AnswerKey: "a3"},
		} {
			if _, err := src.Charge(bg, c); err != nil {
				t.Fatalf("charge %d: %v", i, err)
			}
		}
		if err := src.PutAnalystRecord("alice", []byte(`{"name":"alice"}`)); err != nil {
			t.Fatal(err)
		}
		return src
	}
	type state struct {
		Budgets []Status
		Totals  []TotalStatus
		History []Release
		Answer  []byte
		Records []AnalystRecord
	}
	read := func(t *testing.T, l *Ledger) state {
		var s state
		var err error
		if s.Budgets, err = l.Budgets(); err != nil {
			t.Fatal(err)
		}
		if s.Totals, err = l.Totals(); err != nil {
			t.Fatal(err)
		}
		if s.History, err = l.History(Key{}, 0); err != nil {
			t.Fatal(err)
		}
		if s.Answer, _, err = l.Answer(alice, "a1"); err != nil {
			t.Fatal(err)
		}
		if s.Records, err = l.AnalystRecords(); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, sealed := range []bool{false, true} {
		for _, to := range []string{"postgres", "file"} {
			name := to
			var opts Options
			if sealed {
				name, opts = to+"/sealed", Options{Key: key}
			}
			t.Run(name, func(t *testing.T) {
				src := build(t, opts)
				want := read(t, src)
				dloc := tempPath(t)
				if to == "postgres" {
					dloc = pgLocation(t)
				}
				dst := mustOpen(t, dloc, opts)
				rep, err := Copy(src, dst)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Copy.Releases != 3 || rep.Copy.Sealed != sealed || rep.Copy.SealChecked != sealed {
					t.Fatalf("report %+v", rep)
				}
				if got := read(t, dst); !reflect.DeepEqual(got, want) {
					t.Fatalf("copy reads\n%+v\nwant\n%+v", got, want)
				}
				// The copy keeps charging where the source stopped, and
				// knows its request IDs and answer keys.
				r, err := dst.Charge(bg, Charge{Key: alice, Cost: accounting.Pure(0.25)})
				if err != nil || r.ReleaseID != 4 || r.Total == nil || r.Total.Releases != 4 {
					t.Fatalf("charge on the copy: %+v, %v", r, err)
				}
				if r, err := dst.Charge(bg, Charge{RequestID: "r2", Key: bob, Cost: accounting.Cost{Epsilon: 0.25, Rho: 0x1p-6}}); err != nil || !r.Replayed || r.ReleaseID != 2 {
					t.Fatalf("replay on the copy: %+v, %v", r, err)
				}
				if err := dst.StoreAnswer(alice, "a3", []byte("3")); err != nil {
					t.Fatalf("pending answer on the copy: %v", err)
				}
				if _, err := dst.Verify(); err != nil {
					t.Fatal(err)
				}
				// A second copy into the same ledger is refused.
				if _, err := Copy(src, dst); !errors.Is(err, ErrNotEmpty) {
					t.Fatalf("copy into a ledger with records: %v", err)
				}
				if h, _ := dst.History(Key{}, 0); len(h) != 4 {
					t.Fatalf("the refused copy changed the ledger: %d releases", len(h))
				}
			})
		}
	}
	t.Run("sealed source needs the key", func(t *testing.T) {
		src := build(t, Options{Key: key})
		dst := mustOpen(t, pgLocation(t), Options{})
		if _, err := Copy(src, dst); !errors.Is(err, ErrKey) {
			t.Fatalf("copy of a sealed ledger without a key: %v", err)
		}
	})
}
