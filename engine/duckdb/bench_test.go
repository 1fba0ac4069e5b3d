package duckdb

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dpstat/dpstat/engine"
)

// processCPU is the CPU time the process has used, every thread counted.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStatementCost measures what one small statement costs DuckDB on
// the example Adult table loaded in memory, one thread per query (as
// `dpstat serve --threads 1`): the statement the server's load test sends,
// with new literals each time and through one prepared statement, and its
// parts. It reports CPU time per statement (cpu-ns/op), which a busy
// machine disturbs less than wall time (docs/benchmarks.md, "Where the CPU
// goes, per query").
//
//	go test -run '^$' -bench StatementCost -benchtime 400x ./engine/duckdb/
func BenchmarkStatementCost(b *testing.B) {
	ctx := context.Background()
	e, err := Open(Options{Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	cols := []engine.Column{{Name: "sex", Type: engine.Text}, {Name: "age", Type: engine.Integer}, {Name: "hours_per_week", Type: engine.Integer}}
	if err := e.RegisterFile(ctx, "adult", filepath.Join("..", "..", "examples", "adult.csv"), "csv", cols); err != nil {
		b.Fatal(err)
	}
	if err := e.Load(ctx); err != nil {
		b.Fatal(err)
	}
	const dp = `WITH _dp_r AS (SELECT "sex" AS _dp_k0 FROM "adult" WHERE "sex" IN ('Female', 'Male') AND (("age" >= %v) AND ("hours_per_week" >= %v))) SELECT _dp_k0, count(*) AS _dp_s0 FROM _dp_r GROUP BY _dp_k0`
	st, err := e.db.PrepareContext(ctx, fmt.Sprintf(dp, "$1", "$2"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	run := func(name, format string) {
		b.Run(name, func(b *testing.B) {
			c0 := processCPU()
			for i := 0; b.Loop(); i++ {
				if _, err := e.Query(ctx, fmt.Sprintf(format, 17+i%73, 1+(i/73)%99)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU()-c0)/float64(b.N), "cpu-ns/op")
		})
	}
	run("dp-statement", dp)
	b.Run("dp-statement-prepared", func(b *testing.B) {
		c0 := processCPU()
		for i := 0; b.Loop(); i++ {
			rows, err := st.QueryContext(ctx, 17+i%73, 1+(i/73)%99)
			if err != nil {
				b.Fatal(err)
			}
			for rows.Next() {
			}
			rows.Close()
		}
		b.ReportMetric(float64(processCPU()-c0)/float64(b.N), "cpu-ns/op")
	})
	run("select-1", `SELECT %d + %d`)
	run("count-filtered", `SELECT count(*) FROM adult WHERE age >= %d AND hours_per_week >= %d`)
	run("group-by-sex", `SELECT sex, count(*) FROM adult WHERE age >= %d AND hours_per_week >= %d GROUP BY sex`)
	run("group-by-sex-10-rows", `SELECT sex, count(*) FROM (SELECT * FROM adult LIMIT 10) WHERE age >= %d AND hours_per_week >= %d GROUP BY sex`)
}
