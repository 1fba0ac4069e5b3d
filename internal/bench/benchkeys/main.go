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
	"strings"

	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/internal/bench/benchdata"
	"github.com/dpstat/dpstat/query"
)

func main() {
	rows := flag.Int("rows", 10_000_000, "rows to generate (10 per person)")
	runs := flag.Int("runs", 3, "runs per query; the median is reported")
	dir := flag.String("dir", benchdata.DefaultDir(), "where the generated data goes")
	threads := flag.Int("threads", 0, "DuckDB threads (0 = one per core)")
	only := flag.String("only", "", "run only the comparisons whose name contains this")
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
	type pair struct {
		name      string
		dp, plain func() error
	}
	pairs := []pair{
		{"key selection, one row per person: GROUP BY w (no public list), COUNT(*)",
			dp("SELECT w, COUNT(*) FROM rows_as_people GROUP BY w"),
			plain(fmt.Sprintf("SELECT w, count(*) FROM read_parquet(%s) GROUP BY w", src))},
		{"key selection with a privacy unit (L0=3, Linf=2): GROUP BY w, COUNT(DISTINCT pid), vs count(DISTINCT pid) per key",
			dp("SELECT w, COUNT(DISTINCT pid) FROM events GROUP BY w"),
			plain(fmt.Sprintf("SELECT w, count(DISTINCT pid) FROM read_parquet(%s) GROUP BY w", src))},
		{"key selection with a privacy unit, vs the same bounding written by hand (at most 3 keys per person, chosen at random)",
			dp("SELECT w, COUNT(DISTINCT pid) FROM events GROUP BY w"),
			plain(fmt.Sprintf(`WITH r AS (SELECT pid, w FROM read_parquet(%s) WHERE pid IS NOT NULL),
pu AS (SELECT pid, w FROM r GROUP BY pid, w),
pb AS (SELECT * FROM pu QUALIFY row_number() OVER (PARTITION BY pid ORDER BY random()) <= 3)
SELECT w, count(*) FROM pb GROUP BY w`, src))},
		{"median, one row per person: MEDIAN(v) vs quantile_cont(v, 0.5)",
			dp("SELECT MEDIAN(v) FROM rows_as_people"),
			plain(fmt.Sprintf("SELECT quantile_cont(least(greatest(v, 0), 100), 0.5) FROM read_parquet(%s) WHERE v IS NOT NULL", src))},
		{"median by public key: grp, MEDIAN(v) vs quantile_cont per grp",
			dp("SELECT grp, MEDIAN(v) FROM rows_as_people GROUP BY grp"),
			plain(fmt.Sprintf("SELECT grp, quantile_cont(least(greatest(v, 0), 100), 0.5) FROM read_parquet(%s) WHERE v IS NOT NULL AND grp IN (0,1,2,3,4,5,6,7,8,9) GROUP BY grp", src))},
	}
	fmt.Printf("machine: %s/%s, %d cores, DuckDB threads %d; %d rows in %s; %d runs, medians\n\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), *threads, *rows, pq, *runs)
	for _, p := range pairs {
		if *only != "" && !strings.Contains(p.name, *only) {
			continue
		}
		tdp, tplain, err := benchdata.Compare(*runs, p.dp, p.plain)
		if err != nil {
			log.Fatalf("%s: %v", p.name, err)
		}
		benchdata.Report(os.Stdout, p.name, tdp, tplain)
	}
	fmt.Printf("peak resident memory of the process (VmHWM): %s\n", benchdata.PeakRSS())
}
