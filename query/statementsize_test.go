package query

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/clickhouse"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/query/ir"
)

// TestStatementSizeRefusedFree checks that a query whose statement would
// be longer than an engine takes is refused when planned (free, from the
// query alone) rather than failing in the engine after the charge:
// ClickHouse spells a NULL-skipping LEAST by repeating its arguments, so
// nesting grows the statement faster than the query.
func TestStatementSizeRefusedFree(t *testing.T) {
	cat := loadCatalog(t, "testdata/catalog.yaml")
	nested := func(depth int) string {
		e := "age"
		for range depth {
			e = "LEAST(" + e + ", score)"
		}
		return "SELECT SUM(" + e + ") FROM people"
	}
	for _, tc := range []struct {
		name    string
		d       engine.Dialect
		depth   int
		refused bool
	}{
		{"shallow on ClickHouse", clickhouse.Dialect, 2, false},
		{"deep on ClickHouse", clickhouse.Dialect, 12, true},
		{"very deep on ClickHouse", clickhouse.Dialect, 60, true},
		{"deep on DuckDB", duckdb.Dialect, 12, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			p, err := Prepare(cat, tc.d, nested(tc.depth), exactOpts())
			runtime.ReadMemStats(&after)
			// Each node is checked as it is built: planning allocates a
			// bounded amount whatever the nesting (4^60 bytes otherwise).
			if mb := (after.TotalAlloc - before.TotalAlloc) >> 20; mb > 256 {
				t.Errorf("planning allocated %d MB", mb)
			}
			var re *ir.RefusedError
			switch {
			case tc.refused && (!errors.As(err, &re) || !strings.Contains(err.Error(), "bytes")):
				t.Fatalf("error %v, want a refusal naming the statement's length", err)
			case !tc.refused && err != nil:
				t.Fatal(err)
			case !tc.refused && len(p.SQL) > engine.MaxStatementBytes:
				t.Fatalf("a %d-byte statement was planned", len(p.SQL))
			}
		})
	}
}

// TestNarrowQuantileRange checks that a quantile of a value whose range is
// narrower than its bins' count of the smallest double steps ([0,
// 4.9e-324]) plans with one bin, instead of an error that was not a
// refusal (a step of 0); found by the relational generator (seed 357).
func TestNarrowQuantileRange(t *testing.T) {
	cat := loadCatalog(t, "testdata/catalog.yaml")
	p, err := Prepare(cat, duckdb.Dialect, "SELECT MEDIAN(LEAST(GREATEST(score, 0), 4.9e-324)) FROM people", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	if h := p.Plan.Histograms[0]; h.Bins != 1 || h.Step <= 0 {
		t.Fatalf("histogram %+v: want one bin of a positive step", h)
	}
}

// TestSubnormalSums checks that sums and averages whose values are
// subnormal plan (on the finest grid, minGridExp) instead of failing with
// an error that was not a refusal (a grid scale of 2^1103 = +Inf, which
// no literal spells); found by the relational generator (seeds 823, 871).
func TestSubnormalSums(t *testing.T) {
	cat := loadCatalog(t, "testdata/catalog.yaml")
	for _, sql := range []string{
		"SELECT SUM(LEAST(GREATEST(score, 0), 4.9e-324)) FROM people",
		"SELECT AVG(NULLIF(4.9e-324, 0)), VAR_POP(LEAST(GREATEST(score, 0), 4.9e-324)) FROM people",
	} {
		if _, err := Prepare(cat, duckdb.Dialect, sql, exactOpts()); err != nil {
			t.Errorf("%s: %v", sql, err)
		}
	}
}
