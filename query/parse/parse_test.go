package parse

import (
	"errors"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/query/internal/stagetest"
	"github.com/dpstat/dpstat/query/ir"
)

// shape summarises what the parser made of a query: the table, each
// output (key or aggregate), the GROUP BY and the WHERE condition.
func shape(q *ir.Query) string {
	var outs []string
	for _, o := range q.Outputs {
		switch {
		case o.Agg != nil:
			outs = append(outs, o.Agg.String())
		case o.IsKey():
			outs = append(outs, "key "+o.Key)
		default:
			outs = append(outs, "post "+o.Name)
		}
	}
	s := q.Table + ": " + strings.Join(outs, ", ")
	if len(q.GroupBy) > 0 {
		s += " | group by " + strings.Join(q.GroupBy, ", ")
	}
	if q.Where != nil {
		s += " | where " + ir.ExprString(q.Where, q)
	}
	return s
}

func TestParseShapes(t *testing.T) {
	cat := stagetest.Catalog(t)
	tests := []struct{ sql, want string }{
		{"SELECT COUNT(*) FROM visits", "visits: COUNT(*)"},
		{"SELECT city, SUM(euros) FROM visits GROUP BY city", "visits: key city, SUM(euros) | group by city"},
		{"SELECT AVG(age) FROM visits WHERE day = 2", "visits: AVG(age) | where day = 2"},
		{"SELECT day, COUNT(DISTINCT pid) FROM visits GROUP BY 1", "visits: key day, COUNT(DISTINCT pid) | group by day"},
		// A CTE is merged into the query that reads it.
		{"WITH v AS (SELECT * FROM visits WHERE age >= 30) SELECT COUNT(*) FROM v", "visits: COUNT(*) | where age >= 30"},
	}
	for _, tt := range tests {
		q, err := Parse(tt.sql, cat)
		if err != nil {
			t.Errorf("%s: %v", tt.sql, err)
			continue
		}
		if got := shape(q); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.sql, got, tt.want)
		}
	}
}

// TestParseRefusals checks that what the IR cannot express is refused as
// an ir.RefusedError whose reason names the construct.
func TestParseRefusals(t *testing.T) {
	cat := stagetest.Catalog(t)
	tests := []struct{ sql, want string }{
		{"SELECT pid FROM visits", "pid"},
		{"SELECT COUNT(*) FROM nowhere", "nowhere"},
		{"SELECT SUM(nope) FROM visits", "nope"},
		{"WITH RECURSIVE r AS (SELECT 1) SELECT COUNT(*) FROM visits", "RECURSIVE"},
		{"SELECT COUNT(*) FROM visits; SELECT COUNT(*) FROM visits", "one"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.sql, cat)
		var re *ir.RefusedError
		if !errors.As(err, &re) {
			t.Errorf("%s: want a refusal, got %v", tt.sql, err)
			continue
		}
		if !strings.Contains(re.Reason, tt.want) {
			t.Errorf("%s: refusal %q does not name %q", tt.sql, re.Reason, tt.want)
		}
	}
}
