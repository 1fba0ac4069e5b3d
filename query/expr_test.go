package query

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/query/ir"
)

// TestExactExpressions checks aggregates of expressions, FILTER, MIN and
// MAX and WHERE-narrowed bounds at ε = 1e20 on people.csv: ages 20, 30,
// NULL, 150 (clamped to 100), 40 in [18, 100]; scores 1.5, NULL, 2.5, −10
// (clamped to 0), 3.25 in [0, 10]; cities A, B, A, A, C; flags true,
// false, true, NULL, false. Every column is clamped to its declared bounds
// before the expression computes with it.
func TestExactExpressions(t *testing.T) {
	svc, _, _ := newTestService(t, "testdata/catalog.yaml")
	tests := []struct {
		name, sql string
		lo, hi    float64
	}{
		{"arithmetic", "SELECT SUM(age * 2) FROM people", 380, 380},
		{"case", "SELECT SUM(CASE WHEN city = 'A' THEN age ELSE 0 END) FROM people", 120, 120},
		{"case without else", "SELECT COUNT(CASE WHEN age > 25 THEN 1 END) FROM people", 3, 3},
		{"count filter", "SELECT COUNT(*) FILTER (WHERE age > 25) FROM people", 3, 3},
		{"sum filter", "SELECT SUM(age) FILTER (WHERE city = 'A') FROM people", 120, 120},
		{"count of a column with a filter", "SELECT COUNT(age) FILTER (WHERE flag) FROM people", 1, 1},
		{"count of a text column with a filter", "SELECT COUNT(city) FILTER (WHERE age < 35) FROM people", 2, 2},
		{"least skips NULL, as in PostgreSQL", "SELECT AVG(LEAST(age, 50)) FROM people", 38, 38},
		{"float arithmetic", "SELECT SUM(score * 2 + 1) FROM people", 18.5, 18.5},
		{"abs", "SELECT SUM(ABS(score - 2)) FROM people", 4.25, 4.25},
		{"floor", "SELECT SUM(FLOOR(score)) FROM people", 6, 6},
		{"coalesce", "SELECT SUM(COALESCE(age, 0)) FROM people", 190, 190},
		{"division and cast", "SELECT SUM(CAST(age / 4 AS int)) FROM people", 47, 48},
		{"remainder", "SELECT SUM(age % 7) FROM people", 15, 15},
		{"negation", "SELECT SUM(-age) FROM people", -190, -190},
		{"nullif", "SELECT COUNT(NULLIF(age, 30)) FROM people", 3, 3},
		{"clamped unbounded column", "SELECT SUM(LEAST(GREATEST(id, 0), 3)) FROM people", 12, 12},
		{"min int", "SELECT MIN(age) FROM people", 20, 20},
		{"max is clamped", "SELECT MAX(age) FROM people", 100, 100},
		{"min float on the grid", "SELECT MIN(score) FROM people", 0, 0.01},
		{"max float on the grid", "SELECT MAX(score) FROM people", 3.24, 3.25},
		{"max of an expression", "SELECT MAX(age * 2) FROM people", 200, 200},
		{"median of an expression", "SELECT MEDIAN(age * 2) FROM people", 60, 80},
		{"percentile of an expression", "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY age + 1) FROM people", 31, 41},
		{"where narrows", "SELECT SUM(age) FROM people WHERE age BETWEEN 20 AND 40", 90, 90},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := svc.Answer(context.Background(), tt.sql, exactOpts())
			if err != nil {
				t.Fatal(err)
			}
			got, ok := ir.Number(res.Rows[0][0])
			if !ok || got < tt.lo-1e-6 || got > tt.hi+1e-6 || math.IsNaN(got) {
				t.Fatalf("%s = %v, want [%g, %g]", tt.sql, res.Rows[0][0], tt.lo, tt.hi)
			}
		})
	}
}

// TestDerivedBounds checks the bounds the plan derives, and so the
// sensitivities: interval arithmetic over the declared bounds, narrowed by
// WHERE.
func TestDerivedBounds(t *testing.T) {
	cat := loadCatalog(t, "testdata/catalog.yaml")
	tests := []struct {
		sql       string
		lo, hi    float64
		sensitive float64
	}{
		{"SELECT SUM(age) FROM people", 18, 100, 100},
		{"SELECT SUM(age) FROM people WHERE age BETWEEN 30 AND 60", 30, 60, 60},
		{"SELECT SUM(age) FROM people WHERE age > 30 AND age < 60", 31, 59, 59},
		{"SELECT SUM(age) FROM people WHERE 60 >= age", 18, 60, 60},
		{"SELECT SUM(CASE WHEN flag THEN age ELSE 0 END) FROM people", 0, 100, 100},
		{"SELECT SUM(age - 50) FROM people", -32, 50, 50},
		{"SELECT SUM(age * score) FROM people", 0, 1000, 1000},
		{"SELECT SUM(score / 2) FROM people", 0, 5, 5},
		{"SELECT SUM(ABS(age - 50)) FROM people", 0, 50, 50},
		{"SELECT SUM(age % 7) FROM people", 0, 7, 7},
		{"SELECT SUM(LEAST(GREATEST(id, -5), 5)) FROM people", -5, 5, 5},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			p, err := Prepare(cat, duckdb.Dialect, tt.sql, exactOpts())
			if err != nil {
				t.Fatal(err)
			}
			ap := p.Plan.Aggregates[0]
			if ap.Lower != tt.lo || ap.Upper != tt.hi {
				t.Errorf("bounds [%g, %g], want [%g, %g]", ap.Lower, ap.Upper, tt.lo, tt.hi)
			}
			if s := p.Plan.Releases[ap.Releases[0]].Sensitivity; math.Abs(s-tt.sensitive) > 1e-9*tt.sensitive+1e-3 {
				t.Errorf("sensitivity %g, want %g", s, tt.sensitive)
			}
		})
	}
}

// TestPostProcessing checks expressions over released aggregates at ε =
// 1e20 on people.csv (COUNT(*) 5, SUM(age) 190 over 4 ages, AVG(age) 47.5):
// they cost what their aggregates cost and nothing more, hidden
// aggregates are not shown, and intervals are carried through.
func TestPostProcessing(t *testing.T) {
	svc, _, led := newTestService(t, "testdata/catalog.yaml")
	tests := []struct {
		name, sql string
		cols      string
		want      []float64
	}{
		{"identity", "SELECT SUM(age) * 1 FROM people", "?column?", []float64{190}},
		{"ratio of two aggregates", "SELECT SUM(age) / COUNT(age) AS mean FROM people", "mean", []float64{47.5}},
		{"round of an average", "SELECT ROUND(AVG(age), 1) FROM people", "round", []float64{47.5}},
		{"power of a standard deviation", "SELECT POWER(STDDEV_POP(age), 2) AS v, VAR_POP(age) FROM people", "v,var_pop_age", []float64{968.75, 968.75}},
		{"a visible aggregate is reused", "SELECT COUNT(*), COUNT(*) * 2 AS twice FROM people", "count,twice", []float64{5, 10}},
		{"constants", "SELECT COUNT(*), 3 AS three, PI() AS pi FROM people", "count,three,pi", []float64{5, 3, 3.141592653589793}},
		{"division by zero is NULL", "SELECT COUNT(*) / (COUNT(*) - 5) AS r FROM people", "r", []float64{math.NaN()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := led.count()
			res, err := svc.Answer(context.Background(), tt.sql, exactOpts())
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(res.Columns, ","); got != tt.cols {
				t.Fatalf("columns %s, want %s", got, tt.cols)
			}
			for i, w := range tt.want {
				v := res.Rows[0][i]
				if math.IsNaN(w) {
					if v != nil {
						t.Errorf("column %d = %v, want NULL", i, v)
					}
					continue
				}
				got, ok := ir.Number(v)
				if !ok || math.Abs(got-w) > 1e-6*math.Max(1, math.Abs(w)) {
					t.Errorf("column %d = %v, want %g", i, v, w)
				}
			}
			if led.count() != before+1 {
				t.Errorf("%d charges, want one", led.count()-before)
			}
		})
	}
	// The interval of a computed output follows from its inputs'.
	res, err := svc.Answer(context.Background(), "SELECT SUM(age) * 2 AS s2 FROM people", Options{Epsilon: 1, Confidence: 0.95, Analyst: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if iv := res.CI[0][0]; iv == nil || !(iv.Low < iv.High) {
		t.Fatalf("interval %v", iv)
	}
}

// TestKeysAlone checks SELECT key FROM t GROUP BY key: the public list at
// no cost and without reading data, key selection with all of ε otherwise.
func TestKeysAlone(t *testing.T) {
	svc, eng, led := newTestService(t, "testdata/catalog.yaml")
	res, err := svc.Answer(context.Background(), "SELECT city FROM people GROUP BY city", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 || res.Cost.Epsilon != 0 || eng.calls() != 0 || led.count() != 0 {
		t.Fatalf("rows %v, cost %v, %d engine calls, %d charges: want the 3 public keys, free", res.Rows, res.Cost, eng.calls(), led.count())
	}
	opts := exactOpts()
	opts.Delta = 1e-6
	p, err := svc.Prepare("SELECT age FROM people GROUP BY age", opts)
	if err != nil {
		t.Fatal(err)
	}
	if p.Plan.Selection == nil || p.Plan.Selection.Epsilon != opts.Epsilon {
		t.Fatalf("key selection %+v: want all of ε", p.Plan.Selection)
	}
	if _, err := svc.Run(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	// SELECT DISTINCT is the keys alone.
	res, err = svc.Answer(context.Background(), "SELECT DISTINCT city, flag FROM people", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 6 || res.Cost.Epsilon != 0 {
		t.Fatalf("SELECT DISTINCT city, flag: rows %v, cost %v: want the 6 public pairs, free", res.Rows, res.Cost)
	}
	if p, err = svc.Prepare("SELECT DISTINCT age FROM people", opts); err != nil || p.Plan.Selection == nil {
		t.Fatalf("SELECT DISTINCT age: %v, want key selection", err)
	}
}

// TestLike checks LIKE and ILIKE in WHERE, CASE and FILTER at ε = 1e20 on
// people.csv (cities A, B, A, A, C).
func TestLike(t *testing.T) {
	svc, _, _ := newTestService(t, "testdata/catalog.yaml")
	for _, tt := range []struct {
		sql  string
		want float64
	}{
		{"SELECT COUNT(*) FROM people WHERE city LIKE 'A%'", 3},
		{"SELECT COUNT(*) FROM people WHERE city NOT LIKE 'A'", 2},
		{"SELECT COUNT(*) FROM people WHERE city ILIKE 'a'", 3},
		{"SELECT COUNT(*) FILTER (WHERE city LIKE '_') FROM people", 5},
		{"SELECT SUM(CASE WHEN city LIKE 'B%' THEN age ELSE 0 END) FROM people", 30},
	} {
		res, err := svc.Answer(context.Background(), tt.sql, exactOpts())
		if err != nil {
			t.Fatalf("%s: %v", tt.sql, err)
		}
		if got, _ := ir.Number(res.Rows[0][0]); math.Abs(got-tt.want) > 1e-6 {
			t.Errorf("%s = %v, want %g", tt.sql, res.Rows[0][0], tt.want)
		}
	}
	for _, sql := range []string{
		"SELECT COUNT(*) FROM people WHERE age LIKE '1%'",
		`SELECT COUNT(*) FROM people WHERE city LIKE 'a\%'`,
		"SELECT COUNT(*) FROM people WHERE city SIMILAR TO 'A'",
	} {
		if _, err := svc.Answer(context.Background(), sql, exactOpts()); err == nil {
			t.Errorf("%s: answered, want a refusal", sql)
		}
	}
}

// TestJoinPublic checks joins with a public table at ε = 1e20: visits
// (privacy unit pid) joined with days on day, grouped by a public column
// whose values come from the public table.
func TestJoinPublic(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"visits.csv": "pid,day,euros\n1,1,10\n1,2,20\n2,1,5\n3,7,60\n3,6,1\n4,9,30\n",
		"days.csv":   "day,name,weekend\n1,Mon,false\n2,Tue,false\n3,Wed,false\n4,Thu,false\n5,Fri,false\n6,Sat,true\n7,Sun,true\n",
		"rows.csv":   "day,euros\n1,10\n6,20\n",
		"twice.csv":  "day,tag\n1,x\n1,y\n6,z\n",
		"catalog.yaml": `budget: {epsilon: 1e30, delta: 1e-6}
tables:
  visits:
    source: visits.csv
    privacy_unit: pid
    max_groups_per_unit: 7
    max_rows_per_group: 7
    columns: {pid: {type: int}, day: {type: int}, euros: {type: int, lower: 0, upper: 100}}
  rows:
    source: rows.csv
    columns: {day: {type: int}, euros: {type: int, lower: 0, upper: 100}}
  days:
    source: days.csv
    public: true
    columns: {day: {type: int}, name: {type: text}, weekend: {type: bool}}
  twice:
    source: twice.csv
    public: true
    columns: {day: {type: int}, tag: {type: text}}
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	svc, _, _ := newTestService(t, filepath.Join(dir, "catalog.yaml"))
	ctx := context.Background()
	for _, tt := range []struct{ sql, want string }{
		{"SELECT d.weekend, COUNT(*), SUM(v.euros) FROM visits v JOIN days d ON v.day = d.day GROUP BY d.weekend", "false 3 35; true 2 61"},
		{"SELECT name, COUNT(*) FROM visits JOIN days USING (day) GROUP BY name", "Fri 0; Mon 2; Sat 1; Sun 1; Thu 0; Tue 1; Wed 0"},
		{"SELECT COUNT(*) FROM visits v LEFT JOIN days d ON v.day = d.day", "6"},
		{"SELECT COUNT(*) FROM visits v JOIN days d ON v.day = d.day WHERE d.weekend", "2"},
		{"SELECT t.tag, COUNT(*), SUM(r.euros) FROM rows r JOIN twice t ON r.day = t.day GROUP BY t.tag", "x 1 10; y 1 10; z 1 20"},
	} {
		res, err := svc.Answer(ctx, tt.sql, exactOpts())
		if err != nil {
			t.Fatalf("%s: %v", tt.sql, err)
		}
		var rows []string
		for _, r := range res.Rows {
			var cells []string
			for _, v := range r {
				if f, ok := v.(float64); ok {
					v = math.Round(f)
				}
				cells = append(cells, strings.TrimSuffix(fmt.Sprint(v), ".0"))
			}
			rows = append(rows, strings.Join(cells, " "))
		}
		if got := strings.Join(rows, "; "); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.sql, got, tt.want)
		}
	}
	// A row of rows matches twice's day 1 twice: sensitivities count 2
	// rows in each of 2 groups.
	p, err := svc.Prepare("SELECT COUNT(*) FROM rows r JOIN twice t ON r.day = t.day", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Plan.Contribution; c.Groups != 2 || c.RowsPerGroup != 2 {
		t.Errorf("contribution %+v, want 2 groups × 2 rows", c)
	}
	for _, sql := range []string{
		"SELECT COUNT(*) FROM days",
		"SELECT COUNT(*) FROM days d JOIN visits v ON v.day = d.day",
		"SELECT COUNT(*) FROM visits v JOIN rows r ON v.day = r.day",
		"SELECT COUNT(*) FROM visits v RIGHT JOIN days d ON v.day = d.day",
		"SELECT COUNT(*) FROM visits v JOIN days d ON v.day < d.day",
		"SELECT COUNT(*) FROM visits v JOIN days d ON v.day = d.name",
		"SELECT COUNT(*) FROM visits v JOIN days d ON v.day = d.day WHERE day = 1",
	} {
		if _, err := svc.Prepare(sql, exactOpts()); err == nil {
			t.Errorf("%s: planned, want a refusal", sql)
		}
	}
	// Without the service's facts, a join is refused.
	if _, err := Prepare(loadCatalog(t, filepath.Join(dir, "catalog.yaml")), duckdb.Dialect, "SELECT COUNT(*) FROM visits v JOIN days d ON v.day = d.day", exactOpts()); err == nil {
		t.Error("a join planned without the public table's values")
	}
}

// TestJoinPrivate checks a join of two private tables of one id space on
// the privacy unit, at ε = 1e20, and the refusals of other private joins.
func TestJoinPrivate(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"visits.csv":   "pid,day\n1,1\n1,2\n2,1\n3,6\n",
		"payments.csv": "pid,euros\n1,10\n2,5\n2,7\n4,100\n",
		"catalog.yaml": `budget: {epsilon: 1e30, delta: 1e-6}
tables:
  visits:
    source: visits.csv
    privacy_unit: pid
    id_space: people
    max_groups_per_unit: 7
    max_rows_per_group: 10
    columns: {pid: {type: int}, day: {type: int, values: [1, 2, 3, 4, 5, 6, 7]}}
  payments:
    source: payments.csv
    privacy_unit: pid
    id_space: people
    max_groups_per_unit: 7
    max_rows_per_group: 10
    columns: {pid: {type: int}, euros: {type: int, lower: 0, upper: 100}}
  other:
    source: payments.csv
    privacy_unit: pid
    max_groups_per_unit: 1
    max_rows_per_group: 1
    columns: {pid: {type: int}, euros: {type: int, lower: 0, upper: 100}}
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	svc, _, _ := newTestService(t, filepath.Join(dir, "catalog.yaml"))
	// Person 1: 2 visits × 1 payment; person 2: 1 visit × 2 payments.
	res, err := svc.Answer(context.Background(), "SELECT COUNT(*), SUM(p.euros) FROM visits v JOIN payments p ON v.pid = p.pid", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := ir.Number(res.Rows[0][0]); n != 4 {
		t.Errorf("COUNT = %v, want 4", res.Rows[0][0])
	}
	if s, _ := ir.Number(res.Rows[0][1]); math.Abs(s-32) > 1e-6 {
		t.Errorf("SUM = %v, want 32", res.Rows[0][1])
	}
	for _, sql := range []string{
		"SELECT COUNT(*) FROM visits v JOIN payments p ON v.day = p.euros",
		"SELECT COUNT(*) FROM visits v JOIN other o ON v.pid = o.pid",
	} {
		if _, err := svc.Prepare(sql, exactOpts()); err == nil {
			t.Errorf("%s: planned, want a refusal", sql)
		}
	}
}

// TestExpressionsInConditions checks numeric expressions in WHERE, CASE and
// FILTER conditions at ε = 1e20, over people.csv (ages 20, 30, NULL, 150
// clamped to 100, 40; scores 1.5, NULL, 2.5, −10 clamped to 0, 3.25). As in
// SQL, LEAST skips NULLs. As
// inside aggregates, an expression reads the clamped values.
func TestExpressionsInConditions(t *testing.T) {
	svc, _, _ := newTestService(t, "testdata/catalog.yaml")
	checkAnswers(t, svc, []answerCase{
		{"product", "SELECT COUNT(*) FROM people WHERE age * 2 > 70", "2"},
		{"sum of columns", "SELECT COUNT(*) FROM people WHERE age + score >= 32", "2"},
		{"least", "SELECT COUNT(*) FROM people WHERE LEAST(age, 35) = 35", "3"},
		{"coalesce", "SELECT COUNT(*) FROM people WHERE COALESCE(score, 0) < 2", "3"},
		{"cast", "SELECT COUNT(*) FROM people WHERE CAST(score AS int) = 0", "1"},
		{"abs", "SELECT COUNT(*) FROM people WHERE ABS(score - 2) <= 0.5", "2"},
		{"remainder", "SELECT COUNT(*) FROM people WHERE age % 20 = 0", "3"},
		{"case and filter", "SELECT SUM(CASE WHEN age / 10 >= 3 THEN 1 ELSE 0 END), COUNT(*) FILTER (WHERE score * 4 = 13) FROM people", "3 1"},
		{"between", "SELECT COUNT(*) FROM people WHERE age * 2 BETWEEN 50 AND 90", "2"},
		{"in", "SELECT COUNT(*) FROM people WHERE age * 2 IN (40, 60)", "2"},
	})
	checkRefusals(t, svc, []struct{ sql, want string }{
		{"SELECT COUNT(*) FROM people WHERE id * 2 > 3", "clamp"},
		{"SELECT COUNT(*) FROM people WHERE age / (age - age) > 1", "divides by"},
		{"SELECT COUNT(*) FROM people WHERE age * 2 = 'x'", "cannot compare"},
	})
}
