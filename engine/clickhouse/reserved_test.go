package clickhouse_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/enginetest"
)

// TestReservedSourceColumns: a server column named as a statement's own
// columns are (_dp_k0, _dp_u), declared under another name with from:, is
// read as itself in a statement that gives those names to other values:
// written into the statement's SELECT, the column would read as the
// alias (ClickHouse sees an alias in every expression of its SELECT), so
// such a table is read through its projection.
func TestReservedSourceColumns(t *testing.T) {
	c := enginetest.SharedClickHouse(t)
	ctx := context.Background()
	if err := c.Exec(ctx, "CREATE TABLE IF NOT EXISTS reserved_src (k0 Int64, grp String, _dp_k0 Int64, _dp_u Int64) ENGINE = MergeTree ORDER BY k0",
		"TRUNCATE TABLE reserved_src", "INSERT INTO reserved_src SELECT 1, 'x', 5, 7"); err != nil {
		t.Fatal(err)
	}
	e := open(t, c, 0)
	cols := []engine.Column{{Name: "k0", Type: engine.Integer}, {Name: "grp", Type: engine.Text},
		{Name: "pk", Type: engine.Integer, Source: "_dp_k0"}, {Name: "pu", Type: engine.Integer, Source: "_dp_u"}}
	if err := e.BindTable(ctx, "reserved_src", "default.reserved_src", cols); err != nil {
		t.Fatal(err)
	}
	rows, err := e.Query(ctx, `SELECT "k0" AS _dp_u, "grp" AS _dp_k0, "pk" AS _dp_v1, "pu" AS _dp_v2 FROM "reserved_src" WHERE "pk" > 0`)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(rows.Rows); got != "[[1 x 5 7]]" {
		t.Errorf("got %s, want [[1 x 5 7]]: a generated alias was read for a column", got)
	}
}
