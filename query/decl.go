package query

import (
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/query/ir"
)

// Decl is the declaration of the table the prepared query reads (the
// private table of a join, the table under a per-person pre-aggregation):
// its budgets, id space, source and reuse setting, which the planned
// relation (Plan.Table) does not carry.
func (p *Prepared) Decl() *catalog.Table { return p.decl }

// relationDecl spells the relation a plan aggregates (rel: the bound
// table's columns with the bounds WHERE narrows and the derived columns,
// a join's or a per-person pre-aggregation's columns) as a declaration of
// the table decl the query reads: decl's own facts (source, budgets,
// epoch, …), rel's privacy unit, contribution bounds and columns. The
// answer key and the reuse context hash it, so that two declarations of
// different data, or two relations, never share a stored answer; it is
// the declaration the catalog would write for the relation, so the keys
// stay those of the stored answers. The result is a copy.
func relationDecl(decl *catalog.Table, rel *ir.Table) *catalog.Table {
	t := *decl
	t.PrivacyUnit, t.MaxGroupsPerUnit, t.MaxRowsPerGroup, t.GroupSize = rel.PrivacyUnit, rel.MaxGroupsPerUnit, rel.MaxRowsPerGroup, rel.GroupSize
	t.Columns = make([]*catalog.Column, len(rel.Columns))
	for i, c := range rel.Columns {
		t.Columns[i] = &catalog.Column{Name: c.Name, Type: c.Type, Lower: c.Lower, Upper: c.Upper, Values: c.Values, Nullable: c.Nullable, From: c.From}
	}
	return &t
}
