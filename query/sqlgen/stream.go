package sqlgen

import (
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/dpplan"
)

// rowValues spells the per-row values of the row stage: one column per
// statistic that reads a value (rowExprs[i] is its name, "" for COUNT(*)
// and the other statistics without one; exprOf maps each name to its
// expression).
func (g *sqlGen) rowValues(rowExprs []string, exprOf map[string]string) ([]item, error) {
	p := g.p
	var vals []item
	for i, st := range p.Statistics {
		if st.Summand.Kind == dpplan.NonNullCount {
			continue
		}
		e, err := g.summand(st.Summand)
		if err != nil {
			return nil, err
		}
		if e != "" {
			rowExprs[i] = valueName(i)
			vals = append(vals, as(e, rowExprs[i]))
			exprOf[rowExprs[i]] = e
		}
	}
	// A count of non-NULL values reuses the fixed-point summand of the
	// same column when there is one (it is NULL exactly when the
	// column is), so the bounding stages carry one column less.
	// (Where NULLs are clamped to the lower bound, the summand is
	// never NULL, so there is nothing to reuse.)
	for i, st := range p.Statistics {
		if st.Summand.Kind != dpplan.NonNullCount {
			continue
		}
		for j, other := range p.Statistics {
			if !g.nullsClamped() && other.Summand.Kind == dpplan.FixedPointSum && other.Summand.Column == st.Summand.Column {
				rowExprs[i] = rowExprs[j]
			}
		}
		if rowExprs[i] == "" {
			e, err := g.summand(st.Summand)
			if err != nil {
				return nil, err
			}
			rowExprs[i] = valueName(i)
			vals = append(vals, as(e, rowExprs[i]))
			exprOf[rowExprs[i]] = e
		}
	}
	return vals, nil
}

// StreamRows is the row stage of a bounded plan as one statement, for a
// caller that bounds each person's contribution itself while it reads the
// rows in the engine's order (the streaming pass of query): the columns
// are the privacy unit (column 0), the group keys (columns 1 … nk), then
// the per-row values, filtered and clamped exactly as the bounded
// statement's row stage does. Value[i] is the column of statistic i's
// value, or -1 for a statistic that reads none (COUNT(*), a count of
// persons).
type StreamRows struct {
	SQL   string
	Value []int
}

// RowsSQL returns the row stage of plan p in form f for the persons whose
// unit lies in r, as StreamRows.
func RowsSQL(p *dpplan.Plan, d engine.Dialect, f dpplan.Form, r UnitRange) (*StreamRows, error) {
	g := newSQLGen(d, p, f)
	g.unitRange = &r
	rowExprs := make([]string, len(p.Statistics))
	exprOf := map[string]string{}
	table := p.Table.Name
	if f == dpplan.FastForm {
		table = RawView(table)
	}
	rows, err := g.rowStage(table, func() ([]item, []string, error) {
		vals, err := g.rowValues(rowExprs, exprOf)
		return vals, nil, err
	})
	if err != nil {
		return nil, err
	}
	col := map[string]int{}
	for i, it := range rows.items {
		col[it.alias] = i
	}
	out := &StreamRows{SQL: g.render(rows), Value: make([]int, len(p.Statistics))}
	for i, e := range rowExprs {
		out.Value[i] = -1
		if e != "" {
			out.Value[i] = col[e]
		}
	}
	return out, nil
}
