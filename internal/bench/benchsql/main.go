// Command benchsql measures dpstat's SQL answering against the plain DuckDB
// queries that compute the same exact statistics, on a generated Parquet
// table (by default 10M rows: 1M persons with 10 rows each). The data is
// generated into a temporary directory, never into the repository.
//
//	go run ./internal/bench/benchsql -rows 10000000 -runs 5
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/internal/bench/benchdata"
	"github.com/dpstat/dpstat/query"
	"github.com/dpstat/dpstat/query/dpplan"
)

func main() {
	fl := benchdata.CommonFlags(10_000_000, 5, true)
	rows, runs, dir, threads, only := fl.Rows, fl.Runs, fl.Dir, fl.Threads, fl.Only
	memLimit := flag.String("memory-limit", "", "DuckDB memory_limit, e.g. 8GB (empty: DuckDB's default, 80% of the machine's memory)")
	dpOnly := flag.Bool("dp-only", false, "time only dpstat's side of each comparison, with no warm-up run (for tables too large to run the plain queries beside it)")
	explain := flag.Bool("explain", false, "print the bounded query's generated SQL and DuckDB's EXPLAIN ANALYZE of it, then exit")
	explainQuery := flag.String("explain-query", "", "with -explain, the query to explain instead of the bounded one (each of its engine statements, histograms included)")
	flag.Parse()
	ctx := context.Background()

	b, err := benchdata.Open(ctx, *dir, *rows, *threads, "catalog.yaml", "{epsilon: 1e9}", 100)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Engine.Close()
	if *memLimit != "" {
		if _, err := b.Engine.DB().ExecContext(ctx, "SET memory_limit = "+duckdb.Dialect.QuoteString(*memLimit)); err != nil {
			log.Fatal(err)
		}
	}
	pq, svc := b.Parquet, b.Service
	src := duckdb.Dialect.QuoteString(pq)
	plain := func(sql string) func() error { return b.Plain(ctx, sql) }
	dp := func(sql string) func() error {
		return b.DP(ctx, sql, query.Options{Epsilon: 1, Confidence: 0.95, Analyst: "bench"})
	}
	type pair struct {
		name      string
		dp, plain func() error
	}
	const oneRow, bounded = benchdata.OneRowQuery, benchdata.BoundedQuery
	plainOneRow := fmt.Sprintf("SELECT grp, count(*), sum(least(greatest(v, 0), 100)), avg(least(greatest(v, 0), 100)) FROM read_parquet(%s) WHERE grp IN (0,1,2,3,4,5,6,7,8,9) GROUP BY grp", src)
	plainBounded := fmt.Sprintf(`WITH r AS (SELECT pid, grp, least(greatest(v, 0), 100) AS v FROM read_parquet(%s) WHERE pid IS NOT NULL AND grp IN (0,1,2,3,4,5,6,7,8,9)),
rb AS (SELECT * FROM r QUALIFY row_number() OVER (PARTITION BY pid, grp ORDER BY random()) <= 2),
pu AS (SELECT pid, grp, count(*) AS c, sum(v) AS s, count(v) AS n FROM rb GROUP BY pid, grp),
pb AS (SELECT * FROM pu QUALIFY row_number() OVER (PARTITION BY pid ORDER BY random()) <= 3)
SELECT grp, sum(c), sum(s), sum(s) / sum(n) FROM pb GROUP BY grp`, src)
	plainRowsOnly := fmt.Sprintf(`SELECT grp, count(*), sum(least(greatest(v, 0), 100)) FROM (SELECT * FROM read_parquet(%s) QUALIFY row_number() OVER (PARTITION BY pid, grp ORDER BY random()) <= 2) GROUP BY grp`, src)
	// The engine SQL dpstat generates, run on its own: what the exact
	// statistics cost without parsing, planning, noise and the charge.
	prep, err := svc.Prepare(oneRow, query.Options{Epsilon: 1, Confidence: 0.95, Analyst: "bench"})
	if err != nil {
		log.Fatal(err)
	}
	clean, err := prep.FormSQL(dpplan.CleanForm)
	if err != nil {
		log.Fatal(err)
	}
	if *explain {
		q := bounded
		if *explainQuery != "" {
			q = *explainQuery
		}
		explainBounded(ctx, b, q)
		return
	}
	// A cheaper statistic, for comparison: per-(person, group) aggregates
	// with the count clamped to Linf and the sum to Linf·[lower, upper]
	// (all rows summed, not a sample of Linf of them), then at most L0
	// groups per person.
	clampedBounding := fmt.Sprintf(`WITH pu AS (SELECT pid, grp, least(count(*), 2) AS c, least(greatest(sum(least(greatest(v, 0), 100)), 0), 200) AS s
FROM read_parquet(%s) WHERE pid IS NOT NULL AND grp IN (0,1,2,3,4,5,6,7,8,9) GROUP BY pid, grp),
pb AS (SELECT * FROM pu QUALIFY row_number() OVER (PARTITION BY pid ORDER BY random()) <= 3)
SELECT grp, sum(c), sum(s) FROM pb GROUP BY grp`, src)
	// A quantile: dpstat's bounded histogram statement (the values kept
	// per person, binned, counted per group), against the exact median of
	// the rows a window sort keeps.
	median := "SELECT grp, MEDIAN(v) FROM events GROUP BY grp"
	plainMedian := fmt.Sprintf(`WITH r AS (SELECT pid, grp, least(greatest(v, 0), 100) AS v FROM read_parquet(%s) WHERE pid IS NOT NULL AND grp IN (0,1,2,3,4,5,6,7,8,9) AND v IS NOT NULL),
rb AS (SELECT * FROM r QUALIFY row_number() OVER (PARTITION BY pid, grp ORDER BY random()) <= 2),
pb AS (SELECT * FROM (SELECT DISTINCT pid, grp FROM rb) QUALIFY row_number() OVER (PARTITION BY pid ORDER BY random()) <= 3)
SELECT grp, median(v) FROM rb JOIN pb USING (pid, grp) GROUP BY grp`, src)
	join := "SELECT g.label, COUNT(*), SUM(r.v), AVG(r.v) FROM rows_as_people r JOIN groups g ON r.grp = g.grp GROUP BY g.label"
	plainJoin := fmt.Sprintf("SELECT g.label, count(*), sum(least(greatest(r.v, 0), 100)), avg(least(greatest(r.v, 0), 100)) FROM read_parquet(%s) r JOIN read_csv(%s) g ON r.grp = g.grp GROUP BY g.label",
		src, duckdb.Dialect.QuoteString(filepath.Join(filepath.Dir(pq), "groups.csv")))
	pairs := []pair{
		{"one row per person joined with a public table: COUNT, SUM, AVG GROUP BY a public column", dp(join), plain(plainJoin)},
		{"one row per person: COUNT, SUM, AVG GROUP BY public key", dp(oneRow), plain(plainOneRow)},
		{"one row per person: dpstat's engine SQL alone vs the plain query", plain(prep.SQL), plain(plainOneRow)},
		{"one row per person: the clean form's SQL alone (as for a table without nan_free) vs the plain query", plain(clean), plain(plainOneRow)},
		{"per-person bounding (L0=3, Linf=2): COUNT, SUM, AVG GROUP BY public key", dp(bounded), plain(plainBounded)},
		{"per-person bounding vs rows-per-group bounding only", dp(bounded), plain(plainRowsOnly)},
		{"per-person bounding vs per-(person, group) clamped aggregates (a cheaper statistic)", dp(bounded), plain(clampedBounding)},
		{"bounded MEDIAN (L0=3, Linf=2 per person) GROUP BY public key", dp(median), plain(plainMedian)},
	}
	fmt.Printf("machine: %s/%s, %d cores, DuckDB threads %d, memory limit %q; %d rows in %s; %d runs, medians\n\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), *threads, *memLimit, *rows, pq, *runs)
	for _, p := range pairs {
		if *only != "" && !strings.Contains(p.name, *only) {
			continue
		}
		if *dpOnly {
			var tdp, cpu []time.Duration
			for range *runs {
				start, c := time.Now(), benchdata.CPUTime()
				if err := p.dp(); err != nil {
					log.Fatalf("%s: %v", p.name, err)
				}
				tdp = append(tdp, time.Since(start))
				cpu = append(cpu, benchdata.CPUTime()-c)
			}
			fmt.Printf("%s\n  dpstat %v (processor time %v)\n  dpstat runs %v\n  processor time %v\n\n", p.name,
				benchdata.Median(tdp).Round(time.Millisecond), benchdata.Median(cpu).Round(time.Millisecond), benchdata.Rounded(tdp), benchdata.Rounded(cpu))
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

// explainBounded prints the engine statements of a dpstat query (by
// default the bounded one: its main statement, then its histograms' if
// any) and DuckDB's EXPLAIN ANALYZE of each (each operator's time and row
// count), to see which stage grows faster than the data.
func explainBounded(ctx context.Context, b *benchdata.Bench, q string) {
	prep, err := b.Service.Prepare(q, query.Options{Epsilon: 1, Confidence: 0.95, Analyst: "bench"})
	if err != nil {
		log.Fatal(err)
	}
	for _, sql := range append([]string{prep.SQL}, prep.HistogramSQL...) {
		if sql == "" {
			continue // a query of quantiles only has no main statement
		}
		fmt.Printf("%s\n\n", sql)
		// A warm-up run (file cache, Parquet metadata), then the profiled
		// one.
		if err := b.Plain(ctx, sql)(); err != nil {
			log.Fatal(err)
		}
		res, err := b.Engine.Query(ctx, "EXPLAIN ANALYZE "+sql)
		if err != nil {
			log.Fatal(err)
		}
		for _, row := range res.Rows {
			fmt.Println(row[len(row)-1])
		}
	}
	fmt.Printf("peak resident memory of the process (VmHWM): %s\n", benchdata.PeakRSS())
}
