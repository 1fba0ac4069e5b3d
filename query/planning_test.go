package query

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/query/parse"
)

// planningRows are the rows of the planning tests' tables: visits (a
// person's visits on days, euros spent) and payments (the same people;
// persons 3 and 5 have none).
var planningRows = map[string][][3]int{
	"visits":   {{1, 1, 10}, {1, 2, 20}, {1, 2, 30}, {2, 1, 5}, {3, 7, 60}, {3, 6, 1}, {4, 9, 300}, {5, 1, -1}},
	"payments": {{1, 10}, {2, 5}, {2, 7}, {4, 100}},
}

// planningService serves visits and payments without the rows of person
// drop (0: everyone), with a recording engine and a fake ledger.
func planningService(t *testing.T, drop int) (*Service, *recordingEngine, *fakeLedger) {
	t.Helper()
	dir := t.TempDir()
	csv := func(table, header string, cols int) string {
		var b strings.Builder
		b.WriteString(header + "\n")
		for _, r := range planningRows[table] {
			if r[0] == drop {
				continue
			}
			for i := 0; i < cols; i++ {
				if i > 0 {
					b.WriteString(",")
				}
				if r[i] >= 0 {
					fmt.Fprint(&b, r[i])
				}
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	files := map[string]string{
		"visits.csv":   csv("visits", "pid,day,euros", 3),
		"payments.csv": csv("payments", "pid,amount", 2),
		"catalog.yaml": `budget: {epsilon: 1e30, delta: 1e-6}
tables:
  visits:
    source: visits.csv
    privacy_unit: pid
    id_space: people
    max_groups_per_unit: 7
    max_rows_per_group: 10
    columns: {pid: {type: int}, day: {type: int, values: [1, 2, 3, 4, 5, 6, 7, 8, 9]}, euros: {type: int, lower: 0, upper: 100, nullable: true}}
  payments:
    source: payments.csv
    privacy_unit: pid
    id_space: people
    max_groups_per_unit: 7
    max_rows_per_group: 10
    columns: {pid: {type: int}, amount: {type: int, lower: 0, upper: 100}}
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return newTestService(t, filepath.Join(dir, "catalog.yaml"))
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// copies returns n copies of term joined by sep.
func copies(term, sep string, n int) string {
	return strings.TrimSuffix(strings.Repeat(term+sep, n), sep)
}

// TestPlanningBoundedWhileBuilt: a query whose planning would grow is
// refused when the growing count crosses its limit (or before the work is
// done, where its size can be counted first), with a refusal naming the
// limit and the count, free, and allocating little: planning memory and
// time are bounded by the limits, not by what the query would build.
func TestPlanningBoundedWhileBuilt(t *testing.T) {
	svc, eng, led := planningService(t, 0)
	// A chain of common table expressions, each adding up the previous
	// one's column 300 times: 300 × 300 copies of euros once merged.
	ys := copies("y", "+", 300)
	chain := "WITH c0 AS (SELECT pid, euros AS y FROM visits), c1 AS (SELECT pid, " + ys + " AS y FROM c0), c2 AS (SELECT pid, " + ys + " AS y FROM c1) SELECT SUM(y) FROM c2"
	// A common table expression of about 18,000 nodes read ten times (the
	// tenth reading would be refused anyway: the aliases inside repeat).
	big := "WITH b0 AS (SELECT pid, euros AS y FROM visits), b1 AS (SELECT pid, " + copies("y", "+", 100) + " AS y FROM b0), b2 AS (SELECT pid, " + copies("y", "+", 36) + " AS y FROM b1) SELECT COUNT(*) FROM b2 x0"
	for i := 1; i < 10; i++ {
		big += fmt.Sprintf(" JOIN b2 x%d ON x0.pid = x%d.pid", i, i)
	}
	cases := []struct {
		name, sql string
		want      []string
		maxBytes  uint64
	}{
		{"doubling chain", chain, []string{"would have 450004 syntax nodes", fmt.Sprint("at most ", parse.MaxMergedNodes)}, 16 << 20},
		{"one expression read many times", big, []string{"would copy", fmt.Sprint("at most ", parse.MaxMergedCopies)}, 48 << 20},
		{"1,500 sums", "SELECT " + copies("SUM(euros)", ", ", 1500) + " FROM visits", []string{"1500 items", fmt.Sprint("at most ", parse.MaxSelectItems)}, 8 << 20},
		{"200 sums", "SELECT " + copies("SUM(euros)", ", ", 200) + " FROM visits", []string{"65 aggregates", "item 65 (of 200)", fmt.Sprint("at most ", parse.MaxAggregates)}, 8 << 20},
		{"300 constants", "SELECT COUNT(*), " + copies("1", ", ", 299) + " FROM visits", []string{"300 items", fmt.Sprint("at most ", parse.MaxSelectItems)}, 8 << 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			n := allocated(func() { _, err = svc.Answer(context.Background(), c.sql, exactOpts()) })
			t.Logf("%v (%d KB allocated)", err, n>>10)
			var re *ir.RefusedError
			if !errors.As(err, &re) {
				t.Fatalf("got %v, want a refusal", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q does not say %q", err, w)
				}
			}
			if n > c.maxBytes {
				t.Errorf("planning allocated %d MB, want at most %d MB", n>>20, c.maxBytes>>20)
			}
			if eng.calls() != 0 || led.count() != 0 {
				t.Errorf("refused query read data (%d engine calls) or charged (%d charges)", eng.calls(), led.count())
			}
		})
	}
}

// TestPlanningWithinTheQueryTimeout: planning is done within the query's
// context: a context that is done refuses the query, free, saying so.
func TestPlanningWithinTheQueryTimeout(t *testing.T) {
	svc, eng, led := planningService(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, sql := range []string{
		"SELECT COUNT(*) FROM visits",
		"WITH s AS (SELECT pid, euros + 1 AS e FROM visits) SELECT SUM(e) FROM s",
	} {
		_, err := svc.Answer(ctx, sql, exactOpts())
		var re *ir.RefusedError
		if !errors.As(err, &re) || !strings.Contains(re.Reason, "time limit") {
			t.Errorf("%s with a context that is done: got %v, want a refusal naming the time limit", sql, err)
		}
		if _, err := svc.PrepareContext(ctx, sql, exactOpts()); !errors.As(err, &re) {
			t.Errorf("%s: PrepareContext with a context that is done: got %v, want a refusal", sql, err)
		}
	}
	if eng.calls() != 0 || led.count() != 0 {
		t.Errorf("refused query read data (%d engine calls) or charged (%d charges)", eng.calls(), led.count())
	}
}

// TestRefusalsAreRefusals: what the ledger could not record (a query
// whose text, with its subqueries merged and its IN lists written out, is
// longer than the ledger keeps) and SQL text holding a NUL byte (the
// grammar would ignore what follows it) are refused free, with a message
// naming the limit or the byte, instead of failing at the charge or
// answering part of the text.
func TestRefusalsAreRefusals(t *testing.T) {
	svc, eng, led := planningService(t, 0)
	var values []string
	for i := 0; i < 3000; i++ {
		values = append(values, fmt.Sprint(i))
	}
	x := "euros" + strings.Repeat(" + 1", 50)
	var conds []string
	for i := 0; i < 100; i++ {
		conds = append(conds, fmt.Sprintf("x > %d", i))
	}
	merged := "WITH s AS (SELECT pid, " + x + " AS x FROM visits) SELECT COUNT(*) FROM s WHERE " + strings.Join(conds, " AND ")
	if len(merged) > 16<<10 {
		t.Fatalf("the merged case is %d bytes long: it must fit the service's limit on SQL text", len(merged))
	}
	cases := []struct{ name, sql, want string }{
		{"IN list of 3,000 values", "SELECT COUNT(*) FROM visits WHERE pid IN (" + strings.Join(values, ",") + ")", "want at most 16384"},
		{"merged query over 16 KiB", merged, "want at most 16384"},
		{"NUL byte", "SELECT COUNT(*) FROM visits\x00 WHERE pid = 1", "NUL byte at byte 28"},
		{"NUL byte first", "\x00SELECT COUNT(*) FROM visits", "NUL byte at byte 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := svc.Answer(context.Background(), c.sql, exactOpts())
			var re *ir.RefusedError
			if !errors.As(err, &re) || !strings.Contains(re.Reason, c.want) {
				t.Fatalf("got %v, want a refusal saying %q", err, c.want)
			}
			if eng.calls() != 0 || led.count() != 0 {
				t.Errorf("refused query read data (%d engine calls) or charged (%d charges)", eng.calls(), led.count())
			}
		})
	}
}

// TestLeftJoinSubqueryIsNullExtended: a computed column of a subquery on
// the optional side of a LEFT JOIN reads NULL where the join found no
// match, exactly as SQL has it, on D and on D without each person (ε =
// 1e20): merged as it was, 1 AS one read 1 on every row.
func TestLeftJoinSubqueryIsNullExtended(t *testing.T) {
	cases := []struct {
		name, sql string
		// want is the answer on D without person i (want[0]: on D).
		want [6]string
	}{
		{"constant", "SELECT COUNT(*) FROM visits v LEFT JOIN (SELECT pid, 1 AS one FROM payments) s ON v.pid = s.pid WHERE s.one IS NULL",
			[6]string{"3", "3", "3", "1", "3", "2"}},
		{"using", "SELECT COUNT(*) FROM visits v LEFT JOIN (SELECT pid, 1 AS one FROM payments) s USING (pid) WHERE s.one IS NULL",
			[6]string{"3", "3", "3", "1", "3", "2"}},
		{"common table expression", "WITH s AS (SELECT pid, COALESCE(amount, 0) AS a FROM payments) SELECT COUNT(*) FROM visits v LEFT JOIN s ON v.pid = s.pid WHERE s.a IS NULL",
			[6]string{"3", "3", "3", "1", "3", "2"}},
		{"matched count", "SELECT COUNT(s.one) FROM visits v LEFT JOIN (SELECT pid, 1 AS one FROM payments) s ON v.pid = s.pid",
			[6]string{"6", "3", "4", "6", "5", "6"}},
		{"sum", "SELECT SUM(s.a) FROM visits v LEFT JOIN (SELECT pid, amount + 1 AS a FROM payments) s ON v.pid = s.pid",
			[6]string{"148", "115", "134", "148", "47", "148"}},
	}
	var outcomes [6]map[string]neighbourOutcome
	for drop := range outcomes {
		svc, _, _ := planningService(t, drop)
		outcomes[drop] = map[string]neighbourOutcome{}
		for _, c := range cases {
			outcomes[drop][c.name] = runNeighbour(t, svc, c.sql)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for drop, o := range outcomes {
				if o[c.name].err != nil {
					t.Fatalf("without person %d: %v", drop, o[c.name].err)
				}
				if got := formatRows(o[c.name].res.Rows); got != c.want[drop] {
					t.Errorf("without person %d: got %s, want %s", drop, got, c.want[drop])
				}
				if drop > 0 {
					checkNeighbours(t, c.sql, fmt.Sprintf("D − person %d", drop), outcomes[0][c.name], o[c.name])
				}
			}
		})
	}
	// Where no plain column of the subquery is the join's, the query is
	// refused, free.
	svc, eng, led := planningService(t, 0)
	_, err := svc.Answer(context.Background(), "SELECT COUNT(*) FROM visits v LEFT JOIN (SELECT pid + 0 AS p, 1 AS one FROM payments) s ON v.pid = s.p WHERE s.one IS NULL", exactOpts())
	var re *ir.RefusedError
	if !errors.As(err, &re) || !strings.Contains(re.Reason, "optional side") {
		t.Errorf("computed join column: got %v, want a refusal", err)
	}
	if eng.calls() != 0 || led.count() != 0 {
		t.Errorf("refused query read data (%d engine calls) or charged (%d charges)", eng.calls(), led.count())
	}
}
