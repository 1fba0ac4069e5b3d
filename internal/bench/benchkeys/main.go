// Command benchkeys measures dpstat's key selection and quantiles against
// the plain DuckDB queries that compute the same exact statistics
// (distinct-person counts per key; an exact quantile), on a generated
// Parquet table (by default 10M rows: 1M persons with 10 rows each). The
// data is generated into a temporary directory, never into the repository;
// it is the same table as internal/bench/benchsql's.
//
//	go run ./internal/bench/benchkeys -rows 10000000 -runs 3
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"

	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/internal/bench/benchdata"
	"github.com/dpstat/dpstat/query"
)

func main() {
	fl := benchdata.CommonFlags(10_000_000, 3, true)
	rows, runs, dir, threads, only := fl.Rows, fl.Runs, fl.Dir, fl.Threads, fl.Only
	flag.Parse()
	ctx := context.Background()

	b, err := benchdata.Open(ctx, *dir, *rows, *threads, "catalog-keys.yaml", "{epsilon: 1e9, delta: 0.5}", 120)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Engine.Close()
	pq := b.Parquet
	src := duckdb.Dialect.QuoteString(pq)
	plain := func(sql string) func() error { return b.Plain(ctx, sql) }
	dp := func(sql string) func() error {
		return b.DP(ctx, sql, query.Options{Epsilon: 1, Delta: 1e-6, Confidence: 0.95, Analyst: "bench"})
	}
	pairs := []benchdata.Pair{
		{Name: "key selection, one row per person: GROUP BY w (no public list), COUNT(*)",
			DP:    dp("SELECT w, COUNT(*) FROM rows_as_people GROUP BY w"),
			Plain: plain(fmt.Sprintf("SELECT w, count(*) FROM read_parquet(%s) GROUP BY w", src))},
		{Name: "key selection with a privacy unit (L0=3, Linf=2): GROUP BY w, COUNT(DISTINCT pid), vs count(DISTINCT pid) per key",
			DP:    dp("SELECT w, COUNT(DISTINCT pid) FROM events GROUP BY w"),
			Plain: plain(fmt.Sprintf("SELECT w, count(DISTINCT pid) FROM read_parquet(%s) GROUP BY w", src))},
		{Name: "key selection with a privacy unit, vs the same bounding written by hand (at most 3 keys per person, chosen at random)",
			DP: dp("SELECT w, COUNT(DISTINCT pid) FROM events GROUP BY w"),
			Plain: plain(fmt.Sprintf(`WITH r AS (SELECT pid, w FROM read_parquet(%s) WHERE pid IS NOT NULL),
pu AS (SELECT pid, w FROM r GROUP BY pid, w),
pb AS (SELECT * FROM pu QUALIFY row_number() OVER (PARTITION BY pid ORDER BY random()) <= 3)
SELECT w, count(*) FROM pb GROUP BY w`, src))},
		{Name: "median, one row per person: MEDIAN(v) vs quantile_cont(v, 0.5)",
			DP:    dp("SELECT MEDIAN(v) FROM rows_as_people"),
			Plain: plain(fmt.Sprintf("SELECT quantile_cont(least(greatest(v, 0), 100), 0.5) FROM read_parquet(%s) WHERE v IS NOT NULL", src))},
		{Name: "median by public key: grp, MEDIAN(v) vs quantile_cont per grp",
			DP:    dp("SELECT grp, MEDIAN(v) FROM rows_as_people GROUP BY grp"),
			Plain: plain(fmt.Sprintf("SELECT grp, quantile_cont(least(greatest(v, 0), 100), 0.5) FROM read_parquet(%s) WHERE v IS NOT NULL AND grp IN (0,1,2,3,4,5,6,7,8,9) GROUP BY grp", src))},
	}
	fmt.Printf("machine: %s/%s, %d cores, DuckDB threads %d; %d rows in %s; %d runs, medians\n\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), *threads, *rows, pq, *runs)
	if err := benchdata.RunPairs(os.Stdout, "DuckDB", *runs, *only, pairs); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("peak resident memory of the process (VmHWM): %s\n", benchdata.PeakRSS())
}
