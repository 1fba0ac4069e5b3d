package sqlgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/query/parse"
)

// prejoinCatalog declares two private tables of one id space (t: at most
// 2 groups and 3 rows per group per person; p) and a public table.
const prejoinCatalog = `
budget: {epsilon: 10, delta: 1e-6}
tables:
  t:
    source: t.csv
    privacy_unit: pid
    id_space: persons
    max_groups_per_unit: 2
    max_rows_per_group: 3
    columns:
      pid: {type: int}
      day: {type: int, values: [1, 2, 3]}
      v:   {type: int, lower: 0, upper: 10}
  p:
    source: p.csv
    privacy_unit: pid
    id_space: persons
    max_groups_per_unit: 1
    max_rows_per_group: 1
    columns:
      pid:  {type: int}
      kind: {type: text, values: [a, b]}
`

// prejoinPlan plans sql over prejoinCatalog.
func prejoinPlan(t *testing.T, sql string) *dpplan.Plan {
	t.Helper()
	dir := t.TempDir()
	for name, header := range map[string]string{"t": "pid,day,v\n", "p": "pid,kind\n"} {
		if err := os.WriteFile(filepath.Join(dir, name+".csv"), []byte(header), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := catalog.Parse([]byte(prejoinCatalog), dir)
	if err != nil {
		t.Fatal(err)
	}
	q, err := parse.Parse(sql, cat)
	if err != nil {
		t.Fatal(err)
	}
	rel := q.Base
	if q.Relation != nil {
		rel = q.Relation
	}
	if rel, err = ir.Relation(q, rel); err != nil {
		t.Fatal(err)
	}
	p, err := dpplan.NewPlanDelta(q, rel, 1, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPrejoinCapSQL compares the statements of private joins with
// testdata/prejoin/DIALECT_NAME.sql (the salt written as SALT): on every
// dialect each private occurrence is read capped at L0·L∞ rows per person
// before the join (row_number with QUALIFY in a materialized stage on
// DuckDB, numbered in a subquery on PostgreSQL, LIMIT n BY on
// ClickHouse), and the bounding stages after the join are kept. Run with
// -update to rewrite the files.
func TestPrejoinCapSQL(t *testing.T) {
	tests := []struct {
		name, sql string
		// cap is the rows per person each private occurrence keeps.
		cap string
	}{
		// No GROUP BY: one group, so L0·L∞ is 1·3.
		{"count", "SELECT COUNT(*) FROM t x JOIN p y ON x.pid = y.pid", "3"},
		// Two groups of three: 2·3. y.kind = 'a' is not applied before the
		// LEFT JOIN (t1's rows that fail it would be NULL-extended).
		{"grouped_sum", "SELECT x.day, COUNT(*), SUM(x.v) FROM t x LEFT JOIN p y ON x.pid = y.pid WHERE y.kind = 'a' GROUP BY x.day", "6"},
		// Inside a per-person pre-aggregation: t's declared 2·3.
		{"pre_aggregated", "SELECT COUNT(*) FROM (SELECT x.pid, COUNT(*) AS n FROM t x JOIN p y ON x.pid = y.pid GROUP BY x.pid) s WHERE n >= 2", "6"},
		{"median", "SELECT MEDIAN(x.v) FROM t x JOIN p y ON x.pid = y.pid", "3"},
		// The conjuncts of one occurrence filter its rows before the cap
		// (x.v > 2 in t0's, y.kind = 'a' in t1's); one that reads both
		// stays after the join only.
		{"filtered", "SELECT COUNT(*), SUM(x.v) FROM t x JOIN p y ON x.pid = y.pid WHERE y.kind = 'a' AND x.v > 2 AND (x.v < 9 OR y.kind = 'b')", "3"},
	}
	for _, tt := range tests {
		for _, dia := range goldenDialects {
			name, d := dia.name, dia.d
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				p := prejoinPlan(t, tt.sql)
				text, err := SQL(p, d)
				if err != nil {
					t.Fatal(err)
				}
				for i := range p.Histograms {
					h, err := HistogramSQL(p, d, i)
					if err != nil {
						t.Fatal(err)
					}
					text += "\n-- histogram\n" + h
				}
				got := "-- " + tt.sql + "\n" + salts.ReplaceAllString(text, "cityHash64(${1}SALT") + "\n"
				// Both occurrences are read capped: neither table is read
				// directly beside the join.
				for _, tab := range []string{"t", "p"} {
					if strings.Count(got, "FROM "+d.QuoteIdent(tab)) == 0 {
						t.Errorf("%s is not read:\n%s", tab, got)
					}
					if strings.Contains(got, "JOIN "+d.QuoteIdent(tab)) {
						t.Errorf("%s is joined without its cap:\n%s", tab, got)
					}
				}
				// Each of the two private occurrences keeps at most cap
				// rows per person, in the dialect's spelling: once per
				// join on PostgreSQL and ClickHouse, once per statement
				// on DuckDB, where the capped occurrences are stages
				// computed once (the row stage is spelled once per read).
				capped := map[string]string{
					"duckdb":     "ORDER BY random()) <= " + tt.cap + ")",
					"postgres":   `WHERE _dp_rn <= ` + tt.cap + `) AS "_dp_t`,
					"clickhouse": "LIMIT " + tt.cap + ` BY "pid") AS "_dp_t`,
				}[name]
				wantCaps := 2 * strings.Count(text, " JOIN (SELECT "+d.QuoteIdent("pid"))
				if name == "duckdb" {
					wantCaps = 2 * (1 + len(p.Histograms))
					if !strings.Contains(text, `FROM "_dp_t0_capped" AS "_dp_t0" `) || !strings.Contains(text, `JOIN "_dp_t1_capped" AS "_dp_t1" ON`) {
						t.Errorf("the join does not read the capped stages:\n%s", got)
					}
				}
				if n := strings.Count(text, capped); n == 0 || n != wantCaps {
					t.Errorf("%q occurs %d times, want %d:\n%s", capped, n, wantCaps, got)
				}
				checkGolden(t, filepath.Join("testdata", "prejoin", name+"_"+tt.name+".sql"), "TestPrejoinCapSQL", got)
			})
		}
	}
}
