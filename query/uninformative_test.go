package query

import (
	"strings"
	"testing"

	"github.com/dpstat/dpstat/query/dpplan"
)

// TestUninformativeNotes checks which released intervals are said to cover
// everything the declared bounds allow (age in [17, 90]): an average's
// whole range, a standard deviation's [0, 36.5] or wider, every quantile;
// never a narrower interval, never a count.
func TestUninformativeNotes(t *testing.T) {
	svc, _, _ := newTestService(t, "../examples/catalog.yaml")
	p, err := svc.Prepare("SELECT race, AVG(age) AS a, STDDEV(age) AS s, MEDIAN(age) AS m, COUNT(*) AS n FROM adult GROUP BY race",
		Options{Epsilon: 1, Confidence: 0.95, Analyst: "a"})
	if err != nil {
		t.Fatal(err)
	}
	iv := func(lo, hi float64) *dpplan.Interval { return &dpplan.Interval{Low: lo, High: hi} }
	res := &Result{
		Rows: [][]any{{"White", 38.0, 0.0, 37.0, int64(27000)}, {"Other", 53.5, 12.0, 40.0, int64(3)}},
		CI: [][]*dpplan.Interval{
			{nil, iv(37, 39), iv(0, 36.5), iv(17, 90), iv(26990, 27010)},
			{nil, iv(17, 90), iv(0, 20), iv(17, 90), iv(0, 13)},
		},
	}
	notes := strings.Join(uninformativeNotes(p.Plan, res), "\n")
	for _, want := range []string{
		"a: the interval of group(s) Other covers everything the declared bounds allow (the declared range)",
		"s: the interval of group(s) White covers everything the declared bounds allow (from 0 to half the declared range)",
		"m (PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY age)): its interval is the declared range",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "n:") || strings.Contains(notes, "group(s) White; Other") || strings.Contains(notes, "Other; White") {
		t.Errorf("notes name an informative interval:\n%s", notes)
	}
}
