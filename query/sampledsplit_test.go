package query

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpstat/dpstat/query/ir"
)

// TestSampledPairsExact checks the sampled bounding's two kinds of
// (person, group) pairs on answers that do not depend on the random
// choice: pairs with at most L∞ rows (summed with plain aggregates),
// pairs with more (sampled with lists), both with NULL values, and
// pairs whose values are all NULL.
func TestSampledPairsExact(t *testing.T) {
	dir := t.TempDir()
	data := "pid,g,v\n" +
		// g 1: person 1 has 4 rows (sampled: 2 of the three 5s), person 2
		// two NULLs (plain).
		"1,1,5\n1,1,5\n1,1,\n1,1,5\n2,1,\n2,1,\n" +
		// g 2: plain pairs only.
		"3,2,3\n3,2,\n4,2,7\n" +
		// g 3: a sampled pair whose values are all NULL.
		"5,3,\n5,3,\n5,3,\n"
	cat := `budget: {epsilon: 1e30}
tables:
  t:
    source: t.csv
    privacy_unit: pid
    max_groups_per_unit: 3
    max_rows_per_group: 2
    columns:
      pid: {type: int}
      g:   {type: int, values: [1, 2, 3]}
      v:   {type: int, lower: 0, upper: 10}
`
	for name, body := range map[string]string{"t.csv": data, "catalog.yaml": cat} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	svc, _, _ := newTestService(t, filepath.Join(dir, "catalog.yaml"))
	res, err := svc.Answer(context.Background(), "SELECT g, COUNT(*), SUM(v), COUNT(v) FROM t GROUP BY g", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	want := map[float64][3]float64{1: {4, 10, 2}, 2: {3, 10, 2}, 3: {2, 0, 0}}
	if len(res.Rows) != len(want) {
		t.Fatalf("got %d rows, want %d: %v", len(res.Rows), len(want), res.Rows)
	}
	for _, row := range res.Rows {
		g, _ := ir.Number(row[0])
		w, ok := want[g]
		if !ok {
			t.Fatalf("unexpected group %v in %v", row[0], res.Rows)
		}
		for j := 0; j < 3; j++ {
			x, _ := ir.Number(row[1+j])
			if math.Abs(x-w[j]) > 1e-6 {
				t.Errorf("group %v, column %d: got %v, want %v", g, j+1, row[1+j], w[j])
			}
		}
	}
}
