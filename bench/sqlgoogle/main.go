// Command sqlgoogle compares dpstat's DP SQL answering with a Go program that
// reads the same Parquet data and computes the same answers with Google's
// differential-privacy library (github.com/google/differential-privacy/go/v3
// v3.0.0), in one run on one machine.
//
// Both sides compute, for the 10 public values of grp, a noisy COUNT(*), a
// noisy SUM(v) and a noisy AVG(v) with v clamped to [0, 100], at ε = 1 in
// total:
//   - "rows as people": every row is a person;
//   - "bounded": rows belong to persons (pid); each person keeps at most 2
//     rows per group and at most 3 groups. dpstat answers over the table as
//     declared (one statement) and declared clustered_by_unit (one statement
//     per range of pid, and, built with -tags duckdb_arrow, the streaming
//     form: each range's rows streamed as Arrow batches and bounded person
//     by person in Go); beside them run dpstat's earlier bounded statement
//     (lists and a second read) and a bare GROUP BY pid, grp without any
//     sampling, the floor of a hash aggregate over every pair.
//
// Each side's wall time and processor time (the process's user and system
// time over the side's run, DuckDB's threads included) are reported; on a
// shared machine the processor time varies less. -sides runs some sides
// alone, for one side's peak memory under /usr/bin/time.
//
// The data is generated into a temporary directory, never the repository:
//
//	cd bench && go run -tags duckdb_arrow ./sqlgoogle -rows 10000000 -runs 3
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/google/differential-privacy/go/v3/dpagg"
	gnoise "github.com/google/differential-privacy/go/v3/noise"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/internal/bench/benchdata"
	"github.com/dpstat/dpstat/query"
)

const groups = 10

func main() {
	rows := flag.Int("rows", 10_000_000, "rows to generate (10 per person)")
	runs := flag.Int("runs", 3, "runs per side; the median is reported")
	dir := flag.String("dir", benchdata.DefaultDir(), "where the generated data goes")
	only := flag.String("only", "", "run only the cases whose name contains this")
	sides := flag.String("sides", "", "run only the sides whose name contains one of these comma-separated words (for one side's peak memory)")
	flag.Parse()
	ctx := context.Background()

	b, err := benchdata.Open(ctx, *dir, *rows, 0, "catalog-google.yaml", "{epsilon: 1e9}", 100)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Engine.Close()
	pq, svc := b.Parquet, b.Service
	opts := query.Options{Epsilon: 1, Confidence: 0.95, Analyst: "bench"}
	dp := func(sql string) func() error {
		return func() error {
			_, err := svc.Answer(ctx, sql, opts)
			return err
		}
	}
	bounded := "SELECT grp, COUNT(*), SUM(v), AVG(v) FROM events GROUP BY grp"
	// The statement of the bounded query before the one-pass form (lists
	// per heavy pair and a second read), run as it is on the engine.
	cat, err := catalog.Load(filepath.Join(filepath.Dir(pq), "catalog-google.yaml"))
	if err != nil {
		log.Fatal(err)
	}
	before, err := query.Prepare(cat, listDialect{duckdb.Dialect.(samplerDialect)}, bounded, opts)
	if err != nil {
		log.Fatal(err)
	}
	// The ranged SQL form of the clustered table, on a service whose engine
	// cannot stream (sqlOnly hides StreamBatches).
	ranged, err := query.NewService(ctx, cat, sqlOnly{b.Engine, b.Engine}, benchdata.NoLedger{})
	if err != nil {
		log.Fatal(err)
	}
	if _, ok := any(b.Engine).(query.BatchStreamer); !ok {
		log.Print("built without the duckdb_arrow tag: the streaming side runs the ranged SQL form (go run -tags duckdb_arrow ./sqlgoogle)")
	}
	clustered := "SELECT grp, COUNT(*), SUM(v), AVG(v) FROM events_clustered GROUP BY grp"
	src := duckdb.Dialect.QuoteString(pq)
	bare := fmt.Sprintf("SELECT grp, sum(c), sum(s) FROM (SELECT pid, grp, count(*) AS c, sum(least(greatest(v, 0), 100)) AS s FROM read_parquet(%s) GROUP BY pid, grp) GROUP BY grp", src)
	type side struct {
		name string
		run  func() error
	}
	cases := []struct {
		name  string
		sides []side
	}{
		{"rows as people: COUNT, SUM, AVG GROUP BY public key", []side{
			{"Go + Google's library", func() error { return googleRowsAsPeople(pq) }},
			{"dpstat", dp("SELECT grp, COUNT(*), SUM(v), AVG(v) FROM rows_as_people GROUP BY grp")},
		}},
		{"per-person bounding (L0=3, Linf=2): COUNT, SUM, AVG GROUP BY public key", []side{
			{"Go + Google's library", func() error { return googleBounded(pq) }},
			{"dpstat, one pass, one statement", dp(bounded)},
			{"dpstat, one pass, clustered_by_unit (ranges of pid)", func() error {
				_, err := ranged.Answer(ctx, clustered, opts)
				return err
			}},
			{"dpstat, streaming, clustered_by_unit", dp(clustered)},
			{"dpstat's earlier statement alone (lists, second read)", benchdata.Query(ctx, b.Engine, before.SQL)},
			{"bare GROUP BY pid, grp (no sampling) in DuckDB", benchdata.Query(ctx, b.Engine, bare)},
		}},
	}
	fmt.Printf("machine: %s/%s, %d cores; %d rows in %s; %d runs each, alternating, medians\n\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), *rows, pq, *runs)
	for _, cs := range cases {
		if *only != "" && !strings.Contains(cs.name, *only) {
			continue
		}
		var picked []side
		for _, sd := range cs.sides {
			if *sides == "" || containsAny(sd.name, strings.Split(*sides, ",")) {
				picked = append(picked, sd)
			}
		}
		times, cpus := make([][]time.Duration, len(picked)), make([][]time.Duration, len(picked))
		for _, sd := range picked { // warm-up: file cache, Parquet metadata
			if err := sd.run(); err != nil {
				log.Fatalf("%s: %s: %v", cs.name, sd.name, err)
			}
		}
		for i := 0; i < *runs; i++ {
			for j, sd := range picked {
				start, cpu := time.Now(), benchdata.CPUTime()
				if err := sd.run(); err != nil {
					log.Fatalf("%s: %s: %v", cs.name, sd.name, err)
				}
				times[j] = append(times[j], time.Since(start))
				cpus[j] = append(cpus[j], benchdata.CPUTime()-cpu)
			}
		}
		fmt.Println(cs.name)
		ref, refCPU := benchdata.Median(times[0]), benchdata.Median(cpus[0])
		for j, sd := range picked {
			m, c := benchdata.Median(times[j]), benchdata.Median(cpus[j])
			fmt.Printf("  %-55s wall %8v (%.2f× the first), processor %8v (%.2f×)\n      wall runs %v\n      processor runs %v\n",
				sd.name, m.Round(time.Millisecond), float64(m)/float64(ref), c.Round(time.Millisecond), float64(c)/float64(refCPU),
				benchdata.Rounded(times[j]), benchdata.Rounded(cpus[j]))
		}
		fmt.Println()
	}
	fmt.Printf("peak resident memory of the process (VmHWM): %s\n", benchdata.PeakRSS())
}

// containsAny reports whether s contains one of the non-empty words.
func containsAny(s string, words []string) bool {
	for _, w := range words {
		if w != "" && strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// sqlOnly is an engine without StreamBatches: its service runs the SQL
// forms only.
type sqlOnly struct {
	engine.Engine
	engine.Registrar
}

// samplerDialect is a dialect that bounds with aggregates.
type samplerDialect interface {
	engine.Dialect
	engine.Sampler
}

// listDialect is DuckDB's dialect without engine.ExtremeSampler: its
// bounded statement is the one dpstat generated before the one-pass form.
type listDialect struct{ samplerDialect }

// scan reads the pid, grp and v columns of the Parquet file in batches.
func scan(path string, f func(pid, grp []int64, v []float64)) error {
	rdr, err := file.OpenParquetFile(path, true)
	if err != nil {
		return err
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		return err
	}
	rr, err := fr.GetRecordReader(context.Background(), []int{0, 1, 2}, nil)
	if err != nil {
		return err
	}
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		f(rec.Column(0).(*array.Int64).Int64Values(), rec.Column(1).(*array.Int64).Int64Values(),
			rec.Column(2).(*array.Float64).Float64Values())
	}
	return rr.Err()
}

type googleAggs struct {
	count []*dpagg.Count
	sum   []*dpagg.BoundedSumFloat64
	mean  []*dpagg.BoundedMean
}

// newGoogleAggs builds one count, sum and mean per group, each with a third
// of ε = 1.
func newGoogleAggs(l0, linf int64) (*googleAggs, error) {
	a := &googleAggs{}
	for g := 0; g < groups; g++ {
		c, err := dpagg.NewCount(&dpagg.CountOptions{Epsilon: 1.0 / 3, MaxPartitionsContributed: l0 * linf, Noise: gnoise.Laplace()})
		if err != nil {
			return nil, err
		}
		s, err := dpagg.NewBoundedSumFloat64(&dpagg.BoundedSumFloat64Options{Epsilon: 1.0 / 3, MaxPartitionsContributed: l0 * linf, Lower: 0, Upper: 100, Noise: gnoise.Laplace()})
		if err != nil {
			return nil, err
		}
		m, err := dpagg.NewBoundedMean(&dpagg.BoundedMeanOptions{Epsilon: 1.0 / 3, MaxPartitionsContributed: l0, MaxContributionsPerPartition: linf, Lower: 0, Upper: 100, Noise: gnoise.Laplace()})
		if err != nil {
			return nil, err
		}
		a.count, a.sum, a.mean = append(a.count, c), append(a.sum, s), append(a.mean, m)
	}
	return a, nil
}

func (a *googleAggs) add(g int64, v float64) {
	if g < 0 || g >= groups {
		return
	}
	a.count[g].Increment()
	a.sum[g].Add(v)
	a.mean[g].Add(v)
}

func (a *googleAggs) results() error {
	for g := 0; g < groups; g++ {
		if _, err := a.count[g].Result(); err != nil {
			return err
		}
		if _, err := a.sum[g].Result(); err != nil {
			return err
		}
		if _, err := a.mean[g].Result(); err != nil {
			return err
		}
	}
	return nil
}

func googleRowsAsPeople(path string) error {
	a, err := newGoogleAggs(1, 1)
	if err != nil {
		return err
	}
	if err := scan(path, func(_, grp []int64, v []float64) {
		for i := range grp {
			a.add(grp[i], v[i])
		}
	}); err != nil {
		return err
	}
	return a.results()
}

// googleBounded bounds each person's contribution in Go, as a program using
// the library must (the library does not bound across partitions itself):
// the first 2 rows per (person, group) and the first 3 groups per person.
// It counts a person's rows per group as separate increments, so its count
// sensitivity is L0·Linf like dpstat's.
func googleBounded(path string) error {
	a, err := newGoogleAggs(3, 2)
	if err != nil {
		return err
	}
	type slot struct {
		grp  int64
		n    int
		v    [2]float64
		used bool
	}
	persons := make(map[int64]*[3]slot, 1<<20)
	if err := scan(path, func(pid, grp []int64, v []float64) {
		for i := range pid {
			p := persons[pid[i]]
			if p == nil {
				p = new([3]slot)
				persons[pid[i]] = p
			}
			for j := range p {
				s := &p[j]
				if !s.used {
					*s = slot{grp: grp[i], n: 1, used: true}
					s.v[0] = v[i]
					break
				}
				if s.grp == grp[i] {
					if s.n < 2 {
						s.v[s.n] = v[i]
						s.n++
					}
					break
				}
			}
		}
	}); err != nil {
		return err
	}
	for _, p := range persons {
		for _, s := range p {
			for k := 0; s.used && k < s.n; k++ {
				a.add(s.grp, s.v[k])
			}
		}
	}
	return a.results()
}
