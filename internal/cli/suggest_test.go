package cli

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/schema"
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

// TestCatalogSuggestDates checks that columns DuckDB reads as DATE and
// TIMESTAMP are suggested as date and timestamp columns, with bounds that
// are DP estimates on the public grid of month starts (at a large ε, near
// the 1st and 99th percentiles), and that the file answers a query over
// them.
func TestCatalogSuggestDates(t *testing.T) {
	for _, unit := range [][]string{nil, {"--privacy-unit", "id"}} {
		dir := t.TempDir()
		var b strings.Builder
		b.WriteString("id,signup,seen,note\n")
		for i := 0; i < 400; i++ {
			// Days from 2023-03-10 on, one a day; times through the day.
			d := time.Date(2023, 3, 10+i, 0, 0, 0, 0, time.UTC)
			fmt.Fprintf(&b, "%d,%s,%s,n\n", i, d.Format("2006-01-02"), d.Add(time.Duration(i%24)*time.Hour).Format("2006-01-02 15:04:05"))
		}
		data := filepath.Join(dir, "events.csv")
		if err := os.WriteFile(data, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "catalog.yaml")
		args := append([]string{"catalog", "suggest", data, "--epsilon", "1000", "--ledger", filepath.Join(dir, "ledger.db"), "-o", out}, unit...)
		if _, stderr, code := runCLI(args...); code != 0 {
			t.Fatalf("suggest exited %d: %s", code, stderr)
		}
		text, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"signup: {type: date, lower: \"2023-", "seen: {type: timestamp, lower: \"2023-",
			"# signup: coarse: DP histogram of the years", "2023 to 2024; fine", "date or timestamp column(s)"} {
			if !strings.Contains(string(text), want) {
				t.Errorf("file lacks %q:\n%s", want, text)
			}
		}
		if _, stderr, code := runCLI("catalog", "check", out); code != 0 {
			t.Fatalf("catalog check exited %d: %s\n%s", code, stderr, text)
		}
		// The values run from 2023-03-10 to 2024-04-12: the lower bound is
		// a month start at most that of the 1st percentile (ranks tie
		// before the first value), the upper the end of a month from the
		// 99th percentile's to the end of the last year with values.
		cat, err := catalog.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, col := range []string{"signup", "seen"} {
			c := cat.Table("events").Column(col)
			day := func(y int, m time.Month, d int) float64 { return float64(schema.DaysOf(y, m, d)) }
			lo, hi := *c.Lower, *c.Upper
			if col == "seen" {
				lo, hi = lo/schema.MicrosPerDay, math.Floor(hi/schema.MicrosPerDay)
			}
			if lo < day(2023, 1, 1) || lo > day(2023, 3, 1) || hi < day(2024, 4, 30) || hi > day(2024, 12, 31) {
				t.Errorf("%s bounds [%v, %v]: want a lower from 2023-01-01 to 2023-03-01, an upper from 2024-04-30 to 2024-12-31\n%s", col, *c.Lower, *c.Upper, text)
			}
		}
		stdout, stderr, code := runCLI("query", "--catalog", out, "--ledger", filepath.Join(dir, "analysts.db"),
			"SELECT date_trunc('year', signup) AS y, COUNT(*) FROM events GROUP BY y")
		if code != 0 || !strings.Contains(stdout, "2024-01-01") {
			t.Errorf("query on the suggested catalog exited %d:\n%s%s", code, stdout, stderr)
		}
	}
}

// TestCatalogSuggestGroupBy checks that --group-by chooses the groupings the
// contribution bounds come from and that the file and the command say
// which one each bound came from; that without it they come from the first
// text column with a value list, and say so; and that a second suggestion
// refused for budget names the grant that allows it, which then works.
// The data: 300 people, each with six rows: in three diagnoses (two rows
// each), in six weeks (one row each), of one sex. At ε = 1000 the DP
// percentiles are exact.
func TestCatalogSuggestGroupBy(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("pid,sex,diagnosis,week\n")
	for p := 0; p < 300; p++ {
		for r := 0; r < 6; r++ {
			fmt.Fprintf(&b, "%d,%s,%s,%d\n", p, []string{"F", "M"}[p%2], []string{"flu", "cold", "asthma", "sprain"}[(p+r/2)%4], r+1)
		}
	}
	data := filepath.Join(dir, "patients.csv")
	if err := os.WriteFile(data, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	led := filepath.Join(dir, "ledger.db")
	tests := []struct {
		name    string
		args    []string
		bounds  string
		from    string
		epsilon string
	}{
		{"first text column", nil, "max_groups_per_unit: 1\n    max_rows_per_group: 6", "groups: the values of sex, the first text column with a value list; name the columns analysts group by with --group-by", "1000"},
		{"one grouping", []string{"--group-by", "diagnosis"}, "max_groups_per_unit: 3\n    max_rows_per_group: 2", "max_groups_per_unit from diagnosis, max_rows_per_group from diagnosis", "1000"},
		{"two groupings", []string{"--group-by", "diagnosis,week"}, "max_groups_per_unit: 6\n    max_rows_per_group: 2", "max_groups_per_unit from week, max_rows_per_group from diagnosis (each grouping's groups and rows: diagnosis 3 and 2; week 6 and 1)", "1000"},
		{"both at once", []string{"--group-by", "diagnosis+week"}, "max_groups_per_unit: 6\n    max_rows_per_group: 1", "max_groups_per_unit from diagnosis+week", "1000"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, fmt.Sprintf("c%d.yaml", i))
			args := append([]string{"catalog", "suggest", data, "--privacy-unit", "pid", "--epsilon", tt.epsilon, "--ledger", led, "--table", fmt.Sprintf("t%d", i), "-o", out}, tt.args...)
			_, stderr, code := runCLI(args...)
			if code != 0 {
				t.Fatalf("suggest exited %d: %s", code, stderr)
			}
			text, _ := os.ReadFile(out)
			if !strings.Contains(string(text), tt.bounds) || !strings.Contains(string(text), tt.from) {
				t.Errorf("file lacks %q or %q:\n%s", tt.bounds, tt.from, text)
			}
			if !strings.Contains(stderr, "contribution bounds max_groups_per_unit: ") || !strings.Contains(stderr, tt.from) {
				t.Errorf("the command does not say where the bounds came from:\n%s", stderr)
			}
			if _, stderr, code := runCLI("catalog", "check", out); code != 0 {
				t.Fatalf("catalog check exited %d: %s\n%s", code, stderr, text)
			}
		})
	}
	// A second suggestion on t0 is refused for budget with the grant that
	// allows it; after that grant it runs.
	again := filepath.Join(dir, "again.yaml")
	args := []string{"catalog", "suggest", data, "--privacy-unit", "pid", "--epsilon", "1", "--ledger", led, "--table", "t0", "-o", again}
	_, stderr, code := runCLI(args...)
	const grant = "dpstat budget grant --table t0 --analyst data-owner --epsilon 1001 --delta 2e-06"
	if code == 0 || !strings.Contains(stderr, grant) {
		t.Fatalf("second suggestion: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI(append(strings.Fields(grant)[1:], "--ledger", led)...); code != 0 {
		t.Fatalf("%s: %s", grant, stderr)
	}
	if _, stderr, code := runCLI(args...); code != 0 {
		t.Fatalf("suggestion after the grant: exit %d, %s", code, stderr)
	}
}
