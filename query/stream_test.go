//go:build duckdb_arrow

package query

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
)

// sqlOnly is an engine without StreamBatches: its service runs the SQL
// forms only.
type sqlOnly struct {
	engine.Engine
	engine.Registrar
}

// streamPeople are the persons of the streaming tests (pid → rows of
// g,c,v,x): below, inside and above the unit's declared bounds, on both
// sides of range boundaries, with NULLs, and with pairs of more than L∞
// rows whose values are all equal (any choice of rows sums the same), so
// that with L0 = 2 every answer is exact whatever the random choice.
var streamPeople = []struct {
	pid  string
	rows []string
}{
	{"-5", []string{"1,a,3,2.5", "1,a,3,2.5", "1,a,3,2.5", "4,b,,"}},
	{"0", []string{"1,b,1,1", "2,a,,7.25"}},
	{"7", []string{"3,a,4,", "3,a,4,", "3,a,4,"}},
	{"65535", []string{"2,b,10,100", "2,b,9,0"}},
	{"65536", []string{"3,a,5,50", "4,b,,", "4,b,6,1e300"}},
	{"300000", []string{"1,a,7,3", "1,a,7,3", "1,a,7,3", "1,a,7,3"}},
	{"300001", []string{"2,a,,", "2,a,,", "2,a,,"}},
	{"999999", []string{"4,b,0,0"}},
	{"1000000", []string{"2,a,2,2", "3,b,3,3"}},
	{"2000000", []string{"1,b,10,99"}},
}

const streamCatalog = `budget: {epsilon: 1e30}
tables:
  t:
    source: t.csv
    privacy_unit: pid
    clustered_by_unit: true
    max_groups_per_unit: 2
    max_rows_per_group: %d
    columns:
      pid: {type: int, lower: 0, upper: 1000000}
      g:   {type: int, values: [1, 2, 3, 4]}
      c:   {type: text, values: [a, b]}
      v:   {type: int, lower: 0, upper: 10}
      x:   {type: float, lower: 0, upper: 100}
`

var streamQueries = []string{
	"SELECT g, COUNT(*), SUM(v), AVG(x), COUNT(x) FROM t GROUP BY g",
	"SELECT g, VAR_POP(v), SUM(x), AVG(v) FROM t WHERE v > 1 GROUP BY g",
	"SELECT g, COUNT(DISTINCT pid), COUNT(*) FROM t GROUP BY g",
	"SELECT c, g, COUNT(*), SUM(v), SUM(x) FROM t GROUP BY c, g",
	"SELECT c, AVG(v) FROM t GROUP BY c",
	"SELECT COUNT(*), SUM(x) FROM t",
}

// streamCSV writes the persons' rows, without skip, sorted by pid
// (clustered) or shuffled row by row with a fixed seed. With constant,
// each person's non-NULL v and x are the person's first (any one value
// per pair, L∞ = 1, then sums the same).
func streamCSV(skip string, clustered, constant bool) string {
	var lines []string
	for _, p := range streamPeople {
		if p.pid == skip {
			continue
		}
		first := []string{"", ""}
		for _, r := range p.rows {
			f := strings.Split(r, ",")
			for i, v := range f[2:] {
				if first[i] == "" {
					first[i] = v
				}
				if constant && v != "" {
					f[2+i] = first[i]
				}
			}
			lines = append(lines, p.pid+","+strings.Join(f, ","))
		}
	}
	if !clustered {
		rand.New(rand.NewPCG(1, 2)).Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	}
	return "pid,g,c,v,x\n" + strings.Join(lines, "\n") + "\n"
}

// streamServices returns a service that streams and one that runs the SQL
// forms, over one engine and the same files.
func streamServices(t *testing.T, cat, data string) (stream, sql *Service) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"t.csv": data, "catalog.yaml": cat} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := loadCatalog(t, filepath.Join(dir, "catalog.yaml"))
	eng, err := duckdb.Open(duckdb.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	if stream, err = NewService(context.Background(), c, eng, &fakeLedger{}); err != nil {
		t.Fatal(err)
	}
	if sql, err = NewService(context.Background(), c, sqlOnly{eng, eng}, &fakeLedger{}); err != nil {
		t.Fatal(err)
	}
	return stream, sql
}

// observeStreams counts, while the test runs, the ranges answered by the
// streaming form and those read again with SQL.
func observeStreams(t *testing.T) (streamed, reread *int) {
	var s, r int
	obs := func(ok bool) {
		if ok {
			s++
		} else {
			r++
		}
	}
	streamObserved.Store(&obs)
	t.Cleanup(func() { streamObserved.Store(nil) })
	return &s, &r
}

// exactOf reads query q's exact statistics from svc in form f.
func exactOf(t *testing.T, svc *Service, q string, f dpplan.Form) string {
	t.Helper()
	p, err := svc.Prepare(q, exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	if !streamable(p) {
		t.Fatalf("%s: not streamable", q)
	}
	rows, err := svc.queryRanges(context.Background(), p, f, "t")
	if err != nil {
		t.Fatal(err)
	}
	ex, err := p.Plan.ReadExactForm(rows, f)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(ex.Stats)
}

// TestStreamAgreesWithSQL: on a table declared clustered_by_unit, the
// streaming form's exact statistics equal the ranged SQL form's, in the
// clean and the integer form, for L∞ = 1 and 2, on the file written in
// the unit's order (every range streamed) and on the same rows shuffled
// (the declaration is false: ranges are read again with SQL, the answers
// are the same); the released answers at ε = 1e20 agree too.
func TestStreamAgreesWithSQL(t *testing.T) {
	for _, limit := range []int{1, 2} {
		for _, clustered := range []bool{true, false} {
			t.Run(fmt.Sprintf("L∞=%d/clustered=%v", limit, clustered), func(t *testing.T) {
				streamed, reread := observeStreams(t)
				st, sq := streamServices(t, fmt.Sprintf(streamCatalog, limit), streamCSV("", clustered, limit == 1))
				for _, q := range streamQueries {
					for _, f := range []dpplan.Form{dpplan.CleanForm, dpplan.IntegerForm} {
						if got, want := exactOf(t, st, q, f), exactOf(t, sq, q, f); got != want {
							t.Errorf("%s, form %v: streaming %s, SQL %s", q, f, got, want)
						}
					}
					a, err := st.Answer(context.Background(), q, exactOpts())
					if err != nil {
						t.Fatal(err)
					}
					b, err := sq.Answer(context.Background(), q, exactOpts())
					if err != nil {
						t.Fatal(err)
					}
					if formatRows(a.Rows) != formatRows(b.Rows) {
						t.Errorf("%s: streaming %q, SQL %q", q, formatRows(a.Rows), formatRows(b.Rows))
					}
				}
				if clustered && (*streamed == 0 || *reread > 0) {
					t.Errorf("clustered file: %d spans streamed, %d read again; want all streamed", *streamed, *reread)
				}
				// Out of order, the first range found so is read again, and
				// the table is remembered: every later range and query reads
				// with SQL at once.
				if !clustered && *reread != 1 {
					t.Errorf("shuffled file: %d spans read again (%d streamed); want 1: the table remembered as out of order", *reread, *streamed)
				}
			})
		}
	}
}

// TestStreamNeighbours: for every person p, the streaming form's answers
// on the table without p's rows equal the SQL form's, and its counts per
// group differ from the whole table's by p's own rows (at most L∞ = 2 per
// group, here all of them).
func TestStreamNeighbours(t *testing.T) {
	q := "SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g"
	counts := func(svc *Service) map[string]float64 {
		res, err := svc.Answer(context.Background(), q, exactOpts())
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, r := range res.Rows {
			c, _ := ir.Number(r[1])
			out[fmt.Sprint(r[0])] = c
		}
		return out
	}
	cat := fmt.Sprintf(streamCatalog, 2)
	st, _ := streamServices(t, cat, streamCSV("", true, false))
	whole := counts(st)
	for _, p := range streamPeople {
		st, sq := streamServices(t, cat, streamCSV(p.pid, true, false))
		without := counts(st)
		if fmt.Sprint(without) != fmt.Sprint(counts(sq)) {
			t.Errorf("without %s: streaming %v, SQL %v", p.pid, without, counts(sq))
		}
		mine := map[string]float64{}
		for _, r := range p.rows {
			mine[r[:1]] = math.Min(mine[r[:1]]+1, 2)
		}
		for _, g := range []string{"1", "2", "3", "4"} {
			if got := math.Round(whole[g] - without[g]); got != mine[g] {
				t.Errorf("without %s: group %s count drops by %v, want %v", p.pid, g, got, mine[g])
			}
		}
	}
}

// TestStreamChoice: the streaming form is chosen from the declarations
// and the plan only: a bounded query over the clustered table with
// counts and sums streams; a quantile, a key selection, L∞ = 3 with
// values and a table without the declaration do not.
func TestStreamChoice(t *testing.T) {
	cat := fmt.Sprintf(streamCatalog, 2)
	st, _ := streamServices(t, cat, streamCSV("", true, false))
	for _, tt := range []struct {
		q    string
		want bool
	}{
		{streamQueries[0], true},
		{"SELECT g, MEDIAN(v) FROM t GROUP BY g", false},
		{"SELECT v, COUNT(*) FROM t GROUP BY v", false},
		{"SELECT g, COUNT(x) FROM t GROUP BY g", true},
		// A text column's values are not read by the streaming form.
		{"SELECT g, COUNT(c) FROM t GROUP BY g", false},
	} {
		p, err := st.Prepare(tt.q, Options{Epsilon: 1, Delta: 1e-6, Confidence: 0.95, Analyst: "tester"})
		if err != nil {
			t.Fatal(err)
		}
		if streamable(p) != tt.want {
			t.Errorf("%s: streamable %v, want %v", tt.q, !tt.want, tt.want)
		}
		if !tt.want {
			continue
		}
		res, err := st.Answer(context.Background(), "EXPLAIN "+tt.q, exactOpts())
		if err != nil {
			t.Fatal(err)
		}
		if notes := strings.Join(res.Notes, "\n"); !strings.Contains(notes, "streamed to dpstat in the order of pid") {
			t.Errorf("EXPLAIN %s: notes %q, want the streaming said", tt.q, notes)
		}
	}
	for _, c := range []string{fmt.Sprintf(streamCatalog, 3), strings.Replace(cat, "clustered_by_unit: true", "clustered_by_unit: false", 1)} {
		st, _ := streamServices(t, c, streamCSV("", true, false))
		p, err := st.Prepare(streamQueries[0], exactOpts())
		if err != nil {
			t.Fatal(err)
		}
		if streamable(p) {
			t.Errorf("catalog %s: streamable, want not", c)
		}
	}
}
