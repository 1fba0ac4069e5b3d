package catalog

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dpstat/dpstat/schema"
)

// Summary describes the catalog in a few lines for people: each table with
// its source, privacy unit, contribution bounds and columns.
func (c *Catalog) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "budget per analyst and table: epsilon=%g delta=%g\n", c.Budget.Epsilon, c.Budget.Delta)
	if c.TotalBudget != nil {
		fmt.Fprintf(&b, "total budget per table, all analysts together: epsilon=%g delta=%g\n", c.TotalBudget.Epsilon, c.TotalBudget.Delta)
	} else {
		b.WriteString("no total budget: each analyst may spend a full budget on each table (declare total_budget to cap them together)\n")
	}
	if c.Remote() {
		fmt.Fprintf(&b, "engine: %s at %s\n", c.Engine.Kind, c.Engine.DSN)
	}
	for _, t := range c.Tables {
		if t.Format == Relation {
			fmt.Fprintf(&b, "table %s: %s (%s on %s)", t.Name, t.Source, t.Format, c.Engine.Kind)
		} else {
			fmt.Fprintf(&b, "table %s: %s (%s)", t.Name, filepath.Base(t.Source), t.Format)
		}
		switch {
		case t.Public:
			b.WriteString(", public (about no one: joined to private tables, no budget)")
		case t.HasPrivacyUnit():
			fmt.Fprintf(&b, ", privacy unit %s, at most %d groups and %d rows per group per person",
				t.PrivacyUnit, t.MaxGroupsPerUnit, t.MaxRowsPerGroup)
		default:
			b.WriteString(", one row per person")
		}
		if t.IDSpace != "" {
			fmt.Fprintf(&b, ", id space %s", t.IDSpace)
		}
		if t.NaNFree {
			b.WriteString(", declared nan_free")
		}
		if r, ok := t.Epochs(); ok {
			eps := t.Budget.Epsilon
			if t.TotalBudget != nil {
				eps = t.TotalBudget.Epsilon
			}
			fmt.Fprintf(&b, ", epochs by %s of %s (%d: %s), each with budgets of its own: each person's rows of one %s are protected at epsilon=%g (the total, else one analyst's budget); a person present in all %d at most %g",
				t.Epoch.Every, t.Epoch.Column, r.Len(), r, t.Epoch.Every, eps, r.Len(), eps*float64(r.Len()))
		}
		if t.ClusteredByUnit {
			b.WriteString(", declared clustered_by_unit")
		}
		if t.Budget != c.Budget {
			fmt.Fprintf(&b, ", budget per analyst epsilon=%g delta=%g", t.Budget.Epsilon, t.Budget.Delta)
		}
		if t.TotalBudget != nil && (c.TotalBudget == nil || *t.TotalBudget != *c.TotalBudget) {
			fmt.Fprintf(&b, ", total budget epsilon=%g delta=%g", t.TotalBudget.Epsilon, t.TotalBudget.Delta)
		}
		b.WriteString("\n")
		for _, col := range t.Columns {
			fmt.Fprintf(&b, "  %s %s", col.Name, col.Type)
			if col.Bounded() && col.Type.Temporal() {
				fmt.Fprintf(&b, " [%s, %s]", schema.FormatValue(col.Type, int64(*col.Lower)), schema.FormatValue(col.Type, int64(*col.Upper)))
			} else if col.Bounded() {
				fmt.Fprintf(&b, " [%g, %g]", *col.Lower, *col.Upper)
			}
			if col.Values != nil {
				fmt.Fprintf(&b, " values %s", formatValues(col.Type, col.Values))
			}
			if col.Nullable {
				b.WriteString(" nullable")
			}
			var usable []string
			usable = append(usable, "COUNT")
			if col.Bounded() && !col.Type.Temporal() {
				usable = append(usable, "SUM", "AVG")
			}
			if col.Values != nil {
				usable = append(usable, "GROUP BY")
			}
			if col.Bounded() && col.Type.Temporal() {
				usable = append(usable, "GROUP BY date_trunc/EXTRACT")
			}
			if col.Name == t.PrivacyUnit {
				usable = []string{"privacy unit"}
			}
			fmt.Fprintf(&b, " (%s)\n", strings.Join(usable, ", "))
		}
	}
	return b.String()
}

func formatValues(t schema.Type, vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = schema.FormatValue(t, v)
	}
	if len(parts) > 8 {
		parts = append(parts[:8], fmt.Sprintf("… (%d in all)", len(vs)))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
