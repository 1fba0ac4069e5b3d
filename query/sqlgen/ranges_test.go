package sqlgen

import (
	"context"
	"fmt"
	"path/filepath"
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

// planOf parses and plans sql against cat.
func planOf(t *testing.T, cat *catalog.Catalog, sql string) *dpplan.Plan {
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
	return plan
}

// TestUnitRanges checks which plans are read in ranges of the unit and
// where the ranges are cut: from the declared bounds of the unit, at most
// UnitsPerRange units each, the first and last open so that units outside
// the declared bounds are read once; only a table declared
// clustered_by_unit, on the embedded engine, with public keys.
func TestUnitRanges(t *testing.T) {
	cat, err := catalog.Load("../testdata/bounded.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spell := func(rs []UnitRange) string {
		var out []string
		for _, r := range rs {
			lo, hi := "-", "-"
			if r.Lo != nil {
				lo = fmt.Sprint(*r.Lo)
			}
			if r.Hi != nil {
				hi = fmt.Sprint(*r.Hi)
			}
			out = append(out, lo+".."+hi)
		}
		return strings.Join(out, " ")
	}
	tests := []struct {
		sql  string
		d    engine.Dialect
		want string
	}{
		{"SELECT grp, COUNT(*), SUM(v) FROM clustered GROUP BY grp", duckdb.Dialect, "-..50000 50000..100000 100000..150000 150000..-"},
		{"SELECT COUNT(*) FROM clustered", duckdb.Dialect, "-..50000 50000..100000 100000..150000 150000..-"},
		{"SELECT grp, COUNT(*), SUM(v) FROM clustered GROUP BY grp", postgres.Dialect, ""},
		{"SELECT grp, COUNT(*), SUM(v) FROM clustered GROUP BY grp", clickhouse.Dialect, ""},
		{"SELECT grp, COUNT(*), SUM(v) FROM two_rows GROUP BY grp", duckdb.Dialect, ""},
		{"SELECT grp, COUNT(*) FROM clustered_small GROUP BY grp", duckdb.Dialect, ""},
		// Key selection reads every group's count at once.
		{"SELECT w, COUNT(*) FROM clustered GROUP BY w", duckdb.Dialect, ""},
	}
	for _, tt := range tests {
		t.Run(tt.d.Name()+"/"+tt.sql, func(t *testing.T) {
			if got := spell(UnitRanges(planOf(t, cat, tt.sql), tt.d)); got != tt.want {
				t.Errorf("ranges %q, want %q", got, tt.want)
			}
		})
	}
	// A declared range too wide for UnitsPerRange gets MaxUnitRanges
	// wider ranges, every boundary an int64.
	rs := UnitRanges(planOf(t, cat, "SELECT grp, COUNT(*) FROM clustered_wide GROUP BY grp"), duckdb.Dialect)
	if len(rs) != MaxUnitRanges || rs[0].Lo != nil || rs[len(rs)-1].Hi != nil {
		t.Fatalf("%d ranges (first %v, last %v), want %d open at both ends", len(rs), rs[0], rs[len(rs)-1], MaxUnitRanges)
	}
	for i := 1; i < len(rs); i++ {
		if *rs[i].Lo != *rs[i-1].Hi || (i > 1 && *rs[i].Lo <= *rs[i-1].Lo) {
			t.Fatalf("range %d starts at %d after %v", i, *rs[i].Lo, rs[i-1])
		}
	}
}

// TestGoldenRangedSQL keeps the statements of the first and a middle range
// of a table declared clustered_by_unit as a golden file: the one-pass
// statement with the unit's range in the row filter.
func TestGoldenRangedSQL(t *testing.T) {
	cat, err := catalog.Load("../testdata/bounded.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sql := "SELECT grp, COUNT(*), SUM(v), AVG(v) FROM clustered GROUP BY grp"
	plan := planOf(t, cat, sql)
	rs := UnitRanges(plan, duckdb.Dialect)
	out := "-- " + sql + "\n"
	for _, i := range []int{0, 1, len(rs) - 1} {
		s, err := RangeSQL(plan, duckdb.Dialect, plan.FirstForm(), rs[i])
		if err != nil {
			t.Fatal(err)
		}
		out += fmt.Sprintf("-- range %d of %d\n%s\n", i, len(rs), s)
	}
	checkGolden(t, filepath.Join("testdata", "golden", "duckdb", "ranged.sql"), "TestGoldenRangedSQL", out)
}
