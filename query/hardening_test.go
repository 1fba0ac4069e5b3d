package query

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine/duckdb"
)

// TestNonFiniteData checks that NaN and ±Inf in the data are handled as
// declared, never propagated: NaN is a missing value (NULL), ±Inf is
// clamped to the declared bounds. nonfinite.csv holds x = 1.5, nan, inf,
// -inf, NaN, NULL, so the non-missing values are 1.5, 10 and 0. The same
// data is also read from Parquet.
func TestNonFiniteData(t *testing.T) {
	ctx := context.Background()
	parquetCatalog := func(t *testing.T) string {
		dir := t.TempDir()
		eng, err := duckdb.Open(duckdb.Options{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer eng.Close()
		src, _ := filepath.Abs("testdata/nonfinite.csv")
		out := filepath.Join(dir, "nonfinite.parquet")
		if _, err := eng.Query(ctx, "COPY (SELECT id, CAST(x AS DOUBLE) AS x, g FROM read_csv('"+src+"', header = true, columns = {'id': 'BIGINT', 'x': 'DOUBLE', 'g': 'VARCHAR'})) TO '"+out+"' (FORMAT parquet)"); err != nil {
			t.Fatal(err)
		}
		yaml := "budget: {epsilon: 1e30, delta: 1e-6}\ntables:\n  nonfinite:\n    source: nonfinite.parquet\n    columns:\n      id: {type: int}\n      x:  {type: float, lower: 0, upper: 10, nullable: true}\n      g:  {type: text, values: [a, b]}\n"
		path := filepath.Join(dir, "catalog.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	sources := map[string]func(t *testing.T) string{
		"csv":     func(*testing.T) string { return "testdata/household.yaml" },
		"parquet": parquetCatalog,
	}
	tests := []struct {
		name, sql, want string
	}{
		{"count skips NaN", "SELECT COUNT(x) FROM nonfinite", "3"},
		{"sum clamps infinities", "SELECT SUM(x) FROM nonfinite", "11.5"},
		{"avg", "SELECT AVG(x) FROM nonfinite", "3.833333"},
		{"variance", "SELECT VAR_POP(x) FROM nonfinite", "19.388889"},
		{"bins", "SELECT floor(x / 5) * 5 AS b, COUNT(*) FROM nonfinite GROUP BY b", "0 2; 5 0; 10 1"},
		{"grouped", "SELECT g, SUM(x), COUNT(*) FROM nonfinite GROUP BY g", "a 1.5 3; b 10 3"},
	}
	for src, catPath := range sources {
		t.Run(src, func(t *testing.T) {
			svc, _, _ := newTestService(t, catPath(t))
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					res, err := svc.Answer(ctx, tt.sql, exactOpts())
					if err != nil {
						t.Fatal(err)
					}
					if got := formatRows(res.Rows); got != tt.want {
						t.Errorf("%s = %s, want %s", tt.sql, got, tt.want)
					}
					for _, row := range res.CI {
						for _, iv := range row {
							if iv != nil && (math.IsNaN(iv.Low) || math.IsNaN(iv.High)) {
								t.Errorf("NaN interval %v", *iv)
							}
						}
					}
				})
			}
			res, err := svc.Answer(ctx, "SELECT MEDIAN(x) FROM nonfinite", exactOpts())
			if err != nil {
				t.Fatal(err)
			}
			// The median of 0, 1.5, 10 is 1.5, within one grid step (10/1024).
			if v := res.Rows[0][0].(float64); math.Abs(v-1.5) > 10.0/1024 {
				t.Errorf("median = %v, want 1.5 within one grid step", v)
			}
		})
	}
}

// TestGroupSize checks that group_size: 3 multiplies every sensitivity by
// 3 (the same queries on the same data with and without it), and that the
// catalog refuses a group size below 1.
func TestGroupSize(t *testing.T) {
	plain := loadCatalog(t, "testdata/catalog.yaml")
	household := loadCatalog(t, "testdata/household.yaml")
	queries := []string{
		"SELECT COUNT(*), SUM(age), AVG(score) FROM people",
		"SELECT city, COUNT(*), VAR_POP(age), MEDIAN(age) FROM people GROUP BY city",
		"SELECT city FROM people GROUP BY city ORDER BY COUNT(*) DESC LIMIT 2",
	}
	opts := Options{Epsilon: 1, Delta: 1e-6, Confidence: 0.95, Analyst: "a"}
	for _, sql := range queries {
		a, err := Prepare(plain, duckdb.Dialect, sql, opts)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Prepare(household, duckdb.Dialect, sql, opts)
		if err != nil {
			t.Fatal(err)
		}
		sa, sb := a.Explain().Split, b.Explain().Split
		for i := range sa {
			for j := range sa[i].Mechanisms {
				x, y := sa[i].Mechanisms[j].Sensitivity, sb[i].Mechanisms[j].Sensitivity
				// Sums' sensitivities also carry grid steps for rounding.
				if math.Abs(y-3*x) > 1e-6*y+3*x*1e-6 && !(sa[i].Mechanisms[j].Name == "laplace" && y >= 3*x && y-3*x < 1e-3*y) {
					t.Errorf("%s: %s mechanism %d: sensitivity %v with group_size 3, %v without", sql, sa[i].Column, j, y, x)
				}
			}
		}
		if b.Noise.Cost.Epsilon != a.Noise.Cost.Epsilon {
			t.Errorf("%s: cost changed with group_size", sql)
		}
	}
	// The Gaussian plan's L2 sensitivities also scale by 3.
	ga, err := Prepare(plain, duckdb.Dialect, "SELECT city, COUNT(*), COUNT(age) FROM people GROUP BY city", opts)
	if err != nil {
		t.Fatal(err)
	}
	gb, err := Prepare(household, duckdb.Dialect, "SELECT city, COUNT(*), COUNT(age) FROM people GROUP BY city", opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range ga.Plan.Releases {
		if x, y := ga.Plan.L2(r), gb.Plan.L2(gb.Plan.Releases[i]); y != 3*x {
			t.Errorf("release %d: L2 sensitivity %v with group_size 3, %v without", i, y, x)
		}
	}
	// Key selection: a key only one household has can count 3 people, so
	// it is released with the probability a one-person key had.
	ks, err := Prepare(household, duckdb.Dialect, "SELECT id, COUNT(*) FROM people GROUP BY id", opts)
	if err != nil {
		t.Fatal(err)
	}
	sel := ks.Noise.Sel
	if ks.Plan.Selection.Sensitivity != 3 || math.Abs(sel.ReleaseProbability(3)-sel.Single) > 1e-15 || sel.Single > 1e-6/3 {
		t.Errorf("household key selection: sensitivity %d, P(release | 3 people) = %v, single = %v",
			ks.Plan.Selection.Sensitivity, sel.ReleaseProbability(3), sel.Single)
	}
	for _, bad := range []string{"0", "-2", "2000000"} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "t.csv"), []byte("a\n1\n"), 0o644)
		y := "tables:\n  t:\n    source: t.csv\n    group_size: " + bad + "\n    columns:\n      a: {type: int}\n"
		os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(y), 0o644)
		if _, err := catalog.Load(filepath.Join(dir, "c.yaml")); err == nil || !strings.Contains(err.Error(), "group_size") {
			t.Errorf("group_size %s: got %v, want an error naming group_size", bad, err)
		}
	}
}
