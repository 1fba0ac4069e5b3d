package query

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/internal/stattest"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
)

// samplerDialect is a dialect that bounds with aggregates.
type samplerDialect interface {
	engine.Dialect
	engine.Sampler
}

// listDialect is DuckDB's dialect without engine.ExtremeSampler: the
// generator then keeps L∞ ≤ 2 values per pair with SmallestN's lists and a
// second read of the heavy pairs (the form before the one-pass form).
type listDialect struct{ samplerDialect }

// TestOnePassBoundingIsUniform: one person with the values 1, 2, 4, 8 and
// a NULL in each of the groups a, b, c, d, bounded to L0 = 2 groups and
// L∞ = 2 rows. The one-pass form keeps the values of the rows with the
// smallest and the largest random key among the non-NULL ones: each of
// the 6 pairs of values must be kept with probability 1/6 (their sums 3,
// 5, 9, 6, 10, 12 tell them apart), each of the 6 pairs of groups with
// probability 1/6, and never the NULL (COUNT(v) is 2 in a kept group).
// With ε = 1e20 the released statistics are the exact ones. 400 queries
// (800 kept pairs); false-failure probability 1e-6 for each chi-square
// test. The engine's random() is not seeded (it has no per-statement
// seed): the stated probability is the test's whole margin.
//
// The same test runs on the table declared clustered_by_unit, read in 4
// ranges of the unit (the person in the second), whose statements are
// the one-pass statement with a filter on the unit (200 queries).
func TestOnePassBoundingIsUniform(t *testing.T) {
	for _, clustered := range []bool{false, true} {
		t.Run(fmt.Sprintf("clustered=%v", clustered), func(t *testing.T) { onePassUniform(t, clustered) })
	}
}

func onePassUniform(t *testing.T, clustered bool) {
	pid := "1"
	cat := strings.Replace(sampledCatalog("{type: text, values: [a, b, c, d]}"), "max_groups_per_unit: 3", "max_groups_per_unit: 2", 1)
	if clustered {
		pid = "70000"
		cat = strings.Replace(cat, "pid: {type: int}", "pid: {type: int, lower: 0, upper: 200000}", 1)
		cat = strings.Replace(cat, "    columns:", "    clustered_by_unit: true\n    columns:", 1)
	}
	var b strings.Builder
	b.WriteString("pid,g,v\n")
	for _, g := range []string{"a", "b", "c", "d"} {
		for _, v := range []string{"1", "", "2", "4", "8"} {
			fmt.Fprintf(&b, "%s,%s,%s\n", pid, g, v)
		}
	}
	svc := tableService(t, cat, b.String())
	p, err := svc.Prepare("SELECT g, SUM(v), COUNT(v), COUNT(*) FROM t GROUP BY g", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.SQL, "max_by(") || strings.Contains(p.SQL, "_dp_sampled") {
		t.Fatalf("want the one-pass form, got %s", p.SQL)
	}
	if want := map[bool]int{false: 0, true: 4}[clustered]; len(p.Ranges()) != want {
		t.Fatalf("%d ranges, want %d", len(p.Ranges()), want)
	}
	sums := map[int]int{3: 0, 5: 1, 9: 2, 6: 3, 10: 4, 12: 5}
	groupPairs := map[string]int{"ab": 0, "ac": 1, "ad": 2, "bc": 3, "bd": 4, "cd": 5}
	n := 400
	if clustered {
		n = 200 // four statements per query
	}
	values, groups := make([]int, 6), make([]int, 6)
	for i := 0; i < n; i++ {
		res, err := svc.Answer(context.Background(), "SELECT g, SUM(v), COUNT(v), COUNT(*) FROM t GROUP BY g", exactOpts())
		if err != nil {
			t.Fatal(err)
		}
		kept := ""
		for _, row := range res.Rows {
			s, _ := ir.Number(row[1])
			c, _ := ir.Number(row[2])
			rows, _ := ir.Number(row[3])
			if math.Round(rows) == 0 {
				continue
			}
			j, ok := sums[int(math.Round(s))]
			if !ok || math.Round(c) != 2 || math.Round(rows) != 2 {
				t.Fatalf("group %v keeps sum %v, %v values, %v rows: want two of 1, 2, 4, 8 and 2 rows (%v)", row[0], s, c, rows, res.Rows)
			}
			values[j]++
			kept += fmt.Sprint(row[0])
		}
		j, ok := groupPairs[kept]
		if !ok {
			t.Fatalf("answer %v keeps groups %q, want 2 of a, b, c, d", res.Rows, kept)
		}
		groups[j]++
	}
	sixth := []float64{1. / 6, 1. / 6, 1. / 6, 1. / 6, 1. / 6, 1. / 6}
	stattest.ChiSquare(t, "kept pair of values", values, sixth, 2*n, 1e-6)
	stattest.ChiSquare(t, "kept pair of groups", groups, sixth, n, 1e-6)
}

// TestOnePassAgreesWithLists runs the one-pass form (L∞ = 1 and 2) and the
// form with lists and a second read on the same data, in every form of
// the sums, on answers that do not depend on the random choice: each
// person has at most L0 groups, and a pair with more than L∞ values holds
// one value (any L∞ of them sum the same). Pairs with NULLs, pairs of NULLs
// only and pairs at or below L∞ with different values are included.
func TestOnePassAgreesWithLists(t *testing.T) {
	data := "pid,g,v,x\n" +
		// person 1: a heavy pair of 7s with NULLs, a light pair of two values.
		"1,1,7,2.5\n1,1,,2.5\n1,1,7,2.5\n1,1,7,\n1,2,3,1.25\n1,2,9,1.25\n" +
		// person 2: a heavy pair of NULLs, a single row, a light pair with a NULL.
		"2,1,,\n2,1,,\n2,1,,\n2,3,10,100\n2,4,,50\n2,4,4,50\n" +
		// person 3: a heavy pair of 0s (the lower bound), extremes above the bounds.
		"3,5,0,0\n3,5,0,0\n3,5,0,0\n3,5,0,0\n3,2,99,1e300\n"
	ctx := context.Background()
	for _, linf := range []int{1, 2} {
		{
			dir := t.TempDir()
			if linf == 1 {
				// With L∞ = 1 the light pairs hold one value too.
				data = strings.Replace(data, "1,2,9,1.25", "1,2,3,1.25", 1)
				data = strings.Replace(data, "2,4,4,50", "2,4,,50", 1)
			}
			cat := fmt.Sprintf(`budget: {epsilon: 1e30}
tables:
  t:
    source: t.csv
    privacy_unit: pid
    max_groups_per_unit: 3
    max_rows_per_group: %d
    columns:
      pid: {type: int}
      g:   {type: int, values: [1, 2, 3, 4, 5]}
      v:   {type: int, lower: 0, upper: 10}
      x:   {type: float, lower: 0, upper: 100}
`, linf)
			for name, body := range map[string]string{"t.csv": data, "catalog.yaml": cat} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c := loadCatalog(t, filepath.Join(dir, "catalog.yaml"))
			eng, err := duckdb.Open(duckdb.Options{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { eng.Close() })
			if err := Register(ctx, c, eng); err != nil {
				t.Fatal(err)
			}
			for _, sql := range []string{
				"SELECT g, COUNT(*), SUM(v), AVG(v), COUNT(v), SUM(x), AVG(x) FROM t GROUP BY g",
				"SELECT g, SUM(v), VAR_POP(x), STDDEV(v), COUNT(x) FROM t GROUP BY g",
				"SELECT g, VAR_SAMP(v), AVG(x) FROM t WHERE x IS NULL OR x < 60 GROUP BY g",
			} {
				for _, f := range []dpplan.Form{dpplan.CleanForm, dpplan.IntegerForm} {
					t.Run(fmt.Sprintf("linf%d/%s/form%d", linf, sql, f), func(t *testing.T) {
						var got [2]*dpplan.Exact
						for i, d := range []engine.Dialect{duckdb.Dialect, listDialect{duckdb.Dialect.(samplerDialect)}} {
							p, err := Prepare(c, d, sql, Options{Epsilon: 1, Confidence: 0.95, Analyst: "a"})
							if err != nil {
								t.Fatal(err)
							}
							text := formSQL(t, p, f)
							if strings.Contains(text, "_dp_sampled") != (i == 1) {
								t.Fatalf("dialect %d: unexpected bounding stages in %s", i, text)
							}
							rows, err := eng.Query(ctx, text)
							if err != nil {
								t.Fatal(err)
							}
							if got[i], err = p.Plan.ReadExactForm(rows, f); err != nil {
								t.Fatal(err)
							}
						}
						if fmt.Sprint(got[0].Stats) != fmt.Sprint(got[1].Stats) {
							t.Errorf("one pass %v, lists %v", got[0].Stats, got[1].Stats)
						}
					})
				}
			}
		}
	}
}

// TestRangedAgreesAndNeighbours reads a table declared clustered_by_unit
// in ranges of its unit (persons below, inside and above the declared
// bounds, on both sides of range boundaries) and requires, on bounds that
// keep every row (so that the answers do not depend on the random
// choice), at ε = 1e20: the answers of the same table without the
// declaration (one statement), and for every person p, the answers on
// the table without p's rows, ranged and not, differing from D's by p's
// own rows.
func TestRangedAgreesAndNeighbours(t *testing.T) {
	const cat = `budget: {epsilon: 1e30}
tables:
  t:
    source: t.csv
    privacy_unit: pid
    max_groups_per_unit: 2
    max_rows_per_group: 2%s
    columns:
      pid: {type: int, lower: 0, upper: 1000000}
      g:   {type: int, values: [1, 2, 3, 4]}
      v:   {type: int, lower: 0, upper: 10}
      x:   {type: float, lower: 0, upper: 100}
`
	people := map[string][]string{
		"-5":      {"1,3,2.5", "1,4,"},
		"0":       {"1,1,1", "2,,7.25"},
		"65535":   {"2,10,100", "2,9,0"},
		"65536":   {"3,5,50", "4,,", "4,6,1e300"},
		"300000":  {"1,7,3", "1,7,3"},
		"999999":  {"4,0,0"},
		"1000000": {"2,2,2", "3,3,3"},
		"2000000": {"1,10,99"},
	}
	csv := func(skip string) string {
		var b strings.Builder
		b.WriteString("pid,g,v,x\n")
		for pid, rows := range people {
			if pid == skip {
				continue
			}
			for _, r := range rows {
				fmt.Fprintf(&b, "%s,%s\n", pid, r)
			}
		}
		return b.String()
	}
	queries := []string{
		"SELECT g, COUNT(*), SUM(v), AVG(x), COUNT(x) FROM t GROUP BY g",
		"SELECT g, VAR_POP(v), SUM(x) FROM t WHERE v > 1 GROUP BY g",
		"SELECT g, COUNT(DISTINCT pid) FROM t GROUP BY g",
	}
	answers := func(t *testing.T, clustered bool, skip string) []string {
		decl := ""
		if clustered {
			decl = "\n    clustered_by_unit: true"
		}
		svc := tableService(t, fmt.Sprintf(cat, decl), csv(skip))
		var out []string
		for _, q := range queries {
			p, err := svc.Prepare(q, exactOpts())
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{false: 0, true: 16}[clustered]; len(p.Ranges()) != want {
				t.Fatalf("%s: %d ranges, want %d", q, len(p.Ranges()), want)
			}
			if notes := strings.Join(p.Explain().Notes, "\n"); strings.Contains(notes, "16 ranges") != clustered {
				t.Errorf("%s: EXPLAIN notes %q, want the 16 ranges said exactly when clustered", q, notes)
			}
			res, err := svc.Answer(context.Background(), q, exactOpts())
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, formatRows(res.Rows))
		}
		return out
	}
	d := answers(t, true, "")
	if plain := answers(t, false, ""); fmt.Sprint(d) != fmt.Sprint(plain) {
		t.Fatalf("ranged %q, one statement %q", d, plain)
	}
	for pid, rows := range people {
		without := answers(t, true, pid)
		if plain := answers(t, false, pid); fmt.Sprint(without) != fmt.Sprint(plain) {
			t.Errorf("without %s: ranged %q, one statement %q", pid, without, plain)
		}
		// The first query's counts per group differ by p's rows.
		mine := map[string]int{}
		for _, r := range rows {
			mine[r[:1]]++
		}
		countOf := func(ans string) map[string]float64 {
			out := map[string]float64{}
			for _, line := range strings.Split(ans, "; ") {
				f := strings.Fields(line)
				if len(f) > 1 {
					var c float64
					fmt.Sscan(f[1], &c)
					out[f[0]] = c
				}
			}
			return out
		}
		dc, wc := countOf(d[0]), countOf(without[0])
		for g := 1; g <= 4; g++ {
			k := fmt.Sprint(g)
			if got := math.Round(dc[k] - wc[k]); got != float64(mine[k]) {
				t.Errorf("without %s: group %s count drops by %v, want %d (%q against %q)", pid, k, got, mine[k], d[0], without[0])
			}
		}
	}
}

// TestDeclaredUnclustered: the owner's check of clustered_by_unit reports a
// table whose rows are out of unit order and units outside the declared
// bounds, and nothing for a table written in unit order within them.
func TestDeclaredUnclustered(t *testing.T) {
	cat := `budget: {epsilon: 1e30}
tables:
  t:
    source: t.csv
    privacy_unit: pid
    clustered_by_unit: true
    max_groups_per_unit: 2
    max_rows_per_group: 2
    columns:
      pid: {type: int, lower: 0, upper: 100}
      g:   {type: int, values: [1, 2]}
`
	for _, tt := range []struct {
		data string
		want []string
	}{
		{"pid,g\n1,1\n1,2\n2,1\n50,2\n", nil},
		{"pid,g\n1,1\n5,2\n2,1\n50,2\n200,1\n", []string{"1 of its rows follow a row with a larger pid", "1 of its rows have pid outside its declared bounds [0, 100]"}},
	} {
		svc := tableService(t, cat, tt.data)
		got, err := DeclaredUnclustered(context.Background(), svc.cat, svc.eng)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tt.want) {
			t.Fatalf("%q: got %q, want %d lines", tt.data, got, len(tt.want))
		}
		for i, w := range tt.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%q: line %q, want one containing %q", tt.data, got[i], w)
			}
		}
	}
}
