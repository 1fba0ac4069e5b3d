package sqlgen

import (
	"fmt"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// preEpochName is the column of a per-person pre-aggregation, on a table
// that declares an epoch, that holds the start of the epoch of its row:
// the pre-aggregation groups by it as well as by the person, so that each
// of its rows holds the rows of one (person, epoch) unit.
var preEpochName = schema.ReservedPrefix + "pe"

// preEpoch spells the start of the epoch of a row of the pre-aggregation's
// inner relation, which ig reads, for plan p (nil when p declares no
// epoch).
func preEpoch(ig *sqlGen, p *dpplan.Plan) (string, bool, error) {
	if p.Epochs == nil {
		return "", false, nil
	}
	s, err := ig.dateSQL(ir.DatePart{Column: p.EpochColumn, Field: p.EpochEvery, Trunc: true})
	return s, err == nil, err
}

// unitExpr is the privacy unit of a row: the person, or, on a table that
// declares an epoch, the person and the epoch of the row (its epoch
// column truncated to the epoch's start), spelled as one text value, so
// that every stage that bounds or counts per unit does so per (person,
// epoch). The plan's conditions keep only rows of the epochs read, whose
// epoch column is not NULL.
func (g *sqlGen) unitExpr() (string, error) {
	p := g.p
	person := g.colRef(p.Table.PrivacyUnit)
	if p.Epochs == nil {
		return person, nil
	}
	var start string
	if p.Query.Pre != nil {
		// The pre-aggregation groups by the epoch too and shows its start.
		start = preEpochName
	} else {
		var err error
		if start, err = g.dateSQL(ir.DatePart{Column: p.EpochColumn, Field: p.EpochEvery, Trunc: true}); err != nil {
			return "", err
		}
	}
	text := g.d.TypeName(engine.Text)
	return fmt.Sprintf("concat(CAST(%s AS %s), '/', CAST(%s AS %s))", person, text, start, text), nil
}
