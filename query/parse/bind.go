package parse

import (
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/query/ir"
	pg "github.com/pganalyze/pg_query_go/v6"
)

// Bind resolves one occurrence of a declared table into the IR's table:
// its columns (type, bounds, public values, nullability), its privacy
// unit and contribution bounds, its epoch and the owner's declarations the
// planner reads. alias is the name the query gives the occurrence; empty
// means the table's name. Every occurrence gets tables and columns of its
// own, so nothing a stage derives for one reaches another or the catalog.
// Bind is the only place the query stages read a catalog table.
func Bind(t *catalog.Table, alias string) *ir.Table {
	if t == nil {
		return nil
	}
	if alias == "" {
		alias = t.Name
	}
	b := &ir.Table{
		Name:             t.Name,
		Alias:            alias,
		PrivacyUnit:      t.PrivacyUnit,
		MaxGroupsPerUnit: t.MaxGroupsPerUnit,
		MaxRowsPerGroup:  t.MaxRowsPerGroup,
		GroupSize:        t.GroupSize,
		Columns:          make([]*ir.Column, len(t.Columns)),
		IDSpace:          t.IDSpace,
		Public:           t.Public,
		NaNFree:          t.NaNFree,
		ClusteredByUnit:  t.ClusteredByUnit,
	}
	for i, c := range t.Columns {
		b.Columns[i] = &ir.Column{
			Name:     c.Name,
			Type:     c.Type,
			Lower:    copyBound(c.Lower),
			Upper:    copyBound(c.Upper),
			Values:   append([]any(nil), c.Values...),
			Nullable: c.Nullable,
			From:     c.From,
		}
	}
	if t.Epoch != nil {
		b.Epoch = &ir.Epoch{Column: t.Epoch.Column, Every: t.Epoch.Every}
	}
	return b
}

// bind binds the catalog's table of the given name (as SQL compares
// names) under alias, or returns nil when the catalog declares none.
func (p *parser) bind(name, alias string) *ir.Table {
	return Bind(p.cat.Table(name), alias)
}

func copyBound(b *float64) *float64 {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}

// aliasOf is the alias FROM gives a table, or "" for none.
func aliasOf(rv *pg.RangeVar) string {
	if rv.Alias == nil {
		return ""
	}
	return rv.Alias.Aliasname
}
