package ir

import (
	"github.com/dpstat/dpstat/epoch"
	"github.com/dpstat/dpstat/schema"
)

// Table is a relation the IR reads, with every fact of it the stages
// use: one occurrence of a declared table in a query, bound from the
// catalog by the parser (parse.Bind), or a relation built from one (a
// join's columns, a pre-aggregation's outputs, the columns a WHERE clause
// narrows and a project stage derives: Relation). Budgets, sources and the
// other facts of the declaration that only the service reads stay with the
// catalog.
type Table struct {
	// Name is the declared table's name.
	Name string
	// Alias is the name the query gives this occurrence (FROM t AS a);
	// the table's name when it gives none.
	Alias string
	// PrivacyUnit names the column that identifies a person; empty means
	// that every row is a different person.
	PrivacyUnit string
	// MaxGroupsPerUnit (L0) is how many groups one person may contribute
	// to, and MaxRowsPerGroup (L∞) how many rows to one group.
	MaxGroupsPerUnit, MaxRowsPerGroup int64
	// GroupSize is the number of people protected together: every
	// sensitivity is multiplied by it.
	GroupSize int64
	// Columns lists the relation's columns in order.
	Columns []*Column
	// IDSpace names the people the privacy unit identifies; tables of one
	// id space may be joined on it. Empty means the table's own.
	IDSpace string
	// Public marks a table about no one, whose values are read from the
	// data.
	Public bool
	// NaNFree is the owner's declaration that the float columns hold no
	// NaN (dpplan.FastForm).
	NaNFree bool
	// ClusteredByUnit is the owner's declaration that the rows are stored
	// clustered by the privacy unit (sqlgen.UnitRanges).
	ClusteredByUnit bool
	// Epoch, when declared, divides the rows into periods by a date or
	// timestamp column; nil otherwise.
	Epoch *Epoch
}

// Column is one column of a Table.
type Column struct {
	Name string
	Type schema.Type
	// Lower and Upper are the column's bounds (declared, or derived), or
	// nil when it has none. A date column's bounds are days since
	// 1970-01-01, a timestamp column's microseconds.
	Lower, Upper *float64
	// Values is the public list of values (int64, float64, string or bool
	// according to Type), or nil.
	Values []any
	// Nullable records that the column may hold NULL.
	Nullable bool
	// From is the declared column's name in its source, empty for Name
	// or a computed column. The stages spell columns by Name (the engine
	// exposes them so); From only tells the data of two declarations
	// apart where the service keys answers by the relation.
	From string
}

// Epoch is a table's declared epoch: each person's rows of one epoch of
// Column are protected on their own.
type Epoch struct {
	// Column is a bounded date or timestamp column of the table.
	Column string
	// Every is the kind of epoch: day, week, month, quarter or year.
	Every string
}

// Bounded reports whether the column has both bounds.
func (c *Column) Bounded() bool { return c.Lower != nil && c.Upper != nil }

// Column returns the column with the given name (exact match first, then
// case-insensitive), or nil.
func (t *Table) Column(name string) *Column {
	return schema.Named(t.Columns, func(c *Column) string { return c.Name }, name)
}

// HasPrivacyUnit reports whether one person may own several rows.
func (t *Table) HasPrivacyUnit() bool { return t.PrivacyUnit != "" }

// Epochs is the range of every epoch the table declares: those holding
// the epoch column's bounds. ok is false when the table declares no
// epoch.
func (t *Table) Epochs() (epoch.Range, bool) {
	if t.Epoch == nil {
		return epoch.Range{}, false
	}
	c := t.Column(t.Epoch.Column)
	if c == nil || !c.Bounded() {
		return epoch.Range{}, false
	}
	return epoch.Within(t.Epoch.Every, schema.Day(c.Type, int64(*c.Lower)), schema.Day(c.Type, int64(*c.Upper))), true
}
