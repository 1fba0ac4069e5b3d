package ir

import (
	"strings"
)

// PublicFacts is what the service reads from a public table.
type PublicFacts struct {
	// Values maps each column to its distinct non-NULL values, sorted; a
	// column with more than MaxGroups of them has none.
	Values map[string][]any
	// Multiplicity maps each column to the most rows that share one value.
	Multiplicity map[string]int64
}

// Join is one table joined to the query's private table: a public table,
// or a private table of the same id space joined on the privacy unit.
type Join struct {
	// Table is the joined table's catalog name.
	Table string
	// Alias names this occurrence of the table in FROM (the table's name
	// when FROM gives none): the relation's columns of the occurrence are
	// named "alias.column" (see QualifiedName), so that a table joined
	// twice is two occurrences with their own columns.
	Alias string
	// Private is true for a private table of the private table's id space.
	Private bool
	// Unit is a private occurrence's privacy unit column, named
	// "alias.column" ("" for a public table): its rows are bounded per
	// person by it before the join (see sqlgen's capped).
	Unit string
	// Left is true for LEFT JOIN: private rows without a match are kept,
	// with NULL public columns.
	Left bool
	// On lists the equalities, as pairs of relation column names (the
	// already joined side first, then this occurrence's "alias.column").
	On [][2]string
	// Trunc, when not nil, holds for each equality of On the period
	// both of its sides are truncated to (ON date_trunc('month', a.day) =
	// date_trunc('month', b.day)), or "" for a plain equality. Only a join
	// of private tables has truncated equalities: with epochs they equate
	// the epochs of the two sides (see the service's epoch joins); the SQL
	// matches a row only when both dates lie within their declared bounds.
	Trunc []string
	// TableEpoch is the joined table's declared epoch, as bound (nil when
	// it declares none).
	TableEpoch *Epoch
	// Epoch is, when the query reads epochs, the relation's name of this
	// private occurrence's epoch column ("alias.column"): its rows are
	// bounded per (person, epoch) before the join. Set by the service.
	Epoch string
}

// OnTrunc is the period equality i of On truncates both sides to, or "".
func (j Join) OnTrunc(i int) string {
	if i < len(j.Trunc) {
		return j.Trunc[i]
	}
	return ""
}

// QualifiedName is the relation's name of column col of the joined
// occurrence alias: "alias.col". Every name of a joined occurrence's
// column is built here and read back by Join.Column, so that a name always
// resolves to its occurrence, never to another occurrence of the table.
func QualifiedName(alias, col string) string { return alias + "." + col }

// Column reports whether the relation column name belongs to this
// occurrence, and the column's name in the joined table.
func (j Join) Column(name string) (string, bool) {
	return strings.CutPrefix(name, j.Alias+".")
}

// JoinedTable is one table of a FROM clause, with the name its columns are
// referred to by.
type JoinedTable struct {
	Table *Table
	Alias string // the alias, or the table's name
}

// PrivateJoin checks a join of two private tables: both name the same
// people (one id space) and the join matches a person's rows with that
// person's rows only (the privacy units are equal), so every joined row
// still belongs to one person and bounding after the join, per person,
// bounds the sensitivity. The bounds that apply are the first table's.
// The occurrence of right joined is rightAlias: its privacy unit must be
// equal to the first table's in on, whatever other occurrences of the
// same table are joined.
func PrivateJoin(left, right *Table, rightAlias string, on [][2]string) error {
	if !left.HasPrivacyUnit() || !right.HasPrivacyUnit() {
		return Refuse("JOIN %s: joining two private tables needs a privacy unit in both, so that each joined row belongs to one person", right.Name)
	}
	if left.IDSpace == "" || left.IDSpace != right.IDSpace {
		return Refuse("JOIN %s: %s and %s are not declared in one id_space; a join of private tables is only private when both privacy units name the same people (declare `id_space:` on both)", right.Name, left.Name, right.Name)
	}
	unitJoined := false
	for _, e := range on {
		unitJoined = unitJoined || (e[0] == left.PrivacyUnit && e[1] == QualifiedName(rightAlias, right.PrivacyUnit))
	}
	if !unitJoined {
		return Refuse("JOIN %s: private tables join on their privacy units (ON a.%s = b.%s); any other join mixes people's rows", right.Name, left.PrivacyUnit, right.PrivacyUnit)
	}
	return nil
}
