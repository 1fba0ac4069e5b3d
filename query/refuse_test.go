package query

import (
	"context"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/query/parse"
)

// TestRefusals checks that every unsupported query is refused with a
// precise message, before the engine runs anything and without a charge.
func TestRefusals(t *testing.T) {
	svc, rec, led := newTestService(t, "testdata/catalog.yaml")
	tests := []struct {
		name, sql, want string
		opts            *Options
	}{
		{"empty", "  ", "empty query", nil},
		{"syntax error", "SELEKT COUNT(*) FROM people", "syntax error", nil},
		{"several statements", "SELECT COUNT(*) FROM people; SELECT COUNT(*) FROM people", "one statement at a time", nil},
		{"insert", "INSERT INTO people VALUES (1)", "only SELECT queries are answered, got INSERT", nil},
		{"drop", "DROP TABLE people", "only SELECT", nil},
		{"copy", "COPY people TO '/tmp/x'", "only SELECT", nil},
		{"select star", "SELECT * FROM people", "SELECT * is not supported", nil},
		{"misspelt column", "SELECT AVG(agee) FROM people", `unknown column "agee" in table people (did you mean age?)`, nil},
		{"non-aggregated column", "SELECT age, COUNT(*) FROM people", "column age is neither aggregated nor in GROUP BY", nil},
		{"no aggregate", "SELECT 3 FROM people", "no aggregate", nil},
		{"sum without bounds", "SELECT SUM(id) FROM people", "SUM(id) needs declared bounds: declare `lower:` and `upper:` for column id", nil},
		{"avg of text", "SELECT AVG(city) FROM people", "column city is text", nil},
		{"group by without values needs delta", "SELECT age, COUNT(*) FROM people GROUP BY age", "needs δ > 0", nil},
		{"group by expression", "SELECT COUNT(*) FROM people GROUP BY age / 10", "not whole numbers", nil},
		{"rollup", "SELECT COUNT(*) FROM people GROUP BY ROLLUP (city)", "ROLLUP", nil},
		{"join of two private tables", "SELECT COUNT(*) FROM people JOIN empty ON people.id = empty.id", "needs a privacy unit in both", nil},
		{"comma join", "SELECT COUNT(*) FROM people, empty", "write a JOIN", nil},
		{"subquery with limit", "SELECT COUNT(*) FROM (SELECT * FROM people LIMIT 2) AS s", "LIMIT and OFFSET are not allowed", nil},
		{"subquery in where", "SELECT COUNT(*) FROM people WHERE age IN (SELECT age FROM people)", "subqueries are read in FROM or WITH", nil},
		{"recursive cte", "WITH RECURSIVE s AS (SELECT * FROM people) SELECT COUNT(*) FROM s", "WITH RECURSIVE is not supported", nil},
		{"union", "SELECT COUNT(*) FROM people UNION SELECT COUNT(*) FROM people", "UNION", nil},
		{"table function", "SELECT COUNT(*) FROM read_csv('/etc/passwd')", "table functions are not allowed in FROM", nil},
		{"file path", `SELECT COUNT(*) FROM "/etc/passwd.csv"`, "file paths are not allowed", nil},
		{"unknown table", "SELECT COUNT(*) FROM secrets", `unknown table "secrets"; the catalog declares: people, empty, malformed, special`, nil},
		{"schema-qualified", "SELECT COUNT(*) FROM main.people", "qualified table name", nil},
		{"unknown column", "SELECT COUNT(salary) FROM people", `unknown column "salary" in table people`, nil},
		{"unknown column in where", "SELECT COUNT(*) FROM people WHERE salary > 3", `unknown column "salary"`, nil},
		{"wrong qualifier", "SELECT COUNT(x.age) FROM people", `unknown table or alias "x"`, nil},
		{"distinct of an expression", "SELECT COUNT(DISTINCT age + 1) FROM people", "takes one column", nil},
		{"sum distinct", "SELECT SUM(DISTINCT age) FROM people", "the only DISTINCT aggregate is COUNT(DISTINCT", nil},
		{"median of text", "SELECT MEDIAN(city) FROM people", "needs an int or float column", nil},
		{"median without bounds", "SELECT MEDIAN(id) FROM people", "needs declared bounds", nil},
		{"percentile out of range", "SELECT percentile_cont(1.5) WITHIN GROUP (ORDER BY age) FROM people", "fraction between 0 and 1", nil},
		{"percentile descending", "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY age DESC) FROM people", "DESC", nil},
		{"percentile_disc", "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY age) FROM people", "ordered aggregates other than", nil},
		{"variance without bounds", "SELECT VARIANCE(id) FROM people", "needs declared bounds", nil},
		{"select distinct", "SELECT DISTINCT COUNT(*) FROM people", "SELECT DISTINCT", nil},
		{"window function", "SELECT COUNT(*) OVER () FROM people", "window functions", nil},
		{"sum of an unbounded column", "SELECT SUM(id) FROM people", "clamp it", nil},
		{"other function", "SELECT lower(city) FROM people", "lower", nil},
		{"expression in select", "SELECT COUNT(*) + age FROM people", "a column in an expression over aggregates", nil},
		{"arithmetic on an unbounded column", "SELECT SUM(id * 2) FROM people", "without declared bounds", nil},
		{"division by a range holding 0", "SELECT SUM(age / (age - 50)) FROM people", "can be 0", nil},
		{"expression beyond 2^53", "SELECT SUM(age * 100000000000000) FROM people", "beyond ±2^53", nil},
		{"text in arithmetic", "SELECT SUM(city) FROM people", "int or float", nil},
		{"nested aggregates", "SELECT SUM(COUNT(*)) FROM people", "cannot be nested", nil},
		{"literal outside a public list", "SELECT COUNT(*) FROM people WHERE city = 'a'", "did you mean 'A'", nil},
		{"literal outside a public list in IN", "SELECT COUNT(*) FROM people WHERE city IN ('A', 'b')", "not in the public value list of city", nil},
		{"unknown function over an aggregate", "SELECT COSH(AVG(age)) FROM people", "not supported over aggregates", nil},
		{"aggregate in where", "SELECT COUNT(*) FROM people WHERE COUNT(*) > 1", "aggregates are not allowed in WHERE", nil},
		{"function in where", "SELECT COUNT(*) FROM people WHERE md5(city) > 1", "function md5 is not supported in WHERE", nil},
		{"similar to", "SELECT COUNT(*) FROM people WHERE city SIMILAR TO 'A%'", "SIMILAR TO", nil},
		{"type mismatch", "SELECT COUNT(*) FROM people WHERE age = 'old'", "cannot compare column age (int) with text 'old'", nil},
		{"compare with null", "SELECT COUNT(*) FROM people WHERE age = NULL", "use IS NULL", nil},
		{"having unknown aggregate", "SELECT COUNT(*) FROM people HAVING SUM(age) > 3", "SUM(age) is not in the select list", nil},
		{"order by non-output", "SELECT COUNT(*) FROM people ORDER BY age", "not an output of the query", nil},
		{"duplicate output names", "SELECT COUNT(*) AS n, SUM(age) AS n FROM people", `two outputs are named "n"`, nil},
		{"distinct count with a filter", "SELECT COUNT(DISTINCT id) FILTER (WHERE age > 3) FROM people", "FILTER", nil},
		{"select into", "SELECT COUNT(*) INTO t FROM people", "SELECT INTO", nil},
		{"limit expression", "SELECT COUNT(*) FROM people LIMIT 1 + 1", "LIMIT takes a whole number", nil},
		{"epsilon zero", "SELECT COUNT(*) FROM people", "epsilon = 0", &Options{Epsilon: 0, Confidence: 0.95, Analyst: "a"}},
		{"epsilon negative", "SELECT COUNT(*) FROM people", "epsilon = -1", &Options{Epsilon: -1, Confidence: 0.95, Analyst: "a"}},
		{"epsilon NaN", "SELECT COUNT(*) FROM people", "epsilon = NaN", &Options{Epsilon: math.NaN(), Confidence: 0.95, Analyst: "a"}},
		{"epsilon infinite", "SELECT COUNT(*) FROM people", "epsilon = +Inf", &Options{Epsilon: math.Inf(1), Confidence: 0.95, Analyst: "a"}},
		{"delta one", "SELECT COUNT(*) FROM people", "delta = 1", &Options{Epsilon: 1, Delta: 1, Confidence: 0.95, Analyst: "a"}},
		{"delta negative", "SELECT COUNT(*) FROM people", "delta = -0.1", &Options{Epsilon: 1, Delta: -0.1, Confidence: 0.95, Analyst: "a"}},
		{"confidence one", "SELECT COUNT(*) FROM people", "confidence = 1", &Options{Epsilon: 1, Confidence: 1, Analyst: "a"}},
		{"no analyst", "SELECT COUNT(*) FROM people", "analyst name is empty", &Options{Epsilon: 1, Confidence: 0.95}},
		{"epsilon too small for the scale", "SELECT SUM(age) FROM people", "epsilon", &Options{Epsilon: 1e-300, Confidence: 0.95, Analyst: "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Epsilon: 1, Confidence: 0.95, Analyst: "a"}
			if tt.opts != nil {
				opts = *tt.opts
			}
			before, charges := rec.calls(), led.count()
			_, err := svc.Answer(context.Background(), tt.sql, opts)
			if err == nil {
				t.Fatalf("%s: answered, want a refusal containing %q", tt.sql, tt.want)
			}
			var r *ir.RefusedError
			if !errors.As(err, &r) {
				t.Errorf("error %v is not a *RefusedError", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s:\n got %v\nwant it to contain %q", tt.sql, err, tt.want)
			}
			if rec.calls() != before {
				t.Errorf("the engine ran %d statement(s) for a refused query", rec.calls()-before)
			}
			if led.count() != charges {
				t.Errorf("a refused query was charged")
			}
		})
	}
}

// TestBudgetExceededReleasesNothing: when the ledger refuses the charge the
// answer is withheld and the error carries the budget's figures.
func TestBudgetExceededReleasesNothing(t *testing.T) {
	svc, _, led := newTestService(t, "testdata/catalog.yaml")
	led.exceed = true
	res, err := svc.Answer(context.Background(), "SELECT COUNT(*) FROM people", Options{Epsilon: 1, Confidence: 0.95, Analyst: "a"})
	if err == nil || res != nil {
		t.Fatalf("answered over budget: %v", res)
	}
	var ex *accounting.ExceededError
	if !errors.As(err, &ex) || !strings.Contains(err.Error(), "nothing charged") || !strings.Contains(err.Error(), "privacy budget exceeded") {
		t.Errorf("error = %v, want the ledger's ExceededError with its figures", err)
	}
}

// TestChargeDescribesQuery: the ledger gets the table and analyst as the
// key, a fresh request ID, the normalized query and the composed cost.
func TestChargeDescribesQuery(t *testing.T) {
	svc, _, led := newTestService(t, "testdata/catalog.yaml")
	res, err := svc.Answer(context.Background(), "select city, count(*), avg(age) from people group by city",
		Options{Epsilon: 0.75, Confidence: 0.95, Analyst: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	c := led.charges[0]
	if c.Key.Dataset != "people" || c.Key.Analyst != "alice" {
		t.Errorf("key = %+v", c.Key)
	}
	if c.Cost.Epsilon != 0.75 || c.Cost.Delta != 0 || res.Cost != c.Cost {
		t.Errorf("cost = %+v, result cost %+v; want ε = 0.75 exactly, δ = 0", c.Cost, res.Cost)
	}
	if !strings.Contains(c.Description, "SELECT city, count(*), avg(age) FROM people GROUP BY city") {
		t.Errorf("description = %q", c.Description)
	}
	if c.RequestID == "" {
		t.Error("empty request ID")
	}
	if _, err := svc.Answer(context.Background(), "SELECT COUNT(*) FROM people", Options{Epsilon: 1, Confidence: 0.95, Analyst: "alice"}); err != nil {
		t.Fatal(err)
	}
	if led.charges[1].RequestID == c.RequestID {
		t.Error("two queries shared a request ID")
	}
}

func TestSplitEpsilonNeverExceeds(t *testing.T) {
	for _, eps := range []float64{1, 0.1, 0.3, 3, 1e-9, 7.77, 1e20} {
		for n := 1; n <= parse.MaxAggregates; n++ {
			s := dpplan.SplitEpsilon(eps, n)
			total := new(big.Rat)
			for _, x := range s {
				if x <= 0 || math.Abs(x-eps/float64(n)) > eps/float64(n)*1e-8 {
					t.Fatalf("splitEpsilon(%v, %d) share %v, want close to %v", eps, n, x, eps/float64(n))
				}
				total.Add(total, new(big.Rat).SetFloat64(x))
			}
			if total.Cmp(new(big.Rat).SetFloat64(eps)) > 0 {
				t.Fatalf("splitEpsilon(%v, %d): shares add up to %v, more than ε", eps, n, total.FloatString(20))
			}
		}
	}
}

// TestOverBudgetReadsNothing: with the real ledger, a query the budget
// cannot pay for is refused before the engine runs, with the budget's
// figures, and nothing is charged; a query that fits still runs.
func TestOverBudgetReadsNothing(t *testing.T) {
	svc, rec, led := ledgerService(t, 1)
	key := ledger.Key{Dataset: "people", Analyst: "a"}
	before := rec.calls()
	_, err := svc.Answer(context.Background(), "SELECT COUNT(*) FROM people", Options{Epsilon: 2, Confidence: 0.95, Analyst: "a"})
	var ex *accounting.ExceededError
	if !errors.As(err, &ex) || !strings.Contains(err.Error(), "nothing charged") {
		t.Fatalf("error = %v, want a refusal carrying the budget's figures", err)
	}
	if rec.calls() != before {
		t.Errorf("the engine ran %d statement(s) for an over-budget query", rec.calls()-before)
	}
	if st, err := led.Status(key); err != nil || st.Releases != 0 {
		t.Errorf("status after the refusal: %+v, %v; want no release", st, err)
	}
	if _, err := svc.Answer(context.Background(), "SELECT COUNT(*) FROM people", Options{Epsilon: 0.5, Confidence: 0.95, Analyst: "a"}); err != nil {
		t.Fatalf("a query that fits was refused: %v", err)
	}
	if rec.calls() == before {
		t.Error("the engine did not run for a query that fits")
	}
}
