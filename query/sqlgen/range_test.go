package sqlgen

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/engine/postgres"
	"github.com/dpstat/dpstat/engine/postgres/pgtest"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/query/parse"
)

// rangeCatalog declares the columns the range test computes over: b a
// large float (its remainders and roundings leave exact arithmetic), s a
// small float, h a float just below 2^53, n a small int, a a nullable int
// and g an int spanning ±(2^53 − 1).
const rangeCatalog = `budget: {epsilon: 10, delta: 1e-6}
tables:
  t:
    source: t.csv
    columns:
      b: {type: float, lower: 0, upper: 9.005e15}
      s: {type: float, lower: -10, upper: 10}
      h: {type: float, lower: 9007199254740000, upper: 9007199254740977}
      n: {type: int, lower: -1000, upper: 1000}
      a: {type: int, lower: 0, upper: 5, nullable: true}
      g: {type: int, lower: -9007199254740991, upper: 9007199254740991}
`

// rangeExprs holds an expression of every scalar kind the IR bounds
// (ir.rawRange), with the corner cases of each: LEAST and GREATEST with
// NULL arguments, remainders and roundings of large doubles, casts.
var rangeExprs = []string{
	"-s", "-g", "b + s", "b - s", "s * n", "s / 3", "n / 7", "g / 3",
	"b % 1.5", "s % 0.3", "n % 7", "g % 7", "h % 1000", "-b % 1.5",
	"LEAST(a, n)", "GREATEST(a, n)", "LEAST(a, 3)", "GREATEST(a, 3)",
	"LEAST(CASE WHEN s > 0 THEN NULL ELSE 0 END, 1)", "GREATEST(CASE WHEN s > 0 THEN NULL ELSE 0 END, -1)",
	"COALESCE(a, n)", "COALESCE(a, 2)", "NULLIF(a, 1)",
	"ABS(s)", "ABS(g)", "FLOOR(s)", "CEIL(s)", "ROUND(s)", "ROUND(h)", "ROUND(s, 2)", "ROUND(h, 1)", "ROUND(b, 3)",
	"CAST(s AS int)", "CAST(h AS int)", "CAST(n AS float)", "CAST(b % 1.5 AS int)", "CAST(ROUND(h, 1) AS int) - 9007199254740000",
	"CASE WHEN s > 0 THEN n ELSE a END", "CASE WHEN s > 0 THEN n END",
}

// rangeFloats and rangeInts are the inputs: every extreme value a double or
// a BIGINT can hold, the integers around 2^53, and the values that made
// the double arithmetic of % and ROUND leave their range.
var (
	rangeFloats = []string{"NULL", "'NaN'", "'Infinity'", "'-Infinity'", "0", "'-0.0'", "0.5", "-0.5", "1.5", "-1.5", "10", "-10",
		"9007199254740991", "9007199254740993", "-9007199254740993", "9000000000000001", "9007199254740977", "9007199254740988",
		"1e-320", "5e-324", "1.7976931348623157e308", "-1.7976931348623157e308", "9.2233720368547758e18"}
	rangeInts = []string{"NULL", "0", "-1", "1", "7", "999", "-1000", "9007199254740991", "9007199254740992", "9007199254740993",
		"-9007199254740993", "9223372036854775807", "-9223372036854775808"}
)

// rangeRows spells the inputs as a VALUES list over the catalog's columns
// in dialect d.
func rangeRows(d engine.Dialect) string {
	nf, ni := len(rangeFloats), len(rangeInts)
	dbl, big := d.TypeName(engine.Double), d.TypeName(engine.Integer)
	f := func(i int) string { return "CAST(" + rangeFloats[i%nf] + " AS " + dbl + ")" }
	n := func(i int) string { return "CAST(" + rangeInts[i%ni] + " AS " + big + ")" }
	var rows []string
	for i := range nf {
		for j := range ni {
			rows = append(rows, "("+strings.Join([]string{f(i), f(i + j), f(7*i + j), n(j), n(i + j), n(3*j + i)}, ", ")+")")
		}
	}
	return "(VALUES " + strings.Join(rows, ", ") + ") AS t(b, s, h, n, a, g)"
}

// rangePlan plans sql over rangeCatalog.
func rangePlan(t *testing.T, sql string) *dpplan.Plan {
	t.Helper()
	p, err := tryRangePlan(t, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return p
}

// tryRangePlan plans sql over rangeCatalog, or says why not.
func tryRangePlan(t *testing.T, sql string) (*dpplan.Plan, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.csv"), []byte("b,s,h,n,a,g\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Parse([]byte(rangeCatalog), dir)
	if err != nil {
		t.Fatal(err)
	}
	q, err := parse.Parse(sql, cat)
	if err != nil {
		return nil, err
	}
	return dpplan.NewPlanDelta(q, cat.Table(q.Table), 1, 1e-6)
}

// TestScalarRangesHoldOnTheEngine evaluates every scalar kind on DuckDB
// over extreme inputs and checks the interval arithmetic against the
// engine: the value as the expression computes it (scalarSQL) lies in the
// range the IR derived (or is NULL where the IR says it can be), and so
// does the value the generated SQL uses (column, which maps it into that
// range). For the whole-number expressions, the group key (keyExpr) is one
// of the plan's keys or NULL.
func TestScalarRangesHoldOnTheEngine(t *testing.T) {
	eng, err := duckdb.Open(duckdb.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	checkScalarRanges(t, eng)
}

// TestScalarRangesHoldOnPostgres is TestScalarRangesHoldOnTheEngine on a
// PostgreSQL test server (skipped where none can start, failed in CI).
func TestScalarRangesHoldOnPostgres(t *testing.T) {
	pg := pgtest.Shared(t)
	eng, err := postgres.Open(context.Background(), postgres.Options{DSN: pg.ReaderDSN()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	checkScalarRanges(t, eng)
}

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

// checkScalarRanges runs rangeExprs over the extreme inputs on eng.
func checkScalarRanges(t *testing.T, eng engine.Engine) {
	d := eng.Dialect()
	from := rangeRows(d)
	ctx := context.Background()
	for _, expr := range rangeExprs {
		t.Run(expr, func(t *testing.T) {
			p := rangePlan(t, "SELECT SUM("+expr+") FROM t")
			if len(p.Query.Derived) != 1 {
				t.Fatalf("want one derived column, got %d", len(p.Query.Derived))
			}
			var name string
			for k := range p.Query.Derived {
				name = k
			}
			c := p.Table.Column(name)
			lo, hi := *c.Lower, *c.Upper
			g := newSQLGen(d, p, dpplan.CleanForm)
			raw, err := g.scalarSQL(p.Query.Derived[name].Expr)
			if err != nil {
				t.Fatal(err)
			}
			col, err := g.column(name)
			if err != nil {
				t.Fatal(err)
			}
			items := []string{raw, col}
			var keyLo, keyHi int64
			// A whole-number expression with few values is a range key
			// (other forms, such as CASE bins, are keys of their own kind).
			kp, err := tryRangePlan(t, "SELECT "+expr+" AS k, COUNT(*) FROM t GROUP BY k")
			if err == nil && kp.Query.Buckets[kp.Query.GroupBy[0]].Kind == ir.RangeBucket {
				b := kp.Query.Buckets[kp.Query.GroupBy[0]]
				keyLo, keyHi = b.KLo, b.KHi
				key, err := newSQLGen(d, kp, dpplan.CleanForm).keyExpr(kp.Query.GroupBy[0])
				if err != nil {
					t.Fatal(err)
				}
				items = append(items, key)
			}
			rows, err := eng.Query(ctx, "SELECT "+strings.Join(items, ", ")+", b, s, h, n, a, g FROM "+from)
			if err != nil {
				t.Fatalf("the engine failed: %v", err)
			}
			for _, row := range rows.Rows {
				if t.Failed() && testing.Short() {
					break
				}
				in := fmt.Sprint(row[len(items):])
				for i, what := range []string{"the expression", "the clamped value"} {
					v := row[i]
					if v == nil {
						if !c.Nullable {
							t.Errorf("%s is NULL for %s, but the IR says it cannot be", what, in)
						}
						continue
					}
					x, ok := ir.Number(v)
					if !ok || !(x >= lo && x <= hi) {
						t.Errorf("%s is %v for %s, outside the derived range [%s, %s]", what, v,
							in, strconv.FormatFloat(lo, 'g', -1, 64), strconv.FormatFloat(hi, 'g', -1, 64))
					}
				}
				if len(items) == 3 && row[2] != nil {
					k, ok := row[2].(int64)
					if !ok || k < keyLo || k > keyHi {
						t.Errorf("the key is %v (%T) for %s, not one of [%d, %d]", row[2], row[2], in, keyLo, keyHi)
					}
				}
			}
		})
	}
}
