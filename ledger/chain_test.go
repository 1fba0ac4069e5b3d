package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/dpstat/dpstat/accounting"
)

var (
	tamperAlice = Key{Dataset: "census", Analyst: "alice"}
	tamperBob   = Key{Dataset: "census", Analyst: "bob"}
)

// tamperLedger makes a closed ledger with a total budget, two analysts and
// releases 1..4 (alice ε = 0.25 three times, bob ε = 0.5 once).
func tamperLedger(t *testing.T, opts Options) string {
	t.Helper()
	path := tempPath(t)
	l, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	mustGrant(t, l, tamperAlice, accounting.EpsDelta{Epsilon: 10}, accounting.Basic)
	mustGrant(t, l, tamperBob, accounting.EpsDelta{Epsilon: 10}, accounting.Basic)
	if _, err := l.GrantTotal("census", accounting.EpsDelta{Epsilon: 15}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		k   Key
		eps float64
	}{{tamperAlice, 0.25}, {tamperAlice, 0.25}, {tamperBob, 0.5}, {tamperAlice, 0.25}} {
		if _, err := l.Charge(bg, Charge{Key: c.k, Description: "SELECT COUNT(*) FROM census", Cost: accounting.Pure(c.eps)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func editBolt(t *testing.T, path string, fn func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// replaceIn replaces old by new in the value stored under key.
func replaceIn(bucket, key []byte, old, new string) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		v := b.Get(key)
		if !bytes.Contains(v, []byte(old)) {
			return errors.New("the stored value " + string(v) + " does not contain " + old)
		}
		return b.Put(key, bytes.Replace(v, []byte(old), []byte(new), 1))
	}
}

// rechain rewrites every event's previous-hash and the head, as someone
// who understands the format would after an edit.
func rechain(tx *bolt.Tx) error {
	type ev struct {
		bucket, key []byte
		seq         uint64
		raw         []byte
	}
	var evs []ev
	for _, bn := range [][]byte{bucketReleases, bucketGrants} {
		if err := tx.Bucket(bn).ForEach(func(k, v []byte) error {
			var s struct {
				Seq uint64 `json:"seq"`
			}
			if err := json.Unmarshal(v, &s); err != nil {
				return err
			}
			evs = append(evs, ev{bn, bytes.Clone(k), s.Seq, bytes.Clone(v)})
			return nil
		}); err != nil {
			return err
		}
	}
	byseq := make([]ev, len(evs)+1)
	for _, e := range evs {
		byseq[e.seq] = e
	}
	prev := ""
	for _, e := range byseq[1:] {
		var m map[string]any
		if err := json.Unmarshal(e.raw, &m); err != nil {
			return err
		}
		m["prev"] = prev
		raw, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if err := tx.Bucket(e.bucket).Put(e.key, raw); err != nil {
			return err
		}
		prev = hashHex(raw)
	}
	return writeHead(boltTx{tx}, chainHead{seq: uint64(len(evs)), head: prev}, nil)
}

// TestTamperingIsDetected: every edit below makes Open (for writing and
// for reading) and Verify refuse the ledger with ErrTampered and a message
// naming what does not match, and the file is not repaired.
func TestTamperingIsDetected(t *testing.T) {
	tests := []struct {
		name string
		edit func(*bolt.Tx) error
		want string
	}{
		{"a sum set to zero", replaceIn(bucketBudgets, tamperAlice.bytes(), `"sum_epsilon":"3/4"`, `"sum_epsilon":"0"`), `budget of analyst "alice" on "census": stored sum_epsilon=0`},
		{"the release count lowered", replaceIn(bucketBudgets, tamperAlice.bytes(), `"releases":3`, `"releases":1`), `analyst "alice"`},
		{"a limit raised", replaceIn(bucketBudgets, tamperBob.bytes(), `"limit":{"epsilon":10`, `"limit":{"epsilon":100`), `analyst "bob" on "census": stored limit ε=100`},
		{"the total's sum set to zero", replaceIn(bucketTotals, []byte("census"), `"sum_epsilon":"5/4"`, `"sum_epsilon":"0"`), `total budget of dataset "census"`},
		{"the total's limit raised", replaceIn(bucketTotals, []byte("census"), `"epsilon":15`, `"epsilon":150`), `total budget of dataset "census": stored limit ε=150`},
		{"the total removed", func(tx *bolt.Tx) error { return tx.Bucket(bucketTotals).Delete([]byte("census")) }, `total budget of dataset "census" was granted but is not stored`},
		{"a budget removed", func(tx *bolt.Tx) error { return tx.Bucket(bucketBudgets).Delete(tamperBob.bytes()) }, `analyst "bob" on "census" has 1 release records`},
		{"a release's cost lowered", replaceIn(bucketReleases, idBytes(3), `"epsilon":0.5`, `"epsilon":0`), "release 4 (event 7) does not hold the hash of the event before it"},
		{"a middle release deleted", func(tx *bolt.Tx) error { return tx.Bucket(bucketReleases).Delete(idBytes(2)) }, "release 3 is event 6 of the chain where event 5 was expected"},
		{"a middle release deleted and the sums fixed", func(tx *bolt.Tx) error {
			if err := tx.Bucket(bucketReleases).Delete(idBytes(2)); err != nil {
				return err
			}
			if err := replaceIn(bucketBudgets, tamperAlice.bytes(), `"sum_epsilon":"3/4","sum_delta":"0","sum_rho":"3/32","sum_rho_delta":"0","releases":3`, `"sum_epsilon":"1/2","sum_delta":"0","sum_rho":"1/16","sum_rho_delta":"0","releases":2`)(tx); err != nil {
				return err
			}
			return replaceIn(bucketTotals, []byte("census"), `"sum_epsilon":"5/4","sum_delta":"0","sum_rho":"7/32","sum_rho_delta":"0","releases":4`, `"sum_epsilon":"1","sum_delta":"0","sum_rho":"3/16","sum_rho_delta":"0","releases":3`)(tx)
		}, "where event 5 was expected: a record was removed"},
		{"the last release deleted and the sums fixed", func(tx *bolt.Tx) error {
			if err := tx.Bucket(bucketReleases).Delete(idBytes(4)); err != nil {
				return err
			}
			if err := replaceIn(bucketBudgets, tamperAlice.bytes(), `"sum_epsilon":"3/4","sum_delta":"0","sum_rho":"3/32","sum_rho_delta":"0","releases":3`, `"sum_epsilon":"1/2","sum_delta":"0","sum_rho":"1/16","sum_rho_delta":"0","releases":2`)(tx); err != nil {
				return err
			}
			return replaceIn(bucketTotals, []byte("census"), `"sum_epsilon":"5/4","sum_delta":"0","sum_rho":"7/32","sum_rho_delta":"0","releases":4`, `"sum_epsilon":"1","sum_delta":"0","sum_rho":"3/16","sum_rho_delta":"0","releases":3`)(tx)
		}, "records at the end were removed or altered"},
		{"two releases swapped", func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketReleases)
			v2, v3 := bytes.Clone(b.Get(idBytes(2))), bytes.Clone(b.Get(idBytes(3)))
			if err := b.Put(idBytes(2), v3); err != nil {
				return err
			}
			return b.Put(idBytes(3), v2)
		}, "records were moved"},
		{"two releases swapped with their IDs", func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketReleases)
			v2, v3 := bytes.Clone(b.Get(idBytes(2))), bytes.Clone(b.Get(idBytes(3)))
			v2 = bytes.Replace(v2, []byte(`"id":2`), []byte(`"id":3`), 1)
			v3 = bytes.Replace(v3, []byte(`"id":3`), []byte(`"id":2`), 1)
			if err := b.Put(idBytes(2), v3); err != nil {
				return err
			}
			return b.Put(idBytes(3), v2)
		}, "a record was removed, added or reordered"},
		{"a release's description altered", replaceIn(bucketReleases, idBytes(2), "COUNT(*)", "SUM(x)"), "release 3 (event 6) does not hold the hash of the event before it"},
		{"a grant's limit altered with the budget", func(tx *bolt.Tx) error {
			if err := replaceIn(bucketBudgets, tamperBob.bytes(), `"limit":{"epsilon":10`, `"limit":{"epsilon":100`)(tx); err != nil {
				return err
			}
			return replaceIn(bucketGrants, idBytes(2), `"epsilon":10`, `"epsilon":100`)(tx)
		}, "grant event 3 (event 3) does not hold the hash"},
		{"the chain's length edited", replaceIn(bucketMeta, keyChainSeq, "7", "6"), "records at the end were removed or altered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tamperLedger(t, Options{})
			editBolt(t, path, tt.edit)
			before, _ := os.ReadFile(path)
			for _, ro := range []bool{false, true} {
				l, err := Open(path, Options{ReadOnly: ro})
				if err == nil {
					_ = l.Close()
				}
				if !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
					t.Fatalf("read-only=%v: Open = %v; want ErrTampered naming the path and saying %q", ro, err, tt.want)
				}
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Fatal("the refused ledger was changed")
			}
		})
	}
}

// TestUntamperedLedgerVerifies: Verify reports what it checked.
func TestUntamperedLedgerVerifies(t *testing.T) {
	path := tamperLedger(t, Options{})
	l := mustOpen(t, path, Options{ReadOnly: true})
	rep, err := l.Verify()
	want := VerifyReport{Version: FormatVersion, Events: 7, Releases: 4, Grants: 3, Budgets: 2, Totals: 1, Chained: true}
	if err != nil || rep != want {
		t.Fatalf("Verify = %+v, %v; want %+v", rep, err, want)
	}
}

// TestSeal: a consistent rewrite (costs, sums and the chain all redone) is
// invisible without a key and refused with one; a sealed ledger opens for
// writing only with its key.
func TestSeal(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	rewrite := func(tx *bolt.Tx) error {
		for _, e := range []struct {
			bucket, key []byte
			old, new    string
		}{
			{bucketReleases, idBytes(4), `"epsilon":0.25`, `"epsilon":0`},
			{bucketReleases, idBytes(4), `"rho":0.03125`, `"rho":0`},
			{bucketBudgets, tamperAlice.bytes(), `"sum_epsilon":"3/4","sum_delta":"0","sum_rho":"3/32"`, `"sum_epsilon":"1/2","sum_delta":"0","sum_rho":"1/16"`},
			{bucketTotals, []byte("census"), `"sum_epsilon":"5/4","sum_delta":"0","sum_rho":"7/32"`, `"sum_epsilon":"1","sum_delta":"0","sum_rho":"3/16"`},
		} {
			if err := replaceIn(e.bucket, e.key, e.old, e.new)(tx); err != nil {
				return err
			}
		}
		return rechain(tx)
	}
	t.Run("unsealed rewrite goes unnoticed", func(t *testing.T) {
		path := tamperLedger(t, Options{})
		editBolt(t, path, rewrite)
		l := mustOpen(t, path, Options{})
		if st, _ := l.Status(tamperAlice); st.Spent.Epsilon != 0.5 {
			t.Fatalf("the rewrite did not take: %+v", st)
		}
	})
	t.Run("sealed rewrite is refused", func(t *testing.T) {
		path := tamperLedger(t, Options{Key: key})
		editBolt(t, path, rewrite)
		for _, ro := range []bool{false, true} {
			if _, err := Open(path, Options{ReadOnly: ro, Key: key}); !errors.Is(err, ErrKey) || !strings.Contains(err.Error(), "seal does not verify") {
				t.Fatalf("read-only=%v: Open = %v, want ErrKey", ro, err)
			}
		}
	})
	t.Run("keys", func(t *testing.T) {
		sealed := tamperLedger(t, Options{Key: key})
		unsealed := tamperLedger(t, Options{})
		wrong := []byte("fedcba9876543210fedcba9876543210")
		tests := []struct {
			name string
			path string
			opts Options
			want string // "" opens
		}{
			{"sealed with its key", sealed, Options{Key: key}, ""},
			{"sealed read-only without a key", sealed, Options{ReadOnly: true}, ""},
			{"sealed for writing without a key", sealed, Options{}, "is sealed with a key: give the key"},
			{"sealed with a wrong key", sealed, Options{Key: wrong}, "seal does not verify"},
			{"short key", sealed, Options{Key: []byte("short")}, "key of 5 bytes: want at least 16"},
			{"seal without a key", sealed, Options{Seal: true}, "sealing needs a key"},
			{"unsealed with a key", unsealed, Options{Key: key}, "not sealed"},
			{"unsealed read-only with a key", unsealed, Options{Key: key, ReadOnly: true}, "not sealed"},
			{"unsealed sealed on request", unsealed, Options{Key: key, Seal: true}, ""},
			{"then sealed", unsealed, Options{Key: key}, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				l, err := Open(tt.path, tt.opts)
				if tt.want == "" {
					if err != nil {
						t.Fatal(err)
					}
					rep, err := l.Verify()
					if err != nil || !rep.Sealed || rep.SealChecked != (tt.opts.Key != nil) {
						t.Fatalf("Verify = %+v, %v", rep, err)
					}
					_ = l.Close()
					return
				}
				if err == nil {
					_ = l.Close()
				}
				if !errors.Is(err, ErrKey) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Open = %v, want ErrKey saying %q", err, tt.want)
				}
			})
		}
	})
	t.Run("charges keep a sealed ledger valid", func(t *testing.T) {
		path := tamperLedger(t, Options{Key: key})
		l := mustOpen(t, path, Options{Key: key})
		if _, err := l.Charge(bg, Charge{Key: tamperBob, Cost: accounting.Pure(1)}); err != nil {
			t.Fatal(err)
		}
		_ = l.Close()
		l = mustOpen(t, path, Options{Key: key})
		if rep, err := l.Verify(); err != nil || rep.Releases != 5 || !rep.SealChecked {
			t.Fatalf("Verify = %+v, %v", rep, err)
		}
	})
}

// downgrade turns a format-2 ledger into the format-1 file an earlier
// dpstat wrote: releases without a place in the chain, no grants, no
// totals, no chain in the meta bucket.
func downgrade(tx *bolt.Tx) error {
	rel := tx.Bucket(bucketReleases)
	type kv struct{ k, v []byte }
	var all []kv
	if err := rel.ForEach(func(k, v []byte) error {
		var r Release
		if err := json.Unmarshal(v, &r); err != nil {
			return err
		}
		raw, err := json.Marshal(r)
		all = append(all, kv{bytes.Clone(k), raw})
		return err
	}); err != nil {
		return err
	}
	for _, e := range all {
		if err := rel.Put(e.k, e.v); err != nil {
			return err
		}
	}
	for _, b := range [][]byte{bucketGrants, bucketTotals} {
		if err := tx.DeleteBucket(b); err != nil {
			return err
		}
	}
	meta := tx.Bucket(bucketMeta)
	for _, k := range [][]byte{keyChainSeq, keyChainHead, keyChainMAC} {
		if err := meta.Delete(k); err != nil {
			return err
		}
	}
	return meta.Put(keyVersion, []byte("1"))
}

// TestFormat1Upgrade: a ledger written before the chain opens read-only
// with its sums checked and unchained, is chained when first opened for
// writing (its grants recorded as they stand), and is refused, unchanged,
// when its sums do not match its releases.
func TestFormat1Upgrade(t *testing.T) {
	build := func(t *testing.T) string {
		path := tempPath(t)
		l := mustOpen(t, path, Options{})
		mustGrant(t, l, tamperAlice, accounting.EpsDelta{Epsilon: 10}, accounting.Basic)
		mustGrant(t, l, tamperBob, accounting.EpsDelta{Epsilon: 10, Delta: 1e-6}, accounting.ZCDP)
		for _, k := range []Key{tamperAlice, tamperBob, tamperAlice} {
			if _, err := l.Charge(bg, Charge{Key: k, Cost: accounting.Pure(0.5)}); err != nil {
				t.Fatal(err)
			}
		}
		_ = l.Close()
		editBolt(t, path, downgrade)
		return path
	}
	t.Run("read-only", func(t *testing.T) {
		l := mustOpen(t, build(t), Options{ReadOnly: true})
		rep, err := l.Verify()
		if err != nil || rep.Chained || rep.Version != 1 || rep.Releases != 3 || rep.Budgets != 2 {
			t.Fatalf("Verify = %+v, %v", rep, err)
		}
	})
	t.Run("upgraded for writing", func(t *testing.T) {
		path := build(t)
		l := mustOpen(t, path, Options{})
		rep, err := l.Verify()
		want := VerifyReport{Version: 2, Events: 5, Releases: 3, Grants: 2, Budgets: 2, Chained: true}
		if err != nil || rep != want {
			t.Fatalf("Verify = %+v, %v; want %+v", rep, err, want)
		}
		if _, err := l.Charge(bg, Charge{Key: tamperBob, Cost: accounting.Pure(0.5)}); err != nil {
			t.Fatal(err)
		}
		if h, err := l.History(Key{}, 0); err != nil || len(h) != 4 || h[3].ID != 1 {
			t.Fatalf("History = %+v, %v", h, err)
		}
		_ = l.Close()
		editBolt(t, path, replaceIn(bucketReleases, idBytes(1), `"epsilon":0.5`, `"epsilon":0.25`))
		if _, err := Open(path, Options{ReadOnly: true}); !errors.Is(err, ErrTampered) {
			t.Fatalf("an edit after the upgrade: %v", err)
		}
	})
	t.Run("tampered format 1 is not upgraded", func(t *testing.T) {
		path := build(t)
		editBolt(t, path, replaceIn(bucketBudgets, tamperAlice.bytes(), `"sum_epsilon":"1"`, `"sum_epsilon":"0"`))
		before, _ := os.ReadFile(path)
		if _, err := Open(path, Options{}); !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), `format 1 ledger cannot be upgraded: budget of analyst "alice" on "census"`) {
			t.Fatalf("Open = %v", err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Fatal("the refused ledger was changed")
		}
	})
}
