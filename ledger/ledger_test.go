package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/dpstat/dpstat/accounting"
)

var bg = context.Background()

// tempPath is where a test opens a new ledger: a file, or, for the tests
// that TestOnPostgres runs again, a new schema on the PostgreSQL test
// server.
func tempPath(t *testing.T) string {
	t.Helper()
	if strings.HasPrefix(t.Name(), onPostgres+"/") {
		return pgLocation(t)
	}
	return filepath.Join(t.TempDir(), "sub", "dir", "ledger.db")
}

func mustOpen(t *testing.T, path string, opts Options) *Ledger {
	t.Helper()
	l, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func mustGrant(t *testing.T, l *Ledger, k Key, limit accounting.EpsDelta, rule accounting.Rule) {
	t.Helper()
	if _, err := l.Grant(k, limit, rule); err != nil {
		t.Fatal(err)
	}
}

func TestDefaultPath(t *testing.T) {
	tests := []struct {
		name              string
		ledger, xdg, home string
		want              string
	}{
		{"explicit", "/srv/l.db", "/x", "/h", "/srv/l.db"},
		{"xdg", "", "/x", "/h", filepath.Join("/x", "dpstat", "ledger.db")},
		{"home", "", "", "/h", filepath.Join("/h", ".local", "share", "dpstat", "ledger.db")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("DPSTAT_LEDGER", tt.ledger)
			t.Setenv("XDG_DATA_HOME", tt.xdg)
			t.Setenv("HOME", tt.home)
			if got := DefaultPath(); got != tt.want {
				t.Fatalf("DefaultPath() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestOpenCreatesAndReopens(t *testing.T) {
	p := tempPath(t)
	l, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Dataset: "census", Analyst: "alice"}
	mustGrant(t, l, k, accounting.EpsDelta{Epsilon: 1}, accounting.Basic)
	if _, err := l.Charge(bg, Charge{RequestID: "r1", Key: k, Cost: accounting.Pure(0.25), Description: "count"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, ro := range []bool{true, false} {
		l := mustOpen(t, p, Options{ReadOnly: ro})
		st, err := l.Status(k)
		if err != nil || st.Spent.Epsilon != 0.25 || st.Remaining.Epsilon != 0.75 || st.Releases != 1 || st.Rule != accounting.Basic {
			t.Fatalf("read-only=%v: Status = %+v, %v", ro, st, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open("", Options{}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("Open(\"\") = %v", err)
	}
	if _, err := Open(filepath.Join(dir, "x.db"), Options{Timeout: -time.Second}); err == nil || !strings.Contains(err.Error(), "timeout = -1s") {
		t.Errorf("negative timeout: %v", err)
	}
	missing := filepath.Join(dir, "missing.db")
	if _, err := Open(missing, Options{ReadOnly: true}); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("read-only open of a missing file: %v", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("read-only open created %s", missing)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrNotLedger) {
		t.Errorf("open of a directory: %v", err)
	}
}

// writeBolt makes a bbolt file with the given buckets and keys.
func writeBolt(t *testing.T, path string, fill func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fill); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func setMeta(magic, version string) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		m, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		if err := m.Put(keyMagic, []byte(magic)); err != nil {
			return err
		}
		return m.Put(keyVersion, []byte(version))
	}
}

// TestForeignFilesAreRefusedAndUntouched: a file that is not a usable
// ledger gets a clear error naming the path, and its bytes do not change,
// whether it is opened for reading or for writing.
func TestForeignFilesAreRefusedAndUntouched(t *testing.T) {
	valid := func(t *testing.T, p string) {
		l, err := Open(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		mustGrant(t, l, Key{Dataset: "d", Analyst: "a"}, accounting.EpsDelta{Epsilon: 1}, accounting.Basic)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		make    func(t *testing.T, p string)
		wantMsg string
	}{
		{"text file", func(t *testing.T, p string) {
			_ = os.WriteFile(p, []byte("name,age\nalice,30\n"), 0o600)
		}, "not a valid bbolt database"},
		{"random bytes", func(t *testing.T, p string) {
			b := make([]byte, 64<<10)
			for i := range b {
				b[i] = byte(i*7 + i/13)
			}
			_ = os.WriteFile(p, b, 0o600)
		}, "not a valid bbolt database"},
		{"bbolt without meta", func(t *testing.T, p string) {
			writeBolt(t, p, func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("other")); return err })
		}, `no "meta" bucket`},
		{"empty bbolt", func(t *testing.T, p string) {
			writeBolt(t, p, func(*bolt.Tx) error { return nil })
		}, `no "meta" bucket`},
		{"other magic", func(t *testing.T, p string) {
			writeBolt(t, p, setMeta("someone-else", "1"))
		}, `magic is "someone-else"`},
		{"newer version", func(t *testing.T, p string) {
			writeBolt(t, p, setMeta(Magic, "3"))
		}, "format version 3, newer than the version 2"},
		{"garbage version", func(t *testing.T, p string) {
			writeBolt(t, p, setMeta(Magic, "v1"))
		}, `unreadable format version "v1"`},
		{"missing bucket", func(t *testing.T, p string) {
			writeBolt(t, p, setMeta(Magic, "1"))
		}, `bucket "budgets" is missing`},
		{"truncated to 100 bytes", func(t *testing.T, p string) {
			valid(t, p)
			b, _ := os.ReadFile(p)
			_ = os.WriteFile(p, b[:100], 0o600)
		}, "not a valid bbolt database"},
		{"truncated to one page", func(t *testing.T, p string) {
			valid(t, p)
			b, _ := os.ReadFile(p)
			_ = os.WriteFile(p, b[:4096], 0o600)
		}, "file size too small"},
		{"truncated to three pages", func(t *testing.T, p string) {
			valid(t, p)
			b, _ := os.ReadFile(p)
			_ = os.WriteFile(p, b[:3*4096], 0o600)
		}, "is truncated: the file has 12288 bytes"},
		{"last page cut off", func(t *testing.T, p string) {
			valid(t, p)
			var size int64
			db, err := bolt.Open(p, 0o600, &bolt.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			_ = db.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil })
			_ = db.Close()
			b, _ := os.ReadFile(p)
			_ = os.WriteFile(p, b[:size-1], 0o600)
		}, "is truncated"},
		{"data pages damaged", func(t *testing.T, p string) {
			valid(t, p)
			b, _ := os.ReadFile(p)
			for i := 2 * 4096; i < len(b); i++ {
				b[i] ^= 0x5A
			}
			_ = os.WriteFile(p, b, 0o600)
		}, "is corrupt"},
		{"both meta pages damaged", func(t *testing.T, p string) {
			valid(t, p)
			b, _ := os.ReadFile(p)
			for _, off := range []int{16, 4096 + 16} {
				for i := range 64 {
					b[off+i] ^= 0xA5
				}
			}
			_ = os.WriteFile(p, b, 0o600)
		}, "not a valid bbolt database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "ledger.db")
			tt.make(t, p)
			before, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, ro := range []bool{false, true} {
				l, err := Open(p, Options{ReadOnly: ro})
				if err == nil {
					_ = l.Close()
					t.Fatalf("read-only=%v: Open accepted the file", ro)
				}
				if !errors.Is(err, ErrNotLedger) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tt.wantMsg) {
					t.Fatalf("read-only=%v: Open error = %v; want ErrNotLedger naming %s and saying %q", ro, err, p, tt.wantMsg)
				}
			}
			after, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Fatal("the refused file was modified")
			}
		})
	}
}

func TestOpenWaitsThenReportsInUse(t *testing.T) {
	p := tempPath(t)
	l := mustOpen(t, p, Options{})
	for _, ro := range []bool{false, true} {
		_, err := Open(p, Options{ReadOnly: ro, Timeout: 150 * time.Millisecond})
		if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), p+" is in use by another process") {
			t.Fatalf("read-only=%v: second Open = %v, want ErrInUse naming the path", ro, err)
		}
	}
	// Once the holder closes, a waiting opener gets in.
	done := make(chan error, 1)
	go func() {
		l2, err := Open(p, Options{Timeout: 10 * time.Second})
		if err == nil {
			err = l2.Close()
		}
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("waiting Open: %v", err)
	}
}

func TestGrant(t *testing.T) {
	l := mustOpen(t, tempPath(t), Options{})
	k := Key{Dataset: "census", Analyst: "alice"}
	steps := []struct {
		name    string
		limit   accounting.EpsDelta
		rule    accounting.Rule
		charge  float64
		wantErr string
	}{
		{"create", accounting.EpsDelta{Epsilon: 1}, accounting.Basic, 0.5, ""},
		{"raise", accounting.EpsDelta{Epsilon: 2}, accounting.Basic, 0, ""},
		{"lower to spent", accounting.EpsDelta{Epsilon: 0.5}, accounting.Basic, 0, ""},
		{"lower below spent", accounting.EpsDelta{Epsilon: 0.25}, accounting.Basic, 0, "below what is already spent"},
		{"change rule after releases", accounting.EpsDelta{Epsilon: 2, Delta: 1e-5}, accounting.ZCDP, 0, "cannot change"},
		{"negative", accounting.EpsDelta{Epsilon: -1}, accounting.Basic, 0, "epsilon = -1"},
		{"zcdp without delta", accounting.EpsDelta{Epsilon: 1}, accounting.ZCDP, 0, "zCDP needs a delta"},
		{"unknown rule", accounting.EpsDelta{Epsilon: 1}, "fancy", 0, `unknown budget rule "fancy"`},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			st, err := l.Grant(k, s.limit, s.rule)
			if s.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), s.wantErr) {
					t.Fatalf("Grant = %v, want an error containing %q", err, s.wantErr)
				}
				return
			}
			if err != nil || st.Limit != s.limit {
				t.Fatalf("Grant = %+v, %v", st, err)
			}
			if s.charge > 0 {
				if _, err := l.Charge(bg, Charge{Key: k, Cost: accounting.Pure(s.charge)}); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	st, _ := l.Status(k)
	if st.Limit.Epsilon != 0.5 || st.Spent.Epsilon != 0.5 {
		t.Fatalf("after refused grants: %+v", st)
	}
	for _, bad := range []Key{{Dataset: "", Analyst: "a"}, {Dataset: "d", Analyst: ""}, {Dataset: "d\x00x", Analyst: "a"}, {Dataset: "d", Analyst: "a\n"}, {Dataset: strings.Repeat("x", 300), Analyst: "a"}, {Dataset: "\xff", Analyst: "a"}, {Dataset: "d", Analyst: "a", Epoch: "2024\x0001"}} {
		if _, err := l.Grant(bad, accounting.EpsDelta{Epsilon: 1}, accounting.Basic); err == nil {
			t.Errorf("Grant(%q) accepted a bad key", bad)
		}
	}
}

func TestEnsureBudgetAndStatus(t *testing.T) {
	l := mustOpen(t, tempPath(t), Options{})
	k := Key{Dataset: "census", Analyst: "bob"}
	if _, err := l.Status(k); !errors.Is(err, ErrNoBudget) {
		t.Fatalf("Status of an unknown key: %v, want ErrNoBudget", err)
	}
	st, err := l.EnsureBudget(k, accounting.EpsDelta{Epsilon: 3, Delta: 1e-6}, accounting.ZCDP)
	if err != nil || st.Limit.Epsilon != 3 || st.Rule != accounting.ZCDP {
		t.Fatalf("EnsureBudget (create) = %+v, %v", st, err)
	}
	st, err = l.EnsureBudget(k, accounting.EpsDelta{Epsilon: 9}, accounting.Basic)
	if err != nil || st.Limit.Epsilon != 3 || st.Rule != accounting.ZCDP {
		t.Fatalf("EnsureBudget (existing) = %+v, %v; want the existing budget unchanged", st, err)
	}
	if _, err := l.EnsureBudget(Key{Dataset: "x", Analyst: "y"}, accounting.EpsDelta{Epsilon: math.NaN()}, accounting.Basic); err == nil {
		t.Fatal("EnsureBudget accepted a NaN default")
	}
	mustGrant(t, l, Key{Dataset: "a-set", Analyst: "zed"}, accounting.EpsDelta{Epsilon: 1}, accounting.Basic)
	mustGrant(t, l, Key{Dataset: "a-set", Analyst: "amy"}, accounting.EpsDelta{Epsilon: 1}, accounting.Basic)
	all, err := l.Budgets()
	if err != nil || len(all) != 3 || all[0].Key != (Key{Dataset: "a-set", Analyst: "amy"}) || all[1].Key != (Key{Dataset: "a-set", Analyst: "zed"}) || all[2].Key != k {
		t.Fatalf("Budgets() = %+v, %v; want 3 sorted by dataset then analyst", all, err)
	}
}

func TestChargeRefusalsWriteNothing(t *testing.T) {
	l := mustOpen(t, tempPath(t), Options{})
	k := Key{Dataset: "census", Analyst: "alice"}
	mustGrant(t, l, k, accounting.EpsDelta{Epsilon: 1, Delta: 1e-6}, accounting.Basic)
	if _, err := l.Charge(bg, Charge{RequestID: "first", Key: k, Cost: accounting.Pure(0.75)}); err != nil {
		t.Fatal(err)
	}
	var ee *accounting.ExceededError
	tests := []struct {
		name  string
		c     Charge
		check func(error) bool
	}{
		{"exceeds", Charge{Key: k, Cost: accounting.Pure(0.5)}, func(err error) bool { return errors.As(err, &ee) && ee.Remaining.Epsilon == 0.25 }},
		{"delta exceeds", Charge{Key: k, Cost: accounting.Approximate(0.1, 2e-6)}, func(err error) bool { return errors.As(err, &ee) }},
		{"no budget", Charge{Key: Key{Dataset: "census", Analyst: "mallory"}, Cost: accounting.Pure(0.1)}, func(err error) bool { return errors.Is(err, ErrNoBudget) }},
		{"NaN cost", Charge{Key: k, Cost: accounting.Cost{Epsilon: math.NaN()}}, func(err error) bool { return err != nil && strings.Contains(err.Error(), "epsilon = NaN") }},
		{"negative cost", Charge{Key: k, Cost: accounting.Cost{Epsilon: -0.1}}, func(err error) bool { return err != nil && strings.Contains(err.Error(), "epsilon = -0.1") }},
		{"infinite cost", Charge{Key: k, Cost: accounting.Cost{Epsilon: math.Inf(1)}}, func(err error) bool { return err != nil && strings.Contains(err.Error(), "+Inf") }},
		{"delta one", Charge{Key: k, Cost: accounting.Cost{Epsilon: 0.1, Delta: 1}}, func(err error) bool { return err != nil && strings.Contains(err.Error(), "delta = 1") }},
		{"reused request ID", Charge{RequestID: "first", Key: k, Cost: accounting.Pure(0.125)}, func(err error) bool { return errors.Is(err, ErrRequestConflict) }},
		{"answer without key", Charge{Key: k, Cost: accounting.Pure(0.1), Answer: []byte("x")}, func(err error) bool { return err != nil && strings.Contains(err.Error(), "without an answer key") }},
		{"bad key", Charge{Key: Key{Dataset: "", Analyst: "a"}, Cost: accounting.Pure(0.1)}, func(err error) bool { return err != nil && strings.Contains(err.Error(), "dataset is empty") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := l.Charge(bg, tt.c)
			if !tt.check(err) {
				t.Fatalf("Charge = %v", err)
			}
			st, _ := l.Status(k)
			h, _ := l.History(Key{}, 0)
			if st.Spent.Epsilon != 0.75 || st.Releases != 1 || len(h) != 1 {
				t.Fatalf("a refused charge wrote something: %+v, %d releases", st, len(h))
			}
		})
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := l.Charge(ctx, Charge{Key: k, Cost: accounting.Pure(0.1)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Charge with a cancelled context: %v", err)
	}
}

func TestChargeIsIdempotent(t *testing.T) {
	l := mustOpen(t, tempPath(t), Options{})
	k := Key{Dataset: "census", Analyst: "alice"}
	mustGrant(t, l, k, accounting.EpsDelta{Epsilon: 1}, accounting.Basic)
	c := Charge{RequestID: "req-42", Key: k, Cost: accounting.Pure(0.5), Description: "SELECT count(*)", AnswerKey: "q1", Answer: []byte("123")}
	first, err := l.Charge(bg, c)
	if err != nil || first.Replayed || first.ReleaseID != 1 || first.Spent.Epsilon != 0.5 {
		t.Fatalf("first charge = %+v, %v", first, err)
	}
	for i := range 3 {
		again, err := l.Charge(bg, c)
		if err != nil || !again.Replayed {
			t.Fatalf("retry %d = %+v, %v; want the original receipt, replayed", i, again, err)
		}
		again.Replayed = false
		if !again.Time.Equal(first.Time) {
			t.Fatalf("retry %d time %v != %v", i, again.Time, first.Time)
		}
		again.Time = first.Time
		if again != first {
			t.Fatalf("retry %d = %+v, want %+v", i, again, first)
		}
	}
	st, _ := l.Status(k)
	if st.Spent.Epsilon != 0.5 || st.Releases != 1 {
		t.Fatalf("retries charged again: %+v", st)
	}
	other := c
	other.Cost = accounting.Pure(0.25)
	if _, err := l.Charge(bg, other); !errors.Is(err, ErrRequestConflict) || !strings.Contains(err.Error(), "req-42") {
		t.Fatalf("same request ID, other cost: %v", err)
	}
	other = c
	other.Key = Key{Dataset: "census", Analyst: "bob"}
	mustGrant(t, l, other.Key, accounting.EpsDelta{Epsilon: 1}, accounting.Basic)
	if _, err := l.Charge(bg, other); !errors.Is(err, ErrRequestConflict) {
		t.Fatalf("same request ID, other key: %v", err)
	}
	// Idempotency survives a reopen.
	p := l.Path()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, p, Options{})
	again, err := l.Charge(bg, c)
	if err != nil || !again.Replayed || again.ReleaseID != 1 {
		t.Fatalf("retry after reopen = %+v, %v", again, err)
	}
}

func TestAnswers(t *testing.T) {
	l := mustOpen(t, tempPath(t), Options{})
	k := Key{Dataset: "census", Analyst: "alice"}
	mustGrant(t, l, k, accounting.EpsDelta{Epsilon: 1}, accounting.Basic)
	if _, ok, err := l.Answer(k, "q"); ok || err != nil {
		t.Fatalf("Answer before any charge: %v, %v", ok, err)
	}
	ans := []byte(`{"count": 1234}`)
	if _, err := l.Charge(bg, Charge{Key: k, Cost: accounting.Pure(0.25), AnswerKey: "q", Answer: ans}); err != nil {
		t.Fatal(err)
	}
	ans[0] = 'X' // the ledger keeps its own copy
	got, ok, err := l.Answer(k, "q")
	if err != nil || !ok || string(got) != `{"count": 1234}` {
		t.Fatalf("Answer = %q, %v, %v", got, ok, err)
	}
	if _, ok, _ := l.Answer(Key{Dataset: "census", Analyst: "bob"}, "q"); ok {
		t.Fatal("an answer leaked to another analyst")
	}
	_, err = l.Charge(bg, Charge{Key: k, Cost: accounting.Pure(0.25), AnswerKey: "q", Answer: []byte("other")})
	if !errors.Is(err, ErrAnswerExists) {
		t.Fatalf("second charge with the same answer key: %v, want ErrAnswerExists", err)
	}
	if st, _ := l.Status(k); st.Spent.Epsilon != 0.25 {
		t.Fatalf("ErrAnswerExists charged: %+v", st)
	}
	// A refused charge stores no answer.
	_, err = l.Charge(bg, Charge{Key: k, Cost: accounting.Pure(5), AnswerKey: "big", Answer: []byte("secret")})
	var ee *accounting.ExceededError
	if !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if _, ok, _ := l.Answer(k, "big"); ok {
		t.Fatal("a refused charge stored its answer")
	}
}

func TestHistory(t *testing.T) {
	l := mustOpen(t, tempPath(t), Options{})
	keys := []Key{{Dataset: "census", Analyst: "alice"}, {Dataset: "census", Analyst: "bob"}, {Dataset: "taxes", Analyst: "alice"}}
	for _, k := range keys {
		mustGrant(t, l, k, accounting.EpsDelta{Epsilon: 10}, accounting.Basic)
	}
	for i := range 9 {
		k := keys[i%3]
		if _, err := l.Charge(bg, Charge{Key: k, Cost: accounting.Pure(0.5), Description: fmt.Sprintf("q%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		filter Key
		limit  int
		want   []string
	}{
		{"all", Key{}, 0, []string{"q8", "q7", "q6", "q5", "q4", "q3", "q2", "q1", "q0"}},
		{"limit", Key{}, 2, []string{"q8", "q7"}},
		{"dataset", Key{Dataset: "census"}, 0, []string{"q7", "q6", "q4", "q3", "q1", "q0"}},
		{"analyst", Key{Analyst: "alice"}, 3, []string{"q8", "q6", "q5"}},
		{"both", Key{Dataset: "census", Analyst: "bob"}, 0, []string{"q7", "q4", "q1"}},
		{"none", Key{Dataset: "nothing", Analyst: ""}, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := l.History(tt.filter, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range h {
				got = append(got, r.Description)
				if r.Rule != accounting.Basic || r.Cost != accounting.Pure(0.5) || r.Time.IsZero() || r.RequestID == "" {
					t.Fatalf("release %+v incomplete", r)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("History = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestReadOnlyAndClosed(t *testing.T) {
	p := tempPath(t)
	l := mustOpen(t, p, Options{})
	k := Key{Dataset: "d", Analyst: "a"}
	mustGrant(t, l, k, accounting.EpsDelta{Epsilon: 1}, accounting.Basic)
	_ = l.Close()
	if _, err := l.Charge(bg, Charge{Key: k, Cost: accounting.Pure(0.1)}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Charge after Close: %v", err)
	}
	if _, err := l.Status(k); !errors.Is(err, ErrClosed) {
		t.Fatalf("Status after Close: %v", err)
	}
	ro := mustOpen(t, p, Options{ReadOnly: true})
	ro2 := mustOpen(t, p, Options{ReadOnly: true, Timeout: time.Second}) // readers share
	if _, err := ro.Charge(bg, Charge{Key: k, Cost: accounting.Pure(0.1)}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Charge on a read-only ledger: %v", err)
	}
	if _, err := ro.Grant(k, accounting.EpsDelta{Epsilon: 2}, accounting.Basic); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Grant on a read-only ledger: %v", err)
	}
	if st, err := ro2.Status(k); err != nil || st.Limit.Epsilon != 1 {
		t.Fatalf("Status on the second reader: %+v, %v", st, err)
	}
}

// TestConcurrentChargesAreExact: 64 goroutines race to charge a budget that
// holds exactly 40 charges of ε = 0.125 (exact in binary); exactly 40
// succeed, in every round.
func TestConcurrentChargesAreExact(t *testing.T) {
	l := mustOpen(t, tempPath(t), Options{})
	for round := range 5 {
		k := Key{Dataset: "census", Analyst: fmt.Sprintf("analyst-%d", round)}
		rule := accounting.Basic
		if round%2 == 1 {
			rule = accounting.ZCDP
		}
		limit := accounting.EpsDelta{Epsilon: 5, Delta: 1e-5}
		cost := accounting.Pure(0.125)
		if rule == accounting.ZCDP {
			// ρ = 2^-7 each; 40 of them give ρ = 0.3125, which converts to
			// ε ≈ 3.617 at δ = 1e-5, and 41 to ε ≈ 3.668: a limit of 3.64
			// admits exactly 40.
			cost = accounting.Cost{Epsilon: 0.125, Rho: 0x1p-7}
			limit.Epsilon = 3.64
		}
		mustGrant(t, l, k, limit, rule)
		var ok, exceeded atomic.Int64
		var wg sync.WaitGroup
		for g := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					_, err := l.Charge(bg, Charge{RequestID: fmt.Sprintf("%d-%d-%d", round, g, i), Key: k, Cost: cost})
					var ee *accounting.ExceededError
					if errors.As(err, &ee) {
						exceeded.Add(1)
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					ok.Add(1)
				}
			}()
		}
		wg.Wait()
		if ok.Load() != 40 || exceeded.Load() != 64 {
			t.Fatalf("round %d (%s): %d charges succeeded and %d were refused, want 40 and 64", round, rule, ok.Load(), exceeded.Load())
		}
		st, _ := l.Status(k)
		h, _ := l.History(k, 0)
		if st.Releases != 40 || len(h) != 40 {
			t.Fatalf("round %d: status %+v, %d releases in history", round, st, len(h))
		}
	}
}

func TestCheck(t *testing.T) {
	l := mustOpen(t, tempPath(t), Options{})
	k := Key{Dataset: "census", Analyst: "alice"}
	if err := l.Check(k, accounting.Pure(0.1)); !errors.Is(err, ErrNoBudget) {
		t.Fatalf("Check without a budget: %v", err)
	}
	mustGrant(t, l, k, accounting.EpsDelta{Epsilon: 1}, accounting.Basic)
	var ee *accounting.ExceededError
	tests := []struct {
		name  string
		cost  accounting.Cost
		check func(error) bool
	}{
		{"fits", accounting.Pure(1), func(err error) bool { return err == nil }},
		{"exceeds", accounting.Pure(1.5), func(err error) bool { return errors.As(err, &ee) }},
		{"bad", accounting.Cost{Epsilon: math.NaN()}, func(err error) bool { return err != nil && strings.Contains(err.Error(), "NaN") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := l.Check(k, tt.cost); !tt.check(err) {
				t.Fatalf("Check(%v) = %v", tt.cost, err)
			}
			if st, _ := l.Status(k); st.Releases != 0 {
				t.Fatal("Check charged")
			}
		})
	}
}

// TestDamagedBudgetFailsOnlyItsOwnCharges: a charge whose transaction step
// fails (here: its budget record is damaged) must not fail the charges
// that shared its group commit.
func TestDamagedBudgetFailsOnlyItsOwnCharges(t *testing.T) {
	l := mustOpen(t, tempPath(t), Options{})
	good, bad := Key{Dataset: "census", Analyst: "good"}, Key{Dataset: "census", Analyst: "bad"}
	mustGrant(t, l, good, accounting.EpsDelta{Epsilon: 100}, accounting.Basic)
	mustGrant(t, l, bad, accounting.EpsDelta{Epsilon: 100}, accounting.Basic)
	if err := l.st.update(func(tx kvTx) error {
		return tx.Bucket(bucketBudgets).Put(bad.bytes(), []byte("{not json"))
	}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var goodOK, badFailed atomic.Int64
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				k := good
				if (g+i)%2 == 1 {
					k = bad
				}
				_, err := l.Charge(bg, Charge{Key: k, Cost: accounting.Pure(0.125)})
				switch {
				case k == good && err == nil:
					goodOK.Add(1)
				case k == bad && err != nil && strings.Contains(err.Error(), "damaged"):
					badFailed.Add(1)
				default:
					t.Errorf("charge to %v: %v", k, err)
				}
			}
		}()
	}
	wg.Wait()
	if goodOK.Load() != 160 || badFailed.Load() != 160 {
		t.Fatalf("%d good charges succeeded and %d bad ones failed, want 160 and 160", goodOK.Load(), badFailed.Load())
	}
	st, err := l.Status(good)
	if err != nil || st.Releases != 160 || st.Spent.Epsilon != 20 {
		t.Fatalf("good budget: %+v, %v", st, err)
	}
	if h, _ := l.History(Key{}, 0); len(h) != 160 {
		t.Fatalf("%d releases recorded, want 160", len(h))
	}
}
