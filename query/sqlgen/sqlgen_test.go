package sqlgen

import (
	"strings"
	"testing"

	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/internal/stagetest"
	"github.com/dpstat/dpstat/query/parse"
)

func plan(t *testing.T, sql string) *dpplan.Plan {
	t.Helper()
	cat := stagetest.Catalog(t)
	q, err := parse.Parse(sql, cat)
	if err != nil {
		t.Fatal(err)
	}
	p, err := dpplan.NewPlanDelta(q, q.Base, 1, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStatementsFromThePlan checks that the engine statements come from
// the plan, not from the analyst's text: the same plan gives the same
// statement, every form has one, literals are rendered by the dialect, and
// the analyst's spelling (letter case, spacing, aliases) does not reach the
// engine.
func TestStatementsFromThePlan(t *testing.T) {
	for _, sql := range []string{
		"SELECT city, SUM(euros) AS total FROM visits WHERE city = 'L''Isle' GROUP BY city",
		"select   CITY, avg(AGE) as Mean_Age from VISITS group by CITY",
	} {
		p := plan(t, sql)
		first, err := SQL(p, duckdb.Dialect)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		again, _ := SQL(p, duckdb.Dialect)
		if first != again {
			t.Errorf("%s: two statements for one plan:\n%s\n%s", sql, first, again)
		}
		for _, f := range []dpplan.Form{dpplan.FastForm, dpplan.CleanForm, dpplan.IntegerForm} {
			text, err := FormSQL(p, duckdb.Dialect, f)
			if err != nil || text == "" {
				t.Errorf("%s: form %v: %q, %v", sql, f, text, err)
			}
			for _, analyst := range []string{"total", "Mean_Age", "VISITS", "CITY", "avg(AGE)"} {
				if strings.Contains(text, analyst) {
					t.Errorf("%s: form %v: the statement contains the analyst's %q:\n%s", sql, f, analyst, text)
				}
			}
		}
	}
	// The literal is the dialect's: a quote inside a string is doubled.
	if text, _ := SQL(plan(t, "SELECT COUNT(*) FROM visits WHERE city = 'L''Isle'"), duckdb.Dialect); !strings.Contains(text, "'L''Isle'") {
		t.Errorf("the literal is not rendered by the dialect:\n%s", text)
	}
}

// TestHistogramStatement checks that a quantile has its own statement,
// with the bin and its count as the last two columns.
func TestHistogramStatement(t *testing.T) {
	p := plan(t, "SELECT day, MEDIAN(age) FROM visits GROUP BY day")
	if len(p.Histograms) != 1 {
		t.Fatalf("want 1 histogram, got %d", len(p.Histograms))
	}
	text, err := HistogramSQL(p, duckdb.Dialect, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, " AS _dp_b") || !strings.Contains(text, " AS _dp_c") {
		t.Errorf("histogram statement without bin b and count c:\n%s", text)
	}
}
