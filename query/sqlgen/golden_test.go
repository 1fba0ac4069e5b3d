package sqlgen

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/clickhouse"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/engine/postgres"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/parse"
)

// update rewrites the golden files (testdata/golden and testdata/prejoin).
var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden and testdata/prejoin")

// salts matches the statement's secret salt where ClickHouse's row hash
// spells it; golden files write it as SALT.
var salts = regexp.MustCompile(`cityHash64\((toUInt64\()?[0-9]+`)

// goldenDialects are the dialects whose statements are kept as golden
// files.
var goldenDialects = []struct {
	name string
	d    engine.Dialect
}{{"duckdb", duckdb.Dialect}, {"postgres", postgres.Dialect}, {"clickhouse", clickhouse.Dialect}}

// checkGolden compares got, with the salt written as SALT, with the golden
// file at path (rewriting it with -update); test names the test that
// rewrites it.
func checkGolden(t *testing.T, path, test, got string) {
	t.Helper()
	got = salts.ReplaceAllString(got, "cityHash64(${1}SALT")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, test)
	}
	if got != string(want) {
		t.Errorf("generated SQL differs from %s:\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

// TestGoldenSQL compares the engine SQL generated for each query shape, in
// each dialect, with testdata/golden/DIALECT/NAME.sql, so that a change in
// the rewriting shows up as a readable diff. Run with -update to rewrite
// the files.
func TestGoldenSQL(t *testing.T) {
	cats := map[string]string{"test": "../testdata/catalog.yaml", "examples": "../../examples/catalog.yaml", "dates": "../testdata/dates.yaml", "bounded": "../testdata/bounded.yaml"}
	tests := []struct {
		name, catalog, sql string
	}{
		{"count_star", "test", "SELECT COUNT(*) FROM people"},
		{"count_column", "test", "SELECT COUNT(age) FROM people"},
		{"sum_int", "test", "SELECT SUM(age) FROM people"},
		{"sum_float", "test", "SELECT SUM(score) FROM people"},
		{"avg_shares_sum", "test", "SELECT SUM(age), AVG(age) FROM people"},
		{"group_by", "test", "SELECT city, COUNT(*), AVG(score) FROM people GROUP BY city"},
		{"group_by_two", "test", "SELECT city, flag, COUNT(*) FROM people GROUP BY city, flag"},
		{"where", "test", "SELECT COUNT(*) FROM people WHERE (age BETWEEN 20 AND 30 OR city IN ('A', 'it''s')) AND NOT flag AND score IS NOT NULL"},
		{"having_order_limit", "test", "SELECT city, COUNT(*) AS n FROM people GROUP BY city HAVING n > 1 ORDER BY n DESC LIMIT 1"},
		{"quoted_names", "test", `SELECT "city", COUNT(*) FROM "people" WHERE "city" <> 'x"y' GROUP BY "city"`},
		{"unit_total", "examples", "SELECT COUNT(*), SUM(euros_spent) FROM visits"},
		{"unit_grouped", "examples", "SELECT day, COUNT(*), AVG(minutes_spent) FROM visits GROUP BY day"},
		{"unit_grouped_where", "examples", "SELECT day, SUM(euros_spent) FROM visits WHERE minutes_spent > 10 GROUP BY day"},
		{"adult", "examples", "SELECT sex, COUNT(*), AVG(hours_per_week) FROM adult GROUP BY sex"},
		{"count_distinct_unit", "examples", "SELECT day, COUNT(DISTINCT visitor_id), COUNT(*) FROM visits GROUP BY day"},
		{"variance", "test", "SELECT VAR_POP(age), STDDEV(score) FROM people"},
		{"median", "test", "SELECT city, MEDIAN(age) FROM people GROUP BY city"},
		{"percentile_float", "test", "SELECT percentile_cont(0.9) WITHIN GROUP (ORDER BY score) FROM people WHERE flag"},
		{"median_unit_grouped", "examples", "SELECT day, MEDIAN(minutes_spent) FROM visits GROUP BY day"},
		{"median_unit_total", "examples", "SELECT MEDIAN(euros_spent) FROM visits"},
		{"key_selection", "examples", "SELECT education, COUNT(*), AVG(age) FROM adult GROUP BY education"},
		{"key_selection_mixed", "examples", "SELECT sex, education, COUNT(*) FROM adult GROUP BY sex, education"},
		{"key_selection_unit", "examples", "SELECT minutes_spent, COUNT(*) FROM visits GROUP BY minutes_spent"},
		{"key_selection_distinct_only", "examples", "SELECT minutes_spent, COUNT(DISTINCT visitor_id) FROM visits GROUP BY minutes_spent"},
		{"key_selection_median", "examples", "SELECT education, MEDIAN(age) FROM adult GROUP BY education"},
		{"top_k", "examples", "SELECT race FROM adult GROUP BY race ORDER BY COUNT(*) DESC LIMIT 2"},
		{"top_k_unit_counts", "examples", "SELECT day, COUNT(*) FROM visits GROUP BY day ORDER BY COUNT(*) DESC LIMIT 3"},
		{"width_bucket", "examples", "SELECT width_bucket(age, 20, 70, 5) AS bucket, COUNT(*) FROM adult GROUP BY 1"},
		{"floor_bins", "examples", "SELECT floor(hours_per_week / 10) * 10 AS hours, COUNT(*), AVG(age) FROM adult GROUP BY hours"},
		{"sum_of_case", "test", "SELECT SUM(CASE WHEN city = 'A' THEN age ELSE 0 END) FROM people"},
		{"count_filter", "test", "SELECT COUNT(*) FILTER (WHERE age > 25), SUM(score) FILTER (WHERE flag) FROM people"},
		{"double_negation", "test", "SELECT SUM(CAST(1 AS int)) FILTER (WHERE NOT (NOT flag)) FROM people WHERE NOT NOT NOT (age > 90)"},
		{"arithmetic_unit", "examples", "SELECT day, SUM(euros_spent * 2 - 1), AVG(LEAST(minutes_spent, 30)) FROM visits GROUP BY day"},
		{"min_max", "examples", "SELECT sex, MIN(age), MAX(hours_per_week) FROM adult GROUP BY sex"},
		{"where_narrows", "examples", "SELECT SUM(age) FROM adult WHERE age BETWEEN 30 AND 60"},
		{"date_where", "dates", "SELECT COUNT(*) FROM events WHERE signup BETWEEN '2024-02-01' AND DATE '2024-03-01' AND seen < '2024-06-01 12:00:00'"},
		{"date_trunc_month", "dates", "SELECT date_trunc('month', signup) AS m, COUNT(*), SUM(amount) FROM events GROUP BY m"},
		{"extract_timestamp", "dates", "SELECT EXTRACT(hour FROM seen) AS h, date_trunc('week', seen) AS w, COUNT(*) FROM events WHERE seen < '2024-01-15' GROUP BY h, w"},
		{"date_arithmetic", "dates", "SELECT SUM(signup - DATE '2024-01-01'), AVG(EXTRACT(month FROM signup)) FROM events"},
		{"date_shifted_keys", "dates", "SELECT date_trunc('month', signup + INTERVAL '2 weeks') AS m, EXTRACT(hour FROM seen - INTERVAL '90 minutes') AS h, COUNT(*) FROM events WHERE EXTRACT(dow FROM signup - INTERVAL '1 day') < 5 GROUP BY m, h"},
		{"date_min_max", "dates", "SELECT city, MIN(signup), MAX(seen - INTERVAL '1 hour'), MEDIAN(signup + INTERVAL '1 week') FROM events GROUP BY city"},
		{"text_key", "test", "SELECT lower(city) AS c, COUNT(*) FROM people WHERE starts_with(trim(city), 'A') OR length(city) > 1 GROUP BY c"},
		{"text_key_selection", "dates", "SELECT substr(upper(note), 1, 3) AS n, SUM(LEAST(length(note), 10)) FROM events GROUP BY n"},
		{"count_distinct_values", "examples", "SELECT day, COUNT(DISTINCT euros_spent) FROM visits GROUP BY day"},
		{"cte_merged", "examples", "WITH long AS (SELECT visitor_id, day, minutes_spent * 2 AS m2 FROM visits WHERE minutes_spent > 20) SELECT day, COUNT(*), SUM(m2) FROM long GROUP BY day"},
		{"per_person", "examples", "WITH pp AS (SELECT visitor_id, COUNT(*) AS n, SUM(euros_spent) AS spent FROM visits GROUP BY visitor_id) SELECT width_bucket(n, 1, 8, 7) AS visits, COUNT(*), AVG(LEAST(spent, 100)) FROM pp GROUP BY visits"},
		{"range_key", "examples", "SELECT CAST(age / 10 AS int) AS decade, COUNT(*) FROM adult GROUP BY decade"},
		{"unit_linf2", "bounded", "SELECT grp, COUNT(*), SUM(v), AVG(v), COUNT(w), VAR_POP(w) FROM two_rows GROUP BY grp"},
		{"unit_linf3", "bounded", "SELECT grp, COUNT(*), SUM(v), AVG(v), COUNT(w), VAR_POP(w) FROM three_rows GROUP BY grp"},
		{"case_bins_unit", "examples", "SELECT CASE WHEN euros_spent < 10 THEN 'low' WHEN euros_spent < 30 THEN 'mid' ELSE 'high' END AS spend, COUNT(*) FROM visits GROUP BY spend"},
		// The rows outside the lists of sex and race measured in hidden
		// cells (dpplan.Plan.MeasureRest): their key is NULL.
		{"rest_cells", "examples", "SELECT sex, race, COUNT(*), AVG(hours_per_week) FROM adult WHERE age > 30 GROUP BY sex, race"},
	}
	for _, tt := range tests {
		for _, dia := range goldenDialects {
			t.Run(dia.name+"/"+tt.name, func(t *testing.T) {
				cat, err := catalog.Load(cats[tt.catalog])
				if err != nil {
					t.Fatal(err)
				}
				got := "-- " + tt.sql + "\n" + statements(t, cat, dia.d, tt.sql)
				checkGolden(t, filepath.Join("testdata", "golden", dia.name, tt.name+".sql"), "TestGoldenSQL", got)
				if strings.Contains(got[len(tt.sql)+4:], tt.sql) {
					t.Errorf("the analyst's text reached the engine SQL")
				}
			})
		}
	}
}

// statements plans sql as the answer service does (parse, plan) and
// spells its statements in dialect d: the first form's, each later form
// that differs, and each histogram's.
func statements(t *testing.T, cat *catalog.Catalog, d engine.Dialect, sql string) string {
	t.Helper()
	q, err := parse.ParseContext(context.Background(), sql, cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	table := q.Base
	if q.Relation != nil {
		table = q.Relation
	}
	plan, err := dpplan.NewPlanDelta(q, table, 1, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sql, "GROUP BY sex, race") {
		plan.MeasureRest(q.GroupBy) // as the answer service does for a reusable plan
	}
	var out string
	if !plan.OnlyHistograms() && !plan.PublicKeysOnly() {
		first, err := SQL(plan, d)
		if err != nil {
			t.Fatal(err)
		}
		out += first + "\n"
		prev := first
		for f := plan.FirstForm() + 1; f <= dpplan.IntegerForm; f++ {
			s, err := FormSQL(plan, d, f)
			if err != nil {
				t.Fatal(err)
			}
			if s != "" && s != prev {
				out += fmt.Sprintf("-- %v form\n%s\n", f, s)
			}
			prev = s
		}
	}
	for h := range plan.Histograms {
		hs, err := HistogramSQL(plan, d, h)
		if err != nil {
			t.Fatal(err)
		}
		out += fmt.Sprintf("-- histogram %d\n%s\n", h, hs)
	}
	return out
}

// TestGoldenDroppedSQL spells the dropped-rows estimate's statement
// (DroppedSQL) in each dialect, grouped with a WHERE clause and not
// (testdata/golden/DIALECT/dropped_*.sql).
func TestGoldenDroppedSQL(t *testing.T) {
	tests := []struct{ name, sql string }{
		{"dropped_grouped", "SELECT day, COUNT(*) FROM visits WHERE minutes_spent > 10 GROUP BY day"},
		{"dropped_total", "SELECT SUM(euros_spent) FROM visits"},
	}
	cat, err := catalog.Load("../../examples/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		for _, dia := range goldenDialects {
			t.Run(dia.name+"/"+tt.name, func(t *testing.T) {
				q, err := parse.ParseContext(context.Background(), tt.sql, cat, nil)
				if err != nil {
					t.Fatal(err)
				}
				plan, err := dpplan.NewPlanDelta(q, q.Base, 0.9, 0)
				if err != nil {
					t.Fatal(err)
				}
				d, err := plan.NewDropped(0.1, nil)
				if err != nil {
					t.Fatal(err)
				}
				s, err := DroppedSQL(plan, d, dia.d)
				if err != nil {
					t.Fatal(err)
				}
				checkGolden(t, filepath.Join("testdata", "golden", dia.name, tt.name+".sql"), "TestGoldenDroppedSQL", "-- "+tt.sql+"\n"+s+"\n")
			})
		}
	}
}
