package query

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/engine/postgres/pgtest"
	"github.com/dpstat/dpstat/ledger"
)

// gatedEngine holds every statement until its gate is closed.
type gatedEngine struct {
	*duckdb.Engine
	gate chan struct{}
}

func (g *gatedEngine) Query(ctx context.Context, sql string, args ...any) (*engine.Rows, error) {
	<-g.gate
	return g.Engine.Query(ctx, sql, args...)
}

// reservedLedger tells when a charge is refused because another run
// reserved its answer key.
type reservedLedger struct {
	*ledger.Ledger
	reserved chan struct{}
	once     sync.Once
}

func (r *reservedLedger) Charge(ctx context.Context, c ledger.Charge) (ledger.Receipt, error) {
	rc, err := r.Ledger.Charge(ctx, c)
	if errors.Is(err, ledger.ErrAnswerExists) {
		r.once.Do(func() { close(r.reserved) })
	}
	return rc, err
}

// TestReplicasChargeIdenticalQueryOnce: two services on two ledgers of one
// PostgreSQL database (two servers sharing a ledger) get the same query at
// the same moment. The engine is held until one of them has been refused
// the answer key the other reserved, so that the race is the one that
// matters: exactly one charge, one engine run, and both return the same
// answer, the second as a repeat at no cost.
func TestReplicasChargeIdenticalQueryOnce(t *testing.T) {
	pg, err := pgtest.Start()
	if err != nil {
		pgtest.Unavailable(t, "PostgreSQL test server: %v", err)
	}
	t.Cleanup(pg.Stop)
	loc := pg.AdminDSN() + "&schema=replicas"
	cat := loadCatalog(t, "testdata/catalog.yaml")
	gate := make(chan struct{})
	reserved := make(chan struct{})
	var leds [2]*ledger.Ledger
	var svcs [2]*Service
	for i := range svcs {
		eng, err := duckdb.Open(duckdb.Options{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { eng.Close() })
		if leds[i], err = ledger.Open(loc, ledger.Options{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { leds[i].Close() })
		g := &gatedEngine{Engine: eng, gate: make(chan struct{})}
		close(g.gate) // registration runs freely
		if svcs[i], err = NewService(context.Background(), cat, g, &reservedLedger{Ledger: leds[i], reserved: reserved}); err != nil {
			t.Fatal(err)
		}
		g.gate = gate
	}
	opts := Options{Epsilon: 0.5, Confidence: 0.95, Analyst: "ann"}
	const sql = "SELECT city, COUNT(*) FROM people GROUP BY city"
	var results [2]*Result
	var errs [2]error
	var wg sync.WaitGroup
	for i := range svcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			results[i], errs[i] = svcs[i].Answer(ctx, sql, opts)
		}()
	}
	select {
	case <-reserved:
	case <-time.After(time.Minute):
		t.Fatal("neither service met the other's reservation")
	}
	close(gate)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("service %d: %v", i, err)
		}
	}
	h, err := leds[0].History(ledger.Key{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 {
		t.Fatalf("%d charges for one query sent to two servers, want 1: %+v", len(h), h)
	}
	if !reflect.DeepEqual(results[0].Rows, results[1].Rows) || !reflect.DeepEqual(results[0].CI, results[1].CI) {
		t.Fatalf("the two servers answered differently:\n%v\n%v", results[0].Rows, results[1].Rows)
	}
	if results[0].Repeated == results[1].Repeated {
		t.Fatalf("repeated = %v and %v: want exactly one repeat", results[0].Repeated, results[1].Repeated)
	}
	for _, r := range results {
		if r.Repeated && (r.Cost.Epsilon != 0 || r.OriginalCost.Epsilon != 0.5) {
			t.Errorf("repeat cost %v (original %v), want 0 (0.5)", r.Cost, r.OriginalCost)
		}
	}
}

// TestAbandonedReservation: an answer key reserved by a run that never
// stored its answer (its process stopped) makes a repeat wait at most the
// repeat wait, then pay and answer afresh and store its answer there, so
// that the next repeat is free; a run whose engine failed marks its
// reservation, and the repeat does not wait for it.
func TestAbandonedReservation(t *testing.T) {
	ctx := context.Background()
	opts := Options{Epsilon: 0.5, Confidence: 0.95, Analyst: "ann"}
	const sql = "SELECT COUNT(*) FROM people"
	for _, tt := range []struct {
		name   string
		stored []byte // what the stopped run left under the key
		wait   time.Duration
	}{
		{"process stopped", nil, 50 * time.Millisecond},
		{"engine failed", noAnswer, time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			svc, eng, led := openServiceWithLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
			defer led.Close()
			svc.SetRepeatWait(tt.wait)
			p, err := svc.Prepare(sql, opts)
			if err != nil {
				t.Fatal(err)
			}
			key := ledger.Key{Dataset: "people", Analyst: "ann"}
			if _, err := led.Grant(key, accounting.EpsDelta{Epsilon: 100}, accounting.Basic); err != nil {
				t.Fatal(err)
			}
			if _, err := led.Charge(ctx, ledger.Charge{Key: key, Cost: p.Noise.Cost, AnswerKey: p.AnswerKey()}); err != nil {
				t.Fatal(err)
			}
			if tt.stored != nil {
				if err := led.StoreAnswer(key, p.AnswerKey(), tt.stored); err != nil {
					t.Fatal(err)
				}
			}
			// EXPLAIN promises a free answer only when one is stored.
			ex, err := svc.Answer(ctx, "EXPLAIN "+sql, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range ex.Notes {
				if strings.Contains(n, "answered before") {
					t.Errorf("EXPLAIN says %q with no answer stored", n)
				}
			}
			tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			first, err := svc.Answer(tctx, sql, opts)
			if err != nil {
				t.Fatal(err)
			}
			if first.Repeated || eng.calls() != 1 || releases(t, led) != 2 {
				t.Fatalf("after the abandoned run: repeated %v, %d engine runs, %d charges; want false, 1, 2", first.Repeated, eng.calls(), releases(t, led))
			}
			again, err := svc.Answer(tctx, sql, opts)
			if err != nil {
				t.Fatal(err)
			}
			wantRepeat := tt.stored == nil // a marked key keeps its mark
			if again.Repeated != wantRepeat {
				t.Fatalf("the next repeat: repeated %v, want %v", again.Repeated, wantRepeat)
			}
			if wantRepeat && !reflect.DeepEqual(again.Rows, first.Rows) {
				t.Fatalf("the repeat returned %v, the answer was %v", again.Rows, first.Rows)
			}
		})
	}
}

// brokenEngine fails every statement while fail is set.
type brokenEngine struct {
	*duckdb.Engine
	mu   sync.Mutex
	fail bool
}

func (f *brokenEngine) Query(ctx context.Context, sql string, args ...any) (*engine.Rows, error) {
	f.mu.Lock()
	fail := f.fail
	f.mu.Unlock()
	if fail {
		return nil, errors.New("engine failed")
	}
	return f.Engine.Query(ctx, sql, args...)
}

// TestFailedRunMarksItsAnswer: a charged run whose engine failed marks
// its reserved answer key in the ledger, so that the repeat (on any server)
// is charged and answered at once instead of waiting for an answer that
// will not come.
func TestFailedRunMarksItsAnswer(t *testing.T) {
	ctx := context.Background()
	cat := loadCatalog(t, "testdata/catalog.yaml")
	eng, err := duckdb.Open(duckdb.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	led, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	fe := &brokenEngine{Engine: eng}
	svc, err := NewService(ctx, cat, fe, led)
	if err != nil {
		t.Fatal(err)
	}
	svc.SetRepeatWait(time.Hour)
	fe.fail = true
	opts := Options{Epsilon: 0.5, Confidence: 0.95, Analyst: "ann"}
	const sql = "SELECT COUNT(*) FROM people"
	var ee *EngineError
	if _, err := svc.Answer(ctx, sql, opts); !errors.As(err, &ee) {
		t.Fatalf("first run: %v, want an EngineError", err)
	}
	p, err := svc.Prepare(sql, opts)
	if err != nil {
		t.Fatal(err)
	}
	key := ledger.Key{Dataset: "people", Analyst: "ann"}
	if b, _, err := led.Answer(key, p.AnswerKey()); err != nil || !reflect.DeepEqual(b, noAnswer) {
		t.Fatalf("stored under the failed run's key: %q, %v; want the mark %q", b, err, noAnswer)
	}
	fe.mu.Lock()
	fe.fail = false
	fe.mu.Unlock()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := svc.Answer(tctx, sql, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Repeated || res.Cost.Epsilon != 0.5 || releases(t, led) != 2 {
		t.Fatalf("the repeat: repeated %v, cost %v, %d charges; want a fresh answer, 0.5, 2", res.Repeated, res.Cost, releases(t, led))
	}
}
