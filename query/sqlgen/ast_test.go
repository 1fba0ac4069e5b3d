package sqlgen

import (
	"testing"

	"github.com/dpstat/dpstat/engine/clickhouse"
	"github.com/dpstat/dpstat/engine/duckdb"
)

// TestRender checks the renderer's spelling of each node: stages as WITH
// queries, or nested under their names for a dialect without them; joins
// with ON and USING; UNION ALL inline and on lines; the clauses after
// GROUP BY in their order.
func TestRender(t *testing.T) {
	rows := &selectStmt{
		items: []item{as(`"pid"`, "u"), as(`"city"`, "k0")},
		from:  table{name: "visits", quote: true},
		where: []string{`"pid" IS NOT NULL`, `"city" IN ('A')`},
	}
	perUnit := &selectStmt{items: append(cols("u", "k0"), as("count(*)", "s0")), from: stageRef("r"), groupBy: []string{"u", "k0"}}
	st := &statement{
		stages: []stage{{name: "r", body: rows}, {name: "per_unit", kw: "MATERIALIZED", body: perUnit}},
		body: &selectStmt{
			items:   append(cols("k0"), as("sum(s0)", "s0")),
			from:    join{left: stageRef("per_unit"), joins: []joinClause{{kind: "JOIN", right: stageRef("r"), using: []string{"u", "k0"}}}},
			groupBy: []string{"k0"},
		},
	}
	for _, tt := range []struct {
		name string
		got  string
		want string
	}{
		{"with", render(duckdb.Dialect, st),
			`WITH r AS (SELECT "pid" AS u, "city" AS k0 FROM "visits" WHERE "pid" IS NOT NULL AND "city" IN ('A')),` + "\n" +
				`per_unit AS MATERIALIZED (SELECT u, k0, count(*) AS s0 FROM r GROUP BY u, k0)` + "\n" +
				`SELECT k0, sum(s0) AS s0 FROM per_unit JOIN r USING (u, k0) GROUP BY k0`},
		{"nested", render(clickhouse.Dialect, st),
			`SELECT k0, sum(s0) AS s0 FROM (SELECT u, k0, count(*) AS s0 FROM (SELECT "pid" AS u, "city" AS k0 FROM "visits" WHERE "pid" IS NOT NULL AND "city" IN ('A')) AS r GROUP BY u, k0) AS per_unit` +
				` JOIN (SELECT "pid" AS u, "city" AS k0 FROM "visits" WHERE "pid" IS NOT NULL AND "city" IN ('A')) AS r USING (u, k0) GROUP BY k0`},
		{"join on", render(duckdb.Dialect, &selectStmt{
			items: cols("*"),
			from:  join{left: table{name: "a", alias: "t0", quote: true}, joins: []joinClause{{kind: "LEFT JOIN", right: table{name: "b", alias: "t1", quote: true}, on: []string{"x = y", "z = w"}}}},
		}), `SELECT * FROM "a" AS "t0" LEFT JOIN "b" AS "t1" ON x = y AND z = w`},
		{"union", render(duckdb.Dialect, &unionAll{parts: []sqlNode{&selectStmt{items: cols("1")}, rawSQL("SELECT 2")}}), "SELECT 1 UNION ALL SELECT 2"},
		{"union lines", render(duckdb.Dialect, &unionAll{parts: []sqlNode{&selectStmt{items: cols("1")}, rawSQL("SELECT 2")}, lines: true}), "SELECT 1\nUNION ALL\nSELECT 2"},
		{"clauses", render(duckdb.Dialect, &selectStmt{
			items: cols("*"), from: subquery{query: rawSQL("SELECT 1 AS u"), alias: "q"}, groupBy: []string{"u"},
			qualify: "rn <= 1", tail: "ORDER BY u LIMIT 1 BY u", settings: " SETTINGS x = 1",
		}), "SELECT * FROM (SELECT 1 AS u) AS q GROUP BY u QUALIFY rn <= 1 ORDER BY u LIMIT 1 BY u SETTINGS x = 1"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, tt.got, tt.want)
		}
	}
}
