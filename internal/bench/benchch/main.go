// Command benchch measures dpstat's SQL answering on a ClickHouse cluster
// against the plain ClickHouse queries that compute the same exact
// statistics, on a generated table (by default 10M rows: 1M persons with
// 10 rows each), with and without per-person bounding, on one shard and on
// two shards holding the same data. It starts two ClickHouse servers on
// loopback in a temporary directory (as the engine tests do) and removes
// them afterwards.
//
//	go run ./internal/bench/benchch -rows 10000000 -runs 5
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"strings"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine/clickhouse"
	"github.com/dpstat/dpstat/internal/bench/benchdata"
	"github.com/dpstat/dpstat/query"
	"github.com/dpstat/dpstat/query/enginetest"
	"github.com/dpstat/dpstat/query/sqlgen"
)

func main() {
	fl := benchdata.CommonFlags(10_000_000, 5, false)
	rows, runs, only := fl.Rows, fl.Runs, fl.Only
	shards := flag.String("shards", "1,2", "the cluster sizes to measure: 1 (one_shard), 2 (two_shards)")
	flag.Parse()
	c, err := enginetest.StartClickHouse(2)
	if err != nil {
		log.Fatal(err)
	}
	err = run(c, *only, *shards, *rows, *runs)
	c.Stop() // before exiting, whatever happened
	if err != nil {
		log.Fatal(err)
	}
}

// run generates the tables and prints every comparison.
func run(c *enginetest.ClickHouse, only, shards string, rows, runs int) error {
	ctx := context.Background()
	start := time.Now()
	if err := generate(ctx, c, rows); err != nil {
		return err
	}
	fmt.Printf("generated %d rows on one shard and on two in %v\n", rows, time.Since(start).Round(time.Second))
	eng, err := clickhouse.Open(ctx, clickhouse.Options{DSN: c.ReaderDSN()})
	if err != nil {
		return err
	}
	defer eng.Close()
	var version string
	if err := eng.Conn().QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		return err
	}
	fmt.Printf("machine: %s/%s, %d cores; ClickHouse %s, two servers on this machine; %d rows; %d runs, medians\n\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), version, rows, runs)
	for _, n := range strings.Split(shards, ",") {
		if err := compare(ctx, eng, c, strings.TrimSpace(n), only, runs); err != nil {
			return err
		}
	}
	fmt.Printf("peak resident memory of this process: %s\n", benchdata.PeakRSS())
	return nil
}

// compare runs the comparisons on the Distributed table over n shards.
func compare(ctx context.Context, eng *clickhouse.Engine, c *enginetest.ClickHouse, n, only string, runs int) error {
	table := "default.bench_events_" + n
	dir, err := os.MkdirTemp("", "dpstat-benchch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// Two catalogs of the same tables: one declaring them nan_free (the
	// generated data holds no NaN), whose sums read the float columns as
	// they are, and one without the declaration, for the end-to-end
	// figures of a query that reads NaN as NULL.
	load := func(name, decl string) (*catalog.Catalog, error) {
		return benchdata.ServerCatalog(dir, name, "clickhouse", c.ReaderDSN(), table, decl)
	}
	cat, err := load("catalog.yaml", "    nan_free: true\n")
	if err != nil {
		return err
	}
	blindCat, err := load("catalog-blind.yaml", "")
	if err != nil {
		return err
	}
	blind, err := query.NewService(ctx, blindCat, eng, benchdata.NoLedger{})
	if err != nil {
		return err
	}
	svc, err := query.NewService(ctx, cat, eng, benchdata.NoLedger{})
	if err != nil {
		return err
	}
	opts := query.Options{Epsilon: 1, Confidence: 0.95, Analyst: "bench"}
	settings := eng.Settings()
	plain := func(sql string) func() error {
		return func() error {
			rows, err := eng.Conn().Query(ch.Context(ctx, ch.WithSettings(settings)), sql)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
			}
			return rows.Err()
		}
	}
	engineSQL := func(sql string) func() error { return benchdata.Query(ctx, eng, sql) }
	dp := func(sql string) func() error { return benchdata.Answer(ctx, svc, sql, opts) }
	dpBlind := func(sql string) func() error { return benchdata.Answer(ctx, blind, sql, opts) }
	const keys, oneRow, bounded = benchdata.PublicKeys, benchdata.OneRowQuery, benchdata.BoundedQuery
	plainOneRow := "SELECT grp, count(), sum(least(greatest(v, 0), 100)), avg(least(greatest(v, 0), 100)) FROM " + table + " WHERE " + keys + " GROUP BY grp"
	plainBounded := `SELECT grp, sum(c), sum(s), sum(s) / sum(n) FROM (
SELECT pid, grp, count() AS c, sum(v) AS s, count(v) AS n FROM (
SELECT pid, grp, least(greatest(v, 0), 100) AS v FROM ` + table + ` WHERE ` + keys + ` ORDER BY rand() LIMIT 2 BY pid, grp)
GROUP BY pid, grp ORDER BY rand() LIMIT 3 BY pid) GROUP BY grp`
	prepOne, err := svc.Prepare(oneRow, opts)
	if err != nil {
		return err
	}
	prepBounded, err := svc.Prepare(bounded, opts)
	if err != nil {
		return err
	}
	// The statement that bounds every person on the server dpstat
	// connects to, as for a table not sharded by the privacy unit.
	prepBounded.Plan.PerShard = false
	wholeBounded, err := sqlgen.SQL(prepBounded.Plan, eng.Dialect())
	if err != nil {
		return err
	}
	prepBounded.Plan.PerShard = true
	// The previous per-shard statement: each shard bounds its persons
	// and sends its per-(person, group) rows, which the initiator sums
	// per group (the per-group level of today's statement, run on the
	// initiator).
	gathering, err := perGroupLevel(prepBounded.SQL)
	if err != nil {
		return err
	}
	pairs := []benchdata.Pair{
		{Name: "one row per person: COUNT, SUM, AVG GROUP BY public key", DP: dp(oneRow), Plain: plain(plainOneRow)},
		{Name: "one row per person: dpstat's engine SQL alone vs the plain query", DP: engineSQL(prepOne.SQL), Plain: plain(plainOneRow)},
		{Name: "one row per person: end to end without nan_free (NaN read as NULL) vs the plain query", DP: dpBlind(oneRow), Plain: plain(plainOneRow)},
		{Name: "per-person bounding (L0=3, Linf=2): COUNT, SUM, AVG GROUP BY public key", DP: dp(bounded), Plain: plain(plainBounded)},
		{Name: "per-person bounding: dpstat's engine SQL alone vs the plain query", DP: engineSQL(prepBounded.SQL), Plain: plain(plainBounded)},
		{Name: "per-person bounding on each shard: dpstat's statement bounding on the shards vs bounding on the initiator", DP: engineSQL(prepBounded.SQL), Plain: engineSQL(wholeBounded)},
		{Name: "per-group partial sums on each shard: dpstat's statement vs gathering the shards' per-(person, group) rows", DP: engineSQL(prepBounded.SQL), Plain: engineSQL(gathering)},
	}
	fmt.Printf("== %s shard(s): %s\n\n", n, table)
	return benchdata.RunPairs(os.Stdout, "ClickHouse", runs, only, pairs)
}

// generate creates, on each server, the MergeTree tables bench_local_1
// (server 0 only holds rows) and bench_local_2, and the Distributed tables
// bench_events_1 over one_shard and bench_events_2 over two_shards
// (sharded by cityHash64(pid)), and fills both with the same rows: row i
// belongs to person i/10, with grp in 0..9, v in [0, 100) with two
// decimals and w in 0..119, from fixed arithmetic on i.
func generate(ctx context.Context, c *enginetest.ClickHouse, rows int) error {
	cols := "(pid Int64, grp Int64, v Float64, w Int64) ENGINE = MergeTree ORDER BY pid"
	if err := c.Exec(ctx,
		"CREATE TABLE bench_local_1 "+cols,
		"CREATE TABLE bench_local_2 "+cols,
		"CREATE TABLE bench_events_1 AS bench_local_1 ENGINE = Distributed(one_shard, default, bench_local_1, cityHash64(pid))",
		"CREATE TABLE bench_events_2 AS bench_local_2 ENGINE = Distributed(two_shards, default, bench_local_2, cityHash64(pid))"); err != nil {
		return err
	}
	gen := fmt.Sprintf(`SELECT toInt64(intDiv(number, 10)), toInt64((number * 7919 + 13) %% 10), ((number * 104729 + 7) %% 10000) / 100.0, toInt64((number * 1299709 + 5) %% 120) FROM numbers(%d)`, rows)
	for _, t := range []string{"bench_events_1", "bench_events_2"} {
		if err := c.Client(ctx, 0, nil, "--insert_distributed_sync=1", "--query", "INSERT INTO "+t+" "+gen); err != nil {
			return err
		}
	}
	return c.Client(ctx, 0, nil, "--query", "OPTIMIZE TABLE bench_local_1 FINAL")
}

// perGroupLevel returns, from a statement bounding on the shards, the
// statement that gathers each shard's bounded per-(person, group) rows and
// sums them per group on the initiator: the per-group SELECT that each
// shard runs in today's statement (its join subquery), run alone.
func perGroupLevel(sql string) (string, error) {
	const open, end = "AS _dp_kv0, _dp_k0, ", ")) AS _dp_per_group USING"
	i, j := strings.Index(sql, open), strings.LastIndex(sql, end)
	if i < 0 || j < 0 {
		return "", fmt.Errorf("the per-shard statement has no per-group join subquery: %.200s", sql)
	}
	k := strings.Index(sql[i:], " FROM (")
	if k < 0 || i+k+len(" FROM (") > j {
		return "", fmt.Errorf("the per-shard statement's join subquery reads no SELECT: %.200s", sql[i:])
	}
	return sql[i+k+len(" FROM ("):j] + " SETTINGS distributed_group_by_no_merge = 1", nil
}
