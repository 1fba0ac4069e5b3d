package query

import (
	"testing"
)

// TestCountDistinctValues checks COUNT(DISTINCT col) of columns other than
// the privacy unit at ε = 1e20, with and without a privacy unit, and its
// sensitivity: that of COUNT(*).
func TestCountDistinctValues(t *testing.T) {
	svc := subqueryService(t)
	checkAnswers(t, svc, []answerCase{
		{"column", "SELECT COUNT(DISTINCT day) FROM visits", "5"},
		{"beside a count", "SELECT COUNT(DISTINCT euros), COUNT(*) FROM visits", "7 8"},
		{"beside the unit's", "SELECT COUNT(DISTINCT pid), COUNT(DISTINCT day) FROM visits WHERE euros > 10", "3 3"},
		{"grouped", "SELECT day, COUNT(DISTINCT euros) FROM visits WHERE day <= 3 GROUP BY day", "1 2; 2 2; 3 0; 4 0; 5 0; 6 0; 7 0; 8 0; 9 0"},
		{"joined", "SELECT d.weekend, COUNT(DISTINCT v.day) FROM visits v JOIN days d ON v.day = d.day GROUP BY d.weekend", "false 2; true 2"},
		{"beside a median", "WITH s AS (SELECT pid, day, euros FROM visits WHERE day > 1) SELECT COUNT(DISTINCT day), MEDIAN(euros) FROM s", "4 30"},
	})
	p, err := svc.Prepare("SELECT COUNT(DISTINCT day), COUNT(*) FROM visits", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	if a, b := p.Plan.Releases[p.Plan.Aggregates[0].Releases[0]].Sensitivity, p.Plan.Releases[p.Plan.Aggregates[1].Releases[0]].Sensitivity; a != b || a != 10 {
		t.Errorf("COUNT(DISTINCT day) sensitivity %g, COUNT(*) %g: want both 10 (one group, 10 rows per person)", a, b)
	}
}
