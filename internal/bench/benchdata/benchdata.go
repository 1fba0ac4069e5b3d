// Package benchdata generates the synthetic table that dpstat's benchmark
// programs measure on, and holds the small helpers they share. Generated
// data goes to a directory the caller names (a temporary one), never into
// the repository.
package benchdata

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query"
)

// DefaultDir is where the benchmark programs put generated data unless told
// otherwise.
func DefaultDir() string { return filepath.Join(os.TempDir(), "dpstat-bench") }

// Events returns the path of a Parquet table of rows rows in dir, generating
// it with DuckDB if it is not there yet. Row i belongs to person pid = i/10
// (so about 10 rows per person), with grp in 0..9, v in [0, 100) with two
// decimals and w in 0..119, all derived from hashes of i so that every run
// sees the same data.
func Events(ctx context.Context, eng *duckdb.Engine, dir string, rows int) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	pq := filepath.Join(dir, fmt.Sprintf("events-%d.parquet", rows))
	if _, err := os.Stat(pq); err == nil {
		return pq, nil
	}
	gen := fmt.Sprintf(`COPY (SELECT i // 10 AS pid, CAST(hash(i) %% 10 AS BIGINT) AS grp,
		CAST(hash(i * 7 + 1) %% 10000 AS DOUBLE) / 100.0 AS v, CAST(hash(i * 13 + 5) %% 120 AS BIGINT) AS w
		FROM range(%d) t(i)) TO %s (FORMAT parquet)`, rows, duckdb.Dialect.QuoteString(pq))
	if _, err := eng.DB().ExecContext(ctx, gen); err != nil {
		return "", fmt.Errorf("generating %s: %w", pq, err)
	}
	return pq, nil
}

// Catalog writes, next to the Parquet file pq, a catalog named name that
// declares the file twice: as rows_as_people (each row a person) and as
// events (privacy unit pid, at most 3 groups and 2 rows per group per
// person), both declared nan_free (the generated data holds no NaN, so
// their sums may take the fast form), and a public table groups (grp,
// label: two groups per label) for joins. budget is the YAML of the catalog's budget, e.g.
// "{epsilon: 1e9}"; wUpper is the declared upper bound of w. events_clustered
// is events declared clustered_by_unit (the file is written in the order of
// pid), with pid's bounds those of a table of rows rows (0 to rows/10), so
// that dpstat reads it in ranges of pid.
func Catalog(pq, name, budget string, wUpper, rows int) (*catalog.Catalog, error) {
	text := fmt.Sprintf(`budget: %[2]s
tables:
  rows_as_people:
    source: %[1]s
    nan_free: true
    columns: &cols
      pid: {type: int}
      grp: {type: int, values: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}
      v:   {type: float, lower: 0, upper: 100}
      w:   {type: int, lower: 0, upper: %[3]d}
  events:
    source: %[1]s
    nan_free: true
    privacy_unit: pid
    max_groups_per_unit: 3
    max_rows_per_group: 2
    columns: *cols
  events_clustered:
    source: %[1]s
    nan_free: true
    privacy_unit: pid
    clustered_by_unit: true
    max_groups_per_unit: 3
    max_rows_per_group: 2
    columns:
      pid: {type: int, lower: 0, upper: %[4]d}
      grp: {type: int, values: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}
      v:   {type: float, lower: 0, upper: 100}
      w:   {type: int, lower: 0, upper: %[3]d}
  groups:
    source: groups.csv
    public: true
    columns: {grp: {type: int}, label: {type: text}}
`, filepath.Base(pq), budget, wUpper, max((rows-1)/10, 1))
	var groups strings.Builder
	groups.WriteString("grp,label\n")
	for g := range 10 {
		fmt.Fprintf(&groups, "%d,label%d\n", g, g/2)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(pq), "groups.csv"), []byte(groups.String()), 0o644); err != nil {
		return nil, err
	}
	path := filepath.Join(filepath.Dir(pq), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return nil, err
	}
	return catalog.Load(path)
}

// The queries every engine's benchmark compares with plain SQL computing
// the same exact statistics: one row per person (rows_as_people) and
// per-person bounding (events), both grouped by the public key grp.
const (
	OneRowQuery  = "SELECT grp, COUNT(*), SUM(v), AVG(v) FROM rows_as_people GROUP BY grp"
	BoundedQuery = "SELECT grp, COUNT(*), SUM(v), AVG(v) FROM events GROUP BY grp"
	// PublicKeys is the plain queries' filter on grp's declared values.
	PublicKeys = "grp IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)"
)

// ServerCatalog writes in dir a catalog named name that declares the
// server table source, read by the engine kind at dsn, twice: as
// rows_as_people (each row a person) and as events (privacy unit pid, at
// most 3 groups and 2 rows per group per person); decl is YAML lines both
// tables add (e.g. "    nan_free: true\n"). It returns the catalog loaded.
func ServerCatalog(dir, name, kind, dsn, source, decl string) (*catalog.Catalog, error) {
	text := fmt.Sprintf(`budget: {epsilon: 1e9}
engine: {kind: %[1]s, dsn: %[2]q}
tables:
  rows_as_people:
    source: %[3]s
%[4]s    columns: &cols
      pid: {type: int}
      grp: {type: int, values: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}
      v:   {type: float, lower: 0, upper: 100}
      w:   {type: int, lower: 0, upper: 100}
  events:
    source: %[3]s
%[4]s    privacy_unit: pid
    max_groups_per_unit: 3
    max_rows_per_group: 2
    columns: *cols
`, kind, dsn, source, decl)
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return nil, err
	}
	return catalog.Load(path)
}

// NoLedger accepts every charge without storing it (and stores no answers,
// so every run is a fresh release): the timings then measure the query path
// alone. A real ledger adds one fsync, about 0.3 ms, per query.
type NoLedger struct{}

// EnsureBudget reports an empty budget for k.
func (NoLedger) EnsureBudget(k ledger.Key, def accounting.EpsDelta, rule accounting.Rule) (ledger.Status, error) {
	return ledger.Status{Key: k}, nil
}

// Charge accepts c without recording it.
func (NoLedger) Charge(ctx context.Context, c ledger.Charge) (ledger.Receipt, error) {
	return ledger.Receipt{Key: c.Key, Cost: c.Cost}, nil
}

// Median returns the median of d (the upper one of an even count).
func Median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration{}, d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// Rounded returns d rounded to milliseconds, for printing.
func Rounded(d []time.Duration) []time.Duration {
	out := make([]time.Duration, len(d))
	for i, x := range d {
		out[i] = x.Round(time.Millisecond)
	}
	return out
}

// PeakRSS returns the process's peak resident memory as the kernel reports
// it (VmHWM), or "unknown".
func PeakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:"))
		}
	}
	return "unknown"
}

// Bench is a benchmark's setup: a DuckDB engine, the generated table and a
// query service over a catalog that declares it.
type Bench struct {
	Engine  *duckdb.Engine
	Parquet string
	Service *query.Service
}

// Open starts an engine with the given thread count (0: one per core),
// makes sure the table of rows rows exists in dir, writes the catalog
// (see Catalog) and builds a query service over it whose charges are not
// recorded (NoLedger). Close the engine when done.
func Open(ctx context.Context, dir string, rows, threads int, catalogName, budget string, wUpper int) (*Bench, error) {
	eng, err := duckdb.Open(duckdb.Options{Threads: threads})
	if err != nil {
		return nil, err
	}
	b := &Bench{Engine: eng}
	if b.Parquet, err = Events(ctx, eng, dir, rows); err != nil {
		eng.Close()
		return nil, err
	}
	c, err := Catalog(b.Parquet, catalogName, budget, wUpper, rows)
	if err != nil {
		eng.Close()
		return nil, err
	}
	if b.Service, err = query.NewService(ctx, c, eng, NoLedger{}); err != nil {
		eng.Close()
		return nil, err
	}
	return b, nil
}

// Compare times dpstat's query against the plain one: one warm-up run of
// each (file cache, Parquet metadata), then runs alternating pairs. It
// returns the durations of each side's runs, or the first error.
func Compare(runs int, dpstat, plain func() error) (tdp, tplain []time.Duration, err error) {
	if err := dpstat(); err != nil {
		return nil, nil, fmt.Errorf("dpstat: %w", err)
	}
	if err := plain(); err != nil {
		return nil, nil, fmt.Errorf("plain: %w", err)
	}
	for i := 0; i < runs; i++ {
		start := time.Now()
		if err := plain(); err != nil {
			return nil, nil, fmt.Errorf("plain: %w", err)
		}
		tplain = append(tplain, time.Since(start))
		start = time.Now()
		if err := dpstat(); err != nil {
			return nil, nil, fmt.Errorf("dpstat: %w", err)
		}
		tdp = append(tdp, time.Since(start))
	}
	return tdp, tplain, nil
}

// Report prints one comparison on DuckDB: the medians, their ratio and
// every run.
func Report(w io.Writer, name string, tdp, tplain []time.Duration) {
	ReportOn(w, "DuckDB", name, tdp, tplain)
}

// ReportOn prints one comparison on the named engine.
func ReportOn(w io.Writer, engine, name string, tdp, tplain []time.Duration) {
	md, mp := Median(tdp), Median(tplain)
	fmt.Fprintf(w, "%s\n  dpstat %v   plain %s %v   ratio %.2f×\n  dpstat runs %v\n  plain runs  %v\n\n",
		name, md.Round(time.Millisecond), engine, mp.Round(time.Millisecond), float64(md)/float64(mp), Rounded(tdp), Rounded(tplain))
}

// Plain returns a function that runs sql on the engine as it is.
func (b *Bench) Plain(ctx context.Context, sql string) func() error {
	return Query(ctx, b.Engine, sql)
}

// DP returns a function that answers sql with dpstat's query service.
func (b *Bench) DP(ctx context.Context, sql string, opts query.Options) func() error {
	return Answer(ctx, b.Service, sql, opts)
}

// Query returns a function that runs sql on eng as it is.
func Query(ctx context.Context, eng engine.Engine, sql string) func() error {
	return func() error {
		_, err := eng.Query(ctx, sql)
		return err
	}
}

// Answer returns a function that answers sql with the query service svc.
func Answer(ctx context.Context, svc *query.Service, sql string, opts query.Options) func() error {
	return func() error {
		_, err := svc.Answer(ctx, sql, opts)
		return err
	}
}

// Pair is one comparison: dpstat's side and the plain side.
type Pair struct {
	Name      string
	DP, Plain func() error
}

// RunPairs runs Compare on each pair whose name contains only (every pair
// when only is empty) and reports it on the named engine, with the median
// and range of the per-pair ratios: each pair runs back to back, so the
// ratio within a pair is less exposed to the other load of a shared
// machine than the ratio of the medians.
func RunPairs(w io.Writer, engine string, runs int, only string, pairs []Pair) error {
	for _, p := range pairs {
		if only != "" && !strings.Contains(p.Name, only) {
			continue
		}
		tdp, tplain, err := Compare(runs, p.DP, p.Plain)
		if err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		ReportOn(w, engine, p.Name, tdp, tplain)
		ratios := make([]float64, len(tdp))
		for i := range tdp {
			ratios[i] = float64(tdp[i]) / float64(tplain[i])
		}
		sort.Float64s(ratios)
		fmt.Fprintf(w, "  median of the per-pair ratios %.2f× (from %.2f× to %.2f×)\n\n", ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1])
	}
	return nil
}

// Flags are the flags every benchmark program takes: -rows, -runs and
// -only; -dir and -threads for the programs on embedded DuckDB.
type Flags struct {
	Rows, Runs, Threads *int
	Dir, Only           *string
}

// CommonFlags defines the shared flags on the default flag set with the
// program's defaults (rows generated, runs per query); local adds -dir and
// -threads. Call flag.Parse after it.
func CommonFlags(rows, runs int, local bool) Flags {
	f := Flags{
		Rows: flag.Int("rows", rows, "rows to generate (10 per person)"),
		Runs: flag.Int("runs", runs, "runs per query; the median is reported"),
		Only: flag.String("only", "", "run only the comparisons whose name contains this"),
	}
	if local {
		f.Dir = flag.String("dir", DefaultDir(), "where the generated data goes")
		f.Threads = flag.Int("threads", 0, "DuckDB threads (0 = one per core)")
	}
	return f
}
