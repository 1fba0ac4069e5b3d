package query

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/sqlgen"
	"github.com/dpstat/dpstat/schema"
)

// Register exposes every table of the catalog in the engine under its
// name, with only its declared columns, cast to their declared types (a
// NaN reads as NULL). A table with float columns is also exposed with its
// NaNs kept, for the fast form of sums.
func Register(ctx context.Context, cat *catalog.Catalog, eng engine.Engine) error {
	for _, t := range cat.Tables {
		cols := make([]engine.Column, len(t.Columns))
		floats := false
		for i, c := range t.Columns {
			cols[i] = engine.Column{Name: c.Name, Type: engine.TypeOf(c.Type), Source: c.From}
			floats = floats || c.Type == schema.Float
		}
		if err := expose(ctx, eng, t, t.Name, cols); err != nil {
			return err
		}
		if !floats {
			continue
		}
		// The same table with NaN left in float columns, for the fast form
		// of sums (see SQL).
		for i := range cols {
			cols[i].KeepNaN = true
		}
		if err := expose(ctx, eng, t, sqlgen.RawView(t.Name), cols); err != nil {
			return err
		}
	}
	return nil
}

// DeclaredNaN checks, for the data owner, the tables of cat that declare
// nan_free (catalog.Table.NaNFree) against their data, registered in eng
// (Register): it returns one line for each float column of such a table
// that holds NaN, with how many, read as the difference between the
// column's count of values with NaN kept and with NaN read as NULL. The
// answer quotes the data: it is for the owner (dpstat catalog check, a
// server's log at start), never for analysts, and it never changes which
// form queries run. It scans each declared table once.
func DeclaredNaN(ctx context.Context, cat *catalog.Catalog, eng engine.Engine) ([]string, error) {
	var out []string
	d := eng.Dialect()
	for _, t := range cat.Tables {
		if !t.NaNFree {
			continue
		}
		var cols, counts []string
		for _, c := range t.Columns {
			if c.Type == schema.Float {
				cols = append(cols, c.Name)
				counts = append(counts, "count("+d.QuoteIdent(c.Name)+")")
			}
		}
		if len(cols) == 0 {
			continue
		}
		var got [2][]any
		for i, view := range []string{sqlgen.RawView(t.Name), t.Name} {
			rows, err := eng.Query(ctx, "SELECT "+strings.Join(counts, ", ")+" FROM "+d.QuoteIdent(view))
			if err != nil {
				return nil, fmt.Errorf("table %s: counting NaN: %w", t.Name, err)
			}
			if len(rows.Rows) != 1 || len(rows.Rows[0]) != len(cols) {
				return nil, fmt.Errorf("table %s: counting NaN: want one row of %d counts, got %v", t.Name, len(cols), rows.Rows)
			}
			got[i] = rows.Rows[0]
		}
		for i, c := range cols {
			kept, err1 := strconv.ParseInt(fmt.Sprint(got[0][i]), 10, 64)
			clean, err2 := strconv.ParseInt(fmt.Sprint(got[1][i]), 10, 64)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("table %s: counting NaN in %s: want counts, got %v and %v", t.Name, c, got[0][i], got[1][i])
			}
			if kept > clean {
				out = append(out, fmt.Sprintf("table %s declares nan_free, but its column %s holds %d NaN: sums in the fast form count each as a value clamped to one of its bounds (drop the declaration to read NaN as missing)", t.Name, c, kept-clean))
			}
		}
	}
	return out, nil
}

// expose makes table t's source queryable under name: a file through
// engine.Registrar, a table or view of a server engine through
// engine.Binder.
func expose(ctx context.Context, eng engine.Engine, t *catalog.Table, name string, cols []engine.Column) error {
	if t.Format == catalog.Relation {
		b, ok := eng.(engine.Binder)
		if !ok {
			return fmt.Errorf("query: table %s names the relation %s, but engine %s reads only files; set the catalog's `engine: {kind: ...}` to the engine that holds it", t.Name, t.Source, eng.Dialect().Name())
		}
		return b.BindTable(ctx, name, t.Source, cols)
	}
	reg, ok := eng.(engine.Registrar)
	if !ok {
		return fmt.Errorf("query: table %s reads the file %s, but engine %s reads only its own tables; give a table or view of that engine as the source", t.Name, t.Source, eng.Dialect().Name())
	}
	return reg.RegisterFile(ctx, name, t.Source, t.Format, cols)
}
