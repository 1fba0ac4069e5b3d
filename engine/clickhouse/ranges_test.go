package clickhouse_test

import (
	"path/filepath"
	"testing"

	"github.com/dpstat/dpstat/query/enginetest"
	"github.com/dpstat/dpstat/query/sqlgen/sqlgentest"
)

// TestScalarRangesHold evaluates, on the test cluster, every scalar kind
// the IR bounds over extreme inputs (the cases the SQL generator's tests
// spell in ClickHouse's dialect): each value, as computed and as the
// generated SQL clamps it, lies in its derived range, and each range key
// is one of the planned keys. ClickHouse's arithmetic differs from the
// other engines' (integer overflow wraps, NaN compares otherwise), so the
// ranges are checked on it too.
func TestScalarRangesHold(t *testing.T) {
	cases, err := sqlgentest.LoadRangeCases(filepath.Join("..", "..", "query", "sqlgen", "testdata", "ranges", "clickhouse.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := enginetest.SharedClickHouse(t)
	sqlgentest.CheckRanges(t, open(t, c, 0), cases)
}
