package enginetest_test

import (
	"os"
	"testing"

	"github.com/dpstat/dpstat/query/enginetest"
)

// generatedSeeds is how many generated queries each engine (and each
// ClickHouse sharding) checks in every test run; DPSTAT_GENERATED_SEEDS
// asks for more (make fuzz).
const generatedSeeds = 60

func TestMain(m *testing.M) {
	code := m.Run()
	enginetest.StopShared()
	os.Exit(code)
}

// TestDuckDB runs the conformance suite on the embedded engine.
func TestDuckDB(t *testing.T) {
	enginetest.Run(t, enginetest.DuckDB())
	t.Run("nan_free", func(t *testing.T) { enginetest.RunDeclared(t, enginetest.DuckDB()) })
	t.Run("forms", func(t *testing.T) { enginetest.RunForms(t, enginetest.DuckDB()) })
	t.Run("neighbours", func(t *testing.T) { enginetest.RunNeighbours(t, enginetest.DuckDB()) })
	t.Run("generated", func(t *testing.T) {
		enginetest.RunGenerated(t, enginetest.DuckDB(), enginetest.GeneratedSeeds(generatedSeeds))
	})
}

// TestPostgres runs the conformance suite on a PostgreSQL 15 server
// started for the test, connecting as a role that may only read the
// suite's tables.
func TestPostgres(t *testing.T) {
	pg := enginetest.SharedPostgres(t)
	enginetest.Run(t, enginetest.PostgresBackend(pg))
	t.Run("nan_free", func(t *testing.T) { enginetest.RunDeclared(t, enginetest.PostgresBackend(pg)) })
	t.Run("forms", func(t *testing.T) { enginetest.RunForms(t, enginetest.PostgresBackend(pg)) })
	t.Run("neighbours", func(t *testing.T) { enginetest.RunNeighbours(t, enginetest.PostgresBackend(pg)) })
	t.Run("generated", func(t *testing.T) {
		enginetest.RunGenerated(t, enginetest.PostgresBackend(pg), enginetest.GeneratedSeeds(generatedSeeds))
	})
}

// TestClickHouse runs the conformance suite on a two-shard ClickHouse
// cluster started for the test, over Distributed tables sharded by the
// privacy unit, connecting as a read-only user.
func TestClickHouse(t *testing.T) {
	c := enginetest.SharedClickHouse(t)
	enginetest.Run(t, c.Backend())
	t.Run("nan_free", func(t *testing.T) { enginetest.RunDeclared(t, c.Backend()) })
	t.Run("forms", func(t *testing.T) { enginetest.RunForms(t, c.Backend()) })
	t.Run("per shard", func(t *testing.T) { enginetest.RunPerShard(t, c.Backend()) })
	t.Run("neighbours", func(t *testing.T) { enginetest.RunNeighbours(t, c.Backend()) })
	// The generated queries over tables sharded at random (dpstat bounds
	// each person on the server it connects to) and by the privacy unit
	// (single-table queries bound each person on the shards).
	t.Run("generated", func(t *testing.T) {
		enginetest.RunGenerated(t, c.RandomShardBackend(), enginetest.GeneratedSeeds(generatedSeeds))
	})
	t.Run("generated per shard", func(t *testing.T) {
		enginetest.RunGenerated(t, c.Backend(), enginetest.GeneratedSeeds(generatedSeeds))
	})
}
