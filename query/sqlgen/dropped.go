package sqlgen

import (
	"fmt"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/dpplan"
)

// DroppedSQL generates the statement of the estimate of the rows
// contribution bounding drops (dpplan.Dropped), over the rows the query
// reads (its filters, keys and public joins): per (person, group) the rows
// n and m = min(n, L∞); per person kept = min(Σm, L0·L∞), the most the
// bounding can keep of them, and dropped = min(Σn − kept, cap); then the
// sums of both, in one row. Every value is an
// integer and each clamp is the one the estimate's sensitivities rest on,
// so no data can make it fail or exceed them. The sums are _dp_s0 (kept)
// and _dp_s1 (dropped).
func DroppedSQL(p *dpplan.Plan, d *dpplan.Dropped, dl engine.Dialect) (string, error) {
	if !p.Bounded || d == nil {
		return "", fmt.Errorf("sqlgen: the dropped-rows estimate needs a plan that bounds contributions")
	}
	g := newSQLGen(dl, p, dpplan.CleanForm)
	rows, err := g.rowStage(p.Table.Name, func() ([]item, []string, error) { return nil, nil, nil })
	if err != nil {
		return "", err
	}
	integer := dl.TypeName(engine.Integer)
	n := "CAST(count(*) AS " + integer + ")"
	perGroup := &selectStmt{
		items:   []item{{expr: unitName}, as(n, nName), as("least("+n+", "+g.intConst(d.RowsPerGroup)+")", mName)},
		from:    stageRef(rowsStage),
		groupBy: concat([]string{unitName}, g.keyNames()...),
	}
	kept := "least(sum(" + mName + "), " + g.intConst(d.KeptMax) + ")"
	perPerson := &selectStmt{
		items: []item{
			as(kept, keptName),
			as("least(sum("+nName+") - "+kept+", "+g.intConst(d.Cap)+")", droppedName),
		},
		from:    subquery{query: perGroup, alias: perUnitStage},
		groupBy: []string{unitName},
	}
	body := &selectStmt{
		// Named apart from the columns they sum: ClickHouse would read an
		// alias of the same name inside its own sum.
		items: []item{as("sum("+keptName+")", statName(0)), as("sum("+droppedName+")", statName(1))},
		from:  subquery{query: perPerson, alias: perPersonStage},
	}
	return g.render(&statement{stages: []stage{{name: rowsStage, body: rows}}, body: body}), nil
}
