package query

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
)

// TestExplainChargesNothingAndMatchesRun checks that EXPLAIN neither runs
// the engine nor charges, and that the cost it shows is exactly what the
// real run of the same query charges.
func TestExplainChargesNothingAndMatchesRun(t *testing.T) {
	tests := []struct {
		name, catalog, sql string
	}{
		{"count", "testdata/catalog.yaml", "SELECT COUNT(*) FROM people"},
		{"several aggregates", "testdata/catalog.yaml", "SELECT city, COUNT(*), SUM(age), AVG(score) FROM people GROUP BY city"},
		{"three-way split", "testdata/catalog.yaml", "SELECT COUNT(*), COUNT(age), AVG(age) FROM people"},
		{"privacy unit", "../examples/catalog.yaml", "SELECT day, COUNT(*), AVG(minutes_spent) FROM visits GROUP BY day"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, eng, led := newTestService(t, tt.catalog)
			opts := Options{Epsilon: 0.7, Confidence: 0.9, Analyst: "a"}
			res, err := svc.Answer(context.Background(), "EXPLAIN "+tt.sql, opts)
			if err != nil {
				t.Fatal(err)
			}
			if eng.calls() != 0 || led.count() != 0 {
				t.Fatalf("EXPLAIN ran %d engine statements and %d charges, want none", eng.calls(), led.count())
			}
			if res.Explanation == nil || res.Columns[0] != "QUERY PLAN" || len(res.Rows) == 0 {
				t.Fatalf("EXPLAIN result has no plan: %+v", res)
			}
			if res.Cost.Epsilon != 0 {
				t.Errorf("EXPLAIN reports cost %v, want nothing charged", res.Cost)
			}
			ex := res.Explanation
			if !strings.Contains(ex.SQL, "SELECT") || len(ex.Columns) != len(res.Explanation.Columns) {
				t.Errorf("explanation lacks the engine SQL: %+v", ex)
			}
			for _, c := range ex.Columns {
				if c.Kind == "aggregate" && (c.HalfWidth <= 0 || len(c.Mechanisms) == 0) {
					t.Errorf("column %s: half-width %v, mechanisms %v", c.Name, c.HalfWidth, c.Mechanisms)
				}
			}
			// The dry run of the same query describes the same plan.
			p, err := svc.Prepare(tt.sql, opts)
			if err != nil {
				t.Fatal(err)
			}
			if dry := p.Explain(); dry.Cost != ex.Cost || dry.SQL != ex.SQL {
				t.Errorf("dry run %v / EXPLAIN %v differ", dry.Cost, ex.Cost)
			}
			if _, err := svc.Answer(context.Background(), tt.sql, opts); err != nil {
				t.Fatal(err)
			}
			if led.count() != 1 {
				t.Fatalf("%d charges, want 1", led.count())
			}
			if got := led.charges[0].Cost; got != ex.Cost {
				t.Errorf("the run charged %v, EXPLAIN said %v", got, ex.Cost)
			}
			// The run executes the statement shown, or (on a table not
			// declared nan_free, or when a group is too large for double
			// sums) one of the later forms EXPLAIN describes on its
			// "sums:" line.
			shown := eng.queries[0] == ex.SQL
			for f := p.Plan.FirstForm() + 1; f <= dpplan.IntegerForm; f++ {
				shown = shown || (ex.Form != "" && eng.queries[0] == formSQL(t, p, f))
			}
			if !shown {
				t.Errorf("the run executed\n%s\nEXPLAIN showed\n%s", eng.queries[0], ex.SQL)
			}
		})
	}
}

// TestExplainRefusals checks that EXPLAIN options and bad inner queries
// are refused before any engine runs.
func TestExplainRefusals(t *testing.T) {
	svc, eng, led := newTestService(t, "testdata/catalog.yaml")
	tests := []struct{ name, sql, want string }{
		{"analyze", "EXPLAIN ANALYZE SELECT COUNT(*) FROM people", "EXPLAIN ANALYZE is not supported"},
		{"verbose option", "EXPLAIN (VERBOSE) SELECT COUNT(*) FROM people", "EXPLAIN VERBOSE is not supported"},
		{"inner refusal", "EXPLAIN SELECT * FROM people", "SELECT *"},
		{"unknown table", "EXPLAIN SELECT COUNT(*) FROM nope", "unknown table"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := svc.Answer(context.Background(), tt.sql, exactOpts())
			var re *ir.RefusedError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a refusal mentioning %q", err, tt.want)
			}
		})
	}
	if eng.calls() != 0 || led.count() != 0 {
		t.Fatalf("refused EXPLAINs ran %d statements and %d charges", eng.calls(), led.count())
	}
}
