package synth

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query"
	"github.com/dpstat/dpstat/random"
	"github.com/dpstat/dpstat/schema"
)

// TestCalendarBins checks that date and timestamp columns with declared
// bounds are binned by the finest calendar unit that fits the bins asked
// for, with labels a person can read.
func TestCalendarBins(t *testing.T) {
	tests := []struct {
		name        string
		decl        string
		bins        int
		unit        string
		n           int
		first, last string
	}{
		{"ten days by day", `{type: date, lower: "2024-03-01", upper: "2024-03-10"}`, 16, "day", 10, "2024-03-01", "2024-03-10"},
		{"a quarter by week", `{type: date, lower: "2024-01-01", upper: "2024-03-31"}`, 16, "week", 13, "[2024-01-01, 2024-01-07]", "[2024-03-25, 2024-03-31]"},
		{"a year by month", `{type: date, lower: "2024-01-01", upper: "2024-12-31"}`, 16, "month", 12, "[2024-01-01, 2024-01-31]", "[2024-12-01, 2024-12-31]"},
		{"a month cut mid-month", `{type: date, lower: "2024-01-15", upper: "2024-12-31"}`, 16, "month", 12, "[2024-01-15, 2024-01-31]", "[2024-12-01, 2024-12-31]"},
		{"a decade by year", `{type: date, lower: "2015-06-01", upper: "2024-12-31"}`, 16, "year", 10, "[2015-06-01, 2015-12-31]", "[2024-01-01, 2024-12-31]"},
		{"a century in equal bins", `{type: date, lower: "1900-01-01", upper: "1999-12-31"}`, 16, "", 16, "[1900-01-01, 1906-04-01]", "[1993-10-01, 1999-12-31]"},
		{"timestamps by month", `{type: timestamp, lower: "2024-01-01 12:00:00", upper: "2024-12-31 23:59:59"}`, 16, "month", 12, "[2024-01-01 12:00:00, 2024-01-31 23:59:59.999999]", "[2024-12-01 00:00:00, 2024-12-31 23:59:59]"},
		{"one day", `{type: date, lower: "2024-02-29", upper: "2024-02-29"}`, 16, "day", 1, "2024-02-29", "2024-02-29"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPlan(table(t, "    columns:\n      d: "+tc.decl+"\n"), Options{Epsilon: 1, Delta: 1e-6, Bins: tc.bins})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Attrs) != 1 {
				t.Fatalf("columns %v, left out %v", p.Attrs, p.LeftOut)
			}
			a := p.Attrs[0]
			if a.Kind != Binned || a.Calendar != tc.unit || len(a.Edges) != tc.n {
				t.Fatalf("kind %s, unit %q, %d bins; want bins by %q, %d", a.Kind, a.Calendar, len(a.Edges), tc.unit, tc.n)
			}
			if got := a.Label(0); got != tc.first {
				t.Errorf("first bin %q, want %q", got, tc.first)
			}
			if got := a.Label(len(a.Edges) - 1); got != tc.last {
				t.Errorf("last bin %q, want %q", got, tc.last)
			}
			// Every sampled value is a date (or timestamp) within its bin.
			src := random.NewInsecureSeeded(7)
			for i := range a.Edges {
				lo, hi := a.binRange(i)
				for range 20 {
					v, ok := a.Value(i, src).(string)
					if !ok {
						t.Fatalf("bin %d: sampled %T, want a date", i, a.Value(i, src))
					}
					var n int64
					if a.Type == schema.Date {
						n, err = schema.ParseDate(v)
					} else {
						n, err = schema.ParseTimestamp(v)
					}
					if err != nil || float64(n) < lo || float64(n) > hi {
						t.Fatalf("bin %d %s: sampled %q (%v)", i, a.Label(i), v, err)
					}
				}
			}
		})
	}
}

// TestSynthesizeDates runs a release over a table with a date column
// through DuckDB: the column is kept, binned by month, and sampled back as
// dates within the declared bounds.
func TestSynthesizeDates(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("pid,day,g\n")
	for i := range 400 {
		b.WriteString(strings.Join([]string{strconv.Itoa(i), "2024-" + []string{"01", "03", "07", "12"}[i%4] + "-1" + strconv.Itoa(i%9), []string{"a", "b"}[i%2]}, ",") + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "t.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Parse([]byte(`budget: {epsilon: 10, delta: 1e-5}
tables:
  t:
    source: t.csv
    privacy_unit: pid
    max_groups_per_unit: 1
    max_rows_per_group: 1
    columns:
      pid: {type: int}
      day: {type: date, lower: "2024-01-01", upper: "2024-12-31"}
      g: {type: text, values: [a, b]}
`), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	eng, err := engine.Open(ctx, engine.Spec{Kind: "duckdb", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if err := query.Register(ctx, cat, eng); err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(cat.Table("t"), Options{Epsilon: 5, Delta: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.LeftOut) != 1 || len(p.Attrs) != 2 || p.Attrs[0].Calendar != "month" {
		t.Fatalf("columns %v, left out %v", p.Attrs, p.LeftOut)
	}
	if d := strings.Join(p.Describe(), "\n"); !strings.Contains(d, "12 month bins over [2024-01-01, 2024-12-31]") {
		t.Errorf("the plan does not say how dates are binned:\n%s", d)
	}
	data, err := p.Read(ctx, eng)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Synthesize(data, random.NewInsecureSeeded(1))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := res.WriteCSV(&out, random.NewInsecureSeeded(2)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 2 || lines[0] != "day,g" {
		t.Fatalf("output %q", lines[:min(3, len(lines))])
	}
	months := map[string]int{}
	for _, l := range lines[1:] {
		day, _, _ := strings.Cut(l, ",")
		n, err := schema.ParseDate(day)
		if err != nil || n < schema.DaysOf(2024, 1, 1) || n > schema.DaysOf(2024, 12, 31) {
			t.Fatalf("sampled day %q (%v)", day, err)
		}
		months[day[:7]]++
	}
	// The data fall in four months: most synthetic rows do too.
	in := months["2024-01"] + months["2024-03"] + months["2024-07"] + months["2024-12"]
	if in < (len(lines)-1)*3/4 {
		t.Errorf("months %v: want most rows in the data's four months", months)
	}
}
