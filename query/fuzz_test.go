package query

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/internal/querygen"
	"github.com/dpstat/dpstat/query/ir"
)

// fuzzPlanTimeout bounds planning one fuzzed query: parsing, planning,
// noise calibration and SQL generation only, no engine.
const fuzzPlanTimeout = 10 * time.Second

// FuzzPlan checks parse → plan → SQL for any text: no panic, planning ends
// within fuzzPlanTimeout, a refusal is a *RefusedError that says what
// would be accepted or what is wrong, and an accepted query has engine SQL.
// Its seed corpus is the neighbouring-table battery and
// testdata/fuzz/FuzzPlan; `make fuzz` runs it for longer.
func FuzzPlan(f *testing.F) {
	for _, q := range neighbourBattery {
		f.Add(strings.ReplaceAll(q, "FROM T", "FROM people"))
	}
	cat := loadCatalog(f, writeNeighbourCatalog(f))
	f.Fuzz(func(t *testing.T, sql string) {
		done := make(chan struct{})
		var (
			p   *Prepared
			err error
		)
		go func() {
			defer close(done)
			p, err = Prepare(cat, duckdb.Dialect, sql, neighbourOpts())
		}()
		select {
		case <-done:
		case <-time.After(fuzzPlanTimeout):
			t.Fatalf("planning %q did not end within %v", sql, fuzzPlanTimeout)
		}
		if err != nil {
			var re *ir.RefusedError
			if !errors.As(err, &re) {
				t.Fatalf("%q: not a refusal: %T %v", sql, err, err)
			}
			return
		}
		if p.SQL == "" && len(p.HistogramSQL) == 0 && !p.ExplainOnly && !p.Plan.PublicKeysOnly() {
			t.Fatalf("%q: planned without engine SQL", sql)
		}
	})
}

// FuzzNeighbours runs any query that plans on the harness table D and on D
// without one person (chosen by drop), with the oracle of
// TestNeighbouringTables: the same outcome, no engine failure, counts and
// sums within their sensitivity, every run bounded.
func FuzzNeighbours(f *testing.F) {
	for i, q := range neighbourBattery {
		f.Add(strings.ReplaceAll(q, "FROM T", "FROM people"), uint8(i))
		if strings.Contains(q, " JOIN ") {
			f.Add(strings.ReplaceAll(q, "FROM T", "FROM wide"), uint8(i))
		}
	}
	if raceDetector {
		f.Skip("the neighbouring-table oracle runs in the plain test run (make test runs it without -race)")
	}
	fix := neighbours(f)
	f.Fuzz(func(t *testing.T, sql string, drop uint8) {
		if len(sql) > 4096 {
			return // long inputs only slow the engine down
		}
		for _, table := range []string{"people", "rows", "wide"} {
			if !strings.Contains(sql, table) {
				continue
			}
			// The wide table reads the people fixture's files.
			fixture := table
			if table == "wide" {
				fixture = "people"
			}
			// The fuzzer reports an input slower than 10 s as a hang:
			// plans with very many groups are left to the battery.
			if p, err := fix.services[fixture]["D"].Prepare(sql, neighbourOpts()); err == nil && len(p.Plan.Keys) > 10_000 {
				continue
			}
			variants := fix.persons[fixture]
			v := variants[int(drop)%len(variants)]
			d := runNeighbour(t, fix.services[fixture]["D"], sql)
			checkNeighbours(t, sql, v, d, runNeighbour(t, fix.services[fixture][v], sql))
		}
	})
}

// TestFuzzSeedsPlanQuickly keeps the seed corpus meaningful: most seeds
// must plan (a battery of refusals would fuzz only the parser).
func TestFuzzSeedsPlanQuickly(t *testing.T) {
	cat := loadCatalog(t, writeNeighbourCatalog(t))
	planned := 0
	for _, q := range neighbourBattery {
		if _, err := Prepare(cat, duckdb.Dialect, strings.ReplaceAll(q, "FROM T", "FROM people"), neighbourOpts()); err == nil {
			planned++
		}
	}
	if planned < len(neighbourBattery)*3/4 {
		t.Fatalf("only %d of %d battery queries plan", planned, len(neighbourBattery))
	}
}

// writeNeighbourCatalog writes the harness catalog with an empty private
// table and its public table, for planning without data.
func writeNeighbourCatalog(t testing.TB) string {
	t.Helper()
	path := writeTable(t, querygen.Catalog, querygen.Columns+"\n")
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "codes.csv"), []byte(querygen.Codes), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
