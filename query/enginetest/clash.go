package enginetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dpstat/dpstat/query"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/schema"
)

// clash (clash.csv) names its columns as the statements' generated names
// were once spelled: the privacy unit is k0, and u, b, s0, v0, n, c, t
// and rk are data; its public companion clash_pub has t and one.
// clash_minus is clash without person 3, who has a row in each of x, y
// and z. Every person has at most one row per group and at most three
// groups (L0 = 3, L∞ = 1), so bounding keeps every row and the answers
// are exact. A statement whose generated alias captured a column (on
// ClickHouse, `"k0" AS u, "grp" AS k0` read u as grp) counted groups as
// persons, or failed.
var clashTables = []Table{
	{Name: "clash", File: "clash.csv", Columns: clashColumns, Declaration: clashDeclaration},
	{Name: "clash_minus", File: "clash_minus.csv", Columns: clashColumns, Declaration: clashDeclaration},
	// Source columns that begin with the reserved prefix, declared
	// under other names with from:.
	{Name: "clash_src", File: "clash_src.csv",
		Columns: []Column{{"k0", schema.Int}, {"grp", schema.Text}, {"_dp_u", schema.Int}, {"_dp_k0", schema.Int}},
		Declaration: `    privacy_unit: k0
    max_groups_per_unit: 3
    max_rows_per_group: 1
    columns:
      k0:  {type: int}
      grp: {type: text, values: [x, y, z]}
      pu:  {type: int, values: [1, 2], from: _dp_u}
      pk:  {type: int, lower: 0, upper: 10, from: _dp_k0}
`},
	{Name: "clash_pub", File: "clash_pub.csv",
		Columns: []Column{{"t", schema.Text}, {"one", schema.Int}},
		Declaration: `    public: true
    columns:
      t:   {type: text}
      one: {type: int, lower: 0, upper: 10}
`},
}

var clashColumns = []Column{{"k0", schema.Int}, {"grp", schema.Text}, {"u", schema.Int}, {"b", schema.Int},
	{"s0", schema.Int}, {"v0", schema.Int}, {"n", schema.Int}, {"c", schema.Int}, {"t", schema.Text}, {"rk", schema.Float}}

const clashDeclaration = `    privacy_unit: k0
    max_groups_per_unit: 3
    max_rows_per_group: 1
    columns:
      k0:  {type: int}
      grp: {type: text, values: [x, y, z]}
      u:   {type: int, values: [1, 2]}
      b:   {type: int, lower: 0, upper: 5}
      s0:  {type: int, lower: 0, upper: 10}
      v0:  {type: int, lower: -10, upper: 10}
      n:   {type: int, lower: 0, upper: 10}
      c:   {type: int}
      t:   {type: text, values: [p, q]}
      rk:  {type: float, lower: 0, upper: 1}
`

// clashCase is a query asked of clash and clash_minus (%s names the
// table): want is its answer on clash, and sens the most any cell may
// move without person 3.
type clashCase struct {
	name, sql string
	delta     float64
	want      string
	sens      float64
}

var clashCases = []clashCase{
	{"count and sum", "SELECT COUNT(*), SUM(s0), SUM(n), SUM(v0) FROM %s", 0, "5 21 15 -6", 10},
	{"grouped by a text key", "SELECT grp, COUNT(*), SUM(v0), SUM(b) FROM %s GROUP BY grp", 0, "x 3 -8 6; y 2 -3 2; z 2 3 3", 10},
	{"grouped by a column named u", "SELECT u, COUNT(*), SUM(s0) FROM %s GROUP BY u", 0, "1 3 12; 2 3 10", 10},
	{"grouped by two keys", "SELECT t, grp, COUNT(*) FROM %s GROUP BY t, grp", 0, "p x 3; p y 0; p z 1; q x 0; q y 2; q z 1", 1},
	{"distinct persons", "SELECT grp, COUNT(DISTINCT k0), COUNT(*) FROM %s GROUP BY grp", 0, "x 3 3; y 2 2; z 2 2", 1},
	{"distinct persons in all", "SELECT COUNT(DISTINCT k0), AVG(b) FROM %s", 0, "5 2.2", 5},
	{"distinct values", "SELECT COUNT(DISTINCT u) FROM %s", 0, "2", 1},
	{"median", "SELECT t, MEDIAN(b) FROM %s GROUP BY t", 0, "p 1; q 2", 5},
	{"median in all", "SELECT MEDIAN(rk), SUM(rk) FROM %s", 0, "0.5 2.625", 1},
	{"key selection", "SELECT c, COUNT(*) FROM %s GROUP BY c", 1e-6, "7 5", 1},
	{"pre-aggregation", "SELECT COUNT(*), SUM(LEAST(GREATEST(n, 0), 3)) FROM (SELECT k0, COUNT(*) AS n FROM %s GROUP BY k0) s WHERE n >= 1", 0, "5 7", 3},
	{"pre-aggregation named like statistics", "SELECT SUM(LEAST(GREATEST(s0, 0), 15)), COUNT(*) FROM (SELECT k0, SUM(b) AS s0, MAX(LEAST(GREATEST(u, 0), 2)) AS u FROM %s GROUP BY k0) p WHERE u >= 1", 0, "11 5", 15},
	{"public join", "SELECT p.one, COUNT(*), SUM(x.b) FROM %s x JOIN clash_pub p ON x.t = p.t GROUP BY p.one", 0, "1 3 6; 2 3 5", 5},
}

// reservedSourceCases read clash_src, whose server (or file) columns
// _dp_u and _dp_k0 are named as generated names are: declared under
// other names with from:, they must never be read as the statement's own
// columns (ClickHouse reads such a table through its projection).
var reservedSourceCases = []Case{
	{Name: "clash: reserved source columns read with from:", SQL: "SELECT grp, COUNT(*), SUM(pk) FROM clash_src GROUP BY grp", Want: "x 3 12; y 2 5; z 2 6"},
	{Name: "clash: a reserved source column as a key", SQL: "SELECT pu, COUNT(*), SUM(pk), COUNT(DISTINCT k0) FROM clash_src GROUP BY pu", Want: "1 3 12 3; 2 3 10 3"},
}

func init() {
	Tables = append(Tables, clashTables...)
	Battery = append(Battery, reservedSourceCases...)
	for _, c := range clashCases {
		Battery = append(Battery, Case{Name: "clash: " + c.name, SQL: fmt.Sprintf(c.sql, "clash"), Delta: c.delta, Want: c.want})
	}
}

// runClash asks every clashCase of clash and clash_minus at ε = 1e20 and
// checks that the answers differ by at most the sensitivity, cell by
// cell, with the same groups; and, on each table, that every form of the
// statement gives the first form's exact statistics (bounding keeps
// every row of clash, so no form may differ).
func runClash(t *testing.T, b Backend) {
	svc, eng := Service(t, b)
	for _, c := range clashCases {
		t.Run(c.name, func(t *testing.T) {
			opts := query.Options{Epsilon: 1e20, Delta: c.delta, Confidence: 0.95, Analyst: "clash"}
			var rows [2][][]any
			for i, table := range []string{"clash", "clash_minus"} {
				sql := fmt.Sprintf(c.sql, table)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				res, err := svc.Answer(ctx, sql, opts)
				if err != nil {
					t.Fatalf("%s on %s: %v", sql, b.Name, err)
				}
				rows[i] = res.Rows
				p, err := svc.Prepare(sql, opts)
				if err != nil {
					t.Fatalf("%s on %s: %v", sql, b.Name, err)
				}
				if p.SQL == "" {
					continue
				}
				var first string
				for _, f := range []dpplan.Form{p.Plan.FirstForm(), dpplan.CleanForm, dpplan.IntegerForm} {
					text, err := p.FormSQL(f)
					if err != nil {
						t.Fatal(err)
					}
					got, err := eng.Query(ctx, text)
					if err != nil {
						t.Fatalf("%s form of %s on %s: %v\n%s", f, sql, b.Name, err, text)
					}
					ex, err := p.Plan.ReadExactForm(got, f)
					if err != nil {
						t.Fatalf("reading the %s form of %s on %s: %v", f, sql, b.Name, err)
					}
					s := fmt.Sprint(ex.Keys, ex.Stats)
					if first == "" {
						first = s
					} else if s != first {
						t.Errorf("%s on %s: the %s form gives %s, the first form %s", sql, b.Name, f, s, first)
					}
				}
			}
			if err := neighbourDistance(rows[0], rows[1], c.sens); err != nil {
				t.Errorf("%s on %s: %v\nwith person 3: %s\nwithout:       %s", c.sql, b.Name, err, Format(rows[0]), Format(rows[1]))
			}
		})
	}
}
