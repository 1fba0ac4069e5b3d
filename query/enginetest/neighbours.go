package enginetest

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/dpstat/dpstat/query"
)

// edgeCases are battery cases over the values that broke server engines:
// sums of negative values (split into 32-bit halves on ClickHouse's
// shards), small integer keys (typed UInt8 by ClickHouse), constant
// statistics, and a NULL in an Enum column. acct (acct.csv) has one row per person and grp, so
// bounding keeps every row of a query grouped by grp (L0 = 3, L∞ = 1):
// person 3 has v = −1 and e NULL in x, y and z, and keeps one of those
// rows in a query without groups.
var edgeCases = []Case{
	{Name: "sum of negative values", SQL: "SELECT SUM(v) FROM acct", Want: "-7"},
	{Name: "grouped sums of negative values", SQL: "SELECT grp, COUNT(*), SUM(v) FROM acct GROUP BY grp", Want: "x 3 -6; y 2 2; z 2 -5"},
	{Name: "small integer keys", SQL: "SELECT CASE WHEN v > 0 THEN 1 ELSE 2 END AS s, COUNT(*) FROM acct WHERE pid = 3 GROUP BY s", Want: "1 0; 2 1"},
	{Name: "constant statistics beside a distinct count", SQL: "SELECT COUNT(DISTINCT city), COUNT(*) FROM people", Check: total(1, 5)},
	{Name: "distinct persons per group", SQL: "SELECT grp, COUNT(DISTINCT pid), COUNT(*) FROM acct GROUP BY grp", Want: "x 3 3; y 2 2; z 2 2"},
	{Name: "NULL enum", SQL: "SELECT e, COUNT(*) FROM acct GROUP BY e", Want: "a 2; b 1"},
	{Name: "NULL enum in conditions", SQL: "SELECT COUNT(e), COUNT(*) FILTER (WHERE e IS NULL), COUNT(*) FILTER (WHERE e = 'a') FROM acct", Want: "3 2 2"},
}

// neighbourCase is a query asked of acct and of acct_minus (acct without
// person 3) at ε = 1e20: the answers must differ by at most the stated
// sensitivity in every cell (or be refused alike).
type neighbourCase struct {
	name string
	// sql reads the table %s.
	sql string
	// sens is the L∞ distance allowed between the two answers' cells.
	sens float64
}

var neighbourCases = []neighbourCase{
	{"sum of negative values", "SELECT SUM(v) FROM %s", 30},
	{"grouped sums", "SELECT grp, COUNT(*), SUM(v) FROM %s GROUP BY grp", 10},
	{"small integer keys of one person", "SELECT CASE WHEN v > 0 THEN 1 ELSE 2 END AS s, COUNT(*) FROM %s WHERE pid = 3 GROUP BY s", 3},
	{"distinct persons", "SELECT grp, COUNT(DISTINCT pid), COUNT(*) FROM %s GROUP BY grp", 1},
	{"NULL enum", "SELECT e, COUNT(*), COUNT(e) FROM %s GROUP BY e", 1},
	// ILIKE and substr to the end failed on ClickHouse after the charge
	// (capabilityCases).
	{"ILIKE and substr", "SELECT COUNT(*) FILTER (WHERE grp ILIKE 'X'), COUNT(*) FILTER (WHERE substr(grp, 1) = 'y'), SUM(v) FILTER (WHERE grp NOT ILIKE 'Z') FROM %s", 10},
}

// epochNeighbourCases are asked of epochs and of epochs_minus (epochs
// without person 1's rows of February 2024: one (person, month), the unit
// of a table with epochs). Each (person, month) keeps at most 2 joined
// rows per group, of values at most 100.
var epochNeighbourCases = []neighbourCase{
	{"epoch join by month", "SELECT date_trunc('month', x.d) AS m, COUNT(*), SUM(y.v) FROM %[1]s x JOIN %[1]s y ON x.pid = y.pid AND date_trunc('month', x.d) = date_trunc('month', y.d) GROUP BY date_trunc('month', x.d)", 200},
	{"epoch join on the day", "SELECT COUNT(*), SUM(x.v) FROM %[1]s x LEFT JOIN %[1]s y ON x.pid = y.pid AND x.d = y.d", 200},
}

// RunNeighbours asks every neighbourCase of acct and acct_minus, and
// every epochNeighbourCase of epochs and epochs_minus, on the backend's
// engine and checks that the answers differ by at most the sensitivity,
// cell by cell, with the same groups.
func RunNeighbours(t *testing.T, b Backend) {
	svc, _ := Service(t, b)
	for _, c := range neighbourCases {
		t.Run(c.name, func(t *testing.T) { runNeighbour(t, b, svc, c, "acct", "acct_minus", "person 3") })
	}
	for _, c := range epochNeighbourCases {
		t.Run(c.name, func(t *testing.T) { runNeighbour(t, b, svc, c, "epochs", "epochs_minus", "person 1's February") })
	}
	t.Run("columns named like generated names", func(t *testing.T) { runClash(t, b) })
}

// runNeighbour asks c of table and of its neighbour minus (table without
// the unit who) and compares the answers.
func runNeighbour(t *testing.T, b Backend, svc *query.Service, c neighbourCase, table, minus, who string) {
	var rows [2][][]any
	var errs [2]error
	for i, name := range []string{table, minus} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err := svc.Answer(ctx, fmt.Sprintf(c.sql, name), query.Options{Epsilon: 1e20, Confidence: 0.95, Analyst: "neighbours"})
		cancel()
		errs[i] = err
		if err == nil {
			rows[i] = res.Rows
		}
	}
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("%s on %s: with %s: %v; without: %v", c.sql, b.Name, who, errs[0], errs[1])
	}
	if err := neighbourDistance(rows[0], rows[1], c.sens); err != nil {
		t.Errorf("%s on %s: %v\nwith %s: %s\nwithout:       %s", c.sql, b.Name, err, who, Format(rows[0]), Format(rows[1]))
	}
}

// neighbourDistance reports a cell of a and b (rows of the same groups)
// that differs by more than sens, or a difference in their groups.
func neighbourDistance(a, b [][]any, sens float64) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d rows against %d", len(a), len(b))
	}
	num := func(v any) (float64, bool) {
		switch x := v.(type) {
		case int64:
			return float64(x), true
		case float64:
			return x, true
		}
		return 0, false
	}
	for i := range a {
		for j := range a[i] {
			x, okx := num(a[i][j])
			y, oky := num(b[i][j])
			if !okx || !oky {
				if fmt.Sprint(a[i][j]) != fmt.Sprint(b[i][j]) {
					return fmt.Errorf("row %d: key %v against %v", i, a[i][j], b[i][j])
				}
				continue
			}
			if d := math.Abs(x - y); d > sens || math.IsNaN(d) {
				return fmt.Errorf("row %d column %d: %v against %v, more than the sensitivity %v apart", i, j, a[i][j], b[i][j], sens)
			}
		}
	}
	return nil
}
