// Command benchpg measures dpstat's SQL answering on PostgreSQL against
// the plain PostgreSQL queries that compute the same exact statistics, on
// a generated table (by default 1M rows: 100,000 persons with 10 rows
// each), with and without per-person bounding. Without -admin-dsn it starts
// an isolated PostgreSQL server in a temporary directory (as the engine
// tests do) and removes it afterwards.
//
//	go run ./internal/bench/benchpg -rows 1000000 -runs 7
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/dpstat/dpstat/engine/postgres"
	"github.com/dpstat/dpstat/internal/bench/benchdata"
	"github.com/dpstat/dpstat/query"
	"github.com/dpstat/dpstat/query/enginetest"
)

func main() {
	fl := benchdata.CommonFlags(1_000_000, 7, false)
	rows, runs, only := fl.Rows, fl.Runs, fl.Only
	adminDSN := flag.String("admin-dsn", "", "a server and a role that may create the table (default: start an isolated server)")
	readerDSN := flag.String("reader-dsn", "", "the role dpstat reads as (default: the admin DSN)")
	params := flag.String("params", "", "session settings appended to the reader DSN, e.g. work_mem=64MB (both sides run with them)")
	flag.Parse()
	if *adminDSN == "" {
		pg, err := enginetest.StartPostgres()
		if err != nil {
			log.Fatal(err)
		}
		*adminDSN, *readerDSN = pg.AdminDSN(), pg.ReaderDSN()
		err = run(*adminDSN, *readerDSN, *params, *only, *rows, *runs)
		pg.Stop() // before exiting, whatever happened
		if err != nil {
			log.Fatal(err)
		}
		return
	}
	if err := run(*adminDSN, *readerDSN, *params, *only, *rows, *runs); err != nil {
		log.Fatal(err)
	}
}

// run generates the table and prints every comparison.
func run(adminDSN, readerDSN, params, only string, rows, runs int) error {
	ctx := context.Background()
	if readerDSN == "" {
		readerDSN = adminDSN
	}
	if params != "" {
		sep := "?"
		if strings.Contains(readerDSN, "?") {
			sep = "&"
		}
		readerDSN += sep + params
	}
	if err := generate(ctx, adminDSN, rows); err != nil {
		return err
	}
	eng, err := postgres.Open(ctx, postgres.Options{DSN: readerDSN})
	if err != nil {
		return err
	}
	defer eng.Close()
	dir, err := os.MkdirTemp("", "dpstat-benchpg-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cat, err := benchdata.ServerCatalog(dir, "catalog.yaml", "postgres", readerDSN, "public.bench_events", "")
	if err != nil {
		return err
	}
	svc, err := query.NewService(ctx, cat, eng, benchdata.NoLedger{})
	if err != nil {
		return err
	}
	opts := query.Options{Epsilon: 1, Confidence: 0.95, Analyst: "bench"}
	plain := func(sql string) func() error { return benchdata.Query(ctx, eng, sql) }
	dp := func(sql string) func() error { return benchdata.Answer(ctx, svc, sql, opts) }
	const keys, oneRow, bounded = benchdata.PublicKeys, benchdata.OneRowQuery, benchdata.BoundedQuery
	plainOneRow := "SELECT grp, count(*), sum(least(greatest(v, 0), 100)), avg(least(greatest(v, 0), 100)) FROM public.bench_events WHERE " + keys + " GROUP BY grp"
	plainBounded := `WITH r AS (SELECT pid, grp, least(greatest(v, 0), 100) AS v FROM public.bench_events WHERE pid IS NOT NULL AND ` + keys + `),
rb AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY pid, grp ORDER BY random()) AS rn FROM r) AS x WHERE rn <= 2),
pu AS (SELECT pid, grp, count(*) AS c, sum(v) AS s, count(v) AS n FROM rb GROUP BY pid, grp),
pb AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY pid ORDER BY random()) AS rn FROM pu) AS y WHERE rn <= 3)
SELECT grp, sum(c), sum(s), sum(s) / sum(n) FROM pb GROUP BY grp`
	prepOne, err := svc.Prepare(oneRow, opts)
	if err != nil {
		return err
	}
	prepBounded, err := svc.Prepare(bounded, opts)
	if err != nil {
		return err
	}
	pairs := []benchdata.Pair{
		{Name: "one row per person: COUNT, SUM, AVG GROUP BY public key", DP: dp(oneRow), Plain: plain(plainOneRow)},
		{Name: "one row per person: dpstat's engine SQL alone vs the plain query", DP: plain(prepOne.SQL), Plain: plain(plainOneRow)},
		{Name: "per-person bounding (L0=3, Linf=2): COUNT, SUM, AVG GROUP BY public key", DP: dp(bounded), Plain: plain(plainBounded)},
		{Name: "per-person bounding: dpstat's engine SQL alone vs the plain query", DP: plain(prepBounded.SQL), Plain: plain(plainBounded)},
	}
	var version string
	if err := eng.Pool().QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		return err
	}
	var workMem string
	if err := eng.Pool().QueryRow(ctx, "SHOW work_mem").Scan(&workMem); err != nil {
		return err
	}
	fmt.Printf("machine: %s/%s, %d cores; PostgreSQL %s, work_mem %s; %d rows; %d runs, medians\n\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), version, workMem, rows, runs)
	return benchdata.RunPairs(os.Stdout, "PostgreSQL", runs, only, pairs)
}

// generate creates public.bench_events with rows rows unless it holds
// them already: row i belongs to person i/10, with grp in 0..9, v in
// [0, 100) with two decimals and w in 0..119, from fixed arithmetic on i so
// that every run sees the same data.
func generate(ctx context.Context, dsn string, rows int) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM public.bench_events").Scan(&n); err == nil && n == int64(rows) {
		return nil
	}
	for _, stmt := range []string{
		"DROP TABLE IF EXISTS public.bench_events",
		"CREATE TABLE public.bench_events (pid bigint, grp bigint, v double precision, w bigint)",
		fmt.Sprintf(`INSERT INTO public.bench_events
			SELECT i / 10, (i * 7919 + 13) %% 10, ((i * 104729 + 7) %% 10000) / 100.0, (i * 1299709 + 5) %% 120
			FROM generate_series(CAST(0 AS bigint), %d) AS s(i)`, rows-1),
		"ANALYZE public.bench_events",
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	// The tests' reader role, where it exists, may read the table.
	var reader bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", enginetest.ReaderRole).Scan(&reader); err != nil {
		return err
	}
	if reader {
		if _, err := conn.Exec(ctx, "GRANT SELECT ON public.bench_events TO "+enginetest.ReaderRole); err != nil {
			return err
		}
	}
	return nil
}
