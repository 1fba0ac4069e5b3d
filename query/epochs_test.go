package query

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/engine/engines"
	"github.com/dpstat/dpstat/engine/postgres/pgtest"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/query/sqlgen"
	"github.com/dpstat/dpstat/schema"
)

// epochRows are the visits of three people over January to March 2024:
// at most 2 rows per (person, month), up to 6 per person; one row before
// the declared range, which no query may read.
var epochRows = [][3]any{
	{1, "2024-01-03", 10}, {1, "2024-01-20", 20}, {1, "2024-02-02", 30}, {1, "2024-02-28", 40}, {1, "2024-03-31", 50}, {1, "2024-03-01", 60},
	{2, "2024-01-31", 5}, {2, "2024-03-15", 7},
	{3, "2024-02-10", 1}, {3, "2024-02-11", 2}, {3, "2024-03-09", 3},
	{3, "2023-12-31", 99},
}

const epochCatalog = `budget: {epsilon: 1e21}
total_budget: {epsilon: %s}
tables:
  visits:
    source: %s
    privacy_unit: pid
    max_groups_per_unit: 3
    max_rows_per_group: 2
    epoch: {column: day, every: month}
    columns:
      pid: {type: int}
      day: {type: date, lower: 2024-01-01, upper: 2024-03-31}
      amount: {type: int, lower: 0, upper: 100}
`

// epochService writes rows (without those of person drop in month
// dropMonth, when drop > 0) and opens a service over them with a ledger.
func epochService(t *testing.T, drop int, dropMonth string) (*Service, *ledger.Ledger) {
	return epochServiceOn(t, "duckdb", drop, dropMonth, "1e30")
}

func epochServiceTotal(t *testing.T, drop int, dropMonth, total string) (*Service, *ledger.Ledger) {
	return epochServiceOn(t, "duckdb", drop, dropMonth, total)
}

var epochTables atomic.Int64

// epochServiceOn is epochService on engine kind "duckdb" (a CSV file) or
// "postgres" (a test server's table).
func epochServiceOn(t *testing.T, kind string, drop int, dropMonth, total string) (*Service, *ledger.Ledger) {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("pid,day,amount\n")
	for _, r := range epochRows {
		if r[0] == drop && strings.HasPrefix(r[1].(string), dropMonth) {
			continue
		}
		fmt.Fprintf(&b, "%d,%s,%d\n", r[0], r[1], r[2])
	}
	if err := os.WriteFile(filepath.Join(dir, "visits.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	decl := fmt.Sprintf(epochCatalog, total, "visits.csv")
	if kind == "postgres" {
		pg := pgtest.Shared(t)
		name := fmt.Sprintf("epoch_visits_%d", epochTables.Add(1))
		cols := []pgtest.Column{{Name: "pid", Type: schema.Int}, {Name: "day", Type: schema.Date}, {Name: "amount", Type: schema.Int}}
		if err := pg.LoadTable(context.Background(), name, cols, []byte(b.String())); err != nil {
			t.Fatal(err)
		}
		decl = strings.Replace(fmt.Sprintf(epochCatalog, total, "public."+name), "tables:",
			fmt.Sprintf("engine: {kind: postgres, dsn: %q, max_connections: 1}\ntables:", pg.ReaderDSN()), 1)
	}
	if err := os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(decl), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load(filepath.Join(dir, "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Open(context.Background(), engines.Spec(cat))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	led, err := ledger.Open(filepath.Join(dir, "ledger.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	svc, err := NewService(context.Background(), cat, eng, led)
	if err != nil {
		t.Fatal(err)
	}
	return svc, led
}

func epochOpts() Options {
	return Options{Epsilon: 1e20, Confidence: 0.95, Analyst: "ann"}
}

// epochQueries are the shapes run over the epoch table, with the epochs
// each reads and its exact answer on the whole table (one row, or one row
// per month), or the words of its refusal.
var epochQueries = []struct {
	sql     string
	epochs  string
	want    [][]float64
	refusal string
}{
	{"SELECT COUNT(*) FROM visits", "2024-01..2024-03", [][]float64{{11}}, ""},
	{"SELECT COUNT(*), SUM(amount) FROM visits WHERE day >= DATE '2024-02-01' AND day < DATE '2024-03-01'", "2024-02", [][]float64{{4, 73}}, ""},
	{"SELECT SUM(amount) FROM visits WHERE date_trunc('month', day) = DATE '2024-03-01'", "2024-03", [][]float64{{120}}, ""},
	{"SELECT COUNT(*) FROM visits WHERE day BETWEEN DATE '2024-01-15' AND DATE '2024-02-05' OR day = DATE '2024-01-31'", "2024-01..2024-02", [][]float64{{3}}, ""},
	{"SELECT COUNT(*) FROM visits WHERE amount > 4", "2024-01..2024-03", [][]float64{{8}}, ""},
	{"SELECT date_trunc('month', day) AS m, COUNT(*), COUNT(DISTINCT pid) FROM visits GROUP BY date_trunc('month', day)", "2024-01..2024-03",
		[][]float64{{3, 2}, {4, 2}, {4, 3}}, ""},
	{"SELECT COUNT(DISTINCT pid) FROM visits WHERE day >= DATE '2024-03-01'", "2024-03", [][]float64{{3}}, ""},
	{"SELECT COUNT(DISTINCT pid) FROM visits", "", nil, "COUNT(DISTINCT pid) over 3 months (2024-01..2024-03)"},
	{"SELECT COUNT(*) FROM visits WHERE day < DATE '2024-01-01'", "", nil, "leave no date within its declared range (2024-01-01 to 2024-03-31)"},
	{"SELECT COUNT(*) FROM (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid) AS p", "2024-01..2024-03", [][]float64{{7}}, ""},
	{"SELECT SUM(LEAST(GREATEST(n, 0), 6)), SUM(LEAST(GREATEST(s, 0), 200)) FROM (SELECT pid, COUNT(*) AS n, SUM(amount) AS s FROM visits WHERE day >= DATE '2024-02-01' GROUP BY pid) AS p", "2024-02..2024-03", [][]float64{{8, 193}}, ""},
	{"WITH pp AS (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid) SELECT COUNT(*) FROM pp WHERE n >= 2", "2024-01..2024-03", [][]float64{{4}}, ""},
	{"SELECT COUNT(*), SUM(LEAST(GREATEST(n, 0), 2)) FROM (SELECT pid, day, COUNT(*) AS n FROM visits GROUP BY pid, day) AS p", "2024-01..2024-03", [][]float64{{11, 11}}, ""},
	{"SELECT COUNT(DISTINCT pid) FROM (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid) AS p", "", nil, "COUNT(DISTINCT pid) over 3 months (2024-01..2024-03) of a subquery grouped by the person"},
}

// numbers reads the aggregates of a result (keys left out).
func numbers(res *Result) [][]float64 {
	var out [][]float64
	for i, row := range res.Rows {
		var r []float64
		for j, v := range row {
			if res.CI[i][j] == nil {
				continue
			}
			x, _ := ir.Number(v)
			r = append(r, x)
		}
		out = append(out, r)
	}
	return out
}

// TestEpochQueries: every shape over an epoch table reads the epochs its
// conditions allow and no row outside them, is charged in each of them,
// bounds contributions per (person, month) (person 1 has 6 rows, 2 per
// month, all counted), and is exact at ε = 1e20; refusals are free.
func TestEpochQueries(t *testing.T) { testEpochQueries(t, "duckdb") }

// TestEpochQueriesPostgres runs the same shapes on a PostgreSQL table.
func TestEpochQueriesPostgres(t *testing.T) { testEpochQueries(t, "postgres") }

func testEpochQueries(t *testing.T, kind string) {
	svc, led := epochServiceOn(t, kind, 0, "", "1e30")
	for _, q := range epochQueries {
		t.Run(q.sql, func(t *testing.T) {
			before, _ := led.History(ledger.Key{}, 0)
			res, err := svc.Answer(context.Background(), q.sql, epochOpts())
			if q.refusal != "" {
				after, _ := led.History(ledger.Key{}, 0)
				if !isRefusal(err) || !strings.Contains(err.Error(), q.refusal) || len(after) != len(before) {
					t.Fatalf("error %v (%d charges); want a free refusal saying %q", err, len(after)-len(before), q.refusal)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Budget.Epochs != q.epochs {
				t.Errorf("charged in %q; want %q", res.Budget.Epochs, q.epochs)
			}
			if got := numbers(res); fmt.Sprint(got) != fmt.Sprint(q.want) {
				t.Errorf("answer %v; want %v", got, q.want)
			}
			ex, err := svc.Answer(context.Background(), "EXPLAIN "+q.sql, epochOpts())
			if err != nil {
				t.Fatal(err)
			}
			text := fmt.Sprint(ex.Rows)
			if !strings.Contains(text, "charged in each of the") || !strings.Contains(text, q.epochs) || !strings.Contains(text, "the privacy unit is (person, month of day)") ||
				!strings.Contains(text, "each person's rows of one month are protected at ε = 1e+30 (the total budget per month, every analyst together), and a person present in all 3 declared months (2024-01..2024-03) has, over all of them, at most 3 × 1e+30 = 3e+30") {
				t.Errorf("EXPLAIN does not state the epochs:\n%s", text)
			}
		})
	}
}

// TestEpochNeighbours: the neighbour drops one person's rows of one month
// (the unit). A query that does not read that month answers the same; one
// that does changes by at most the plan's bound on one unit's
// contribution, here exactly the rows dropped (the bounds do not bind).
func TestEpochNeighbours(t *testing.T) {
	full, _ := epochService(t, 0, "")
	for _, drop := range []struct {
		pid   int
		month string
	}{{1, "2024-02"}, {1, "2024-03"}, {2, "2024-01"}, {3, "2024-02"}} {
		nb, _ := epochService(t, drop.pid, drop.month)
		for _, q := range epochQueries {
			if q.refusal != "" {
				if _, err := nb.Answer(context.Background(), q.sql, epochOpts()); !isRefusal(err) {
					t.Errorf("%s on D − (%d, %s): %v; want the same refusal as on D", q.sql, drop.pid, drop.month, err)
				}
				continue
			}
			d, err1 := full.Answer(context.Background(), q.sql, epochOpts())
			n, err2 := nb.Answer(context.Background(), q.sql, epochOpts())
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: %v / %v", q.sql, err1, err2)
			}
			reads := strings.Contains(q.epochs, drop.month) || (q.epochs == "2024-01..2024-03") || (q.epochs == "2024-01..2024-02" && drop.month <= "2024-02")
			dn, nn := numbers(d), numbers(n)
			if len(dn) != len(nn) {
				t.Fatalf("%s: %d rows on D, %d on D − (%d, %s)", q.sql, len(dn), len(nn), drop.pid, drop.month)
			}
			for i := range dn {
				for j := range dn[i] {
					diff := dn[i][j] - nn[i][j]
					if !reads && diff != 0 {
						t.Errorf("%s: changed by %g when person %d's rows of %s, which it does not read, were dropped", q.sql, diff, drop.pid, drop.month)
					}
					// One unit holds at most 2 rows of amounts ≤ 100.
					if diff < 0 || diff > 200 || (strings.Contains(q.sql, "COUNT") && j == 0 && diff > 2) {
						t.Errorf("%s: changed by %g when person %d's rows of %s were dropped: more than one (person, month) contributes", q.sql, diff, drop.pid, drop.month)
					}
				}
			}
		}
	}
}

// TestEpochBudgets: each month has a total of 2.5e20; queries of 1e20
// charge only the months they read, new months start full, and a query
// that a spent month cannot pay is refused, free, naming it.
func TestEpochBudgets(t *testing.T) {
	svc, led := epochServiceTotal(t, 0, "", "2.5e20")
	ask := func(where string) (*Result, error) {
		return svc.Answer(context.Background(), "SELECT COUNT(*), SUM(amount) FROM visits WHERE "+where+" AND amount < 1000", epochOpts())
	}
	for i, w := range []string{"day IS NOT NULL", "day < DATE '2024-03-01'"} {
		if _, err := ask(w); err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
	}
	// January and February have 2e20 spent of 2.5e20: a query reading
	// them is refused; March has 1e20.
	n := func() int { h, _ := led.History(ledger.Key{}, 0); return len(h) }
	before := n()
	// A dry run asks the same check of the months the run would charge.
	p, err := svc.Prepare("SELECT COUNT(*), SUM(amount) FROM visits WHERE day >= DATE '2024-01-15' AND amount < 1000", epochOpts())
	if err != nil {
		t.Fatal(err)
	}
	key, _ := svc.budgetOf(p.decl, epochOpts().Analyst)
	var ex *accounting.ExceededError
	if err := svc.CheckCost(p, key, p.Noise.Cost); !errors.As(err, &ex) || !strings.Contains(err.Error(), "spent in epochs 2024-01..2024-02") {
		t.Fatalf("CheckCost over spent months: %v; want the run's refusal naming 2024-01..2024-02", err)
	}
	_, err = ask("day >= DATE '2024-01-15'")
	if !errors.As(err, &ex) || !strings.Contains(err.Error(), "spent in epochs 2024-01..2024-02") || n() != before {
		t.Fatalf("query over spent months: %v (%d charges); want a free refusal naming 2024-01..2024-02", err, n()-before)
	}
	if _, err := ask("day >= DATE '2024-03-02'"); err != nil {
		t.Fatalf("March has budget left: %v", err)
	}
	if _, err := led.Verify(); err != nil {
		t.Fatal(err)
	}
}

func isRefusal(err error) bool {
	var r *ir.RefusedError
	return errors.As(err, &r)
}

// TestEpochPreAggregateNeighbours: a per-person pre-aggregation on an
// epoch table groups by (person, month), so dropping one person's rows of
// one month (the unit) removes exactly one pre-aggregated row, and its
// rows from the per-unit counts, however many other months that person
// has; at ε = 1e20 the answers move by exactly that, within one unit's
// bound (one pre-aggregated row of at most 2 rows).
func TestEpochPreAggregateNeighbours(t *testing.T) {
	const sql = "SELECT COUNT(*), SUM(LEAST(GREATEST(n, 0), 6)) FROM (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid) AS p"
	full, _ := epochService(t, 0, "")
	d, err := full.Answer(context.Background(), sql, epochOpts())
	if err != nil {
		t.Fatal(err)
	}
	ex, err := full.Answer(context.Background(), "EXPLAIN "+sql, epochOpts())
	if err != nil {
		t.Fatal(err)
	}
	if text := fmt.Sprint(ex.Rows); !strings.Contains(text, "grouped by pid, date_trunc('month', day)") || !strings.Contains(text, "each row is one (person, month) unit") {
		t.Errorf("EXPLAIN does not say the pre-aggregation is grouped by (person, month):\n%s", text)
	}
	for _, c := range []struct {
		pid   int
		month string
		rows  float64
	}{{1, "2024-02", 2}, {1, "2024-03", 2}, {2, "2024-01", 1}, {3, "2024-03", 1}} {
		nb, _ := epochService(t, c.pid, c.month)
		n, err := nb.Answer(context.Background(), sql, epochOpts())
		if err != nil {
			t.Fatal(err)
		}
		dn, nn := numbers(d), numbers(n)
		if got := [2]float64{dn[0][0] - nn[0][0], dn[0][1] - nn[0][1]}; got != [2]float64{1, c.rows} || got[1] > 2 {
			t.Errorf("dropping person %d's rows of %s moved the answer by %v; want [1 %g]: one (person, month) pre-aggregated row", c.pid, c.month, got, c.rows)
		}
	}
}

// TestEpochPreAggregateJoinRefused: a per-person pre-aggregation that
// joins another private table without equating the months would pair one
// person's rows of different months inside one pre-aggregated row; it is
// refused before any charge, naming the equality to add.
func TestEpochPreAggregateJoinRefused(t *testing.T) {
	decl := strings.Replace(fmt.Sprintf(epochCatalog, "1e30", "visits.csv"), "    privacy_unit: pid\n", "    privacy_unit: pid\n    id_space: people\n", 1) +
		"  payments:\n    source: payments.csv\n    privacy_unit: pid\n    id_space: people\n    max_groups_per_unit: 1\n    max_rows_per_group: 1\n" +
		"    epoch: {column: day, every: month}\n    columns: {pid: {type: int}, day: {type: date, lower: 2024-01-01, upper: 2024-03-31}}\n"
	dir := t.TempDir()
	for _, f := range []string{"visits.csv", "payments.csv"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("pid,day,amount\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := catalog.Parse([]byte(decl), dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Prepare(cat, duckdb.Dialect, "SELECT COUNT(*) FROM (SELECT v.pid, COUNT(*) AS n FROM visits v JOIN payments p ON v.pid = p.pid GROUP BY v.pid) AS q", epochOpts())
	if !isRefusal(err) || !strings.Contains(err.Error(), "equate the epochs in the join: ON … AND date_trunc('month', v.day) = date_trunc('month', p.day)") {
		t.Fatalf("error %v; want a refusal naming the equality of the months to add to the join inside the subquery", err)
	}
}

// TestReplanKeepsEpochs: a plan made again at another ε (an accuracy
// search, a top-up of released answers) reads, bounds and is charged in
// the same epochs: the epochs are the query's, not the ε's.
func TestReplanKeepsEpochs(t *testing.T) {
	svc, _ := epochService(t, 0, "")
	p, err := svc.Prepare("SELECT COUNT(*), SUM(amount) FROM visits WHERE day >= DATE '2024-02-01' AND amount < 1000", epochOpts())
	if err != nil {
		t.Fatal(err)
	}
	if p.Plan.Epochs == nil {
		t.Fatal("the plan reads no epochs")
	}
	re, err := p.Plan.Replan(p.Plan.Table, 0.5, p.Opts.Delta)
	if err != nil {
		t.Fatal(err)
	}
	if re.Epochs == nil || *re.Epochs != *p.Plan.Epochs || re.EpochColumn != p.Plan.EpochColumn || re.EpochEvery != p.Plan.EpochEvery || !reflect.DeepEqual(re.DeclaredEpochs, p.Plan.DeclaredEpochs) {
		t.Fatalf("Replan reads epochs %v (%s by %s), want %v (%s by %s)", re.Epochs, re.EpochColumn, re.EpochEvery, p.Plan.Epochs, p.Plan.EpochColumn, p.Plan.EpochEvery)
	}
	text, err := sqlgen.SQL(re, p.dialect)
	if err != nil {
		t.Fatal(err)
	}
	if text != p.SQL {
		t.Errorf("the statement at another ε differs:\n%s\nwant\n%s", text, p.SQL)
	}
}
