package query

import (
	"context"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query/dpplan"
)

// openServiceWithLedger answers over testdata with a real ledger file.
func openServiceWithLedger(t *testing.T, path string) (*Service, *recordingEngine, *ledger.Ledger) {
	t.Helper()
	cat := loadCatalog(t, "testdata/catalog.yaml")
	eng, err := duckdb.Open(duckdb.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	led, err := ledger.Open(path, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingEngine{Engine: eng}
	svc, err := NewService(context.Background(), cat, rec, led)
	if err != nil {
		t.Fatal(err)
	}
	rec.queries = nil
	return svc, rec, led
}

func releases(t *testing.T, led *ledger.Ledger) int {
	t.Helper()
	h, err := led.History(ledger.Key{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(h)
}

// TestRepeatedQueryChargedOnce checks that an identical query returns the
// stored noisy answer at no cost, also after the ledger is reopened, and
// that a change of analyst or parameter is a new question.
func TestRepeatedQueryChargedOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	ctx := context.Background()
	opts := Options{Epsilon: 0.5, Confidence: 0.95, Analyst: "ann"}
	sql := "SELECT city, COUNT(*), AVG(score) FROM people GROUP BY city"

	svc, eng, led := openServiceWithLedger(t, path)
	first, err := svc.Answer(ctx, sql, opts)
	if err != nil {
		t.Fatal(err)
	}
	if first.Repeated || first.Cost.Epsilon != 0.5 {
		t.Fatalf("first answer: repeated %v, cost %v", first.Repeated, first.Cost)
	}
	// The same query written differently normalizes to the same text.
	again, err := svc.Answer(ctx, "select city, count(*), avg(score)\n from people group by city", opts)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Repeated || again.Cost.Epsilon != 0 || again.OriginalCost != first.Cost {
		t.Fatalf("second answer: repeated %v, cost %v, original %v", again.Repeated, again.Cost, again.OriginalCost)
	}
	if !reflect.DeepEqual(again.Rows, first.Rows) || !reflect.DeepEqual(again.CI, first.CI) {
		t.Fatalf("stored answer differs:\n%v\n%v", again.Rows, first.Rows)
	}
	if again.Notes[0] != RepeatedNote {
		t.Errorf("notes %v do not say the answer was repeated", again.Notes)
	}
	if eng.calls() != 1 || releases(t, led) != 1 {
		t.Fatalf("%d engine runs and %d charges, want 1 and 1", eng.calls(), releases(t, led))
	}
	if again.Budget.Spent.Epsilon != 0.5 {
		t.Errorf("budget spent %v, want 0.5", again.Budget.Spent)
	}
	led.Close()

	// After a restart the stored answer is still there.
	svc, eng, led = openServiceWithLedger(t, path)
	defer led.Close()
	after, err := svc.Answer(ctx, sql, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !after.Repeated || !reflect.DeepEqual(after.Rows, first.Rows) || eng.calls() != 0 {
		t.Fatalf("after restart: repeated %v, engine calls %d", after.Repeated, eng.calls())
	}

	// Different analyst, ε, δ or confidence: new questions, charged (asked
	// fresh: a looser one could otherwise be derived from the first
	// release at no cost, see reuse_test.go).
	for _, o := range []Options{
		{Epsilon: 0.5, Confidence: 0.95, Analyst: "bob"},
		{Epsilon: 0.25, Confidence: 0.95, Analyst: "ann", Fresh: true},
		{Epsilon: 0.5, Delta: 1e-9, Confidence: 0.95, Analyst: "ann", Fresh: true},
		{Epsilon: 0.5, Confidence: 0.9, Analyst: "ann", Fresh: true},
	} {
		r, err := svc.Answer(ctx, sql, o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Repeated {
			t.Errorf("options %+v returned a stored answer", o)
		}
	}
	if n := releases(t, led); n != 5 {
		t.Fatalf("%d charges, want 5", n)
	}

	// EXPLAIN says that the query would cost nothing now.
	ex, err := svc.Answer(ctx, "EXPLAIN "+sql, opts)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range ex.Notes {
		found = found || n == "this query was answered before: running it returns the stored answer at no cost"
	}
	if !found {
		t.Errorf("EXPLAIN notes %v do not mention the stored answer", ex.Notes)
	}
}

// TestConcurrentIdenticalQueries checks that identical queries racing each
// other are charged once and all return the one stored answer.
func TestConcurrentIdenticalQueries(t *testing.T) {
	svc, _, led := openServiceWithLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	defer led.Close()
	opts := Options{Epsilon: 0.5, Confidence: 0.95, Analyst: "ann"}
	const n = 6
	results := make([]*Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = svc.Answer(context.Background(), "SELECT COUNT(*) FROM people", opts)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !reflect.DeepEqual(results[i].Rows, results[0].Rows) {
			t.Errorf("answer %d = %v, answer 0 = %v", i, results[i].Rows, results[0].Rows)
		}
	}
	if c := releases(t, led); c != 1 {
		t.Fatalf("%d charges for %d identical queries, want 1", c, n)
	}
}

// TestAnswerRoundTrip checks that every value type survives storage.
func TestAnswerRoundTrip(t *testing.T) {
	in := &Result{Columns: []string{"k", "b", "n", "x", "z"},
		Rows: [][]any{{"A", true, int64(-3), 1.25, nil}},
		CI:   [][]*dpplan.Interval{{nil, nil, {Low: -4, High: -2}, {Low: 1, High: 1.5}, nil}}, Confidence: 0.9}
	b, err := encodeAnswer(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeAnswer(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out.Rows, in.Rows) || !reflect.DeepEqual(out.CI, in.CI) {
		t.Fatalf("round trip: %v %v", out.Rows, out.CI)
	}
	if _, err := decodeAnswer([]byte("{")); err == nil {
		t.Error("a damaged answer decoded")
	}
}
