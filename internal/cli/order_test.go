package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
)

// TestQueryCLIOrderBy checks that dpstat query prints rows in the order the
// query's ORDER BY asks, in JSON and in the table: a top-k query (whose keys
// report-noisy-max chooses in its own order) sorted by its released counts
// at an ε small enough for the two orders to differ, an ascending order, an
// order by key, and keys alone at ε = 1e20 in the true order. Sortedness
// holds for every answer, so the test has no false failures.
func TestQueryCLIOrderBy(t *testing.T) {
	led := filepath.Join(t.TempDir(), "l.db")
	out, errOut, code := runQueryCLI("budget", "grant", "--ledger", led, "--table", "adult", "--total", "--epsilon", "1e21", "--delta", "1e-5")
	if code != 0 {
		t.Fatalf("grant: %s %s", out, errOut)
	}
	tests := []struct {
		sql   string
		col   int
		desc  bool
		eps   string
		exact []string
	}{
		{"SELECT race, COUNT(*) AS n FROM adult GROUP BY race ORDER BY n DESC LIMIT 4", 1, true, "0.02", nil},
		{"SELECT race, COUNT(*) FROM adult GROUP BY race ORDER BY COUNT(*) DESC LIMIT 4", 1, true, "0.021", nil},
		{"SELECT race, COUNT(*) AS n FROM adult GROUP BY race ORDER BY n LIMIT 4", 1, false, "0.02", nil},
		{"SELECT race, COUNT(*) AS n FROM adult GROUP BY race ORDER BY race DESC", 0, true, "0.02", nil},
		{"SELECT race FROM adult GROUP BY race ORDER BY COUNT(*) DESC LIMIT 3", -1, true, "1e20", []string{"White", "Black", "Asian-Pac-Islander"}},
	}
	for i, tc := range tests {
		for run := 0; run < 3; run++ {
			// A new analyst each time: no stored repeat, a fresh budget.
			name := fmt.Sprintf("a%d_%d", i, run)
			if out, errOut, code := runQueryCLI("budget", "grant", "--ledger", led, "--table", "adult", "--analyst", name, "--epsilon", "1e21"); code != 0 {
				t.Fatalf("grant: %s %s", out, errOut)
			}
			args := []string{"query", "--catalog", exampleCatalog, "--ledger", led, "--analyst", name, "--epsilon", tc.eps}
			out, errOut, code := runQueryCLI(append(args, "--format", "json", tc.sql)...)
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", tc.sql, code, errOut)
			}
			var r struct{ Rows [][]any }
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("%s: %v\n%s", tc.sql, err, out)
			}
			sortedAsAsked(t, tc.sql, r.Rows, tc.col, tc.desc, tc.exact)
			if run > 0 {
				continue
			}
			// The table prints the same order: its rows' first cells.
			table, errOut, code := runQueryCLI(append(args[:len(args)-1:len(args)-1], "1e20", tc.sql)...)
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", tc.sql, code, errOut)
			}
			lines := strings.Split(table, "\n")
			var keys [][]any
			for _, l := range lines[1:] {
				f := strings.Fields(l)
				if len(f) == 0 || strings.HasPrefix(l, "±") || strings.HasPrefix(l, "note") {
					break
				}
				row := []any{f[0]}
				if len(f) > 1 {
					row = append(row, f[1])
				}
				keys = append(keys, row)
			}
			if tc.col == 0 || tc.exact != nil {
				sortedAsAsked(t, tc.sql+" (table)", keys, tc.col, tc.desc, tc.exact)
			}
		}
	}
}

// sortedAsAsked fails unless rows are sorted on column col (desc or not),
// with the first cells exact when given.
func sortedAsAsked(t *testing.T, sql string, rows [][]any, col int, desc bool, exact []string) {
	t.Helper()
	if len(rows) == 0 {
		t.Fatalf("%s: no rows", sql)
	}
	for i, r := range rows {
		if exact != nil && (i >= len(exact) || r[0] != exact[i]) {
			t.Fatalf("%s: rows %v, want keys %v", sql, rows, exact)
		}
	}
	if col < 0 {
		return
	}
	for i := 1; i < len(rows); i++ {
		c := ir.CompareValues(rows[i-1][col], rows[i][col])
		if (desc && c < 0) || (!desc && c > 0) {
			t.Fatalf("%s: rows %v are not in the order asked", sql, rows)
		}
	}
}

// TestQueryCLINumbersForPeople checks that the figures a person reads have
// no float artefacts: an ε split in three (0.4/3), a top-k round's ε
// (rounded down from 1/3), and the cost and budget after them.
func TestQueryCLINumbersForPeople(t *testing.T) {
	led := filepath.Join(t.TempDir(), "l.db")
	tests := []struct {
		sql, eps string
		want     []string
	}{
		{"SELECT COUNT(*), SUM(age), AVG(hours_per_week) FROM adult", "0.4", []string{"count ε=0.1333,", "cost ε=0.4 δ=0"}},
		{"SELECT race FROM adult GROUP BY race ORDER BY COUNT(*) DESC LIMIT 3", "1", []string{"ε=0.3333 each (1 in all)", "left ε=8.6 δ=1e-05"}},
		{"EXPLAIN SELECT COUNT(*), SUM(age), AVG(hours_per_week) FROM adult", "0.4", []string{"ε=0.1333", "scale="}},
	}
	for _, tc := range tests {
		out, errOut, code := runQueryCLI("query", "--catalog", exampleCatalog, "--ledger", led, "--analyst", "ana", "--epsilon", tc.eps, tc.sql)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.sql, code, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", tc.sql, w, out)
			}
		}
		if artefact.MatchString(out) {
			t.Errorf("%s: a float artefact (%s):\n%s", tc.sql, artefact.FindString(out), out)
		}
	}
}

// artefact matches a number with a run of six 0s, 3s, 6s or 9s after more
// digits: float drift or a figure printed to more digits than it means.
var artefact = regexp.MustCompile(`\d\.\d*(0{6}|3{6}|6{6}|9{6})\d`)

// TestQueryTableIntervals checks that the table shows an interval that is
// not symmetric around its value as [low, high], so that no ± claims values
// outside it (a median of 47 in [0, 100] is not 47 ± 53), and a symmetric
// one as ±.
func TestQueryTableIntervals(t *testing.T) {
	tests := []struct {
		name   string
		v      any
		iv     dpplan.Interval
		header string
		cell   string
	}{
		{"a median in its declared range", 47.0, dpplan.Interval{Low: 0, High: 100}, "m interval", "47 [0, 100]"},
		{"an average clipped to its range", 17.4, dpplan.Interval{Low: 17, High: 19.1}, "m interval", "[17.0, 19.1]"},
		{"a variance clipped at 0", 0.0, dpplan.Interval{Low: 0, High: 52}, "m interval", "0 [0, 52]"},
		{"a count", int64(2662), dpplan.Interval{Low: 2656, High: 2668}, "m ±", "2662 6.0"},
		{"an average a little lopsided", 38.8, dpplan.Interval{Low: 38.7, High: 38.9005}, "m ±", "38.80 0.10"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &answer.Response{Columns: []string{"m"}, Rows: [][]any{{tc.v}}, CI: [][]*[2]float64{{{tc.iv.Low, tc.iv.High}}}, Confidence: 0.95}
			var b strings.Builder
			if err := writeQueryTable(&b, r); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(b.String(), "\n")
			if got := strings.Join(strings.Fields(lines[0]), " "); got != tc.header || !strings.Contains(strings.Join(strings.Fields(lines[1]), " "), tc.cell) {
				t.Errorf("table:\n%s\nwant header %q and a row with %q", b.String(), tc.header, tc.cell)
			}
		})
	}
}
