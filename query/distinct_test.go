package query

import (
	"context"
	"strings"
	"testing"
)

// TestCountDistinctValues checks COUNT(DISTINCT col) of columns other than
// the privacy unit at ε = 1e20, with and without a privacy unit, and its
// sensitivity: that of COUNT(*).
func TestCountDistinctValues(t *testing.T) {
	svc := subqueryService(t)
	ctx := context.Background()
	for _, tt := range []struct{ sql, want string }{
		{"SELECT COUNT(DISTINCT day) FROM visits", "5"},
		{"SELECT COUNT(DISTINCT euros), COUNT(*) FROM visits", "7 8"},
		{"SELECT COUNT(DISTINCT pid), COUNT(DISTINCT day) FROM visits WHERE euros > 10", "3 3"},
		{"SELECT day, COUNT(DISTINCT euros) FROM visits WHERE day <= 3 GROUP BY day", "1 2; 2 2; 3 0; 4 0; 5 0; 6 0; 7 0; 8 0; 9 0"},
		{"SELECT d.weekend, COUNT(DISTINCT v.day) FROM visits v JOIN days d ON v.day = d.day GROUP BY d.weekend", "false 2; true 2"},
		{"WITH s AS (SELECT pid, day, euros FROM visits WHERE day > 1) SELECT COUNT(DISTINCT day), MEDIAN(euros) FROM s", ""},
	} {
		res, err := svc.Answer(ctx, tt.sql, exactOpts())
		if err != nil {
			t.Fatalf("%s: %v", tt.sql, err)
		}
		got := roundedRows(res.Rows)
		if tt.want == "" {
			if !strings.HasPrefix(got, "4 ") {
				t.Errorf("%s: got %s, want 4 distinct days", tt.sql, got)
			}
			continue
		}
		if got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.sql, got, tt.want)
		}
	}
	p, err := svc.Prepare("SELECT COUNT(DISTINCT day), COUNT(*) FROM visits", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	if a, b := p.Plan.Releases[p.Plan.Aggregates[0].Releases[0]].Sensitivity, p.Plan.Releases[p.Plan.Aggregates[1].Releases[0]].Sensitivity; a != b || a != 10 {
		t.Errorf("COUNT(DISTINCT day) sensitivity %g, COUNT(*) %g: want both 10 (one group, 10 rows per person)", a, b)
	}
}
