package query

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// writeTable writes a catalog and a CSV into a new directory and returns
// the catalog's path.
func writeTable(t testing.TB, catalogYAML, csv string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "data.csv"), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(path, []byte(catalogYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const incomeCatalog = `budget: {epsilon: 1e30, delta: 1e-6}
tables:
  t:
    source: data.csv
    columns:
      name:   {type: text}
      income: {type: float, lower: 0, upper: 1000}
      age:    {type: int, lower: 17, upper: 90}
      big:    {type: float, lower: 1e15, upper: 1.0000000001e15}
`

// TestWidthBucketErrorIsNoOracle: a width_bucket whose arithmetic could
// overflow for some rows is refused at plan time, free and whatever the
// data; one that is accepted answers for every row, extreme values
// included, so whether a row exists never decides between an answer and an
// error.
func TestWidthBucketErrorIsNoOracle(t *testing.T) {
	csv := "name,income,age,big\nAlice,1e308,30,1e15\nBob,-1e308,40,1e15\nCarol,5,50,1e15\n"
	svc, eng, led := newTestService(t, writeTable(t, incomeCatalog, csv))
	ctx := context.Background()
	_, err := svc.Answer(ctx, "SELECT width_bucket(income, -1.7e308, 1.7e308, 4) AS w, COUNT(*) FROM t WHERE name = 'Alice' GROUP BY w", exactOpts())
	var re *ir.RefusedError
	if !errors.As(err, &re) || !strings.Contains(re.Reason, "high − low overflows") {
		t.Fatalf("want a refusal naming the overflow, got %v", err)
	}
	if eng.calls() != 0 || led.count() != 0 {
		t.Fatalf("the refusal read data (%d engine calls) or charged (%d charges)", eng.calls(), led.count())
	}
	// Accepted parameters, with each person alone in turn: always an answer.
	for _, name := range []string{"Alice", "Bob", "Carol", "Nobody"} {
		for _, sql := range []string{
			"SELECT width_bucket(income, -1.7976931348623157e308, 0, 3) AS w, COUNT(*) FROM t WHERE name = '" + name + "' GROUP BY w",
			"SELECT width_bucket(income, 0, 1.7976931348623157e308, 1000) AS w, COUNT(*) FROM t WHERE name = '" + name + "' GROUP BY w",
			"SELECT width_bucket(income, -8e307, 8e307, 99998) AS w, COUNT(*) FROM t WHERE name = '" + name + "' GROUP BY w",
		} {
			if _, err := svc.Answer(ctx, sql, exactOpts()); err != nil {
				t.Errorf("%s: %v", sql, err)
			}
		}
	}
}

const zeroCatalog = `budget: {epsilon: 1e30, delta: 1e-6}
tables:
  z:
    source: data.csv
    columns:
      f: {type: float, lower: -1, upper: 1, values: [0, 1]}
`

// TestNegativeZeroIsOneGroup: -0 and 0 are one group key, whichever the
// engine meets first, for public lists, floor bins and CASE bins.
func TestNegativeZeroIsOneGroup(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, sql string
	}{
		{"public list", "SELECT f, COUNT(*) FROM z GROUP BY f"},
		{"floor bins", "SELECT floor(f / 0.5) * 0.5 AS b, COUNT(*) FROM z GROUP BY b"},
		{"case bins", "SELECT CASE WHEN f < 0.5 THEN -0.0 ELSE 1.0 END AS b, COUNT(*) FROM z GROUP BY b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, data := range []struct {
				csv   string
				zeros int64
			}{{"f\n-0\n0\n0\n0\n1\n", 4}, {"f\n0\n0\n0\n1\n", 3}, {"f\n-0.0\n-0\n1\n", 2}} {
				svc, _, _ := newTestService(t, writeTable(t, zeroCatalog, data.csv))
				res, err := svc.Answer(ctx, tc.sql, exactOpts())
				if err != nil {
					t.Fatal(err)
				}
				var got int64 = -1
				for _, row := range res.Rows {
					if f, ok := row[0].(float64); ok && f == 0 {
						if math.Signbit(f) {
							t.Errorf("data %q: the key is released as -0", data.csv)
						}
						got = row[1].(int64)
					}
				}
				if got != data.zeros {
					t.Errorf("data %q: group 0 counts %d, want %d (rows %v)", data.csv, got, data.zeros, res.Rows)
				}
			}
		})
	}
}

// TestBucketPlanningIsBounded: bins whose count cannot be computed (NaN,
// infinite, or bin numbers where k+1 == k in floating point) are refused
// quickly, by Prepare (the dry run and EXPLAIN path) as by Answer.
func TestBucketPlanningIsBounded(t *testing.T) {
	cat := loadCatalog(t, writeTable(t, incomeCatalog, "name,income,age,big\n"))
	for _, sql := range []string{
		"SELECT floor(age / 5e-324) * 5e-324 AS b, COUNT(*) FROM t GROUP BY b",
		"EXPLAIN SELECT floor(age / 5e-324) * 5e-324 AS b, COUNT(*) FROM t GROUP BY b",
		"SELECT floor(big / 1) * 1 AS b, COUNT(*) FROM t GROUP BY b",
		"SELECT floor(big / 0.0001) * 0.0001 AS b, COUNT(*) FROM t GROUP BY b",
		"SELECT floor(income / 1e-300) * 1e-300 AS b, COUNT(*) FROM t GROUP BY b",
		"SELECT floor(income / 1.7976931348623157e308) * 1.7976931348623157e308 AS b, COUNT(*) FROM t GROUP BY b",
	} {
		done := make(chan error, 1)
		go func() {
			_, err := Prepare(cat, duckdb.Dialect, sql, exactOpts())
			done <- err
		}()
		select {
		case err := <-done:
			var re *ir.RefusedError
			if err != nil && !errors.As(err, &re) {
				t.Errorf("%s: want an answer plan or a refusal, got %v", sql, err)
			}
			if err != nil && !strings.Contains(err.Error(), "want") {
				t.Errorf("%s: the refusal does not say what is accepted: %v", sql, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: planning did not end", sql)
		}
	}
}

// TestDeepConditionRefusedFree: a condition nested deeper than
// MaxExprDepth is refused before the engine runs, with a message saying
// so, at no cost.
func TestDeepConditionRefusedFree(t *testing.T) {
	svc, eng, led := newTestService(t, "testdata/catalog.yaml")
	_, err := svc.Answer(context.Background(), "SELECT COUNT(*) FROM people WHERE "+strings.Repeat("NOT ", 1000)+"flag", exactOpts())
	var re *ir.RefusedError
	if !errors.As(err, &re) || !strings.Contains(re.Reason, "nested too deeply") {
		t.Fatalf("want a refusal for depth, got %v", err)
	}
	if eng.calls() != 0 || led.count() != 0 {
		t.Fatalf("refused query read data (%d engine calls) or charged (%d charges)", eng.calls(), led.count())
	}
}

// TestCatalogRefusesWhatTheEngineCannotRun: max_rows_per_group above what
// the engine's sampler takes is refused by the catalog, naming the limit;
// the limit itself runs.
func TestCatalogRefusesWhatTheEngineCannotRun(t *testing.T) {
	decl := func(rows int) string {
		return "budget: {epsilon: 1e30, delta: 1e-6}\ntables:\n  v:\n    source: data.csv\n    privacy_unit: pid\n    max_groups_per_unit: 1\n    max_rows_per_group: " +
			strconv.Itoa(rows) + "\n    columns:\n      pid: {type: int}\n      x: {type: int, lower: 0, upper: 10}\n"
	}
	_, err := catalog.Parse([]byte(decl(schema.MaxRowsPerGroup+1)), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "max_rows_per_group = 1000000") || !strings.Contains(err.Error(), "at most 999999") {
		t.Fatalf("want max_rows_per_group refused with its limit, got %v", err)
	}
	svc, _, _ := newTestService(t, writeTable(t, decl(schema.MaxRowsPerGroup), "pid,x\n1,3\n1,4\n2,5\n"))
	res, err := svc.Answer(context.Background(), "SELECT SUM(x), COUNT(x), MEDIAN(x) FROM v", exactOpts())
	if err != nil {
		t.Fatalf("the largest accepted max_rows_per_group does not run: %v", err)
	}
	// The sum's sensitivity is 999999 × 10, so its release grid is 16.
	if got := res.Rows[0][0].(float64); math.Abs(got-12) > 16 {
		t.Errorf("SUM = %v, want 12 on a grid of 16", got)
	}
}

// failingEngine fails every statement after registration, with a message
// quoting a value of the data.
type failingEngine struct {
	*duckdb.Engine
	calls int
}

func (f *failingEngine) Query(ctx context.Context, sql string, args ...any) (*engine.Rows, error) {
	f.calls++
	return nil, errors.New("Conversion Error: value Alice=12345.67 can't be cast")
}

// TestEngineRunIsNeverFree: the charge commits before the engine runs, so
// an engine failure costs the query's ε, and its message says nothing of
// the data.
func TestEngineRunIsNeverFree(t *testing.T) {
	cat := loadCatalog(t, "testdata/catalog.yaml")
	inner, err := duckdb.Open(duckdb.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inner.Close() })
	eng := &failingEngine{Engine: inner}
	led := &fakeLedger{}
	svc, err := NewService(context.Background(), cat, eng, led)
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Answer(context.Background(), "SELECT COUNT(*) FROM people", exactOpts())
	var ee *EngineError
	if !errors.As(err, &ee) {
		t.Fatalf("want an EngineError, got %v", err)
	}
	if eng.calls == 0 || led.count() != 1 {
		t.Fatalf("engine calls %d, charges %d: want the charge before the engine", eng.calls, led.count())
	}
	if strings.Contains(err.Error(), "Alice") || strings.Contains(err.Error(), "12345") || strings.Contains(err.Error(), "nothing was charged") {
		t.Errorf("the message leaks the engine's text or denies the charge: %v", err)
	}
	if !strings.Contains(ee.Err.Error(), "Alice=12345.67") {
		t.Errorf("the full error is not kept for the data owner's log: %v", ee.Err)
	}
	// A request that ends while the engine runs was charged too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := svc.Answer(ctx, "SELECT COUNT(*) FROM people", exactOpts()); err == nil {
		t.Fatal("a cancelled request was answered")
	}
}

// TestUnknownGroupIsAnError: an engine row whose key is none of the plan's
// groups is an internal error, never dropped.
func TestUnknownGroupIsAnError(t *testing.T) {
	cat := loadCatalog(t, "testdata/catalog.yaml")
	p, err := Prepare(cat, duckdb.Dialect, "SELECT city, COUNT(*) FROM people GROUP BY city", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	rows := &engine.Rows{Columns: []string{"k0", "s0"}, Rows: [][]any{{"A", int64(2)}, {"Z", int64(1)}}}
	_, err = p.Plan.ReadExact(rows)
	var uk *ir.UnknownKeyError
	if !errors.As(err, &uk) || strings.Contains(err.Error(), "Z") {
		t.Fatalf("want an UnknownKeyError that does not quote the key, got %v", err)
	}
	// Driver spellings of one value are one key.
	rows.Rows = [][]any{{[]byte("A"), int32(2)}}
	if _, err := p.Plan.ReadExact(rows); err != nil {
		t.Fatalf("bytes for a text key: %v", err)
	}
}

// TestStoredAnswerKeyedByData: two catalogs that give the name t to
// different files, over one ledger, do not get each other's stored answers.
func TestStoredAnswerKeyedByData(t *testing.T) {
	const decl = "budget: {epsilon: 1e30, delta: 1e-6}\ntables:\n  t:\n    source: data.csv\n    columns:\n      x: {type: int, lower: 0, upper: 10}\n"
	ledPath := filepath.Join(t.TempDir(), "ledger.db")
	led, err := ledger.Open(ledPath, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	ctx := context.Background()
	var sums []float64
	for _, data := range []string{"x\n1\n2\n", "x\n9\n9\n9\n9\n"} {
		cat := loadCatalog(t, writeTable(t, decl, data))
		eng, err := duckdb.Open(duckdb.Options{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer eng.Close()
		svc, err := NewService(ctx, cat, eng, led)
		if err != nil {
			t.Fatal(err)
		}
		res, err := svc.Answer(ctx, "SELECT SUM(x) FROM t", Options{Epsilon: 1e9, Confidence: 0.95, Analyst: "ann"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Repeated {
			t.Fatalf("data %q: got the other file's stored answer %v", data, res.Rows)
		}
		sums = append(sums, res.Rows[0][0].(float64))
		// The same question on the same data is a repeat.
		again, err := svc.Answer(ctx, "SELECT SUM(x) FROM t", Options{Epsilon: 1e9, Confidence: 0.95, Analyst: "ann"})
		if err != nil || !again.Repeated {
			t.Fatalf("data %q: the same question again: repeated %v, %v", data, again != nil && again.Repeated, err)
		}
	}
	if math.Abs(sums[0]-3) > 0.01 || math.Abs(sums[1]-36) > 0.01 {
		t.Errorf("sums %v, want about 3 and 36", sums)
	}
}
