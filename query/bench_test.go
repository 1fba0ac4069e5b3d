package query

import (
	"math/big"
	"testing"

	"github.com/dpstat/dpstat/engine/duckdb"
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
	ex := &Exact{}
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
