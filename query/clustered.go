package query

import (
	"context"
	"fmt"
	"strconv"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
)

// DeclaredUnclustered checks, for the data owner, each table declaring
// clustered_by_unit on an engine that reads such tables in ranges of the
// unit (engine.Sampler): it returns one line per table whose rows, in the
// order the engine reads them, are not in non-decreasing order of the
// unit, or whose units fall outside the unit's declared bounds. Neither
// affects the answers (each range is read whole, the first and last ranges
// are open): an unordered table makes each range's statement read most of
// the file, and units outside the bounds fall into the first or last range.
// Which form queries run depends on the declaration alone, never on this
// check.
func DeclaredUnclustered(ctx context.Context, cat *catalog.Catalog, eng engine.Engine) ([]string, error) {
	d := eng.Dialect()
	if _, ok := d.(engine.Sampler); !ok {
		return nil, nil
	}
	var out []string
	for _, t := range cat.Tables {
		col := t.Column(t.PrivacyUnit)
		if !t.ClusteredByUnit || col == nil || !col.Bounded() {
			continue
		}
		u := d.QuoteIdent(col.Name)
		lo, hi := engine.IntConst(d, int64(*col.Lower)), engine.IntConst(d, int64(*col.Upper))
		sql := "SELECT count(*) FILTER (WHERE _dp_u < _dp_p), count(*) FILTER (WHERE _dp_u < " + lo + " OR _dp_u > " + hi + ") FROM (SELECT " +
			u + " AS _dp_u, lag(" + u + ") OVER () AS _dp_p FROM " + d.QuoteIdent(t.Name) + ") AS _dp_r"
		rows, err := eng.Query(ctx, sql)
		if err != nil {
			return nil, fmt.Errorf("table %s: checking clustered_by_unit: %w", t.Name, err)
		}
		if len(rows.Rows) != 1 || len(rows.Rows[0]) != 2 {
			return nil, fmt.Errorf("table %s: checking clustered_by_unit: want one row of 2 counts, got %v", t.Name, rows.Rows)
		}
		down, err1 := strconv.ParseInt(fmt.Sprint(rows.Rows[0][0]), 10, 64)
		outside, err2 := strconv.ParseInt(fmt.Sprint(rows.Rows[0][1]), 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("table %s: checking clustered_by_unit: want counts, got %v", t.Name, rows.Rows[0])
		}
		if down > 0 {
			out = append(out, fmt.Sprintf("table %s declares clustered_by_unit, but %d of its rows follow a row with a larger %s: write the file sorted by %s (or drop the declaration); the answers are the same either way, but each range of %s then reads most of the file (and a streamed range found out of order is read again with SQL)", t.Name, down, col.Name, col.Name, col.Name))
		}
		if outside > 0 {
			out = append(out, fmt.Sprintf("table %s declares clustered_by_unit, but %d of its rows have %s outside its declared bounds [%d, %d]: they are read by the first or last range; declare the bounds that hold every %s", t.Name, outside, col.Name, int64(*col.Lower), int64(*col.Upper), col.Name))
		}
	}
	return out, nil
}
