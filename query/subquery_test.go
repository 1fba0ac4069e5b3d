package query

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// subqueryService serves a small catalog for the tests of common table
// expressions, subqueries and per-person pre-aggregation: visits (a
// person's visits on days, euros spent), payments (same people), days
// (public).
func subqueryService(t *testing.T) *Service {
	svc, _ := subqueryServiceEngine(t)
	return svc
}

// subqueryServiceEngine is subqueryService with its engine.
func subqueryServiceEngine(t *testing.T) (*Service, *recordingEngine) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"visits.csv":   "pid,day,euros\n1,1,10\n1,2,20\n1,2,30\n2,1,5\n3,7,60\n3,6,1\n4,9,300\n5,1,\n",
		"payments.csv": "pid,amount\n1,10\n2,5\n2,7\n4,100\n",
		"days.csv":     "day,name,weekend\n1,Mon,false\n2,Tue,false\n3,Wed,false\n4,Thu,false\n5,Fri,false\n6,Sat,true\n7,Sun,true\n",
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
  days:
    source: days.csv
    public: true
    columns: {day: {type: int}, name: {type: text}, weekend: {type: bool}}
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	svc, rec, _ := newTestService(t, filepath.Join(dir, "catalog.yaml"))
	return svc, rec
}

// answerCase is a query and the rows it must answer at ε = 1e20, as
// formatRows prints them.
type answerCase struct{ name, sql, want string }

// checkAnswers answers every case with svc at ε = 1e20.
func checkAnswers(t *testing.T, svc *Service, cases []answerCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			res, err := svc.Answer(context.Background(), tt.sql, exactOpts())
			if err != nil {
				t.Fatalf("%s: %v", tt.sql, err)
			}
			if got := formatRows(res.Rows); got != tt.want {
				t.Errorf("%s:\n got %s\nwant %s", tt.sql, got, tt.want)
			}
		})
	}
}

// checkRefusals prepares every query with svc and wants a refusal whose
// text holds the case's part.
func checkRefusals(t *testing.T, svc *Service, cases []struct{ sql, want string }) {
	t.Helper()
	for _, tt := range cases {
		_, err := svc.Prepare(tt.sql, exactOpts())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s:\n got %v\nwant a refusal mentioning %q", tt.sql, err, tt.want)
		}
	}
}

// TestSubqueries checks common table expressions and subqueries in FROM at
// ε = 1e20: each gives the answer of the query written without them.
func TestSubqueries(t *testing.T) {
	checkAnswers(t, subqueryService(t), []answerCase{
		{"cte filter", "WITH big AS (SELECT * FROM visits WHERE euros >= 20) SELECT COUNT(*), SUM(euros) FROM big", "4 210"},
		{"cte computed column", "WITH v AS (SELECT pid, euros * 2 AS twice FROM visits) SELECT SUM(twice) FROM v", "452"},
		{"cte column names", "WITH v (p, e) AS (SELECT pid, euros FROM visits) SELECT SUM(e) FROM v", "226"},
		{"cte outer where on computed", "WITH v AS (SELECT day, euros + 1 AS e1 FROM visits) SELECT COUNT(*) FROM v WHERE day = 2", "2"},
		{"cte group by column", "WITH v AS (SELECT day AS d, euros FROM visits WHERE day <= 2) SELECT d, COUNT(*), SUM(euros) FROM v GROUP BY d",
			"1 3 15; 2 2 50; 3 0 0; 4 0 0; 5 0 0; 6 0 0; 7 0 0; 8 0 0; 9 0 0"},
		{"two ctes", "WITH a AS (SELECT * FROM visits WHERE day < 7), b AS (SELECT pid, euros FROM a WHERE euros > 5) SELECT COUNT(*) FROM b", "3"},
		{"subquery in from", "SELECT COUNT(*) FROM (SELECT pid FROM visits WHERE day = 1) s", "3"},
		{"qualified subquery columns", "SELECT SUM(s.e) FROM (SELECT v.euros AS e FROM visits v) AS s", "226"},
		{"nested subqueries", "SELECT COUNT(*) FROM (SELECT * FROM (SELECT pid, day FROM visits WHERE day > 1) a WHERE day < 7) b", "3"},
		{"cte joined to public", "WITH v AS (SELECT * FROM visits WHERE euros > 0) SELECT d.weekend, COUNT(*) FROM v JOIN days d ON v.day = d.day GROUP BY d.weekend", "false 4; true 2"},
		{"cte with a join", "WITH j AS (SELECT v.day, d.weekend FROM visits v JOIN days d ON v.day = d.day) SELECT COUNT(*) FROM j WHERE weekend", "2"},
		{"private join in cte", "WITH j AS (SELECT v.pid, p.amount FROM visits v JOIN payments p ON v.pid = p.pid) SELECT SUM(amount) FROM j", "142"},
		{"star over a cte", "WITH a AS (SELECT pid, euros * 2 AS e2 FROM visits), b AS (SELECT * FROM a WHERE pid > 1) SELECT SUM(e2) FROM b", "332"},
		{"qualified star", "SELECT SUM(e2), COUNT(*) FROM (SELECT a.* FROM (SELECT pid, euros * 2 AS e2 FROM visits) a WHERE pid > 1) b", "332 5"},
		{"distinct people", "WITH v AS (SELECT pid FROM visits WHERE day = 1) SELECT COUNT(DISTINCT pid) FROM v", "3"},
	})
}

// TestSubqueryRefusals: what cannot be merged is refused, free, saying why.
func TestSubqueryRefusals(t *testing.T) {
	checkRefusals(t, subqueryService(t), []struct{ sql, want string }{
		{"WITH RECURSIVE r AS (SELECT pid FROM visits) SELECT COUNT(*) FROM r", "RECURSIVE"},
		{"WITH visits AS (SELECT * FROM payments) SELECT COUNT(*) FROM visits", "another name"},
		{"SELECT COUNT(*) FROM (SELECT pid FROM visits LIMIT 3) s", "LIMIT"},
		{"SELECT COUNT(*) FROM (SELECT DISTINCT day FROM visits) s", "DISTINCT"},
		{"SELECT COUNT(*) FROM (SELECT euros + 1 FROM visits) s", "AS"},
		{"SELECT COUNT(*) FROM (SELECT pid AS a, day AS a FROM visits) s", "two columns named a"},
		{"SELECT SUM(s.nothing) FROM (SELECT pid FROM visits) s", "unknown column s.nothing"},
		{"SELECT COUNT(*) FROM (SELECT * FROM days) s", "public"},
		{"SELECT COUNT(*) FROM (SELECT day FROM visits UNION SELECT day FROM visits) s", "UNION"},
		{"SELECT COUNT(*) FROM visits v LEFT JOIN (SELECT * FROM days WHERE weekend) d ON v.day = d.day", "outer join"},
		{"SELECT COUNT(*) FROM (SELECT 1 AS one) s", "reads no catalog table"},
		{"WITH a AS (SELECT day FROM visits) SELECT COUNT(*) FROM a JOIN days d ON a.day = d.day WHERE day = 1", "qualify"},
	})
}

// TestPreAggregation checks per-person pre-aggregation at ε = 1e20. As in
// SQL, LEAST and GREATEST skip NULLs: LEAST(NULL, 50) is 50.
// visits: person 1 has 3 visits (10, 20, 30), 2 has 1 (5), 3 has 2 (60,
// 1), 4 has 1 (300, clamped to 100), 5 has 1 (NULL).
func TestPreAggregation(t *testing.T) {
	checkAnswers(t, subqueryService(t), []answerCase{
		{"people", "WITH pp AS (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid) SELECT COUNT(*) FROM pp", "5"},
		{"clamped counts", "WITH pp AS (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid) SELECT SUM(LEAST(n, 2)), AVG(LEAST(n, 10)) FROM pp", "7 1.6"},
		{"histogram of visits per person", "SELECT width_bucket(n, 1, 4, 3) AS visits, COUNT(*) FROM (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid) s GROUP BY 1", "0 0; 1 3; 2 1; 3 1; 4 0"},
		{"range key", "SELECT LEAST(n, 2) AS visits, COUNT(*) FROM (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid) s GROUP BY LEAST(n, 2)", "1 3; 2 2"},
		{"range key by alias", "SELECT CAST(LEAST(m, 59) / 20 AS int) AS band, COUNT(*) FROM (SELECT pid, MAX(euros) AS m FROM visits GROUP BY pid) s GROUP BY band", "0 1; 1 0; 2 1; 3 3"},
		{"per-person sums", "SELECT SUM(LEAST(spent, 50)) FROM (SELECT pid, SUM(euros) AS spent FROM visits GROUP BY pid) s", "205"},
		{"per-person max", "SELECT SUM(m) FROM (SELECT pid, MAX(euros) AS m FROM visits GROUP BY pid) s", "195"},
		{"per-person average", "SELECT SUM(a) FROM (SELECT pid, AVG(euros) AS a FROM visits GROUP BY pid) s", "155.5"},
		{"outer where", "SELECT COUNT(*) FROM (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid) s WHERE n >= 2", "2"},
		{"inner where", "SELECT COUNT(*), SUM(LEAST(n, 5)) FROM (SELECT pid, COUNT(*) AS n FROM visits WHERE day <= 2 GROUP BY pid) s", "3 5"},
		{"unit not selected", "SELECT COUNT(*) FROM (SELECT COUNT(*) AS n FROM visits GROUP BY pid) s", "5"},
		{"inner keys", "SELECT day, COUNT(*) FROM (SELECT pid, day, COUNT(*) AS n FROM visits GROUP BY pid, day) s WHERE day <= 2 GROUP BY day", "1 3; 2 1; 3 0; 4 0; 5 0; 6 0; 7 0; 8 0; 9 0"},
		{"expression inside", "SELECT SUM(LEAST(s, 100)) FROM (SELECT pid, SUM(euros * 2) AS s FROM visits GROUP BY pid) t", "410"},
	})
}

// TestPreAggregationRefusals: what a per-person pre-aggregation cannot do
// is refused, free, saying what would be accepted.
func TestPreAggregationRefusals(t *testing.T) {
	checkRefusals(t, subqueryService(t), []struct{ sql, want string }{
		{"SELECT SUM(n) FROM (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid) s", "LEAST"},
		{"SELECT AVG(n * 2) FROM (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid) s", "clamp"},
		{"SELECT COUNT(*) FROM (SELECT day, COUNT(*) AS n FROM visits GROUP BY day) s", "GROUP BY pid"},
		{"SELECT COUNT(*) FROM (SELECT COUNT(*) AS n FROM visits) s", "GROUP BY pid"},
		{"SELECT COUNT(*) FROM (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid HAVING COUNT(*) > 1) s", "HAVING"},
		{"SELECT COUNT(*) FROM (SELECT pid, euros FROM visits GROUP BY pid) s", "not in its GROUP BY"},
		{"SELECT COUNT(*) FROM (SELECT pid, VAR_POP(euros) AS v FROM visits GROUP BY pid) s", "per-person aggregates"},
		{"SELECT COUNT(*) FROM (SELECT pid, COUNT(*) + 1 AS n FROM visits GROUP BY pid) s", "outer query"},
		{"SELECT COUNT(*) FROM (SELECT pid, day AS d FROM visits GROUP BY pid, day % 2) s", "not expressions"},
		{"WITH pp AS (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid) SELECT COUNT(*) FROM pp JOIN days d ON pp.n = d.day", "read alone"},
		{"WITH pp AS (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid), q AS (SELECT * FROM pp) SELECT COUNT(*) FROM q", "another subquery"},
	})
}

// TestPreAggregationContribution: with the privacy unit as the only inner
// key, each person has one row of the relation; with more keys, the
// table's declared bounds apply. EXPLAIN says which.
func TestPreAggregationContribution(t *testing.T) {
	svc := subqueryService(t)
	p, err := svc.Prepare("SELECT COUNT(*) FROM (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid) s", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Plan.Contribution; c.Groups != 1 || c.RowsPerGroup != 1 {
		t.Errorf("contribution %+v, want 1 group × 1 row", c)
	}
	if !strings.Contains(strings.Join(p.Plan.Notes(), "\n"), "one row per person") {
		t.Errorf("notes %q do not explain the pre-aggregation", p.Plan.Notes())
	}
	p, err = svc.Prepare("SELECT day, COUNT(*) FROM (SELECT pid, day, COUNT(*) AS n FROM visits GROUP BY pid, day) s GROUP BY day", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Plan.Contribution; c.Groups != 7 || c.RowsPerGroup != 10 {
		t.Errorf("contribution %+v, want the declared 7 groups × 10 rows", c)
	}
}

// TestSubqueryGrowthIsBounded: a chain of common table expressions that
// each use the previous column twice doubles the merged query at every
// step; it is refused once the merged query passes MaxMergedNodes, and
// each common table expression is merged once (so refusing it takes work
// proportional to that bound, not to the chain's full size).
func TestSubqueryGrowthIsBounded(t *testing.T) {
	svc := subqueryService(t)
	ctes := []string{"a0 AS (SELECT pid, euros AS x FROM visits)"}
	for i := 1; i < 40; i++ {
		ctes = append(ctes, fmt.Sprintf("a%d AS (SELECT pid, x * x AS x FROM a%d)", i, i-1))
	}
	sql := "WITH " + strings.Join(ctes, ", ") + " SELECT SUM(LEAST(GREATEST(x, 0), 1)) FROM a39"
	if _, err := svc.Prepare(sql, exactOpts()); err == nil || !strings.Contains(err.Error(), "syntax nodes") {
		t.Fatalf("a doubling chain of 40 common table expressions: got %v, want a refusal naming the merged size", err)
	}
	// A WITH inside a common table expression sees the outer ones.
	res, err := svc.Answer(context.Background(), "WITH a AS (SELECT pid, euros FROM visits), b AS (WITH c AS (SELECT * FROM a WHERE euros > 10) SELECT * FROM c) SELECT COUNT(*) FROM b", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	if got := formatRows(res.Rows); got != "4" {
		t.Errorf("nested WITH: got %s, want 4", got)
	}
}
