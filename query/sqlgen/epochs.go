package sqlgen

import (
	"fmt"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/ir"
)

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
	start, err := g.dateSQL(ir.DatePart{Column: p.EpochColumn, Field: p.EpochEvery, Trunc: true})
	if err != nil {
		return "", err
	}
	text := g.d.TypeName(engine.Text)
	return fmt.Sprintf("concat(CAST(%s AS %s), '/', CAST(%s AS %s))", person, text, start, text), nil
}
