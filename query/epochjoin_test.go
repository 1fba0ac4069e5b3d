package query

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/engines"
	"github.com/dpstat/dpstat/ledger"
)

// epochPayments are the payments of the people of epochRows, in the same
// id space and by the same months: person 1 pays twice in January and
// twice in February, person 2 in February (no visit that month), person 3
// in March, and twice outside the declared range (one on the day of
// person 3's visit outside it); person 4 never visits.
var epochPayments = [][3]any{
	{1, "2024-01-05", 100}, {1, "2024-01-20", 40}, {1, "2024-02-10", 200}, {1, "2024-02-11", 300},
	{2, "2024-02-01", 50},
	{3, "2024-03-09", 30}, {3, "2024-04-02", 999}, {3, "2023-12-31", 88},
	{4, "2024-01-01", 10},
}

const epochJoinCatalog = `budget: {epsilon: 1e30}
total_budget: {epsilon: 1e30}
tables:
  visits:
    source: visits.csv
    privacy_unit: pid
    id_space: people
    max_groups_per_unit: %d
    max_rows_per_group: %d
    epoch: {column: day, every: month}
    columns:
      pid: {type: int}
      day: {type: date, lower: 2024-01-01, upper: 2024-03-31}
      amount: {type: int, lower: 0, upper: 100}
  payments:
    source: payments.csv
    privacy_unit: pid
    id_space: people
    max_groups_per_unit: 1
    max_rows_per_group: 1
    epoch: {column: paid, every: month}
    columns:
      pid: {type: int}
      paid: {type: date, lower: 2024-01-01, upper: 2024-03-31}
      amount: {type: int, lower: 0, upper: 1000}
`

// epochJoinService opens a service over the visits and payments, with
// visits' bounds groups and rows, without person drop's rows of month
// dropMonth in both tables (the unit: one person's rows of one month)
// when drop > 0.
func epochJoinService(t *testing.T, groups, rows, drop int, dropMonth string) (*Service, *ledger.Ledger) {
	t.Helper()
	return epochJoinServiceOf(t, fmt.Sprintf(epochJoinCatalog, groups, rows), drop, dropMonth)
}

// epochJoinServiceOf is epochJoinService over the catalog text decl.
func epochJoinServiceOf(t *testing.T, decl string, drop int, dropMonth string) (*Service, *ledger.Ledger) {
	t.Helper()
	dir := t.TempDir()
	write := func(name, header string, data [][3]any) {
		var b strings.Builder
		b.WriteString(header)
		for _, r := range data {
			if r[0] == drop && strings.HasPrefix(r[1].(string), dropMonth) {
				continue
			}
			fmt.Fprintf(&b, "%d,%s,%d\n", r[0], r[1], r[2])
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("visits.csv", "pid,day,amount\n", epochRows[:])
	write("payments.csv", "pid,paid,amount\n", epochPayments)
	cat, err := catalog.Parse([]byte(decl), dir)
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

// epochJoinQueries join the visits and payments of one person and one
// month, with the epochs each reads and its exact answer when no bound
// binds (visits' bounds 3 groups, 4 rows per group), or its refusal.
var epochJoinQueries = []struct {
	sql     string
	epochs  string
	want    [][]float64
	refusal string
}{
	// Pairs of one person's visit and payment of one month: person 1 has
	// 2×2 in January and 2×2 in February, person 3 1×1 in March.
	{"SELECT COUNT(*), SUM(p.amount) FROM visits v JOIN payments p ON v.pid = p.pid AND date_trunc('month', v.day) = date_trunc('month', p.paid)", "2024-01..2024-03", [][]float64{{9, 1310}}, ""},
	{"SELECT date_trunc('month', v.day) AS m, COUNT(*) FROM visits v JOIN payments p ON v.pid = p.pid AND date_trunc('month', v.day) = date_trunc('month', p.paid) GROUP BY date_trunc('month', v.day)", "2024-01..2024-03", [][]float64{{4}, {4}, {1}}, ""},
	{"SELECT COUNT(*) FROM visits v JOIN payments p USING (pid) WHERE v.day >= DATE '2024-02-01' AND date_trunc('month', v.day) = date_trunc('month', p.paid)", "", nil, "equate the epochs in the join: ON … AND date_trunc('month', v.day) = date_trunc('month', p.paid)"},
	{"SELECT COUNT(*) FROM visits v JOIN payments p ON v.pid = p.pid AND date_trunc('month', v.day) = date_trunc('month', p.paid) WHERE v.day >= DATE '2024-02-01'", "2024-02..2024-03", [][]float64{{5}}, ""},
	// The same day: person 1 on 2024-01-20, person 3 on 2024-03-09 (and
	// on 2023-12-31, outside the declared range, never read).
	{"SELECT COUNT(*) FROM visits v JOIN payments p ON v.pid = p.pid AND v.day = p.paid", "2024-01..2024-03", [][]float64{{2}}, ""},
	{"SELECT COUNT(*) FROM visits v JOIN payments p ON v.pid = p.pid AND date_trunc('day', v.day) = date_trunc('day', p.paid)", "2024-01..2024-03", [][]float64{{2}}, ""},
	// Every visit, with its month's payments: 9 pairs and 6 visits
	// without a payment in their month.
	{"SELECT COUNT(*), COUNT(p.amount) FROM visits v LEFT JOIN payments p ON v.pid = p.pid AND date_trunc('month', v.day) = date_trunc('month', p.paid)", "2024-01..2024-03", [][]float64{{15, 9}}, ""},
	// A per-person pre-aggregation of the join groups by (person, month):
	// (1, January) with 4 pairs, (1, February) 4, (3, March) 1.
	{"SELECT COUNT(*), SUM(LEAST(GREATEST(n, 0), 20)) FROM (SELECT v.pid, COUNT(*) AS n FROM visits v JOIN payments p ON v.pid = p.pid AND date_trunc('month', v.day) = date_trunc('month', p.paid) GROUP BY v.pid) AS s", "2024-01..2024-03", [][]float64{{3, 9}}, ""},
	{"SELECT COUNT(*), SUM(LEAST(GREATEST(n, 0), 20)) FROM (SELECT v.pid, COUNT(*) AS n FROM visits v JOIN payments p ON v.pid = p.pid AND v.day = p.paid WHERE v.day >= DATE '2024-02-01' GROUP BY v.pid) AS s", "2024-02..2024-03", [][]float64{{1, 1}}, ""},
	{"SELECT COUNT(*) FROM (SELECT v.pid, COUNT(*) AS n FROM visits v JOIN payments p ON v.pid = p.pid GROUP BY v.pid) AS s", "", nil, "equate the epochs in the join"},
	{"SELECT COUNT(*) FROM visits v JOIN payments p ON v.pid = p.pid", "", nil, "equate the epochs in the join: ON … AND date_trunc('month', v.day) = date_trunc('month', p.paid) (or v.day = p.paid, the same date)"},
	{"SELECT COUNT(*) FROM visits v JOIN payments p ON v.pid = p.pid AND date_trunc('year', v.day) = date_trunc('year', p.paid)", "", nil, "equate the epochs in the join"},
	{"SELECT COUNT(*) FROM visits v JOIN payments p ON v.pid = p.pid AND v.day = p.paid + 0", "", nil, "JOIN payments ON: compare columns"},
	{"SELECT COUNT(*) FROM visits v JOIN payments p ON v.pid = p.pid AND date_trunc('month', v.day) = p.paid", "", nil, "this one compares date_trunc('month', …) with a column"},
	{"SELECT COUNT(*) FROM visits v JOIN payments p ON v.pid = p.pid AND date_trunc('fortnight', v.day) = date_trunc('fortnight', p.paid)", "", nil, `date_trunc("fortnight", …): want one of day, week, month, quarter, year`},
	{"SELECT COUNT(DISTINCT v.pid) FROM visits v JOIN payments p ON v.pid = p.pid AND v.day = p.paid", "", nil, "COUNT(DISTINCT pid) over 3 months"},
	{"SELECT COUNT(*) FROM visits v JOIN payments p ON v.pid = p.pid AND date_trunc('month', v.amount) = date_trunc('month', p.amount)", "", nil, "JOIN p ON date_trunc('month', amount): want a date or timestamp column with declared bounds"},
	{"SELECT COUNT(*) FROM visits v JOIN payments p ON v.pid = p.pid AND date_trunc('month', v.day, 'UTC') = date_trunc('month', p.paid)", "", nil, "write a truncated date as date_trunc('month', p.day)"},
}

// TestEpochJoin: a join of two private tables with epochs that equates
// the persons and the epochs reads only the epochs its conditions allow
// (rows of either table outside them, or outside the declared range, are
// never read), is charged in each, and is exact at ε = 1e20; every other
// join is refused, free, naming the equality that would be accepted.
func TestEpochJoin(t *testing.T) {
	svc, led := epochJoinService(t, 3, 4, 0, "")
	for _, q := range epochJoinQueries {
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
		})
	}
	ex, err := svc.Answer(context.Background(), "EXPLAIN "+epochJoinQueries[0].sql, epochOpts())
	if err != nil {
		t.Fatal(err)
	}
	if text := fmt.Sprint(ex.Rows); !strings.Contains(text, "on pid = p.pid AND date_trunc('month', day) = date_trunc('month', p.paid)") ||
		!strings.Contains(text, "every joined row is one (person, month)'s, both sides of one month; before the join each (person, month) keeps at most 4 row(s)") {
		t.Errorf("EXPLAIN does not say the join is bounded per (person, month):\n%s", text)
	}
}

// TestTruncatedJoinWithoutEpochs: date_trunc equalities in a join of
// private tables that declare no epoch. The engine clamps a date into its
// declared bounds before truncating it (so that the expression is total);
// a row dated outside them must match nothing, not the first or last
// month: person 3's payments of December 2023 and April 2024 and its
// visit outside the range never pair. The answers equal those of the
// same tables with epochs, whose filters drop those rows.
func TestTruncatedJoinWithoutEpochs(t *testing.T) {
	var plain []string
	for _, line := range strings.Split(fmt.Sprintf(epochJoinCatalog, 100, 100), "\n") {
		if !strings.Contains(line, "epoch:") {
			plain = append(plain, line)
		}
	}
	svc, _ := epochJoinServiceOf(t, strings.Join(plain, "\n"), 0, "")
	withEpochs, _ := epochJoinService(t, 100, 100, 0, "")
	for _, sql := range []string{
		"SELECT COUNT(*), SUM(p.amount) FROM visits v JOIN payments p ON v.pid = p.pid AND date_trunc('month', v.day) = date_trunc('month', p.paid)",
		"SELECT COUNT(*) FROM visits v JOIN payments p ON v.pid = p.pid AND date_trunc('day', v.day) = date_trunc('day', p.paid)",
	} {
		res, err := svc.Answer(context.Background(), sql, epochOpts())
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		want, err := withEpochs.Answer(context.Background(), sql, epochOpts())
		if err != nil {
			t.Fatalf("%s with epochs: %v", sql, err)
		}
		if got, w := fmt.Sprint(numbers(res)), fmt.Sprint(numbers(want)); got != w {
			t.Errorf("%s: answer %s without epochs; want %s, as with epochs (rows dated outside the declared bounds match nothing)", sql, got, w)
		}
	}
}

// TestEpochJoinBoundsPerEpoch: with bounds that bind (1 group, 2 rows per
// group: each (person, month) keeps 2 rows of each table before the join
// and 2 joined rows), each month's count is exact, in five runs of their
// own: which rows of one person are kept in January never depends on
// that person's rows of other months. Bounded per person over all
// months, person 1's 2 kept visits of 6 would fall in January, February
// or March at random (and the counts with them).
func TestEpochJoinBoundsPerEpoch(t *testing.T) {
	svc, _ := epochJoinService(t, 1, 2, 0, "")
	for _, c := range []struct{ sql, want string }{
		{"SELECT date_trunc('month', v.day) AS m, COUNT(*) FROM visits v JOIN payments p ON v.pid = p.pid AND date_trunc('month', v.day) = date_trunc('month', p.paid) GROUP BY date_trunc('month', v.day)", "[[2] [2] [1]]"},
		// Inside a per-person pre-aggregation each (person, month) keeps
		// 2 rows of each table (1 × 2 declared): 2 × 2 pairs in January
		// and February, 1 in March.
		{"SELECT SUM(LEAST(GREATEST(n, 0), 20)) FROM (SELECT v.pid, COUNT(*) AS n FROM visits v JOIN payments p ON v.pid = p.pid AND date_trunc('month', v.day) = date_trunc('month', p.paid) GROUP BY v.pid) AS s", "[[9]]"},
	} {
		for i := 0; i < 5; i++ {
			// Another ε each time: a run of its own, not the stored answer.
			res, err := svc.Answer(context.Background(), c.sql, Options{Epsilon: 1e20 * float64(1+i), Confidence: 0.95, Analyst: "ann", Fresh: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Repeated || res.Derived != nil {
				t.Fatalf("run %d was not a run of its own", i)
			}
			if got := fmt.Sprint(numbers(res)); got != c.want {
				t.Fatalf("%s, run %d: %s; want %s", c.sql, i, got, c.want)
			}
		}
	}
}

// TestEpochJoinNeighbours: the neighbour drops one person's rows of one
// month from both tables (the unit). Every accepted join that does not
// read that month answers the same; one that does changes by at most one
// unit's bounded contribution (4 joined rows per group, payments of at
// most 1000 each), and only in that month's group.
func TestEpochJoinNeighbours(t *testing.T) {
	full, _ := epochJoinService(t, 3, 4, 0, "")
	for _, drop := range []struct {
		pid   int
		month string
	}{{1, "2024-01"}, {1, "2024-02"}, {3, "2024-03"}, {2, "2024-02"}} {
		nb, _ := epochJoinService(t, 3, 4, drop.pid, drop.month)
		for _, q := range epochJoinQueries {
			if q.refusal != "" {
				continue
			}
			d, err1 := full.Answer(context.Background(), q.sql, epochOpts())
			n, err2 := nb.Answer(context.Background(), q.sql, epochOpts())
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: %v / %v", q.sql, err1, err2)
			}
			dn, nn := numbers(d), numbers(n)
			if len(dn) != len(nn) {
				t.Fatalf("%s: %d rows on D, %d on D − (%d, %s)", q.sql, len(dn), len(nn), drop.pid, drop.month)
			}
			reads := q.epochs == "2024-01..2024-03" || drop.month >= "2024-02"
			grouped := len(dn) == 3
			for i := range dn {
				for j := range dn[i] {
					diff := dn[i][j] - nn[i][j]
					inGroup := !grouped || fmt.Sprintf("2024-%02d", i+1) == drop.month
					if (!reads || !inGroup) && diff != 0 {
						t.Errorf("%s: output %d.%d changed by %g when person %d's rows of %s, which it does not hold, were dropped", q.sql, i, j, diff, drop.pid, drop.month)
					}
					if diff < 0 || diff > 4000 || (j == 0 && diff > 4) {
						t.Errorf("%s: output %d.%d changed by %g when person %d's rows of %s were dropped: more than one (person, month) contributes", q.sql, i, j, diff, drop.pid, drop.month)
					}
				}
			}
		}
	}
}
