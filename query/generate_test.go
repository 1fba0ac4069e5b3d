package query

import (
	"os"
	"testing"

	"github.com/dpstat/dpstat/internal/querygen"
)

// The relational generator (querygen.Generate) composes every construct
// dpstat accepts into random queries over the neighbouring-table harness
// (querygen.Catalog); docs/privacy.md §7 says what it generates.
// TestGeneratedNeighbours runs a fixed set of seeds in every test run and
// FuzzGenerated (`make fuzz`) searches for more; query/enginetest runs
// them on every engine (RunGenerated).

// generatedSeeds is how many generated queries every test run checks on
// DuckDB (and a third of them on PostgreSQL); `make fuzz` searches more.
const generatedSeeds = 150

// TestGeneratedNeighbours runs the generated queries of fixed seeds with
// the neighbouring-table oracle on DuckDB: D against D minus each person.
func TestGeneratedNeighbours(t *testing.T) {
	testGeneratedNeighbours(t, "duckdb", generatedSeeds)
}

// TestGeneratedNeighboursPostgres runs a third of them on PostgreSQL.
func TestGeneratedNeighboursPostgres(t *testing.T) {
	testGeneratedNeighbours(t, "postgres", generatedSeeds/3)
}

func testGeneratedNeighbours(t *testing.T, kind string, seeds int) {
	if raceDetector {
		t.Skip("the neighbouring-table harness runs in the plain test run (make test runs it without -race)")
	}
	fix := neighboursOn(t, kind)
	planned := 0
	for seed := range uint64(seeds) {
		sql, table := querygen.Generate(seed)
		if checkGenerated(t, fix, sql, table, -1) {
			planned++
		}
	}
	// Most generated queries must plan, or the generator only tests the
	// refusals.
	if planned < seeds/3 {
		t.Errorf("only %d of %d generated queries were answered", planned, seeds)
	}
}

// checkGenerated runs one generated query on D and on D minus a person
// (every person when drop < 0) and checks the outcomes; it reports
// whether the query was answered on D.
func checkGenerated(t testing.TB, fix *neighbourFixture, sql, table string, drop int) bool {
	t.Helper()
	fixture := table
	if table == "wide" || table == "monthly" {
		fixture = "people" // the wide and monthly tables read the people fixture's files
	}
	svc := fix.services[fixture]["D"]
	if p, err := svc.Prepare(sql, neighbourOpts()); err == nil && len(p.Plan.Keys) > 10_000 {
		return false // very many groups only slow the engine down
	}
	d := runNeighbour(t, svc, sql)
	variants := fix.persons[fixture]
	if drop >= 0 {
		variants = variants[drop%len(variants) : drop%len(variants)+1]
	}
	for _, v := range variants {
		checkNeighbours(t, sql, v, d, runNeighbour(t, fix.services[fixture][v], sql))
	}
	return d.err == nil
}

// FuzzGenerated searches seeds of the relational generator with the
// neighbouring-table oracle (make fuzz).
func FuzzGenerated(f *testing.F) {
	for seed := range uint64(8) {
		f.Add(seed, uint8(seed))
	}
	if raceDetector {
		f.Skip("the neighbouring-table oracle runs in the plain test run")
	}
	fix := neighbours(f)
	f.Fuzz(func(t *testing.T, seed uint64, drop uint8) {
		sql, table := querygen.Generate(seed)
		checkGenerated(t, fix, sql, table, int(drop))
	})
}

// TestPrintGenerated prints generated queries (go test -run
// TestPrintGenerated -v -args -show-generated).
func TestPrintGenerated(t *testing.T) {
	if os.Getenv("DPSTAT_SHOW_GENERATED") == "" {
		t.Skip("set DPSTAT_SHOW_GENERATED=1 to print the generated queries")
	}
	for seed := range uint64(generatedSeeds) {
		sql, table := querygen.Generate(seed)
		t.Logf("%d %s: %s", seed, table, sql)
	}
}
