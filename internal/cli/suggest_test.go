package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/catalog"
)

// writeSuggestCSV writes a small table: 400 people with two rows each in
// one of three common cities (one person, with one row, lives in a rare one), an age
// from 20 to 60 and a float score in [0, 1).
func writeSuggestCSV(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("id,age,city,score\n")
	cities := []string{"Lyon", "Nantes", "Paris"}
	for i := 0; i < 400; i++ {
		city, n := cities[i%3], 2
		if i == 7 {
			city, n = "Rare town", 1
		}
		for r := 0; r < n; r++ {
			fmt.Fprintf(&b, "%d,%d,%s,%g\n", i, 20+i%41, city, float64(i%100)/100)
		}
	}
	path := filepath.Join(dir, "people.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCatalogSuggestEndToEnd runs catalog suggest at a large ε (so the
// estimates are the exact percentiles and counts, up to noise far below
// one) and checks the file: it passes catalog check, its bounds and value
// lists are the expected readable numbers and common values, the cost is
// in the data owner's budget, the file answers a query as written, and a
// second suggestion without a new grant is refused without writing.
func TestCatalogSuggestEndToEnd(t *testing.T) {
	tests := []struct {
		name            string
		unit            []string
		groups, rows    string
		lowAge, highAge [2]float64
	}{
		{"one row per person", nil, "", "", [2]float64{10, 20}, [2]float64{60, 70}},
		{"privacy unit", []string{"--privacy-unit", "id"}, "max_groups_per_unit: 1", "max_rows_per_group: 2", [2]float64{10, 20}, [2]float64{60, 70}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			data := writeSuggestCSV(t, dir)
			out := filepath.Join(dir, "catalog.yaml")
			led := filepath.Join(dir, "ledger.db")
			args := append([]string{"catalog", "suggest", data, "--epsilon", "1000", "--ledger", led, "-o", out}, tt.unit...)
			_, stderr, code := runCLI(args...)
			if code != 0 {
				t.Fatalf("suggest exited %d: %s", code, stderr)
			}
			text, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if _, stderr, code := runCLI("catalog", "check", out); code != 0 {
				t.Fatalf("catalog check exited %d: %s\n%s", code, stderr, text)
			}
			cat, err := catalog.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			tbl := cat.Table("people")
			age := tbl.Column("age")
			if age.Lower == nil || *age.Lower < tt.lowAge[0] || *age.Lower > tt.lowAge[1] || *age.Upper < tt.highAge[0] || *age.Upper > tt.highAge[1] {
				t.Errorf("age bounds %v, %v: want lower in %v and upper in %v\n%s", age.Lower, age.Upper, tt.lowAge, tt.highAge, text)
			}
			score := tbl.Column("score")
			if score.Lower == nil || *score.Lower < 0 || *score.Lower > 0.01 || *score.Upper < 0.98 || *score.Upper > 1 {
				t.Errorf("score bounds %v, %v: want about [0, 1]\n%s", score.Lower, score.Upper, text)
			}
			if got := fmt.Sprint(tbl.Column("city").Values); got != "[Lyon Nantes Paris]" {
				t.Errorf("city values %s, want the three common ones\n%s", got, text)
			}
			for _, want := range []string{tt.groups, tt.rows, "# age: coarse: DP histogram", "# city: values kept by DP key selection", "# Split: ", "Cost: ε=1000 δ=1e-06"} {
				if !strings.Contains(string(text), want) {
					t.Errorf("file lacks %q:\n%s", want, text)
				}
			}
			stdout, stderr, code := runCLI("budget", "show", "--ledger", led)
			if code != 0 || !strings.Contains(stdout, "data-owner") || !strings.Contains(stdout, "people") {
				t.Errorf("budget show (exit %d) does not list the data owner's budget on people:\n%s%s", code, stdout, stderr)
			}
			stdout, stderr, code = runCLI("query", "--catalog", out, "--ledger", filepath.Join(dir, "analysts.db"),
				"SELECT city, COUNT(*), AVG(age) FROM people GROUP BY city")
			if code != 0 || !strings.Contains(stdout, "Paris") {
				t.Errorf("query on the suggested catalog exited %d:\n%s%s", code, stdout, stderr)
			}
			again := filepath.Join(dir, "again.yaml")
			_, stderr, code = runCLI("catalog", "suggest", data, "--epsilon", "1", "--ledger", led, "-o", again)
			if code == 0 || !strings.Contains(stderr, "nothing was read or written") {
				t.Errorf("second suggestion over the spent budget: exit %d, %s", code, stderr)
			}
			if _, err := os.Stat(again); err == nil {
				t.Errorf("a refused suggestion wrote %s", again)
			}
		})
	}
}

// TestCatalogSuggestRefusals checks the arguments refused before anything
// is charged or read, each error naming the value and what is accepted.
func TestCatalogSuggestRefusals(t *testing.T) {
	dir := t.TempDir()
	data := writeSuggestCSV(t, dir)
	led := filepath.Join(dir, "ledger.db")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no epsilon", []string{data}, "--epsilon is required"},
		{"negative epsilon", []string{data, "--epsilon", "-1"}, "--epsilon -1: want a finite number > 0"},
		{"delta one", []string{data, "--epsilon", "1", "--delta", "1"}, "--delta 1: want a number in (0, 1)"},
		{"unknown unit", []string{data, "--epsilon", "1", "--privacy-unit", "pid"}, `--privacy-unit "pid": no such column; want one of id, age, city, score`},
		{"unknown format", []string{filepath.Join(dir, "x.txt"), "--epsilon", "1"}, "data file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"catalog", "suggest", "--ledger", led}, tt.args...)
			_, stderr, code := runCLI(args...)
			if code == 0 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q: want an error containing %q", code, stderr, tt.want)
			}
		})
	}
	if _, err := os.Stat(led); err == nil {
		t.Errorf("a refused suggestion created the ledger")
	}
}
