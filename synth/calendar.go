package synth

import (
	"time"

	"github.com/dpstat/dpstat/schema"
)

// calendarEdges cuts a date column's bounds (days since 1970-01-01) or a
// timestamp column's (microseconds) into bins a person can read: the
// finest of days, weeks (from the lower bound), months and years that
// needs at most bins bins, each clipped to the bounds. Where even years
// would be too many, it falls back to equal bins of whole days. Every
// loop below is bounded by bins + 1 iterations before it starts.
func calendarEdges(t schema.Type, lo, hi float64, bins int) ([]float64, string) {
	perDay := int64(1)
	if t == schema.Timestamp {
		perDay = schema.MicrosPerDay
	}
	dlo, dhi := floorDiv(int64(lo), perDay), floorDiv(int64(hi), perDay)
	if dhi < dlo {
		dhi = dlo
	}
	toEdges := func(days []int64) []float64 {
		edges := make([]float64, len(days))
		for i, d := range days {
			edges[i] = float64(d * perDay)
		}
		edges[0] = lo // a timestamp's lower bound need not be midnight
		return edges
	}
	// next returns the first day of the unit after day d.
	units := []struct {
		name string
		next func(d int64) int64
	}{
		{"day", func(d int64) int64 { return d + 1 }},
		{"week", func(d int64) int64 { return d + 7 }},
		{"month", func(d int64) int64 {
			y, m, _ := schema.DateOf(d)
			return schema.DaysOf(y, m+1, 1)
		}},
		{"year", func(d int64) int64 {
			y, _, _ := schema.DateOf(d)
			return schema.DaysOf(y+1, time.January, 1)
		}},
	}
	for _, u := range units {
		days := []int64{dlo}
		for d := u.next(dlo); d <= dhi && len(days) <= bins; d = u.next(d) {
			days = append(days, d)
		}
		if len(days) <= bins {
			return toEdges(days), u.name
		}
	}
	edges := binEdges(schema.Int, float64(dlo), float64(dhi), bins)
	days := make([]int64, len(edges))
	for i, e := range edges {
		days[i] = int64(e)
	}
	return toEdges(days), ""
}

// floorDiv is a / b rounded down (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
