package query

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/engines"
	"github.com/dpstat/dpstat/engine/postgres/pgtest"
	"github.com/dpstat/dpstat/internal/querygen"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// neighbourTimeout bounds one run (planning and engine) of a battery query
// on the harness's tiny tables; a run still going after it has hung.
const neighbourTimeout = 60 * time.Second

// neighbourBattery covers every construct dpstat accepts, with extreme
// parameters. T stands for the table's name.
var neighbourBattery = []string{
	// Every aggregate.
	"SELECT COUNT(*) FROM T",
	"SELECT COUNT(f), SUM(f), AVG(f) FROM T",
	"SELECT COUNT(i), SUM(i), AVG(i) FROM T",
	"SELECT VAR_POP(f), VAR_SAMP(i), STDDEV_POP(i), STDDEV_SAMP(f) FROM T",
	"SELECT MEDIAN(f) FROM T",
	"SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY i) FROM T",
	"SELECT COUNT(DISTINCT pid) FROM T",
	// Public value lists: -0 and 0 are one key; empty text; booleans.
	"SELECT fz, COUNT(*), SUM(f) FROM T GROUP BY fz",
	"SELECT t, COUNT(*), AVG(i) FROM T GROUP BY t",
	"SELECT b, COUNT(*) FROM T GROUP BY b",
	"SELECT fz, t, b, COUNT(*), SUM(i) FROM T GROUP BY fz, t, b",
	// Columns named as the statements' own names once were (t, u, b), as
	// keys, in distinct counts and medians, and as a pre-aggregation's
	// names (see sqlgen's ast.go).
	"SELECT u, b, COUNT(*), SUM(i), COUNT(DISTINCT pid) FROM T GROUP BY u, b",
	"SELECT t, MEDIAN(i), COUNT(DISTINCT u) FROM T GROUP BY t",
	"SELECT COUNT(*), SUM(LEAST(GREATEST(u, 0), 4)), AVG(b) FROM (SELECT pid, COUNT(*) AS u, MAX(LEAST(GREATEST(i, 0), 100)) AS b FROM T GROUP BY pid) s WHERE b >= 0",
	// Computed keys with extreme parameters.
	"SELECT width_bucket(f, 0, 10, 5) AS w, COUNT(*) FROM T GROUP BY w",
	"SELECT width_bucket(f, -1.7e308, 1.7e308, 4) AS w, COUNT(*) FROM T GROUP BY w",
	"SELECT width_bucket(f, -8e307, 8e307, 4) AS w, COUNT(*) FROM T GROUP BY w",
	"SELECT width_bucket(f, -1.7976931348623157e308, 0, 3) AS w, COUNT(*) FROM T GROUP BY w",
	"SELECT width_bucket(i, 0, 1e308, 1000) AS w, COUNT(*) FROM T GROUP BY w",
	"SELECT width_bucket(f, 0, 5e-324, 1000) AS w, COUNT(*) FROM T GROUP BY w",
	"SELECT width_bucket(f, -1, 1, 2) AS w, MEDIAN(i) FROM T GROUP BY w",
	"SELECT floor(f / 0.5) * 0.5 AS w, COUNT(*) FROM T GROUP BY w",
	"SELECT floor(i / 5e-324) * 5e-324 AS w, COUNT(*) FROM T GROUP BY w",
	"SELECT floor(f / 1e-300) * 1e-300 AS w, COUNT(*) FROM T GROUP BY w",
	"SELECT floor(f / 1e300) * 1e300 AS w, COUNT(*), SUM(f) FROM T GROUP BY w",
	"SELECT floor(f / 1.7976931348623157e308) * 1.7976931348623157e308 AS w, COUNT(*) FROM T GROUP BY w",
	"SELECT CASE WHEN f < 0 THEN 'neg' WHEN f >= 0 THEN 'pos' ELSE 'none' END AS s, COUNT(*) FROM T GROUP BY s",
	"SELECT CASE WHEN f > 1 THEN -0.0 ELSE 1.0 END AS s, COUNT(*) FROM T GROUP BY s",
	"SELECT CASE WHEN i > 9223372036854775807 THEN 1 ELSE 2 END AS s, COUNT(*) FROM T GROUP BY s",
	// WHERE at the extremes.
	"SELECT COUNT(*) FROM T WHERE f < 1.7976931348623157e308",
	"SELECT COUNT(*) FROM T WHERE f > -1.7976931348623157e308 AND f <> 0",
	"SELECT COUNT(*) FROM T WHERE f = 'NaN'::float",
	"SELECT COUNT(*) FROM T WHERE f = 'Infinity'::float",
	"SELECT COUNT(*) FROM T WHERE i > 9223372036854775807",
	"SELECT COUNT(*) FROM T WHERE i BETWEEN -9223372036854775808 AND 9223372036854775807",
	"SELECT COUNT(*) FROM T WHERE i = 1e308",
	"SELECT COUNT(*) FROM T WHERE i = 99999999999999999999999",
	"SELECT COUNT(*) FROM T WHERE f = 4.9e-324 OR f = -0.0",
	"SELECT COUNT(*) FROM T WHERE t = '' OR u = ''",
	"SELECT COUNT(*) FROM T WHERE u = '" + strings.Repeat("é☃𝄞", 200) + "'",
	"SELECT COUNT(*) FROM T WHERE u IN ('x', 'y', '') AND NOT b",
	"SELECT COUNT(*) FROM T WHERE f IS NULL OR i IS NOT NULL",
	"SELECT COUNT(*) FROM T WHERE u LIKE '%☃%' OR u ILIKE 'X' OR t NOT LIKE '_'",
	"SELECT COUNT(*) FROM T WHERE NOT (f > 0 OR f <= 0)",
	"SELECT COUNT(*) FROM T WHERE " + strings.Repeat("NOT ", 1000) + "f > 0",
	"SELECT COUNT(*) FROM T WHERE " + strings.Repeat("NOT ", ir.MaxExprDepth-1) + "f > 0",
	// Expressions in aggregates, FILTER, MIN and MAX, bounds narrowed by
	// WHERE.
	"SELECT SUM(CASE WHEN t = 'a' THEN i ELSE 0 END), COUNT(*) FILTER (WHERE f > 0) FROM T",
	"SELECT SUM(f * 2 - i), AVG(LEAST(GREATEST(i, 10), 20)), SUM(COALESCE(f, 0) + 1) FROM T",
	"SELECT MIN(f), MAX(i), MIN(f * i), MAX(ABS(f)) FROM T",
	"SELECT fz, SUM(i % 7), COUNT(u) FILTER (WHERE b), SUM(f) FILTER (WHERE t = '') FROM T GROUP BY fz",
	"SELECT SUM(f / 3), SUM(FLOOR(f)), SUM(CAST(f AS int)), SUM(ROUND(f, 2)), VAR_POP(f - i) FROM T",
	"SELECT SUM(i), AVG(f) FROM T WHERE i BETWEEN 10 AND 60 AND f > -5",
	"SELECT SUM(i / (i - 50)) FROM T",
	"SELECT SUM(LEAST(GREATEST(pid, 0), 10)), SUM(LEAST(GREATEST(pid * 1000000000, 0), 10)) FROM T",
	"SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY f + i), MEDIAN(NULLIF(i, 0)) FROM T",
	"SELECT width_bucket(f, 0, 10, 5) AS w, MAX(f), SUM(CASE WHEN b THEN 1 ELSE -1 END) FROM T GROUP BY w",
	// Expressions over released aggregates (post-processing).
	"SELECT SUM(i) / COUNT(*) AS m, ROUND(AVG(f), 2), POWER(STDDEV_POP(i), 2), 3 AS three FROM T",
	"SELECT t, COUNT(*) * 2 AS c2, SUM(f) - SUM(i) AS d, COUNT(*) FROM T GROUP BY t HAVING COUNT(*) >= 0",
	// Joins with a public table.
	"SELECT c.label, COUNT(*), SUM(x.i) FROM T x JOIN codes c ON x.t = c.t GROUP BY c.label",
	"SELECT c.label, COUNT(*), AVG(x.f) FROM T x LEFT JOIN codes c ON x.t = c.t GROUP BY c.label",
	"SELECT COUNT(*), SUM(CASE WHEN c.label LIKE 'b%' THEN x.i ELSE 0 END) FROM T x JOIN codes c USING (t) WHERE x.fz = 0",
	"SELECT x.t, MIN(x.i), COUNT(*) FILTER (WHERE c.weight > 1) FROM T x JOIN codes c ON c.t = x.t GROUP BY x.t",
	"SELECT COUNT(*) FROM T x JOIN codes c ON x.t = c.label",
	"SELECT COUNT(*) FROM codes",
	// A public table joined twice: each occurrence its own ON and
	// multiplicity (weight is unique; t holds b twice).
	"SELECT COUNT(*), SUM(x.i) FROM T x JOIN codes c1 ON x.i = c1.weight JOIN codes c2 ON x.i = c2.weight",
	"SELECT c2.label, COUNT(*), SUM(x.i) FROM T x JOIN codes c1 ON x.t = c1.t LEFT JOIN codes c2 ON c1.label = c2.label GROUP BY c2.label",
	"SELECT COUNT(*) FROM T x JOIN codes c1 ON x.t = c1.t JOIN codes c2 ON x.t = c2.t WHERE c1.weight <> c2.weight",
	"SELECT x.u, SUM(x.i) FROM T x JOIN codes c ON x.t = c.t GROUP BY x.u",
	// Joins of private tables of one id space, on the privacy unit.
	"SELECT COUNT(*), SUM(y.i), COUNT(DISTINCT x.pid) FROM T x JOIN visits y ON x.pid = y.pid",
	"SELECT x.t, COUNT(*), AVG(y.f) FROM T x LEFT JOIN visits y USING (pid) GROUP BY x.t",
	"SELECT COUNT(*) FROM T x JOIN visits y ON x.t = y.t",
	// A private table joined a third time: each person's rows with that
	// person's rows only, also under a per-person pre-aggregation.
	"SELECT COUNT(*), SUM(z.i) FROM T x JOIN visits y ON x.pid = y.pid JOIN visits z ON x.pid = z.pid",
	"SELECT COUNT(*) FROM (SELECT x.pid, COUNT(*) AS n FROM T x JOIN visits y ON x.pid = y.pid JOIN visits z ON x.pid = z.pid GROUP BY x.pid) s WHERE n >= 12",
	// Dates and timestamps: infinities, malformed values, dates beyond
	// the bounds and beyond what a timestamp holds.
	"SELECT COUNT(dt), COUNT(ts), COUNT(*) FILTER (WHERE dt > '2024-06-01') FROM T",
	"SELECT COUNT(*) FROM T WHERE dt >= DATE '2024-03-01' OR ts < '2024-02-01 00:00:00' OR dt = '9999-12-31'",
	"SELECT date_trunc('month', dt) AS m, COUNT(*), SUM(i) FROM T GROUP BY m",
	"SELECT EXTRACT(dow FROM dt) AS w, EXTRACT(hour FROM ts) AS h, COUNT(*) FROM T GROUP BY w, h",
	"SELECT date_trunc('day', ts) AS day, date_part('isodow', ts) AS w, COUNT(*) FROM T WHERE ts BETWEEN '2024-02-28' AND '2024-03-02' GROUP BY day, w",
	"SELECT date_trunc('week', dt) AS w, date_trunc('minute', ts) AS m, COUNT(*) FROM T WHERE ts BETWEEN '2024-02-29 23:58:00' AND '2024-03-01 00:01:00' GROUP BY w, m",
	"SELECT SUM(dt - DATE '2024-01-01'), AVG(EXTRACT(doy FROM dt)), SUM(EXTRACT(minute FROM ts)), MAX(EXTRACT(year FROM ts)) FROM T",
	"SELECT dt, COUNT(*) FROM T GROUP BY dt",
	"SELECT COUNT(*), SUM(dt - DATE '2024-01-01') FROM T WHERE dt + INTERVAL '2 weeks' <= '2024-03-01' AND ts - INTERVAL '36 hours' > TIMESTAMP '2023-12-01 00:00:00'",
	"SELECT COUNT(*), SUM(i) FILTER (WHERE EXTRACT(hour FROM ts) < 12) FROM T WHERE EXTRACT(dow FROM dt) IN (0, 6) OR date_trunc('month', dt) = '2024-02-01'",
	"SELECT COUNT(*), SUM(dt - (DATE '2024-12-31' - INTERVAL '1 year 1 month')) FROM T WHERE ts >= TIMESTAMP '2024-01-31 12:00:00' + INTERVAL '1 month'",
	"SELECT MIN(dt), MAX(ts), MEDIAN(dt), percentile_cont(0.9) WITHIN GROUP (ORDER BY ts) FROM T WHERE dt > '2024-02-01'",
	"SELECT t, MIN(dt + INTERVAL '1 week'), MAX(ts - INTERVAL '90 minutes') FILTER (WHERE i > 0) FROM T GROUP BY t",
	"SELECT date_trunc('quarter', dt + INTERVAL '10 days') AS q, EXTRACT(hour FROM ts - INTERVAL '30 minutes') AS h, COUNT(*), SUM(i) FILTER (WHERE EXTRACT(dow FROM dt - INTERVAL '1 day') < 5) FROM T GROUP BY q, h",
	"SELECT COUNT(*), SUM(EXTRACT(day FROM dt - INTERVAL '2 weeks')) FROM T WHERE date_trunc('month', ts + INTERVAL '1 second') >= '2024-03-01'",
	"SELECT b, MIN(dt) AS m FROM T GROUP BY b HAVING MIN(dt) < '2024-06-01' ORDER BY m",
	"WITH s AS (SELECT pid, MIN(dt) AS first, MAX(ts) AS last FROM T GROUP BY pid) SELECT date_trunc('quarter', last) AS q, MEDIAN(first), COUNT(*) FROM s WHERE first > '2024-01-15' GROUP BY q",
	// Text functions: public images over value lists, key selection
	// otherwise, lengths clamped.
	"SELECT lower(t) AS l, upper(t) || '-' || t AS c, COUNT(*) FROM T GROUP BY l, c",
	"SELECT concat(t, u) AS c, COUNT(*) FROM T GROUP BY c",
	"SELECT substr(u, 2, 3) AS s3, COUNT(*) FROM T GROUP BY s3",
	"SELECT starts_with(t, 'a') AS a, length(t) AS n, COUNT(*) FROM T GROUP BY a, n",
	"SELECT COUNT(*) FROM T WHERE lower(u) = 'x' OR trim(u) LIKE '%☃%' OR starts_with(rtrim(ltrim(u)), '') AND length(u) > 3",
	"SELECT SUM(length(t)), SUM(LEAST(length(u), 50)), AVG(CASE WHEN lower(u) IN ('x', 'y') THEN i END) FROM T",
	"SELECT SUM(length(u)) FROM T",
	"SELECT CASE WHEN f > 0 THEN 'pos' WHEN i > 50 THEN 'big' END AS sign, COUNT(*) FROM T GROUP BY sign",
	// GROUP BY whole-number expressions with a bounded range.
	"SELECT LEAST(GREATEST(i, 0), 3) AS k, COUNT(*), SUM(f) FROM T GROUP BY k",
	"SELECT i % 5 AS r, CAST(f AS int) AS c, COUNT(*) FROM T GROUP BY r, c",
	"SELECT LEAST(n, 3) AS k, COUNT(*) FROM (SELECT pid, COUNT(*) AS n FROM T GROUP BY pid) s GROUP BY LEAST(n, 3)",
	// LEAST and GREATEST skip NULL arguments; % and ROUND in doubles.
	"SELECT LEAST(CASE WHEN f > 0 THEN NULL ELSE 0 END, 1) AS k, LEAST(i, 2) AS l, COUNT(*), SUM(GREATEST(i, 7)) FROM T GROUP BY k, l",
	"SELECT CAST(f % 1.5 AS int) AS k, CAST(ROUND(f, 1) AS int) AS r, COUNT(*) FROM T GROUP BY k, r",
	"SELECT LEAST(m, 9) AS k, COUNT(*) FROM (SELECT pid, MIN(i) AS m FROM T GROUP BY pid) s GROUP BY k",
	// Numeric expressions in conditions, over clamped values.
	"SELECT COUNT(*), SUM(i) FROM T WHERE i * 2 - f > 10 OR ABS(f) < 1",
	"SELECT t, COUNT(*) FROM T WHERE COALESCE(i, 0) % 7 = 1 OR CAST(f AS int) BETWEEN -3 AND 3 GROUP BY t",
	"SELECT SUM(CASE WHEN f / 3 > i THEN 1 ELSE 0 END), COUNT(*) FILTER (WHERE LEAST(i, f) IN (0, 5)) FROM T",
	// Distinct values of any column: the sensitivity of COUNT(*).
	"SELECT COUNT(DISTINCT t), COUNT(DISTINCT i), COUNT(DISTINCT f) FROM T",
	"SELECT fz, COUNT(DISTINCT u), SUM(i) FROM T GROUP BY fz",
	"SELECT u, COUNT(DISTINCT b) FROM T GROUP BY u",
	// Common table expressions and subqueries (merged), per-person
	// pre-aggregation (its rows one person's).
	"WITH s AS (SELECT * FROM T WHERE f > 0) SELECT t, COUNT(*), SUM(i) FROM s GROUP BY t",
	"SELECT SUM(d), MAX(d) FROM (SELECT i * 2 - f AS d, t FROM T WHERE b) s WHERE t <> ''",
	"WITH a AS (SELECT pid, i FROM T), b AS (SELECT pid, i + 1 AS j FROM a) SELECT COUNT(DISTINCT pid), AVG(j) FROM b",
	"WITH s AS (SELECT pid, COUNT(*) AS n, SUM(f) AS sf, MAX(i) AS mi FROM T GROUP BY pid) SELECT COUNT(*), SUM(LEAST(n, 3)), AVG(LEAST(GREATEST(sf, -50), 50)), MEDIAN(mi) FROM s",
	"SELECT width_bucket(n, 0, 5, 5) AS w, COUNT(*) FROM (SELECT pid, COUNT(*) AS n FROM T GROUP BY pid) s GROUP BY w",
	"SELECT t, COUNT(*), SUM(LEAST(n, 2)) FROM (SELECT pid, t, COUNT(i) AS n FROM T WHERE i > 0 GROUP BY pid, t) s GROUP BY t",
	// Keys alone: the public list free, key selection with all of ε.
	"SELECT t, b FROM T GROUP BY t, b",
	"SELECT DISTINCT t, b FROM T",
	"SELECT DISTINCT u FROM T",
	"SELECT u FROM T GROUP BY u",
	// Key selection, most common values, answer filters.
	"SELECT u, COUNT(*) FROM T GROUP BY u",
	"SELECT u, MEDIAN(f), SUM(i) FROM T GROUP BY u",
	"SELECT t, COUNT(*) FROM T GROUP BY t ORDER BY COUNT(*) DESC LIMIT 1",
	"SELECT t, COUNT(*) AS n FROM T GROUP BY t HAVING COUNT(*) > 1 ORDER BY n DESC",
}

// neighbourOutcome is what an analyst sees of one run, less the noise.
type neighbourOutcome struct {
	err  error
	res  *Result
	prep *Prepared
}

// neighbourFixture holds a service per table variant: "D" and "D-p" for
// every person p of each table.
type neighbourFixture struct {
	// services[table][variant]
	services map[string]map[string]*Service
	// persons[table] lists the variants other than "D", in order.
	persons map[string][]string
}

var (
	neighbourMu   sync.Mutex
	neighbourFixs = map[string]*neighbourFixture{}
	neighbourErrs = map[string]error{}
	// neighbourEngines and neighbourDirs are closed and removed by
	// TestMain.
	neighbourEngines []engine.Engine
	neighbourDirs    []string
)

// TestMain closes the harness's engines and removes its tables after the
// package's tests.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, e := range neighbourEngines {
		e.Close()
	}
	for _, d := range neighbourDirs {
		os.RemoveAll(d)
	}
	pgtest.StopShared()
	os.Exit(code)
}

// neighbours builds the harness tables on DuckDB once per test binary.
func neighbours(t testing.TB) *neighbourFixture {
	t.Helper()
	return neighboursOn(t, "duckdb")
}

// neighboursOn builds the harness tables once per test binary on the
// engine kind: "duckdb" (files) or "postgres" (a test server's tables).
func neighboursOn(t testing.TB, kind string) *neighbourFixture {
	t.Helper()
	var pg *pgtest.Server
	if kind == "postgres" {
		pg = pgtest.Shared(t)
	}
	neighbourMu.Lock()
	defer neighbourMu.Unlock()
	if neighbourFixs[kind] == nil && neighbourErrs[kind] == nil {
		neighbourFixs[kind], neighbourErrs[kind] = buildNeighbours(kind, pg)
	}
	if err := neighbourErrs[kind]; err != nil {
		t.Fatal(err)
	}
	return neighbourFixs[kind]
}

func buildNeighbours(kind string, pg *pgtest.Server) (*neighbourFixture, error) {
	root, err := os.MkdirTemp("", "dpstat-neighbours-")
	if err != nil {
		return nil, err
	}
	neighbourDirs = append(neighbourDirs, root)
	fix := &neighbourFixture{services: map[string]map[string]*Service{}, persons: map[string][]string{}}
	var cols []pgtest.Column
	for i, name := range strings.Split(querygen.Columns, ",") {
		cols = append(cols, pgtest.Column{Name: name, Type: querygen.Types[i]})
	}
	ctx := context.Background()
	if pg != nil {
		codes := [][]any{}
		for _, line := range strings.Split(strings.TrimSpace(querygen.Codes), "\n")[1:] {
			f := strings.Split(line, ",")
			w, _ := strconv.ParseInt(f[2], 10, 64)
			var t any
			if f[0] != "" {
				t = f[0]
			}
			codes = append(codes, []any{t, f[1], w})
		}
		if err := pg.LoadRows(ctx, "nb_codes", []pgtest.Column{{Name: "t", Type: schema.Text}, {Name: "label", Type: schema.Text}, {Name: "weight", Type: schema.Int}}, codes); err != nil {
			return nil, err
		}
	}
	loaded := 0
	open := func(dir string, rows []string) (*Service, error) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		data := querygen.Columns + "\n" + strings.Join(rows, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(dir, "data.csv"), []byte(data), 0o644); err != nil {
			return nil, err
		}
		decl := querygen.Catalog
		if pg != nil {
			// The same tables in the server: one relation per variant.
			loaded++
			name := fmt.Sprintf("nb_%d", loaded)
			if err := pg.LoadRows(ctx, name, cols, querygen.Values(rows)); err != nil {
				return nil, err
			}
			decl = strings.ReplaceAll(decl, "source: data.csv", "source: public."+name)
			decl = strings.ReplaceAll(decl, "source: codes.csv", "source: public.nb_codes")
			decl = strings.Replace(decl, "tables:", fmt.Sprintf("engine: {kind: postgres, dsn: %q, statement_timeout: 60s, max_connections: 1}\ntables:", pg.ReaderDSN()), 1)
		}
		if err := os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(decl), 0o644); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, "codes.csv"), []byte(querygen.Codes), 0o644); err != nil {
			return nil, err
		}
		cat, err := catalog.Load(filepath.Join(dir, "catalog.yaml"))
		if err != nil {
			return nil, err
		}
		spec := engines.Spec(cat)
		if pg == nil {
			spec.Threads = 1
		}
		eng, err := engine.Open(ctx, spec)
		if err != nil {
			return nil, err
		}
		neighbourEngines = append(neighbourEngines, eng)
		return NewService(context.Background(), cat, eng, &fakeLedger{})
	}
	pidOf := func(row string) string { return row[:strings.IndexByte(row, ',')] }
	for _, table := range []string{"people", "rows"} {
		fix.services[table] = map[string]*Service{}
		svc, err := open(filepath.Join(root, table, "D"), querygen.Rows)
		if err != nil {
			return nil, err
		}
		fix.services[table]["D"] = svc
		// The people of the table: a privacy unit's rows, or each row.
		var people []string
		seen := map[string]bool{}
		for i, r := range querygen.Rows {
			p := fmt.Sprintf("row%d", i+1)
			if table == "people" {
				p = "pid" + pidOf(r)
			}
			if !seen[p] {
				seen[p] = true
				people = append(people, p)
			}
		}
		for _, p := range people {
			var rest []string
			for i, r := range querygen.Rows {
				if p != fmt.Sprintf("row%d", i+1) && p != "pid"+pidOf(r) {
					rest = append(rest, r)
				}
			}
			name := "D-" + p
			svc, err := open(filepath.Join(root, table, name), rest)
			if err != nil {
				return nil, err
			}
			fix.services[table][name] = svc
			fix.persons[table] = append(fix.persons[table], name)
		}
	}
	return fix, nil
}

// neighbourOpts are the options of every harness run: noise far below any
// tolerance, and a δ for key selection.
func neighbourOpts() Options {
	return Options{Epsilon: 1e20, Delta: 1e-3, Confidence: 0.95, Analyst: "neighbour"}
}

// runNeighbour runs one query on one variant within neighbourTimeout.
func runNeighbour(t testing.TB, svc *Service, sql string) neighbourOutcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), neighbourTimeout)
	defer cancel()
	done := make(chan neighbourOutcome, 1)
	go func() {
		var o neighbourOutcome
		o.prep, o.err = svc.Prepare(sql, neighbourOpts())
		if o.err == nil {
			o.res, o.err = svc.Run(ctx, o.prep)
		}
		done <- o
	}()
	select {
	case o := <-done:
		return o
	case <-time.After(neighbourTimeout + 5*time.Second):
		t.Fatalf("%s: did not end within %v", sql, neighbourTimeout)
		return neighbourOutcome{}
	}
}

// checkNeighbours compares the outcome on D with the outcome on D − p
// with the harness's oracle (querygen.Check).
func checkNeighbours(t testing.TB, sql, variant string, d, n neighbourOutcome) {
	t.Helper()
	querygen.Check(t, sql, variant, d.outcome(), n.outcome())
}

// outcome is o as the oracle reads it.
func (o neighbourOutcome) outcome() querygen.Outcome {
	out := querygen.Outcome{Err: o.err}
	var ee *EngineError
	if errors.As(o.err, &ee) {
		out.Engine = ee.Err
		if out.Engine == nil {
			out.Engine = ee
		}
	}
	if o.prep != nil {
		out.Plan, out.Noise = o.prep.Plan, o.prep.Noise
	}
	if o.res != nil {
		out.Columns, out.Rows = o.res.Columns, o.res.Rows
	}
	return out
}

// TestNeighbourWideBounds checks that the wide table's bounds exceed
// every person's joined rows, so that its joins are compared by value.
func TestNeighbourWideBounds(t *testing.T) {
	w := loadCatalog(t, writeNeighbourCatalog(t)).Table("wide")
	if n := querygen.JoinedRows(); w == nil || w.MaxRowsPerGroup < n || w.MaxGroupsPerUnit < n {
		t.Fatalf("the wide table's bounds do not reach the %d rows a person can have after a join", n)
	}
}

// TestNeighbouringTables runs the battery on D and on D − p for every
// person p of both harness tables, on DuckDB.
func TestNeighbouringTables(t *testing.T) {
	testNeighbouringTables(t, "duckdb")
}

// TestNeighbouringTablesPostgres runs the battery on PostgreSQL: the same
// tables loaded into a test server's relations, the same checks.
func TestNeighbouringTablesPostgres(t *testing.T) {
	testNeighbouringTables(t, "postgres")
}

func testNeighbouringTables(t *testing.T, kind string) {
	if raceDetector {
		// It shares no state between goroutines beyond what the plain run
		// covers, and under the detector it would take many minutes.
		t.Skip("the neighbouring-table harness runs in the plain test run (make test runs it without -race)")
	}
	fix := neighboursOn(t, kind)
	// The wide table reads the people fixture's files (D and D − p for
	// each person), with bounds no joined rows reach: its joins are
	// compared by value. Only the joins run on it. The monthly table
	// reads them too, with epochs by month (its unit is (person, month):
	// the oracle allows a person's change over their months).
	for _, table := range []string{"people", "rows", "wide", "monthly"} {
		variants := table
		if table == "wide" || table == "monthly" {
			variants = "people"
		}
		t.Run(table, func(t *testing.T) {
			if table == "monthly" && kind != "duckdb" {
				t.Skip("the epoch table's battery runs on DuckDB (the generated queries read it on every engine)")
			}
			t.Parallel()
			for _, q := range neighbourBattery {
				sql := strings.ReplaceAll(q, "FROM T", "FROM "+table)
				if table == "rows" && strings.Contains(sql, "DISTINCT pid") {
					continue // no privacy unit to count
				}
				if table == "wide" && !strings.Contains(sql, " JOIN ") {
					continue
				}
				d := runNeighbour(t, fix.services[variants]["D"], sql)
				// (A per-person pre-aggregation that joins inside is one
				// row per person outside, and compared by value anyway.)
				if table == "wide" && d.err == nil && len(d.prep.Plan.Query.Joins) > 0 && !querygen.BoundsNotBinding(d.prep.Plan) {
					t.Errorf("%s: the wide table's bounds may bind, so its values are not compared", sql)
				}
				for _, v := range fix.persons[variants] {
					checkNeighbours(t, sql, v, d, runNeighbour(t, fix.services[variants][v], sql))
				}
			}
		})
	}
}
