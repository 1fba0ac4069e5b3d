package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/engine/postgres/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

// onPostgres names the test that runs the ledger's table-driven tests
// again on PostgreSQL: under it, tempPath gives a new schema on the shared
// test server (skipped when PostgreSQL is not installed, a failure when
// CI=true).
const onPostgres = "TestOnPostgres"

var pgSchemas atomic.Int64

// TestOnPostgres runs the store-independent tests of the package on a
// PostgreSQL ledger: every assertion they make of a file ledger holds
// for a ledger in a database.
func TestOnPostgres(t *testing.T) {
	pgtest.Shared(t)
	t.Run("location", func(t *testing.T) {
		if loc := tempPath(t); !IsPostgres(loc) {
			t.Fatalf("tempPath = %q under %s, want a PostgreSQL ledger", loc, onPostgres)
		}
	})
	for _, tt := range []struct {
		name string
		test func(*testing.T)
	}{
		{"TestGrant", TestGrant},
		{"TestEnsureBudgetAndStatus", TestEnsureBudgetAndStatus},
		{"TestChargeRefusalsWriteNothing", TestChargeRefusalsWriteNothing},
		{"TestChargeIsIdempotent", TestChargeIsIdempotent},
		{"TestAnswers", TestAnswers},
		{"TestHistory", TestHistory},
		{"TestReadOnlyAndClosed", TestReadOnlyAndClosed},
		{"TestConcurrentChargesAreExact", TestConcurrentChargesAreExact},
		{"TestCheck", TestCheck},
		{"TestDamagedBudgetFailsOnlyItsOwnCharges", TestDamagedBudgetFailsOnlyItsOwnCharges},
		{"TestTotalBudgetRace", TestTotalBudgetRace},
		{"TestTotalRefusalSaysWhichBudget", TestTotalRefusalSaysWhichBudget},
		{"TestGrantTotalCountsEarlierReleases", TestGrantTotalCountsEarlierReleases},
		{"TestAnalystRecords", TestAnalystRecords},
		{"TestEpochChargesExact", TestEpochChargesExact},
		{"TestEpochTotalCountsEarlierReleases", TestEpochTotalCountsEarlierReleases},
		{"TestEpochRace", TestEpochRace},
		{"TestEpochKindChange", TestEpochKindChange},
		{"TestAnswersLists", TestAnswersLists},
	} {
		t.Run(tt.name, tt.test)
	}
}

// pgLocation is the connection string of a new ledger schema on the shared
// test server.
func pgLocation(t testing.TB) string {
	t.Helper()
	pg := pgtest.Shared(t)
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&schema=ledger_%d_%d", pg.Port, os.Getpid(), pgSchemas.Add(1))
}

// TestPostgresReplicasNeverOverspend: two Ledgers on one database (as two
// replicas would have), 16 clients each, race for one analyst's budget,
// which holds exactly 40 charges, and for a total budget shared with a
// second analyst; and each charge is sent to both replicas under one
// request ID at once. Exactly 40 are charged, once each; the chain
// verifies.
func TestPostgresReplicasNeverOverspend(t *testing.T) {
	loc := pgLocation(t)
	a := mustOpen(t, loc, Options{})
	b := mustOpen(t, loc, Options{})
	alice, bob := Key{Dataset: "census", Analyst: "alice"}, Key{Dataset: "census", Analyst: "bob"}
	mustGrant(t, a, alice, accounting.EpsDelta{Epsilon: 5}, accounting.Basic)
	mustGrant(t, b, bob, accounting.EpsDelta{Epsilon: 100}, accounting.Basic)
	if _, err := b.GrantTotal("census", accounting.EpsDelta{Epsilon: 7.5}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	var fresh, replayed, refused atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				// alice's budget admits 40 charges of ε = 1/8; bob's
				// 20 more fit in the total of 7.5.
				k := alice
				if g%4 == 3 {
					k = bob
				}
				c := Charge{RequestID: fmt.Sprintf("%d-%d", g, i), Key: k, Cost: accounting.Pure(0.125), AnswerKey: fmt.Sprintf("q-%d-%d", g, i), Answer: []byte("1")}
				var ra, rb Receipt
				var ea, eb error
				var two sync.WaitGroup
				two.Add(2)
				go func() { defer two.Done(); ra, ea = a.Charge(bg, c) }()
				go func() { defer two.Done(); rb, eb = b.Charge(bg, c) }()
				two.Wait()
				var ee *accounting.ExceededError
				if errors.As(ea, &ee) && errors.As(eb, &ee) {
					refused.Add(1)
					return
				}
				if ea != nil || eb != nil {
					t.Errorf("charge %s: %v / %v", c.RequestID, ea, eb)
					return
				}
				if ra.ReleaseID != rb.ReleaseID || ra.Replayed == rb.Replayed {
					t.Errorf("charge %s: receipts %+v and %+v: want one release, replayed once", c.RequestID, ra, rb)
					return
				}
				fresh.Add(1)
				replayed.Add(1)
			}
		}()
	}
	wg.Wait()
	if fresh.Load() != 60 || refused.Load() != 16 {
		t.Fatalf("%d charges went through and %d clients were refused: want 60 (40 of alice, 20 of bob in the total) and 16", fresh.Load(), refused.Load())
	}
	for _, l := range []*Ledger{a, b} {
		st, err := l.Status(alice)
		if err != nil || st.Releases != 40 || st.Spent.Epsilon != 5 {
			t.Fatalf("alice: %+v, %v", st, err)
		}
		tot, err := l.Total("census")
		if err != nil || tot.Releases != 60 || tot.Spent.Epsilon != 7.5 {
			t.Fatalf("total: %+v, %v", tot, err)
		}
		if rep, err := l.Verify(); err != nil || rep.Releases != 60 {
			t.Fatalf("Verify = %+v, %v", rep, err)
		}
	}
}

// TestPostgresConnectionStringIsRedacted: the password never appears in
// an error or in Path.
func TestPostgresConnectionStringIsRedacted(t *testing.T) {
	const secret = "s3cr3t-PaSS"
	port, err := pgtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	pg := pgtest.Shared(t)
	tests := []struct {
		name, loc string
		ok        bool
	}{
		{"unreachable", fmt.Sprintf("postgres://someone:%s@127.0.0.1:%d/db?sslmode=disable", secret, port), false},
		{"password parameter", fmt.Sprintf("postgres://someone@127.0.0.1:%d/db?sslmode=disable&password=%s", port, secret), false},
		{"bad schema", fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/postgres?sslmode=disable&schema=a%%0Ab", secret, pg.Port), false},
		{"bad option", fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/postgres?sslmode=maybe", secret, pg.Port), false},
		{"opens", fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/postgres?sslmode=disable&schema=redact_%d", secret, pg.Port, os.Getpid()), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Contains(Redact(tt.loc), secret) {
				t.Fatalf("Redact(%q) = %q", tt.loc, Redact(tt.loc))
			}
			l, err := Open(tt.loc, Options{Timeout: 500 * time.Millisecond})
			if tt.ok {
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				if strings.Contains(l.Path(), secret) || !strings.Contains(l.Path(), "xxxxx") {
					t.Fatalf("Path() = %q", l.Path())
				}
				return
			}
			if err == nil {
				l.Close()
				t.Fatal("opened")
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error shows the password: %v", err)
			}
		})
	}
}

// TestPostgresRoleOwningOnlyItsSchema: a role that owns the ledger's
// schema and holds no other privilege runs the ledger; it cannot create a
// schema of its own, and says what it needs.
func TestPostgresRoleOwningOnlyItsSchema(t *testing.T) {
	pg := pgtest.Shared(t)
	role := fmt.Sprintf("ledger_owner_%d", os.Getpid())
	schema := role + "_s"
	if err := pg.Exec(bg, "CREATE ROLE "+role+" LOGIN", "CREATE SCHEMA "+schema+" AUTHORIZATION "+role); err != nil {
		t.Fatal(err)
	}
	dsn := func(s string) string {
		return fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable&schema=%s", role, pg.Port, s)
	}
	l := mustOpen(t, dsn(schema), Options{})
	k := Key{Dataset: "census", Analyst: "alice"}
	mustGrant(t, l, k, accounting.EpsDelta{Epsilon: 1}, accounting.Basic)
	if _, err := l.Charge(bg, Charge{Key: k, Cost: accounting.Pure(0.5)}); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dsn("elsewhere"), Options{}); err == nil || !strings.Contains(err.Error(), "own the schema") {
		t.Fatalf("a schema the role does not own: %v", err)
	}
	ro := mustOpen(t, dsn(schema), Options{ReadOnly: true})
	if st, err := ro.Status(k); err != nil || st.Releases != 1 {
		t.Fatalf("read-only: %+v, %v", st, err)
	}
	if _, err := Open(dsn("missing"), Options{ReadOnly: true}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read-only open of a missing ledger: %v", err)
	}
}

// TestPostgresTamperingAndSeal: a release edited in the database is found
// by Open and Verify; a sealed ledger needs its key.
func TestPostgresTamperingAndSeal(t *testing.T) {
	pg := pgtest.Shared(t)
	key := []byte("0123456789abcdef0123456789abcdef")
	loc := pgLocation(t)
	l := mustOpen(t, loc, Options{Key: key})
	k := Key{Dataset: "census", Analyst: "alice"}
	mustGrant(t, l, k, accounting.EpsDelta{Epsilon: 10}, accounting.Basic)
	for range 3 {
		if _, err := l.Charge(bg, Charge{Key: k, Cost: accounting.Pure(0.25)}); err != nil {
			t.Fatal(err)
		}
	}
	if rep, err := l.Verify(); err != nil || !rep.SealChecked || rep.Releases != 3 {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
	_ = l.Close()
	if _, err := Open(loc, Options{}); !errors.Is(err, ErrKey) {
		t.Fatalf("sealed ledger opened without its key: %v", err)
	}
	if _, err := Open(loc, Options{Key: []byte("another key of 32 bytes, wrong!!")}); !errors.Is(err, ErrKey) {
		t.Fatalf("sealed ledger opened with a wrong key: %v", err)
	}
	schema := loc[strings.LastIndex(loc, "=")+1:]
	if err := pg.Exec(bg, `UPDATE `+schema+`.kv SET value = convert_to(replace(convert_from(value, 'UTF8'), '"epsilon":0.25', '"epsilon":0'), 'UTF8') WHERE bucket = 'releases'::bytea AND key = '\x0000000000000002'::bytea`); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		if _, err := Open(loc, Options{Key: key, ReadOnly: ro}); !errors.Is(err, ErrTampered) {
			t.Fatalf("edited ledger (read-only %v): %v", ro, err)
		}
	}
}

// TestPostgresServerRestart: the server stops abruptly and starts again
// while 8 clients charge. Charges fail while it is down; every receipt a
// client got is in the ledger afterwards (no answer without a charge);
// the same Ledger charges again once the server is back, without being
// reopened; Ping fails while the server is down; the chain verifies.
func TestPostgresServerRestart(t *testing.T) {
	pg := pgtest.Shared(t)
	loc := pgLocation(t)
	l := mustOpen(t, loc, Options{Timeout: 200 * time.Millisecond})
	k := Key{Dataset: "census", Analyst: "alice"}
	mustGrant(t, l, k, accounting.EpsDelta{Epsilon: 1e6}, accounting.Basic)
	ctx, cancel := context.WithCancel(bg)
	var mu sync.Mutex
	got := map[uint64]bool{}
	var failed, after atomic.Int64
	var phase atomic.Int32 // 0 before the stop, 1 stopped, 2 restarted
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				p := phase.Load()
				r, err := l.Charge(bg, Charge{RequestID: fmt.Sprintf("%d-%d", g, i), Key: k, Cost: accounting.Pure(0x1p-10)})
				if err != nil {
					failed.Add(1)
					time.Sleep(10 * time.Millisecond)
					continue
				}
				mu.Lock()
				got[r.ReleaseID] = true
				mu.Unlock()
				if p == 2 {
					after.Add(1)
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	phase.Store(1)
	if err := pg.Halt(); err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(bg, time.Second)
	if err := l.Ping(pctx); err == nil {
		t.Error("Ping succeeds while the server is down")
	}
	pcancel()
	time.Sleep(300 * time.Millisecond)
	if err := pg.Resume(); err != nil {
		t.Fatal(err)
	}
	phase.Store(2)
	deadline := time.Now().Add(20 * time.Second)
	for after.Load() < 50 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	if err := l.Ping(bg); err != nil {
		t.Errorf("Ping after the restart: %v", err)
	}
	if after.Load() < 50 {
		t.Fatalf("only %d charges went through after the restart", after.Load())
	}
	h, err := l.History(k, 0)
	if err != nil {
		t.Fatal(err)
	}
	in := map[uint64]bool{}
	for _, r := range h {
		in[r.ID] = true
	}
	for id := range got {
		if !in[id] {
			t.Fatalf("release %d was receipted but is not in the ledger", id)
		}
	}
	if rep, err := l.Verify(); err != nil {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
	t.Logf("%d charges receipted, %d failed while the server was down, %d in the ledger", len(got), failed.Load(), len(h))
}
