package suggest

import (
	"math"
	"math/big"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/dpstat/dpstat/engine"
)

// TestNewPlan checks the split and the cost: every measurement's share
// adds up to at most the ε and δ asked for, and bad options are refused
// with the offending value named.
func TestNewPlan(t *testing.T) {
	cols := []engine.Column{{Name: "id", Type: engine.Integer}, {Name: "age", Type: engine.Integer},
		{Name: "city", Type: engine.Text}, {Name: "score", Type: engine.Double}, {Name: "ok", Type: engine.Boolean}}
	tests := []struct {
		name        string
		unit        string
		groupBy     string
		eps, delta  float64
		share       float64
		deltaShare  float64
		wantErr     string
		splitSubstr string
	}{
		{"rows as people", "", "", 1, 1e-6, 0.25, 1e-6, "", "3 numeric column(s)"},
		{"privacy unit", "id", "", 1, 1e-6, 0.25, 1e-6, "", "contribution bounds"},
		{"thirds", "", "", 0.3, 3e-6, 0.075, 3e-6, "", "1 text column(s)"},
		{"zero epsilon", "", "", 0, 1e-6, 0, 0, "--epsilon 0: want a finite number > 0", ""},
		{"infinite epsilon", "", "", math.Inf(1), 1e-6, 0, 0, "--epsilon +Inf: want a finite number > 0", ""},
		{"NaN delta", "", "", 1, math.NaN(), 0, 0, "--delta NaN: want a number in (0, 1)", ""},
		{"unknown unit", "pid", "", 1, 1e-6, 0, 0, `--privacy-unit "pid": no such column; want one of id, age, city, score, ok`, ""},
		// Each grouping takes a share of its own.
		{"two groupings", "id", "city,age+city", 1, 1e-6, 0.2, 1e-6, "", "contribution bounds: 2 groupings × ε=0.2"},
		{"group by without a unit", "", "city", 1, 1e-6, 0, 0, "--group-by city: contribution bounds need --privacy-unit (without one, each row is one person and the catalog has no max_groups_per_unit or max_rows_per_group)", ""},
		{"group by an unknown column", "id", "town", 1, 1e-6, 0, 0, `--group-by: no column "town"; want one of age, city, score, ok`, ""},
		{"group by the unit", "id", "id", 1, 1e-6, 0, 0, `--group-by: "id" is the privacy unit, which bounding groups within; want columns of age, city, score, ok`, ""},
		{"group by a column twice", "id", "city+city", 1, 1e-6, 0, 0, `--group-by: "city" appears twice in the grouping city+city`, ""},
		{"an empty grouping", "id", "city,,age", 1, 1e-6, 0, 0, "--group-by city,,age: an empty grouping; want columns separated by commas (a grouping of several columns joined by +), from age, city, score, ok", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPlan(Options{Data: "d.csv", Columns: cols, PrivacyUnit: tt.unit, GroupBy: ParseGroupBy(tt.groupBy), Epsilon: tt.eps, Delta: tt.delta})
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(p.Share-tt.share) > 1e-12 || p.DeltaShare != tt.deltaShare {
				t.Errorf("shares ε=%v δ=%v, want %v and %v", p.Share, p.DeltaShare, tt.share, tt.deltaShare)
			}
			if p.Cost.Epsilon > tt.eps || p.Cost.Delta > tt.delta {
				t.Errorf("cost %v exceeds ε=%v δ=%v", p.Cost, tt.eps, tt.delta)
			}
			if !strings.Contains(p.Split, tt.splitSubstr) {
				t.Errorf("split %q lacks %q", p.Split, tt.splitSubstr)
			}
		})
	}
}

// TestNewPlanDates checks that date and timestamp columns are estimated
// (their bounds as DP quantiles) and charged like numeric ones.
func TestNewPlanDates(t *testing.T) {
	cols := []engine.Column{{Name: "signup", Type: engine.Date}, {Name: "seen", Type: engine.Timestamp}}
	p, err := NewPlan(Options{Data: "d.csv", Columns: cols, Epsilon: 1, Delta: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	if p.Share != 0.5 || len(p.temporal) != 2 || p.Cost.Epsilon > 1 || p.Cost.Delta != 0 {
		t.Errorf("share %v, %d temporal columns, cost %v: want 0.5, 2 and at most ε=1, δ=0", p.Share, len(p.temporal), p.Cost)
	}
	if !strings.Contains(p.Split, "2 date or timestamp column(s) × ε=0.5") {
		t.Errorf("split %q", p.Split)
	}
}

// TestShare checks that n shares never add up to more than the total, in
// exact arithmetic.
func TestShare(t *testing.T) {
	for _, tt := range []struct {
		x float64
		n int
	}{{1, 3}, {0.1, 7}, {1e-6, 9}, {3, 1}, {0.7, 11}, {5e-324, 2}} {
		s := share(tt.x, tt.n)
		total := new(big.Rat).Mul(new(big.Rat).SetFloat64(s), new(big.Rat).SetInt64(int64(tt.n)))
		if total.Cmp(new(big.Rat).SetFloat64(tt.x)) > 0 {
			t.Errorf("share(%v, %d) = %v: %d shares exceed the total", tt.x, tt.n, s, tt.n)
		}
		if tt.n == 1 && s != tt.x {
			t.Errorf("share(%v, 1) = %v, want the total", tt.x, s)
		}
	}
}

// TestGrids checks the candidate grids: sorted, without duplicates, 0
// included, integers only for int columns, and the same on every call (they
// must not depend on the data).
func TestGrids(t *testing.T) {
	for _, tt := range []struct {
		name    string
		integer bool
	}{{"float", false}, {"int", true}} {
		t.Run(tt.name, func(t *testing.T) {
			g := readableGrid(tt.integer)
			if !sort.Float64sAreSorted(g) {
				t.Fatal("grid not sorted")
			}
			has0 := false
			for i, v := range g {
				if i > 0 && g[i-1] == v {
					t.Errorf("duplicate %v", v)
				}
				if v == 0 {
					has0 = true
				}
				if tt.integer && v != math.Trunc(v) {
					t.Errorf("non-integer candidate %v in an int grid", v)
				}
			}
			if !has0 {
				t.Error("0 is not a candidate")
			}
			e := decadeEdges(tt.integer)
			if !sort.Float64sAreSorted(e) || e[0] != -1e15 || e[len(e)-1] != 1e15 {
				t.Errorf("edges from %v to %v, want ±1e15", e[0], e[len(e)-1])
			}
		})
	}
	c := contributionGrid()
	if c[0] != 1 || c[len(c)-1] != 1000 || !sort.Float64sAreSorted(c) {
		t.Errorf("contribution grid %v: want 1 to 1000, sorted", c)
	}
}

// TestQuote checks that every value list item reads back from YAML as the
// value itself, control characters and quotes included.
func TestQuote(t *testing.T) {
	for _, v := range []string{"Paris", `say "hi"`, `back\slash`, "tab\there", "line\nbreak", "\x01\x7f", "é ü", "", "- dash", "# hash", "a: b"} {
		var got map[string]string
		if err := yaml.Unmarshal([]byte("v: "+quote(v)+"\n"), &got); err != nil {
			t.Errorf("%q: %v", v, err)
			continue
		}
		if got["v"] != v {
			t.Errorf("%q read back as %q", v, got["v"])
		}
	}
}
