package sqlgen

import (
	"fmt"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/epoch"
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

// joinOn spells the equalities of join j's ON: plain, or with both sides
// truncated to a period (ir.Join.Trunc), spelled as the bounding spells a
// row's epoch (dateSQL).
func (g *sqlGen) joinOn(j ir.Join) ([]string, error) {
	on := make([]string, len(j.On))
	for k, c := range j.On {
		f := j.OnTrunc(k)
		if f == "" {
			on[k] = g.colRef(c[0]) + " = " + g.colRef(c[1])
			continue
		}
		l, err := g.dateSQL(ir.DatePart{Column: c[0], Field: f, Trunc: true})
		if err != nil {
			return nil, err
		}
		r, err := g.dateSQL(ir.DatePart{Column: c[1], Field: f, Trunc: true})
		if err != nil {
			return nil, err
		}
		// dateSQL clamps a date into its column's declared bounds, so
		// that the expression is total; a row dated outside them must
		// match nothing rather than the first or last period: its side
		// is NULL, which equals nothing (an ON of equalities only, as
		// every engine accepts).
		sides := [2]string{l, r}
		for i, col := range c {
			in, err := g.withinDeclared(col)
			if err != nil {
				return nil, err
			}
			if in != "" {
				sides[i] = "(CASE WHEN " + in + " THEN " + sides[i] + " END)"
			}
		}
		on[k] = sides[0] + " = " + sides[1]
	}
	return on, nil
}

// withinDeclared spells "column lies within its declared bounds", or ""
// when the relation declares none for it.
func (g *sqlGen) withinDeclared(column string) (string, error) {
	c := g.p.Table.Column(column)
	if c == nil || !c.Bounded() {
		return "", nil
	}
	return g.expr(ir.Between{
		Arg:  ir.Operand{Kind: ir.ColumnRef, Column: c.Name},
		Low:  ir.Operand{Kind: ir.Literal, Value: int64(*c.Lower), Type: c.Type},
		High: ir.Operand{Kind: ir.Literal, Value: int64(*c.Upper), Type: c.Type},
	})
}

// occurrenceEpoch spells, for a private occurrence of a join whose epoch
// column is column (a name of the relation; "" when the query reads no
// epochs), the start of its row's epoch, by which capped bounds its rows
// per (person, epoch), and, when joined is true (an occurrence after the
// first, whose rows the query's WHERE does not filter by epoch), the
// condition that keeps only its rows of the epochs read, within its
// column's declared bounds: a row of an epoch the query was not charged
// for, or outside the declared range, is never read.
func (g *sqlGen) occurrenceEpoch(column string, joined bool) (start string, keep []string, err error) {
	p := g.p
	if p.Epochs == nil || column == "" {
		return "", nil, nil
	}
	if start, err = g.dateSQL(ir.DatePart{Column: column, Field: p.EpochEvery, Trunc: true}); err != nil || !joined {
		return start, nil, err
	}
	c := p.Table.Column(column)
	r := *p.Epochs
	lo, hi := epoch.Start(r.Every, r.From), epoch.End(r.Every, r.To)
	if c.Type == schema.Timestamp {
		lo, hi = lo*schema.MicrosPerDay, (hi+1)*schema.MicrosPerDay-1
	}
	lo, hi = max(lo, int64(*c.Lower)), min(hi, int64(*c.Upper))
	cond, err := g.expr(ir.Between{
		Arg:  ir.Operand{Kind: ir.ColumnRef, Column: c.Name},
		Low:  ir.Operand{Kind: ir.Literal, Value: lo, Type: c.Type},
		High: ir.Operand{Kind: ir.Literal, Value: hi, Type: c.Type},
	})
	if err != nil {
		return "", nil, err
	}
	return start, []string{"(" + cond + ")"}, nil
}
