package query

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/query/dpplan"
)

// BenchmarkPrepare measures the fixed cost of a query before the engine:
// parsing, checking, planning, calibrating noise and generating SQL.
func BenchmarkPrepare(b *testing.B) {
	cat := loadCatalog(b, "../examples/catalog.yaml")
	opts := Options{Epsilon: 1, Confidence: 0.95, Analyst: "a"}
	for b.Loop() {
		if _, err := Prepare(cat, duckdb.Dialect, "SELECT day, COUNT(*), SUM(euros_spent), AVG(minutes_spent) FROM visits WHERE minutes_spent > 5 GROUP BY day ORDER BY day", opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRelease measures the noise stage for 7 groups × 3 aggregates
// (4 releases each) with the secure source.
func BenchmarkRelease(b *testing.B) {
	cat := loadCatalog(b, "../examples/catalog.yaml")
	p, err := Prepare(cat, duckdb.Dialect, "SELECT day, COUNT(*), SUM(euros_spent), AVG(minutes_spent) FROM visits GROUP BY day", Options{Epsilon: 1, Confidence: 0.95, Analyst: "a"})
	if err != nil {
		b.Fatal(err)
	}
	ex := &dpplan.Exact{}
	for range p.Plan.Keys {
		row := make([]*big.Int, len(p.Plan.Statistics))
		for i := range row {
			row[i] = big.NewInt(1000)
		}
		ex.Stats = append(ex.Stats, row)
	}
	for b.Loop() {
		if _, err := p.Release(ex); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrepareJoin measures preparing a three-table query: a private
// table joined with two public tables, grouped by a public column, with an
// expression in an aggregate.
func BenchmarkPrepareJoin(b *testing.B) {
	svc, _, _ := newTestService(b, writeNeighbourCatalog(b))
	// A second public table: the harness's codes under another alias.
	sql := "SELECT c.label, COUNT(*), SUM(CASE WHEN x.b THEN x.i ELSE 0 END), AVG(x.f) FROM people x JOIN codes c ON x.t = c.t " +
		"LEFT JOIN codes c2 ON c2.label = c.label WHERE c2.weight > 1 GROUP BY c.label"
	opts := Options{Epsilon: 1, Confidence: 0.95, Analyst: "a"}
	if _, err := svc.Prepare(sql, opts); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := svc.Prepare(sql, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrepareSubqueries measures preparing queries over common table
// expressions: two merged row-level ones joined with a public table, and a
// per-person pre-aggregation.
func BenchmarkPrepareSubqueries(b *testing.B) {
	svc, _, _ := newTestService(b, writeNeighbourCatalog(b))
	opts := Options{Epsilon: 1, Confidence: 0.95, Analyst: "a"}
	for _, bc := range []struct{ name, sql string }{
		{"merged", "WITH a AS (SELECT pid, t, i * 2 AS i2 FROM people WHERE f > 0), b AS (SELECT * FROM a WHERE i < 50) " +
			"SELECT c.label, COUNT(*), SUM(b.i2) FROM b JOIN codes c ON b.t = c.t GROUP BY c.label"},
		{"per-person", "WITH pp AS (SELECT pid, COUNT(*) AS n, SUM(f) AS s FROM people GROUP BY pid) " +
			"SELECT width_bucket(n, 0, 10, 10) AS w, COUNT(*), AVG(LEAST(GREATEST(s, -50), 50)) FROM pp GROUP BY w"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if _, err := svc.Prepare(bc.sql, opts); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := svc.Prepare(bc.sql, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDroppedEstimate measures a bounded grouped COUNT and SUM over
// 1,000,000 rows (20,000 people with 50 rows each over 7 days, L0 = 3,
// L∞ = 2) with and without the dropped-rows estimate, whose statement reads
// the rows once more: engine, charge (a fake ledger) and noise.
//
//	go test -run '^$' -bench BenchmarkDroppedEstimate -count 5 ./query/
func BenchmarkDroppedEstimate(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	sb.WriteString("pid,day,x\n")
	for p := range 20000 {
		for r := range 50 {
			fmt.Fprintf(&sb, "%d,%d,%d\n", p, 1+(p+r)%7, r)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "visits.csv"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	cat := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(cat, []byte("budget: {epsilon: 1e12}\ntables:\n  visits:\n    source: visits.csv\n    privacy_unit: pid\n    max_groups_per_unit: 3\n    max_rows_per_group: 2\n    columns:\n      pid: {type: int}\n      day: {type: int, values: [1, 2, 3, 4, 5, 6, 7]}\n      x: {type: int, lower: 0, upper: 100}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	svc, _, _ := newTestService(b, cat)
	for _, dropped := range []bool{false, true} {
		b.Run(fmt.Sprintf("dropped=%v", dropped), func(b *testing.B) {
			opts := Options{Epsilon: 1, Confidence: 0.95, Analyst: "a", Dropped: dropped}
			for b.Loop() {
				if _, err := svc.Answer(context.Background(), "SELECT day, COUNT(*), SUM(x) FROM visits GROUP BY day", opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
