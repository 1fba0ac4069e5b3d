package query

import (
	"math/big"
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
