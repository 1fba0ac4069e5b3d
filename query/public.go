package query

import (
	"context"
	"fmt"
	"sort"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/ir"
)

// readPublicFacts reads the facts of every public table of the catalog:
// public tables' values may be read from the data, and the parser uses
// them for joins (multiplicities) and GROUP BY keys (value sets).
func readPublicFacts(ctx context.Context, cat *catalog.Catalog, eng engine.Engine) (map[string]*ir.PublicFacts, error) {
	out := map[string]*ir.PublicFacts{}
	d := eng.Dialect()
	for _, t := range cat.Tables {
		if !t.Public {
			continue
		}
		f := &ir.PublicFacts{Values: map[string][]any{}, Multiplicity: map[string]int64{}}
		for _, c := range t.Columns {
			col := d.QuoteIdent(c.Name)
			rows, err := eng.Query(ctx, "SELECT "+col+", count(*) FROM "+d.QuoteIdent(t.Name)+" GROUP BY "+col)
			if err != nil {
				return nil, fmt.Errorf("reading public table %s, column %s: %w", t.Name, c.Name, err)
			}
			var vals []any
			var most int64
			for _, r := range rows.Rows {
				n, err := ir.ToBig(r[1])
				if err != nil || !n.IsInt64() {
					return nil, fmt.Errorf("reading public table %s, column %s: bad count %v", t.Name, c.Name, r[1])
				}
				most = max(most, n.Int64())
				if v := ir.CanonicalValue(r[0]); v != nil {
					vals = append(vals, v)
				}
			}
			sort.SliceStable(vals, func(i, j int) bool { return ir.CompareKeys(vals[i], vals[j]) < 0 })
			if len(vals) <= ir.MaxGroups {
				f.Values[c.Name] = vals
			}
			f.Multiplicity[c.Name] = most
		}
		out[t.Name] = f
	}
	return out, nil
}
