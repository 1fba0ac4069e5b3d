package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dpstat/dpstat/engine/clickhouse"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/engine/postgres/pgtest"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// occurrenceCatalog declares the tables of the repeated-occurrence tests:
// r (every row a person), t and p (people of one id space) and the public
// calendar cal, whose d is unique and whose w holds each value 3 times.
const occurrenceCatalog = `budget: {epsilon: 1e30, delta: 0.5}
tables:
  r:
    source: r.csv
    columns:
      rid: {type: int}
      day: {type: int, lower: 0, upper: 60}
      x:   {type: int, lower: 0, upper: 10}
      u:   {type: text}
  t:
    source: t.csv
    privacy_unit: pid
    id_space: persons
    max_groups_per_unit: 1
    max_rows_per_group: 1
    columns:
      pid: {type: int}
  p:
    source: p.csv
    privacy_unit: pid
    id_space: persons
    max_groups_per_unit: 1
    max_rows_per_group: 1
    columns:
      pid: {type: int}
  cal:
    source: cal.csv
    public: true
    columns:
      d: {type: int}
      w: {type: int}
`

// occurrenceData holds the tables' rows (without headers): r's row 1 is
// alone under u = "alone" and meets 3 rows of cal through w; persons
// 1…18 have one row in t and one in p.
func occurrenceData() map[string][]string {
	data := map[string][]string{"r": {"1,5,9,alone"}}
	for i := 2; i <= 12; i++ {
		data["r"] = append(data["r"], fmt.Sprintf("%d,%d,%d,common", i, i, i%10))
	}
	for pid := 1; pid <= 18; pid++ {
		data["t"] = append(data["t"], fmt.Sprint(pid))
		data["p"] = append(data["p"], fmt.Sprint(pid))
	}
	for d := 1; d <= 60; d++ {
		data["cal"] = append(data["cal"], fmt.Sprintf("%d,%d", d, d%20))
	}
	return data
}

var occurrenceColumns = map[string][]pgtest.Column{
	"r":   {{Name: "rid", Type: schema.Int}, {Name: "day", Type: schema.Int}, {Name: "x", Type: schema.Int}, {Name: "u", Type: schema.Text}},
	"t":   {{Name: "pid", Type: schema.Int}},
	"p":   {{Name: "pid", Type: schema.Int}},
	"cal": {{Name: "d", Type: schema.Int}, {Name: "w", Type: schema.Int}},
}

// occurrenceService opens a service over the tables on the engine kind
// ("duckdb": files; "postgres": a test server's tables named after the
// variant), less the rows that drop reports true for (table name, row).
func occurrenceService(t *testing.T, kind, variant string, drop func(table, row string) bool) *Service {
	t.Helper()
	keep := func(table, row string) bool { return drop == nil || !drop(table, row) }
	return variantService(t, kind, "occ", variant, occurrenceCatalog, 60*time.Second, occurrenceData(), occurrenceColumns, keep)
}

// TestRepeatedOccurrencesNeighbours runs queries that join one table more
// than once on D and on D minus one person, at ε = 1e20: every count and
// sum moves by at most its stated sensitivity, and the keys released by
// key selection are the same (a key held by the removed person alone is
// released only with probability δ).
func TestRepeatedOccurrencesNeighbours(t *testing.T) {
	testRepeatedOccurrences(t, "duckdb")
}

// TestRepeatedOccurrencesNeighboursPostgres runs the same cases on
// PostgreSQL.
func TestRepeatedOccurrencesNeighboursPostgres(t *testing.T) {
	testRepeatedOccurrences(t, "postgres")
}

func testRepeatedOccurrences(t *testing.T, kind string) {
	opts := Options{Epsilon: 1e20, Delta: 1e-6, Confidence: 0.95, Analyst: "a"}
	dropRow1 := func(table, row string) bool { return table == "r" && strings.HasPrefix(row, "1,") }
	dropPerson18 := func(table, row string) bool { return (table == "t" || table == "p") && row == "18" }
	tests := []struct {
		name string
		sql  string
		drop string // the variant: D less row 1 of r, or less person 18
	}{
		// Finding 1: the second occurrence's ON is applied, and its
		// multiplicity counted.
		{"public table twice", "SELECT SUM(x.x) FROM r x JOIN cal c1 ON x.day = c1.d JOIN cal c2 ON x.day = c2.d WHERE x.rid = 1", "row1"},
		{"public table twice, count", "SELECT COUNT(*), SUM(x.x) FROM r x JOIN cal c1 ON x.day = c1.d JOIN cal c2 ON x.day = c2.w", "row1"},
		{"public table twice, left", "SELECT COUNT(*) FROM r x JOIN cal c1 ON x.day = c1.d LEFT JOIN cal c2 ON x.day = c2.d WHERE x.rid = 1", "row1"},
		// The same through a merged common table expression and subquery.
		{"public table twice, through a CTE", "WITH j AS (SELECT x.x, x.rid, c1.d FROM r x JOIN cal c1 ON x.day = c1.d) SELECT SUM(j.x) FROM j JOIN cal c2 ON j.d = c2.d WHERE j.rid = 1", "row1"},
		{"public table twice, in a subquery", "SELECT SUM(s.x) FROM (SELECT x.x, x.rid FROM r x JOIN cal c1 ON x.day = c1.d JOIN cal c2 ON x.day = c2.w) s WHERE s.rid = 1", "row1"},
		// Finding 2: a private table joined a third time joins each
		// person's rows with that person's rows only.
		{"private table twice, pre-aggregated", "SELECT COUNT(*) FROM (SELECT x.pid, COUNT(*) AS n FROM t x JOIN p y ON x.pid = y.pid JOIN p z ON x.pid = z.pid GROUP BY x.pid) s WHERE n >= 18", "pid18"},
		{"private table twice, pre-aggregated in a CTE", "WITH s AS (SELECT x.pid, COUNT(*) AS n FROM t x JOIN p y USING (pid) JOIN p z ON x.pid = z.pid GROUP BY x.pid) SELECT COUNT(*) FROM s WHERE n >= 18", "pid18"},
		{"private table twice", "SELECT COUNT(*), COUNT(DISTINCT x.pid) FROM t x JOIN p y ON x.pid = y.pid JOIN p z ON x.pid = z.pid", "pid18"},
		// Finding 4: key selection after a public join that turns a row
		// into 3 rows under one key, without a privacy unit.
		{"key selection after a join, separate count", "SELECT x.u, SUM(x.x) FROM r x JOIN cal c ON x.day = c.w GROUP BY x.u", "row1"},
		{"key selection after a join, by the count", "SELECT x.u, COUNT(*) FROM r x JOIN cal c ON x.day = c.w GROUP BY x.u", "row1"},
		{"key selection after a join, keys alone", "SELECT x.u FROM r x JOIN cal c ON x.day = c.w GROUP BY x.u", "row1"},
		{"key selection after two joins", "SELECT x.u, SUM(x.x) FROM r x JOIN cal c1 ON x.day = c1.w JOIN cal c2 ON x.day = c2.d GROUP BY x.u", "row1"},
	}
	ctx := context.Background()
	full := occurrenceService(t, kind, "d", nil)
	variants := map[string]*Service{
		"row1":  occurrenceService(t, kind, "row1", dropRow1),
		"pid18": occurrenceService(t, kind, "pid18", dropPerson18),
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			less := variants[tt.drop]
			d, errD := full.Answer(ctx, tt.sql, opts)
			n, errN := less.Answer(ctx, tt.sql, opts)
			if errD != nil || errN != nil {
				t.Fatalf("want answers on both tables: %v / %v", errD, errN)
			}
			p, err := full.Prepare(tt.sql, opts)
			if err != nil {
				t.Fatal(err)
			}
			plan := p.Plan
			if plan.Selection != nil {
				keys := func(r *Result) []string {
					var ks []string
					for _, row := range r.Rows {
						ks = append(ks, fmt.Sprint(row[0]))
					}
					return ks
				}
				if a, b := keys(d), keys(n); strings.Join(a, ",") != strings.Join(b, ",") {
					t.Errorf("released keys %v on D and %v without the person", a, b)
				}
				return
			}
			if len(d.Rows) != 1 || len(n.Rows) != 1 {
				t.Fatalf("want one row each, got %v and %v", d.Rows, n.Rows)
			}
			for _, ap := range plan.Aggregates {
				sens := plan.Releases[ap.Releases[0]].Sensitivity
				if m, ok := p.Noise.Sums[ap.Releases[0]]; ok {
					sens += float64(plan.Contribution.Groups*plan.Contribution.People()) * m.Granularity()
				}
				a, _ := ir.Number(d.Rows[0][ap.Output])
				b, _ := ir.Number(n.Rows[0][ap.Output])
				if math.Abs(a-b) > sens*(1+1e-9)+1e-9 {
					t.Errorf("%s moved from %v to %v: more than its sensitivity %g", ap.Aggregate, a, b, sens)
				}
			}
		})
	}
}

// TestOccurrenceBinding checks that names resolve to their occurrence: c1.d
// and c2.d are two columns, each joined under its own alias in the
// engine's SQL; a LEFT JOIN occurrence's columns are nullable and the inner
// one's are not; an unqualified column that two occurrences have is
// refused, free, naming both.
func TestOccurrenceBinding(t *testing.T) {
	svc := occurrenceService(t, "duckdb", "d", nil)
	opts := Options{Epsilon: 1, Delta: 1e-6, Confidence: 0.95, Analyst: "a"}
	p, err := svc.Prepare("SELECT COUNT(*) FROM r x JOIN cal c1 ON x.day = c1.d LEFT JOIN cal c2 ON x.rid = c2.d WHERE c1.w = 3 AND c2.w IS NULL", opts)
	if err != nil {
		t.Fatal(err)
	}
	q := p.Plan.Query
	if len(q.Joins) != 2 || q.Joins[0].Alias != "c1" || q.Joins[1].Alias != "c2" {
		t.Fatalf("want the joins of c1 and c2, got %+v", q.Joins)
	}
	if got := fmt.Sprint(q.Joins[0].On, q.Joins[1].On); got != "[[day c1.d]] [[rid c2.d]]" {
		t.Errorf("join conditions %s: want each occurrence's own column", got)
	}
	for _, want := range []string{`JOIN "cal" AS "_dp_t1" ON "_dp_t0"."day" = "_dp_t1"."d"`, `LEFT JOIN "cal" AS "_dp_t2" ON "_dp_t0"."rid" = "_dp_t2"."d"`, `"_dp_t1"."w" = 3`, `"_dp_t2"."w" IS NULL`} {
		if !strings.Contains(p.SQL, want) {
			t.Errorf("the engine's SQL lacks %s:\n%s", want, p.SQL)
		}
	}
	rel := q.Relation
	for col, nullable := range map[string]bool{"c1.d": false, "c1.w": false, "c2.d": true, "c2.w": true} {
		c := rel.Column(col)
		if c == nil || c.Nullable != nullable {
			t.Errorf("column %s: %+v, want nullable %v", col, c, nullable)
		}
	}
	for _, tt := range []struct{ sql, want string }{
		{"SELECT COUNT(*) FROM r x JOIN cal c1 ON x.day = c1.d JOIN cal c2 ON x.rid = c2.d WHERE w = 3", "c1 and c2"},
		{"SELECT COUNT(*) FROM r x JOIN cal c1 ON x.day = c1.d JOIN cal c2 ON x.rid = d", "c1 and c2"},
		{"SELECT COUNT(*) FROM r x JOIN cal c1 ON x.day = c1.d JOIN cal c2 ON c1.d = c2.d JOIN cal c3 USING (d)", "c1 and c2"},
		{"SELECT COUNT(*) FROM r x JOIN cal c1 ON x.day = c1.d JOIN cal c2 ON c1.d = c2.d WHERE cal.w = 3", "cal.w"},
	} {
		_, err := svc.Prepare(tt.sql, opts)
		var re *ir.RefusedError
		if !errors.As(err, &re) || !strings.Contains(re.Reason, tt.want) {
			t.Errorf("%s: want a refusal naming %q, got %v", tt.sql, tt.want, err)
		}
	}
}

// TestOneJoinPerSelectCountsPreAggregation checks that an engine with one
// JOIN per SELECT refuses, before the charge, a per-person pre-aggregation
// that joins two tables (it failed on ClickHouse after the charge: the
// refusal counted only the outer query's joins).
func TestOneJoinPerSelectCountsPreAggregation(t *testing.T) {
	cat := loadCatalog(t, writeNeighbourCatalog(t))
	sql := "SELECT COUNT(*), SUM(LEAST(s.n, 20)) FROM (SELECT x.pid AS pid, COUNT(*) AS n FROM people x JOIN visits y ON x.pid = y.pid JOIN visits z ON x.pid = z.pid GROUP BY x.pid) s"
	_, err := Prepare(cat, clickhouse.Dialect, sql, neighbourOpts())
	var re *ir.RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "joins one table per SELECT") || !strings.Contains(err.Error(), "pre-aggregation") {
		t.Fatalf("error %v, want a refusal naming the pre-aggregation's joins", err)
	}
	if _, err := Prepare(cat, duckdb.Dialect, sql, neighbourOpts()); err != nil {
		t.Fatalf("DuckDB: %v", err)
	}
}
