package reuse

import (
	"math"

	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// maxRangeValues bounds the declared span of a column whose ranges are
// cells' coordinates: an int or date column with declared bounds holding
// at most this many whole values.
const maxRangeValues = 512

// rangeColumn returns the declared bounds of an int or date column whose
// ranges can be a cell's coordinate, and the number of whole values
// between them.
func rangeColumn(t *ir.Table, name string) (lo, hi float64, n int, ok bool) {
	c := t.Column(name)
	if c == nil || len(c.Values) > 0 || !c.Bounded() || (c.Type != schema.Int && c.Type != schema.Date) {
		return 0, 0, 0, false
	}
	lo, hi = *c.Lower, *c.Upper
	if lo != math.Trunc(lo) || hi != math.Trunc(hi) || !(hi-lo+1 <= maxRangeValues) || hi < lo {
		return 0, 0, 0, false
	}
	return lo, hi, int(hi-lo) + 1, true
}

// rangeCondition recognizes col = v, col < v, col <= v, col > v,
// col >= v (either way round) and col BETWEEN a AND b over a column
// rangeColumn accepts, with whole-number literals, and returns the column
// and the interval of whole values the condition keeps (infinite on an
// open side).
func rangeCondition(e ir.Expr, t *ir.Table) (string, float64, float64, bool) {
	whole := func(o ir.Operand) (float64, bool) {
		if o.Kind != ir.Literal {
			return 0, false
		}
		v, ok := ir.Number(o.Value)
		if !ok || v != math.Trunc(v) || math.IsInf(v, 0) {
			return 0, false
		}
		return v, true
	}
	var col ir.Operand
	lo, hi := math.Inf(-1), math.Inf(1)
	switch x := e.(type) {
	case ir.Compare:
		var lit ir.Operand
		col, lit = x.Left, x.Right
		op := x.Op
		if col.Kind != ir.ColumnRef {
			col, lit = x.Right, x.Left
			op = map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}[op]
		}
		v, ok := whole(lit)
		if !ok {
			return "", 0, 0, false
		}
		switch op {
		case "=":
			lo, hi = v, v
		case "<":
			hi = v - 1
		case "<=":
			hi = v
		case ">":
			lo = v + 1
		case ">=":
			lo = v
		default:
			return "", 0, 0, false
		}
	case ir.Between:
		if x.Negate {
			return "", 0, 0, false
		}
		a, okA := whole(x.Low)
		b, okB := whole(x.High)
		if !okA || !okB {
			return "", 0, 0, false
		}
		col, lo, hi = x.Arg, a, b
	default:
		return "", 0, 0, false
	}
	if col.Kind != ir.ColumnRef {
		return "", 0, 0, false
	}
	if _, _, _, ok := rangeColumn(t, col.Column); !ok {
		return "", 0, 0, false
	}
	return t.Column(col.Column).Name, lo, hi, true
}

// ranges collects the range conditions of a query's conjuncts by column:
// the intersection of each column's intervals, and the conjuncts' text.
type ranges struct {
	lo, hi map[string]float64
	text   map[string][]string
	order  []string
}

func (r *ranges) add(col string, lo, hi float64, text string) {
	if r.lo == nil {
		r.lo, r.hi, r.text = map[string]float64{}, map[string]float64{}, map[string][]string{}
	}
	if _, seen := r.lo[col]; !seen {
		r.lo[col], r.hi[col] = math.Inf(-1), math.Inf(1)
		r.order = append(r.order, col)
	}
	r.lo[col], r.hi[col] = math.Max(r.lo[col], lo), math.Min(r.hi[col], hi)
	r.text[col] = append(r.text[col], text)
}

// restrict moves each column whose interval lies within its declared
// bounds into the shape's restrictions (the value indices v − lower),
// and returns the conditions of the others, which stay in the filter: a
// range open on one side, or reaching past a bound, also keeps values
// outside the declared bounds, which no index stands for.
func (r *ranges) restrict(s *Shape, t *ir.Table) []string {
	var residual []string
	for _, col := range r.order {
		lo, hi, _, _ := rangeColumn(t, col)
		a, b := r.lo[col], r.hi[col]
		if a < lo || b > hi {
			residual = append(residual, r.text[col]...)
			continue
		}
		idx := []int{}
		for v := a; v <= b; v++ {
			idx = append(idx, int(v-lo))
		}
		s.Restrict[col] = idx
	}
	return residual
}

// A range column's value indices: 0 … n−1 for the whole values from its
// lower bound to its upper bound, then three that stand for the rows no
// range within the bounds holds: below the lower bound, above the upper
// bound, and NULL. Bins clamp the first two into the first and last bin.
const (
	belowIndex = 0 // + n
	aboveIndex = 1 // + n
	rangeExtra = 3
)

// bucketBins returns the column of a computed key and each of its bins'
// value indices, or why it cannot be a cell's coordinate: bins
// floor(col / w) * w (floorBins) and date_trunc buckets (dateBins).
func bucketBins(b *ir.Bucket, t *ir.Table) (string, [][]int, string) {
	switch b.Kind {
	case ir.FloorBucket:
		return floorBins(b, t)
	case ir.DateBucket:
		return dateBins(b, t)
	}
	return "", nil, "the query groups by computed keys other than floor(col / w) * w and date_trunc"
}

// floorBins returns the column of a computed key floor(col / w) * w and
// each of its bins' value indices, or why it cannot be a cell's
// coordinate: only bins of a whole width over an int or date column that
// rangeColumn accepts. The engine clamps the value to the declared bounds
// before it divides (sqlgen), so a value below the lower bound is in the
// first bin, one above the upper bound in the last, and NULL in none.
func floorBins(b *ir.Bucket, t *ir.Table) (string, [][]int, string) {
	lo, hi, n, ok := rangeColumn(t, b.Column)
	if !ok || !(b.Width >= 1) || b.Width != math.Trunc(b.Width) {
		return "", nil, "bins of " + b.Column + " are answered afresh (only whole widths over an int or date column with at most 512 values in its declared bounds are derived)"
	}
	keys := b.Values(t)
	return clampedBins(t, b.Column, int64(lo), int64(hi), n, len(keys), func(v int64) int {
		return valueIndex(keys, math.Floor(float64(v)/b.Width)*b.Width)
	})
}

// clampedBins lays out the bins of column col, whose declared bounds are
// lo … hi (n values), for an engine that clamps a value to the bounds
// before it bins it: each bin's value indices v − lo by binOf (nbins
// bins), the rows below the bounds in lo's bin and those above in hi's;
// or why not, when a value of the bounds is in no bin.
func clampedBins(t *ir.Table, col string, lo, hi int64, n, nbins int, binOf func(int64) int) (string, [][]int, string) {
	bins := make([][]int, nbins)
	for v := lo; v <= hi; v++ {
		j := binOf(v)
		if j < 0 {
			return "", nil, "bins of " + col + " do not cover its declared bounds"
		}
		bins[j] = append(bins[j], int(v-lo))
	}
	bins[binOf(lo)] = append(bins[binOf(lo)], n+belowIndex)
	bins[binOf(hi)] = append(bins[binOf(hi)], n+aboveIndex)
	for j := range bins {
		bins[j] = normalize(bins[j])
	}
	return t.Column(col).Name, bins, ""
}

// maxEngineDay is the last day (since 1970-01-01) every engine's date type
// holds as it is: 2105-12-31, the end of ClickHouse's Date.
const maxEngineDay = 49672

// dateBins returns, for a GROUP BY date_trunc(unit, col) over a date
// column rangeColumn accepts, the column and each bucket's day indices
// (d − lower), or why its groups cannot be derived. As with floor bins,
// the engine clamps the value to the declared bounds before it truncates
// it, so the first bucket also holds the rows below the lower bound and
// the last those above the upper bound (rows without a value are in no
// bucket).
func dateBins(b *ir.Bucket, t *ir.Table) (string, [][]int, string) {
	lo, hi, n, ok := rangeColumn(t, b.Column)
	switch {
	case !b.Trunc || b.Type != schema.Date || b.Shift != 0:
		return "", nil, "date buckets other than date_trunc(unit, col) over a date column are answered afresh"
	case !ok:
		return "", nil, "buckets of " + b.Column + " are answered afresh (only a date column with at most 512 days in its declared bounds is derived)"
	}
	l, h := int64(lo), int64(hi)
	if l < 0 || h > maxEngineDay {
		// ClickHouse's dates clamp into 1970-01-01 … 2105-12-31 once more,
		// which would merge buckets the bins keep apart.
		return "", nil, "buckets of " + b.Column + " are answered afresh when its declared bounds reach before 1970-01-01 or after 2105-12-31"
	}
	keys := b.Values(t)
	return clampedBins(t, b.Column, l, h, n, len(keys), func(d int64) int { return valueIndex(keys, b.DateKey(d)) })
}
