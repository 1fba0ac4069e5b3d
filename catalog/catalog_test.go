package catalog

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeSource(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "d.csv"), []byte("pid,age,sex\n1,30,F\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

const good = `budget: {epsilon: 10, delta: 1e-6}
tables:
  people:
    source: d.csv
    privacy_unit: pid
    max_groups_per_unit: 3
    max_rows_per_group: 2
    columns:
      pid:   {type: int}
      age:   {type: int, lower: 17, upper: 90}
      sex:   {type: text, values: [F, M]}
      score: {type: float, lower: -1.5, upper: 2.5, nullable: true}
      ok:    {type: bool, values: [true, false]}
`

func TestParseGood(t *testing.T) {
	dir := writeSource(t)
	c, err := Parse([]byte(good), dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.Budget != (Budget{10, 1e-6}) {
		t.Errorf("budget = %+v", c.Budget)
	}
	tb := c.Table("PEOPLE")
	if tb == nil || tb.Source != filepath.Join(dir, "d.csv") || tb.Format != "csv" {
		t.Fatalf("table = %+v", tb)
	}
	if tb.PrivacyUnit != "pid" || tb.MaxGroupsPerUnit != 3 || tb.MaxRowsPerGroup != 2 {
		t.Errorf("bounds = %+v", tb)
	}
	var names []string
	for _, col := range tb.Columns {
		names = append(names, col.Name)
	}
	if strings.Join(names, ",") != "pid,age,sex,score,ok" {
		t.Errorf("columns in order %v, want the declaration order", names)
	}
	if a := tb.Column("age"); !a.Bounded() || *a.Lower != 17 || *a.Upper != 90 {
		t.Errorf("age = %+v", a)
	}
	if s := tb.Column("sex"); len(s.Values) != 2 || s.Values[0] != "F" {
		t.Errorf("sex values = %v", s.Values)
	}
	if o := tb.Column("ok"); o.Values[0] != true {
		t.Errorf("ok values = %v", o.Values)
	}
	if !strings.Contains(c.Summary(), "privacy unit pid") {
		t.Errorf("summary = %s", c.Summary())
	}
}

func TestParseNoPrivacyUnit(t *testing.T) {
	dir := writeSource(t)
	c, err := Parse([]byte("budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      age: {type: int}\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	if tb := c.Tables[0]; tb.HasPrivacyUnit() || tb.MaxGroupsPerUnit != 1 || tb.MaxRowsPerGroup != 1 {
		t.Errorf("table = %+v", tb)
	}
}

// TestParseNaNFree: nan_free is the owner's declaration that a table's
// float columns hold no NaN; it is false unless declared.
func TestParseNaNFree(t *testing.T) {
	dir := writeSource(t)
	for _, tt := range []struct {
		decl string
		want bool
	}{{"", false}, {"    nan_free: true\n", true}, {"    nan_free: false\n", false}} {
		c, err := Parse([]byte("budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n"+tt.decl+"    columns:\n      x: {type: float}\n"), dir)
		if err != nil {
			t.Fatalf("%q: %v", tt.decl, err)
		}
		if got := c.Tables[0].NaNFree; got != tt.want {
			t.Errorf("%q: NaNFree = %v, want %v", tt.decl, got, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown field", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    colums: {}\n", `line 5: table t: unknown key "colums"; accepted: source, privacy_unit, max_groups_per_unit, max_rows_per_group, group_size, columns, id_space, public, nan_free, reuse_releases, clustered_by_unit, budget, total_budget, epoch (did you mean columns?)`},
		{"unknown column field", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: {type: int, min: 3}\n", `line 6: table t: column a: unknown key "min"; accepted: type, lower, upper, values, nullable, from`},
		{"every unknown key and every other problem", "budget: {epsilon: 1, delt: 0}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: {type: int, uper: 3}\n      b: {type: txt}\n", `line 1: budget: unknown key "delt"; accepted: epsilon, delta (did you mean delta?)
line 6: table t: column a: unknown key "uper"; accepted: type, lower, upper, values, nullable, from (did you mean upper?)
table t: column b: type "txt": unknown; want int, float, text, bool, date or timestamp`},
		{"nan_free not a boolean", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    nan_free: maybe\n    columns:\n      a: {type: float}\n", "table t: nan_free = maybe: want true (the owner declares that the float columns hold no NaN) or false"},
		{"nan_free a string", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    nan_free: \"true\"\n    columns:\n      a: {type: float}\n", "table t: nan_free = true: want true"},
		{"nan_free a list", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    nan_free: [true]\n    columns:\n      a: {type: float}\n", "table t: nan_free = a list: want true"},
		{"from must be a header", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: {type: int, from: \"x\\0y\"}\n", "from = "},
		{"lower above upper", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: {type: int, lower: 5, upper: 1}\n", "column a: lower = 5 is above upper = 1"},
		{"NaN bound", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: {type: float, lower: .nan, upper: 1}\n", "lower = NaN: want a finite number"},
		{"infinite bound", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: {type: float, lower: 0, upper: .inf}\n", "upper = +Inf: want a finite number"},
		{"one bound", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: {type: float, lower: 0}\n", "only one of lower and upper"},
		{"fractional int bound", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: {type: int, lower: 0.5, upper: 3}\n", "an int column wants an integer bound"},
		{"huge bound", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: {type: float, lower: 0, upper: 1e300}\n", "at most 2^53"},
		{"unknown type", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: {type: integer}\n", `type "integer": unknown; want int, float, text, bool, date or timestamp`},
		{"missing type", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: {lower: 1, upper: 2}\n", "type: missing"},
		{"bounds on text", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: {type: text, lower: 1, upper: 2}\n", "bounds apply only to int, float, date and timestamp columns"},
		{"missing source", "budget: {epsilon: 1}\ntables:\n  t:\n    columns:\n      a: {type: int}\n", "source: missing"},
		{"source not found", "budget: {epsilon: 1}\ntables:\n  t:\n    source: nope.csv\n    columns:\n      a: {type: int}\n", `source "nope.csv": file not found`},
		{"unknown format", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.xlsx\n    columns:\n      a: {type: int}\n", "unknown format"},
		{"privacy unit not a column", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    privacy_unit: who\n    max_groups_per_unit: 1\n    max_rows_per_group: 1\n    columns:\n      a: {type: int}\n", `privacy_unit "who" is not a declared column`},
		{"zero L0", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    privacy_unit: a\n    max_groups_per_unit: 0\n    max_rows_per_group: 1\n    columns:\n      a: {type: int}\n", "max_groups_per_unit = 0: want an integer >= 1"},
		{"negative Linf", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    privacy_unit: a\n    max_groups_per_unit: 1\n    max_rows_per_group: -2\n    columns:\n      a: {type: int}\n", "max_rows_per_group = -2"},
		{"missing L0", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    privacy_unit: a\n    max_rows_per_group: 1\n    columns:\n      a: {type: int}\n", "max_groups_per_unit: missing"},
		{"bounds without unit", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    max_rows_per_group: 2\n    columns:\n      a: {type: int}\n", "need a privacy_unit"},
		{"wrong value type int", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: {type: int, values: [1, two]}\n", `values[1] = "two": want an integer`},
		{"wrong value type bool", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: {type: bool, values: [yes please]}\n", "want true or false"},
		{"duplicate value", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: {type: text, values: [x, x]}\n", "listed twice"},
		{"empty values", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: {type: text, values: []}\n", "values: empty list"},
		{"values not a list", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: {type: text, values: x}\n", "values: want a list"},
		{"missing budget", "tables:\n  t:\n    source: d.csv\n    columns:\n      a: {type: int}\n", "budget: missing"},
		{"zero budget", "budget: {epsilon: 0}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: {type: int}\n", "budget: epsilon = 0"},
		{"delta one", "budget: {epsilon: 1, delta: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: {type: int}\n", "budget: delta = 1"},
		{"no tables", "budget: {epsilon: 1}\n", "tables: none declared"},
		{"no columns", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n", "columns: none declared"},
		{"bad table name", "budget: {epsilon: 1}\ntables:\n  a-b:\n    source: d.csv\n    columns:\n      a: {type: int}\n", `name "a-b"`},
		{"not yaml", "budget: [", "not a valid catalog"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeSource(t)
			_, err := Parse([]byte(tt.yaml), dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	dir := writeSource(t)
	_, err := Parse([]byte("budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: {type: int, lower: 5, upper: 1}\n      b: {type: blob}\n"), dir)
	if err == nil || !strings.Contains(err.Error(), "column a") || !strings.Contains(err.Error(), "column b") {
		t.Errorf("error = %v, want both problems", err)
	}
}

func TestLoadExamples(t *testing.T) {
	c, err := Load("../examples/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Table("adult") == nil || c.Table("visits") == nil || c.Table("visits").MaxGroupsPerUnit != 3 {
		t.Errorf("examples catalog = %+v", c)
	}
}

// TestParseColumnDefaults checks what a column declares without saying: a
// bool column's public values are {true, false}; from: names the header.
func TestParseColumnDefaults(t *testing.T) {
	dir := writeSource(t)
	c, err := Parse([]byte("budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      ok: {type: bool}\n      hours: {type: int, from: \"Hours per week\"}\n      flag: {type: bool, values: [true]}\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	cols := c.Tables[0].Columns
	tests := []struct {
		col        *Column
		values     string
		from, name string
	}{
		{cols[0], "[true false]", "", "ok"},
		{cols[1], "[]", "Hours per week", "hours"},
		{cols[2], "[true]", "", "flag"},
	}
	for _, tc := range tests {
		if got := fmt.Sprint(tc.col.Values); tc.col.Name != tc.name || got != tc.values || tc.col.From != tc.from {
			t.Errorf("column %s: values %s from %q, want %s from %q", tc.col.Name, got, tc.col.From, tc.values, tc.from)
		}
	}
}

// TestReuseReleases: reuse_releases is own (the default, stored as "") or
// shared; anything else is refused naming both.
func TestReuseReleases(t *testing.T) {
	for _, tc := range []struct{ value, want, err string }{
		{"", "", ""},
		{"reuse_releases: own", "", ""},
		{"reuse_releases: shared", ReuseShared, ""},
		{"reuse_releases: everyone", "", `reuse_releases = "everyone": want own`},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "t.csv"), []byte("x\n1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		yml := "budget: {epsilon: 1}\ntables:\n  t:\n    source: t.csv\n    " + tc.value + "\n    columns:\n      x: {type: int}\n"
		if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(yml), 0o644); err != nil {
			t.Fatal(err)
		}
		cat, err := Load(filepath.Join(dir, "c.yaml"))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.value, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.value, err)
		}
		if got := cat.Table("t").ReuseReleases; got != tc.want {
			t.Errorf("%q: ReuseReleases = %q, want %q", tc.value, got, tc.want)
		}
	}
}

// TestParseClusteredByUnit: clustered_by_unit is the owner's declaration
// that the rows are stored clustered by the privacy unit; it needs a
// privacy unit declared as an int with both bounds (the ranges are cut
// from them), and every refusal names the value and what is accepted.
func TestParseClusteredByUnit(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "d.csv"), []byte("pid,g\n1,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	table := func(decl, pid string) string {
		return "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    privacy_unit: pid\n    max_groups_per_unit: 1\n    max_rows_per_group: 1\n" +
			decl + "    columns:\n      pid: " + pid + "\n      g: {type: int}\n"
	}
	tests := []struct {
		name, text string
		want       bool
		err        string
	}{
		{"absent", table("", "{type: int}"), false, ""},
		{"true", table("    clustered_by_unit: true\n", "{type: int, lower: 0, upper: 999}"), true, ""},
		{"false", table("    clustered_by_unit: false\n", "{type: int}"), false, ""},
		{"not a boolean", table("    clustered_by_unit: yes please\n", "{type: int, lower: 0, upper: 9}"), false, "clustered_by_unit = yes please: want true"},
		{"a list", table("    clustered_by_unit: [true]\n", "{type: int, lower: 0, upper: 9}"), false, "clustered_by_unit = a list: want true"},
		{"unit without bounds", table("    clustered_by_unit: true\n", "{type: int}"), false, "needs the privacy_unit column pid declared as {type: int, lower: L, upper: U} (got type int without both bounds)"},
		{"text unit", table("    clustered_by_unit: true\n", "{type: text}"), false, "(got type text without both bounds)"},
		{"no privacy unit", "budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    clustered_by_unit: true\n    columns:\n      pid: {type: int, lower: 0, upper: 9}\n", false, "clustered_by_unit: true needs a privacy_unit column"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "catalog.yaml")
			if err := os.WriteFile(path, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := Load(path)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Tables[0].ClusteredByUnit; got != tt.want {
				t.Errorf("ClusteredByUnit = %v, want %v", got, tt.want)
			}
		})
	}
}
