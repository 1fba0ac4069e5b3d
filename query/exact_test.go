package query

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/query/ir"
)

// row formats an answer row for comparison: numbers rounded to 1e-6.
func formatRows(rows [][]any) string {
	var out []string
	for _, r := range rows {
		var cells []string
		for _, v := range r {
			if f, ok := v.(float64); ok {
				v = math.Round(f*1e6) / 1e6
			}
			cells = append(cells, fmt.Sprint(v))
		}
		out = append(out, strings.Join(cells, " "))
	}
	return strings.Join(out, "; ")
}

// TestExactAnswers checks every supported query shape against answers
// computed by hand, at ε = 1e20 (noise far below the rounding of 1e-6).
// people.csv: ages 20, 30, NULL, 150 (clamped to 100), 40; scores 1.5,
// NULL, 2.5, −10 (clamped to 0), 3.25; cities A, B, A, A, C (C is not in
// the public list [A, B, D]; D has no rows).
func TestExactAnswers(t *testing.T) {
	svc, _, _ := newTestService(t, "testdata/catalog.yaml")
	tests := []struct {
		name, sql, want string
	}{
		{"count star", "SELECT COUNT(*) FROM people", "5"},
		{"count one", "SELECT COUNT(1) FROM people", "5"},
		{"count column skips NULL", "SELECT COUNT(age) FROM people", "4"},
		{"sum int clamped", "SELECT SUM(age) FROM people", "190"},
		{"avg int clamped", "SELECT AVG(age) FROM people", "47.5"},
		{"sum float clamped", "SELECT SUM(score) FROM people", "7.25"},
		{"avg float", "SELECT AVG(score) FROM people", "1.8125"},
		{"several aggregates", "SELECT COUNT(*), SUM(age), AVG(score) FROM people", "5 190 1.8125"},
		{"group with empty group", "SELECT city, COUNT(*), SUM(age) FROM people GROUP BY city", "A 3 120; B 1 30; D 0 0"},
		{"avg of empty group is midpoint", "SELECT city, AVG(age) FROM people GROUP BY city", "A 60; B 30; D 59"},
		{"group by bool", "SELECT flag, COUNT(*) FROM people GROUP BY flag", "true 2; false 2"},
		{"two group columns", "SELECT city, flag, COUNT(*) FROM people GROUP BY city, flag",
			"A true 2; A false 0; B true 0; B false 1; D true 0; D false 0"},
		{"group by position", "SELECT city, COUNT(*) FROM people GROUP BY 1", "A 3; B 1; D 0"},
		{"key not selected", "SELECT COUNT(*) FROM people GROUP BY city", "3; 1; 0"},
		{"where bool column", "SELECT COUNT(*) FROM people WHERE flag", "2"},
		{"where is null", "SELECT COUNT(*) FROM people WHERE flag IS NULL", "1"},
		{"where is not null", "SELECT COUNT(*) FROM people WHERE age IS NOT NULL", "4"},
		{"where in and", "SELECT COUNT(*) FROM people WHERE city IN ('A', 'B') AND age >= 30", "2"},
		{"where not in", "SELECT COUNT(*) FROM people WHERE city NOT IN ('A')", "2"},
		{"where between", "SELECT COUNT(*) FROM people WHERE age BETWEEN 20 AND 30", "2"},
		{"where not between", "SELECT COUNT(*) FROM people WHERE age NOT BETWEEN 20 AND 30", "2"},
		{"where not", "SELECT COUNT(*) FROM people WHERE NOT (city = 'A')", "2"},
		{"where or", "SELECT COUNT(*) FROM people WHERE score > 2 OR age < 25", "3"},
		{"where literal on the left", "SELECT COUNT(*) FROM people WHERE 25 < age", "3"},
		{"where compares raw values, not clamped", "SELECT COUNT(*) FROM people WHERE age > 100", "1"},
		{"where float literal on int", "SELECT COUNT(*) FROM people WHERE age < 30.5", "2"},
		{"where negative literal", "SELECT COUNT(*) FROM people WHERE score > -1", "3"},
		{"where cast literal", "SELECT COUNT(*) FROM people WHERE age = '20'::int", "1"},
		{"where on the grouped column", "SELECT city, COUNT(*) FROM people WHERE city <> 'A' GROUP BY city", "A 0; B 1; D 0"},
		{"qualified names", "SELECT p.city, COUNT(p.age) FROM people AS p GROUP BY p.city", "A 2; B 1; D 0"},
		{"table-qualified names", "SELECT COUNT(people.age) FROM people", "4"},
		{"quoted identifiers", `SELECT "city", COUNT(*) FROM "people" GROUP BY "city"`, "A 3; B 1; D 0"},
		{"string with quote", "SELECT COUNT(*) FROM people WHERE city = 'it''s'", "0"},
		{"having on alias", "SELECT city, COUNT(*) AS n FROM people GROUP BY city HAVING n > 0", "A 3; B 1"},
		{"having on aggregate", "SELECT city, COUNT(*) FROM people GROUP BY city HAVING COUNT(*) >= 1 AND city <> 'B'", "A 3"},
		{"order by aggregate desc", "SELECT city, SUM(age) FROM people GROUP BY city ORDER BY SUM(age) DESC", "A 120; B 30; D 0"},
		{"order by key", "SELECT city, COUNT(*) FROM people GROUP BY city ORDER BY city DESC", "D 0; B 1; A 3"},
		{"order by position limit", "SELECT city, COUNT(*) FROM people GROUP BY city ORDER BY 2 LIMIT 2", "D 0; B 1"},
		{"offset", "SELECT city, COUNT(*) FROM people GROUP BY city ORDER BY city LIMIT 1 OFFSET 1", "B 1"},
		{"empty table count", "SELECT COUNT(*), COUNT(age), SUM(age), SUM(score) FROM empty", "0 0 0 0"},
		{"empty table avg is midpoint", "SELECT AVG(age), AVG(score) FROM empty", "59 5"},
		{"empty table groups", "SELECT city, COUNT(*) FROM empty GROUP BY city", "A 0; B 0; D 0"},
		{"NaN is missing, infinities clamp", "SELECT COUNT(*), COUNT(score), SUM(score), AVG(score) FROM special", "6 3 15 5"},
		{"NaN in groups", "SELECT city, COUNT(score), SUM(score) FROM special GROUP BY city", "A 1 10; B 2 5"},
		{"NaN never satisfies a comparison", "SELECT COUNT(*) FROM special WHERE score > 100", "1"},
		{"where matches nothing", "SELECT COUNT(*), AVG(age) FROM people WHERE age > 1000", "0 59"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := svc.Answer(context.Background(), tt.sql, exactOpts())
			if err != nil {
				t.Fatal(err)
			}
			if got := formatRows(res.Rows); got != tt.want {
				t.Errorf("%s\n got %s\nwant %s", tt.sql, got, tt.want)
			}
			if len(res.CI) != len(res.Rows) {
				t.Fatalf("%d interval rows for %d rows", len(res.CI), len(res.Rows))
			}
			for i, row := range res.CI {
				for j, iv := range row {
					if isKey := svcOutputIsKey(res, j); (iv == nil) != isKey {
						t.Errorf("row %d column %s: interval %v", i, res.Columns[j], iv)
					}
				}
			}
		})
	}
}

func svcOutputIsKey(res *Result, j int) bool {
	for _, s := range res.Split {
		if s.Column == res.Columns[j] {
			return false
		}
	}
	return true
}

// TestMalformedRowsNeverFail: a malformed value becomes NULL and a row that
// does not parse is skipped, so no data can make a query fail or reveal
// itself in an error.
func TestMalformedRowsNeverFail(t *testing.T) {
	svc, _, led := newTestService(t, "testdata/catalog.yaml")
	res, err := svc.Answer(context.Background(), "SELECT COUNT(*), COUNT(age) FROM malformed", exactOpts())
	if err != nil {
		t.Fatalf("malformed data made the query fail: %v", err)
	}
	// Row 2 has age "thirty" (NULL); the rows with extra fields or an
	// unterminated quote are skipped by the reader.
	n := res.Rows[0][0].(int64)
	if n < 1 || n > 4 {
		t.Errorf("COUNT(*) = %d, want between 1 and 4", n)
	}
	if led.count() != 1 {
		t.Errorf("charges = %d, want 1", led.count())
	}
}

// TestBoundingLimitsOnePerson adds a person with 1,000 rows to a table and
// checks, at ε = 1e20, that the exact answers move by at most the declared
// contribution bounds: per group Linf rows and Linf·max|v|; across groups
// L0 times that.
func TestBoundingLimitsOnePerson(t *testing.T) {
	dir := t.TempDir()
	var base strings.Builder
	base.WriteString("pid,g,v\n")
	// Compliant people: one row in one group each.
	for i := 0; i < 60; i++ {
		fmt.Fprintf(&base, "%d,%d,%d\n", i, i%3+1, i%7)
	}
	heavy := base.String()
	var extra strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&extra, "999,%d,1000\n", i%3+1)
	}
	heavy += extra.String()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("light.csv", base.String())
	write("heavy.csv", heavy)
	const L0, Linf, V = 2, 2, 10
	cat := fmt.Sprintf(`budget: {epsilon: 1e30}
tables:
  light:
    source: light.csv
    privacy_unit: pid
    max_groups_per_unit: %[1]d
    max_rows_per_group: %[2]d
    columns: &cols
      pid: {type: int}
      g:   {type: int, values: [1, 2, 3]}
      v:   {type: int, lower: 0, upper: %[3]d}
  heavy:
    source: heavy.csv
    privacy_unit: pid
    max_groups_per_unit: %[1]d
    max_rows_per_group: %[2]d
    columns: *cols
`, L0, Linf, V)
	write("catalog.yaml", cat)
	svc, _, _ := newTestService(t, filepath.Join(dir, "catalog.yaml"))
	answer := func(sql string) [][]any {
		res, err := svc.Answer(context.Background(), sql, exactOpts())
		if err != nil {
			t.Fatal(err)
		}
		return res.Rows
	}
	tests := []struct {
		name           string
		sql            string
		perGroup, l1   float64
		col            int
		grouped        bool
		wantSomeChange bool
	}{
		{"count grouped", "SELECT g, COUNT(*) FROM %s GROUP BY g", Linf, L0 * Linf, 1, true, true},
		{"sum grouped", "SELECT g, SUM(v) FROM %s GROUP BY g", Linf * V, L0 * Linf * V, 1, true, true},
		{"count total", "SELECT COUNT(*) FROM %s", Linf, Linf, 0, false, true},
		{"sum total", "SELECT SUM(v) FROM %s", Linf * V, Linf * V, 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for run := 0; run < 5; run++ { // the kept rows are chosen at random
				a := answer(fmt.Sprintf(tt.sql, "light"))
				b := answer(fmt.Sprintf(tt.sql, "heavy"))
				var l1 float64
				for i := range a {
					x, _ := ir.Number(a[i][tt.col])
					y, _ := ir.Number(b[i][tt.col])
					d := math.Abs(x - y)
					if d > tt.perGroup+1e-6 {
						t.Errorf("group %d moved by %g, more than the bound %g", i, d, tt.perGroup)
					}
					l1 += d
				}
				if l1 > tt.l1+1e-6 {
					t.Errorf("groups moved by %g in total, more than L0·bound %g", l1, tt.l1)
				}
				if tt.wantSomeChange && l1 == 0 {
					t.Errorf("the heavy person changed nothing: bounding dropped all of them")
				}
			}
		})
	}
}
