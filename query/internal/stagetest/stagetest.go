// Package stagetest holds what the tests of the query stages share: a
// small catalog with one private table, whose file is empty because no
// stage before the engine reads data.
package stagetest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dpstat/dpstat/catalog"
)

// CatalogYAML declares the table visits: a privacy unit with at most 2
// groups and 3 rows per group for each person, an int column with a value
// list, a bounded int, a text column whose values need quoting, and a
// nullable bounded float.
const CatalogYAML = `
budget: {epsilon: 10, delta: 1e-6}
tables:
  visits:
    source: visits.csv
    privacy_unit: pid
    max_groups_per_unit: 2
    max_rows_per_group: 3
    columns:
      pid:   {type: int}
      day:   {type: int, values: [1, 2, 3]}
      age:   {type: int, lower: 18, upper: 90}
      city:  {type: text, values: [Paris, "L'Isle"]}
      euros: {type: float, lower: 0, upper: 60, nullable: true}
`

// Catalog returns CatalogYAML parsed, with an empty visits.csv in a
// temporary directory.
func Catalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "visits.csv"), []byte("pid,day,age,city,euros\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Parse([]byte(CatalogYAML), dir)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}
