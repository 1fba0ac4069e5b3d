package parse

import (
	"testing"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// TestBind checks that the binder carries every fact the stages read and
// that each occurrence owns its columns: what a stage derives for one
// (narrowed bounds) reaches neither another occurrence nor the catalog.
func TestBind(t *testing.T) {
	lo, hi := 0.0, 10.0
	decl := &catalog.Table{
		Name: "visits", Source: "v.csv", Format: "csv", PrivacyUnit: "pid", MaxGroupsPerUnit: 3, MaxRowsPerGroup: 2,
		GroupSize: 4, IDSpace: "people", NaNFree: true, ClusteredByUnit: true,
		Epoch: &catalog.Epoch{Column: "day", Every: "month"},
		Columns: []*catalog.Column{
			{Name: "pid", Type: schema.Int, Lower: &lo, Upper: &hi},
			{Name: "day", Type: schema.Date, Lower: &lo, Upper: &hi, Nullable: true, From: "Visit day"},
			{Name: "city", Type: schema.Text, Values: []any{"A", "B"}},
		},
	}
	for _, tt := range []struct {
		alias, want string
	}{{"", "visits"}, {"v", "v"}} {
		b := Bind(decl, tt.alias)
		if b.Name != "visits" || b.Alias != tt.want || b.PrivacyUnit != "pid" || b.MaxGroupsPerUnit != 3 || b.MaxRowsPerGroup != 2 ||
			b.GroupSize != 4 || b.IDSpace != "people" || !b.NaNFree || !b.ClusteredByUnit || b.Public ||
			b.Epoch == nil || *b.Epoch != (ir.Epoch{Column: "day", Every: "month"}) {
			t.Errorf("Bind(%q) = %+v", tt.alias, b)
		}
		if len(b.Columns) != 3 {
			t.Fatalf("Bind(%q): %d columns, want 3", tt.alias, len(b.Columns))
		}
		for i, c := range b.Columns {
			d := decl.Columns[i]
			if c.Name != d.Name || c.Type != d.Type || c.Nullable != d.Nullable || c.From != d.From || len(c.Values) != len(d.Values) ||
				(c.Lower == nil) != (d.Lower == nil) || (c.Lower != nil && (*c.Lower != *d.Lower || *c.Upper != *d.Upper)) {
				t.Errorf("Bind(%q) column %d = %+v, want %+v", tt.alias, i, c, d)
			}
		}
		*b.Columns[0].Lower = 5
		if lo != 0 {
			t.Fatalf("a bound narrowed on the bound table reached the catalog")
		}
	}
	if a, b := Bind(decl, "a"), Bind(decl, "b"); a.Columns[0] == b.Columns[0] {
		t.Error("two occurrences share a column")
	}
	if Bind(nil, "x") != nil {
		t.Error("Bind(nil) is not nil")
	}
}
