package query

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/query/ir"
)

// TestSampledPairsExact checks the sampled bounding's two kinds of
// (person, group) pairs on answers that do not depend on the random
// choice: pairs with at most L∞ rows (summed with plain aggregates),
// pairs with more (sampled with lists), both with NULL values, and
// pairs whose values are all NULL.
func TestSampledPairsExact(t *testing.T) {
	data := "pid,g,v\n" +
		// g 1: person 1 has 4 rows (sampled: 2 of the three 5s), person 2
		// two NULLs (plain).
		"1,1,5\n1,1,5\n1,1,\n1,1,5\n2,1,\n2,1,\n" +
		// g 2: plain pairs only.
		"3,2,3\n3,2,\n4,2,7\n" +
		// g 3: a sampled pair whose values are all NULL.
		"5,3,\n5,3,\n5,3,\n"
	cat := sampledCatalog("{type: int, values: [1, 2, 3]}")
	svc := tableService(t, cat, data)
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

// TestSampledHistogramPairsExact checks the bounded histogram statement's
// two kinds of (person, group) pairs (counted per bin with plain
// aggregates up to L∞ rows, sampled with lists above) on answers that do
// not depend on the random choice: the pairs above L∞ hold one value
// each, so any L∞ of their rows give the same values, and each median
// lies inside a run of equal values (a quantile is exact to its bin only
// where the values around it are). A pair's count is of its non-NULL
// values: person 6's pair has three rows, one NULL, and is not sampled.
func TestSampledHistogramPairsExact(t *testing.T) {
	data := "pid,g,v\n" +
		// g 1: persons 1–4 at most L∞ rows, persons 5 and 10 five rows of 9
		// (two kept each): 1 1 5 5 5 5 5 5 9 9 9 9, median 5. Were every
		// row of a sampled pair kept, the median would be 9; were the
		// pairs at most L∞ rows lost, 9 too.
		"1,1,1\n1,1,1\n2,1,5\n2,1,5\n3,1,5\n3,1,5\n4,1,5\n4,1,5\n" +
		"5,1,9\n5,1,9\n5,1,9\n5,1,9\n5,1,9\n10,1,9\n10,1,9\n10,1,9\n10,1,9\n10,1,9\n" +
		// g 2: person 7 has six rows of 7 (two kept): 3 (6 times) 7 7,
		// median 3; with all of person 7's rows, 5.
		"6,2,\n6,2,3\n6,2,3\n7,2,7\n7,2,7\n7,2,7\n7,2,7\n7,2,7\n7,2,7\n8,2,3\n8,2,3\n9,2,3\n9,2,3\n"
	cat := sampledCatalog("{type: int, values: [1, 2]}")
	svc := tableService(t, cat, data)
	// check compares each row's values with want (by group, the first
	// column, when grouped; group 0 for a total), within tolerance.
	check := func(sql string, grouped bool, want map[float64][]float64) {
		t.Helper()
		res, err := svc.Answer(context.Background(), sql, exactOpts())
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != len(want) {
			t.Fatalf("%s: got %d rows, want %d: %v", sql, len(res.Rows), len(want), res.Rows)
		}
		for _, row := range res.Rows {
			g, values := 0.0, row
			if grouped {
				g, _ = ir.Number(row[0])
				values = row[1:]
			}
			w, ok := want[g]
			if !ok {
				t.Fatalf("%s: unexpected group %v in %v", sql, row[0], res.Rows)
			}
			for j, wj := range w {
				x, _ := ir.Number(values[j])
				if math.Abs(x-wj) > 0.5 {
					t.Errorf("%s: group %v, column %d: got %v, want %v", sql, g, j+1, values[j], wj)
				}
			}
		}
	}
	check("SELECT g, MEDIAN(v), COUNT(DISTINCT v) FROM t GROUP BY g", true,
		map[float64][]float64{1: {5, 3}, 2: {3, 2}})
	// One pair per person: 1 1 | 5 5 (3 persons) | 9 9 (2) | 3 3 (3) | 7 7:
	// 1×2 3×6 5×6 7×2 9×4, median 5 (7 with every row of persons 5, 7 and
	// 10), first quartile 3.
	check("SELECT MEDIAN(v), COUNT(DISTINCT v), percentile_cont(0.25) WITHIN GROUP (ORDER BY v) FROM t", false,
		map[float64][]float64{0: {5, 5, 3}})
}

// TestSampledPairsNullKey checks that the sampled bounding keeps the pairs
// of a NULL group (a group key of a column without a public value list,
// chosen by key selection): the statements join the rows with the kept
// pairs on their keys, where a NULL key must match a NULL key. Each
// person has three rows in the NULL group (more than L∞ = 2: sampled) and
// one in group a (not sampled); every value is 5.
func TestSampledPairsNullKey(t *testing.T) {
	var data strings.Builder
	data.WriteString("pid,g,v\n")
	for p := range 200 {
		id := strconv.Itoa(p)
		data.WriteString(id + ",,5\n" + id + ",,5\n" + id + ",,5\n" + id + ",a,5\n")
	}
	cat := sampledCatalog("{type: text}")
	svc := tableService(t, cat, data.String())
	opts := exactOpts()
	opts.Delta = 1e-6 // key selection
	res, err := svc.Answer(context.Background(), "SELECT g, COUNT(*), SUM(v), COUNT(DISTINCT v), MEDIAN(v) FROM t GROUP BY g", opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[any][4]float64{nil: {400, 2000, 1, 5}, "a": {200, 1000, 1, 5}}
	if len(res.Rows) != len(want) {
		t.Fatalf("got %d rows, want %d: %v", len(res.Rows), len(want), res.Rows)
	}
	for _, row := range res.Rows {
		w, ok := want[row[0]]
		if !ok {
			t.Fatalf("unexpected group %v in %v", row[0], res.Rows)
		}
		for j := range w {
			x, _ := ir.Number(row[1+j])
			if math.Abs(x-w[j]) > 0.5 {
				t.Errorf("group %v, column %d: got %v, want %v", row[0], j+1, row[1+j], w[j])
			}
		}
	}
}

// tableService is a test service over one table t, declared by the catalog
// text cat and read from the CSV text data.
func tableService(t *testing.T, cat, data string) *Service {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"t.csv": data, "catalog.yaml": cat} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	svc, _, _ := newTestService(t, filepath.Join(dir, "catalog.yaml"))
	return svc
}

// sampledCatalog declares the table t of the sampled-pair tests: at most 3
// groups and 2 rows per group for each person, the group column g as
// declared by g, values v in [0, 10].
func sampledCatalog(g string) string {
	return `budget: {epsilon: 1e30}
tables:
  t:
    source: t.csv
    privacy_unit: pid
    max_groups_per_unit: 3
    max_rows_per_group: 2
    columns:
      pid: {type: int}
      g:   ` + g + `
      v:   {type: int, lower: 0, upper: 10}
`
}

// TestHistogramGroupsBeyondMain checks that under key selection a group
// the histogram's statement keeps and the main statement does not (each
// chooses a person's kept groups at random on its own) is left out, not an
// error after the charge: a person in 6 groups of their own keeps 3 in
// each statement, the same 3 with probability 1/20, over 20 queries.
func TestHistogramGroupsBeyondMain(t *testing.T) {
	var data strings.Builder
	data.WriteString("pid,g,v\n")
	for p := range 50 {
		data.WriteString(strconv.Itoa(p) + ",a,5\n")
	}
	for g := range 6 {
		data.WriteString("1000,own" + strconv.Itoa(g) + ",7\n")
	}
	svc := tableService(t, sampledCatalog("{type: text}"), data.String())
	opts := exactOpts()
	opts.Delta = 1e-6 // key selection
	for range 20 {
		res, err := svc.Answer(context.Background(), "SELECT g, MEDIAN(v), COUNT(DISTINCT v) FROM t GROUP BY g", opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != 1 || res.Rows[0][0] != "a" {
			t.Fatalf("got %v, want the group a alone", res.Rows)
		}
	}
}
