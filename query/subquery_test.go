package query

import (
	"context"
	"fmt"
	"math"
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
	svc, _, _ := newTestService(t, filepath.Join(dir, "catalog.yaml"))
	return svc
}

// roundedRows formats an answer's rows with numbers rounded to integers.
func roundedRows(rows [][]any) string {
	var out []string
	for _, r := range rows {
		var cells []string
		for _, v := range r {
			if f, ok := v.(float64); ok {
				v = math.Round(f*1000) / 1000
			}
			cells = append(cells, strings.TrimSuffix(fmt.Sprint(v), ".0"))
		}
		out = append(out, strings.Join(cells, " "))
	}
	return strings.Join(out, "; ")
}

// TestSubqueries checks common table expressions and subqueries in FROM at
// ε = 1e20: each gives the answer of the query written without them.
func TestSubqueries(t *testing.T) {
	svc := subqueryService(t)
	ctx := context.Background()
	for _, tt := range []struct{ name, sql, want string }{
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
		{"distinct people", "WITH v AS (SELECT pid FROM visits WHERE day = 1) SELECT COUNT(DISTINCT pid) FROM v", "3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := svc.Answer(ctx, tt.sql, exactOpts())
			if err != nil {
				t.Fatalf("%s: %v", tt.sql, err)
			}
			if got := roundedRows(res.Rows); got != tt.want {
				t.Errorf("%s:\n got %s\nwant %s", tt.sql, got, tt.want)
			}
		})
	}
}

// TestSubqueryRefusals: what cannot be merged is refused, free, saying why.
func TestSubqueryRefusals(t *testing.T) {
	svc := subqueryService(t)
	for _, tt := range []struct{ sql, want string }{
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
	} {
		_, err := svc.Prepare(tt.sql, exactOpts())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s:\n got %v\nwant a refusal mentioning %q", tt.sql, err, tt.want)
		}
	}
}
