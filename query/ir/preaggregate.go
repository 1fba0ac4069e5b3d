package ir

import (
	"fmt"
	"strings"

	"github.com/dpstat/dpstat/schema"
)

// PreAggregate is a per-person pre-aggregation the query reads instead of
// a table.
type PreAggregate struct {
	// Query holds the inner query's table, joins, row filter (Where) and
	// derived columns; its Outputs are unused.
	Query *Query
	// Relation is the inner relation the aggregates read (the table or
	// joined relation, with bounds narrowed by Where and the derived
	// columns).
	Relation *Table
	// Unit is the inner relation's privacy unit column; Keys lists the
	// inner GROUP BY columns (the unit among them).
	Unit string
	Keys []string
	// Columns lists the relation the outer query reads, in order: for
	// each, the inner column it shows (keys) or the aggregate it computes.
	Columns []PreColumn
}

// PreColumn is one column of a pre-aggregation.
type PreColumn struct {
	// Name is the column's name in the outer query.
	Name string
	// Key is the inner key column it shows; empty for aggregates.
	Key string
	// Agg is the per-person aggregate it computes; nil for keys.
	Agg *Aggregate
}

// AsTable builds the relation the outer query reads: one column per
// output, with the bounds the pre-aggregation implies, the privacy unit
// and the contribution bounds that hold for it.
func (pre *PreAggregate) AsTable(alias string, base, rel *Table) (*Table, error) {
	out := *base
	out.Columns = nil
	unitName := ""
	seen := map[string]bool{}
	for _, c := range pre.Columns {
		if seen[strings.ToLower(c.Name)] {
			return nil, Refuse("subquery %s has two columns named %s; give them different names with AS", alias, c.Name)
		}
		seen[strings.ToLower(c.Name)] = true
		if c.Key != "" {
			cc := *rel.Column(c.Key)
			cc.Name = c.Name
			if c.Key == pre.Unit && unitName == "" {
				unitName = c.Name
			}
			out.Columns = append(out.Columns, &cc)
			continue
		}
		col, err := pre.outputColumn(c, rel)
		if err != nil {
			return nil, err
		}
		out.Columns = append(out.Columns, col)
	}
	if unitName == "" {
		// The privacy unit is not selected: the relation still carries it,
		// under its own name, for the outer contribution bounding.
		unitName = pre.Unit
		if seen[strings.ToLower(unitName)] {
			return nil, Refuse("subquery %s names a column %s but does not select the privacy unit %s; select it or rename the column", alias, unitName, pre.Unit)
		}
		cc := *rel.Column(pre.Unit)
		out.Columns = append(out.Columns, &cc)
		pre.Columns = append(pre.Columns, PreColumn{Name: unitName, Key: pre.Unit})
	}
	out.PrivacyUnit = unitName
	if len(pre.Keys) == 1 {
		// One row per person: each row is a person, as in a table
		// without a privacy unit, so the outer plan needs no bounding
		// (one row in one group per person) and none is run.
		out.PrivacyUnit, out.MaxGroupsPerUnit, out.MaxRowsPerGroup = "", 0, 0
	}
	return &out, nil
}

// outputColumn is the column of a per-person aggregate, with its bounds.
func (pre *PreAggregate) outputColumn(c PreColumn, rel *Table) (*Column, error) {
	a := c.Agg
	col := &Column{Name: c.Name, Type: schema.Float, Nullable: true}
	if a.Func == CountStar || a.Func == Count {
		// A group of the pre-aggregation has at least one row.
		lo := 0.0
		if a.Func == CountStar {
			lo = 1
		}
		col.Type, col.Lower, col.Nullable = schema.Int, &lo, false
		return col, nil
	}
	arg := rel.Column(a.Column)
	if arg == nil || !arg.Bounded() {
		return nil, fmt.Errorf("query: pre-aggregate %s reads an unbounded column", a)
	}
	lo, hi := *arg.Lower, *arg.Upper
	switch a.Func {
	case Sum:
		// At least one value when the sum is not NULL.
		if lo >= 0 {
			col.Lower = &lo
		}
		if hi <= 0 {
			col.Upper = &hi
		}
	default: // AVG, MIN, MAX
		col.Lower, col.Upper = &lo, &hi
		if a.Func != Avg && (arg.Type == schema.Int || arg.Type.Temporal()) {
			col.Type = arg.Type // a person's MIN or MAX of a date is a date
		}
	}
	return col, nil
}
