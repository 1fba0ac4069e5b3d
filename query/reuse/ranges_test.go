package reuse

import (
	"strings"
	"testing"

	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// TestDateBins: date_trunc buckets of a bounded date column map each day
// of the bounds to its bucket, the rows below and above the bounds to the
// first and last buckets (the engine clamps before truncating), and are
// answered afresh for a timestamp, a shifted date, a week of EXTRACT, or
// bounds before 1970-01-01 or after 2105-12-31 (where ClickHouse's dates
// clamp once more).
func TestDateBins(t *testing.T) {
	table := func(lo, hi float64) *ir.Table {
		return &ir.Table{Name: "t", Columns: []*ir.Column{{Name: "d", Type: schema.Date, Lower: &lo, Upper: &hi}}}
	}
	month := &ir.Bucket{Kind: ir.DateBucket, Column: "d", Field: "month", Trunc: true, Type: schema.Date}
	// 2024-01-15 … 2024-03-10: days 19737 … 19792.
	col, bins, why := dateBins(month, table(19737, 19792))
	if why != "" || col != "d" || len(bins) != 3 {
		t.Fatalf("dateBins = %q, %v, %q; want three months", col, bins, why)
	}
	n := 19792 - 19737 + 1
	if first := bins[0]; first[0] != 0 || first[len(first)-2] != 16 || first[len(first)-1] != n+belowIndex {
		t.Errorf("January holds %v: want days 0 … 16 and the rows below the bounds", first)
	}
	if last := bins[2]; last[0] != 46 || last[len(last)-1] != n+aboveIndex {
		t.Errorf("March holds %v: want days 46 … 55 and the rows above the bounds", last)
	}
	for _, tc := range []struct {
		b      *ir.Bucket
		lo, hi float64
		want   string
	}{
		{&ir.Bucket{Kind: ir.DateBucket, Column: "d", Field: "month", Trunc: true, Type: schema.Timestamp}, 19737, 19792, "other than date_trunc"},
		{&ir.Bucket{Kind: ir.DateBucket, Column: "d", Field: "month", Trunc: true, Type: schema.Date, Shift: 7 * schema.MicrosPerDay}, 19737, 19792, "other than date_trunc"},
		{&ir.Bucket{Kind: ir.DateBucket, Column: "d", Field: "week", Type: schema.Date}, 19737, 19792, "other than date_trunc"},
		{month, -100, 100, "before 1970-01-01"},
		{month, 49600, 49700, "after 2105-12-31"},
		{month, 19000, 19737, "at most 512 days"},
	} {
		if _, _, why := dateBins(tc.b, table(tc.lo, tc.hi)); !strings.Contains(why, tc.want) {
			t.Errorf("%+v over [%v, %v]: %q, want it to say %q", tc.b, tc.lo, tc.hi, why, tc.want)
		}
	}
}
