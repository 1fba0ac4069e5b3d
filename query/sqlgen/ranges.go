package sqlgen

import (
	"math"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/schema"
)

// UnitsPerRange is how many values of the privacy unit one range of a
// ranged statement covers at most (see UnitRanges): about 65,000 persons,
// whose (person, group) pairs fit in a small hash table whatever the
// table's size.
const UnitsPerRange = 1 << 16

// MaxUnitRanges caps the number of ranges: a wider declared range of the
// unit gets wider ranges.
const MaxUnitRanges = 1 << 14

// UnitRange is one range of the privacy unit's values, Lo ≤ unit < Hi; a
// nil end is open (the first range takes every unit below the declared
// lower bound, the last every unit above the upper).
type UnitRange struct {
	Lo, Hi *int64
}

// UnitRanges returns the ranges of the privacy unit in which plan p's
// statement is run, one statement per range, or nil when it runs once.
//
// A table declared clustered_by_unit holds each stretch of its file for a
// narrow range of units, so that a range filter lets the engine skip the
// other row groups by their statistics, and the (person, group) pairs of
// one range fit in a small hash table: time and memory then grow with a
// range, not with the table. Every person's rows lie in exactly one range
// (the ranges partition the unit's values; NULL units are never read), and
// the bounding keeps each person's rows with that person's own fresh
// randomness, so the ranges' exact per-group statistics add up to the
// whole table's, in the same distribution. The ranges are cut from the
// unit's declared bounds, never from the data: their count depends on the
// declaration and the plan only.
//
// Ranged are the bounded plans of a Sampler dialect (the embedded engine)
// over one table read directly (no join, no per-person pre-aggregation),
// with public keys (a key selection reads every group's count at once).
// Quantile histograms keep their single statement.
func UnitRanges(p *dpplan.Plan, d engine.Dialect) []UnitRange {
	if _, ok := d.(engine.Sampler); !ok || !p.Bounded || p.Table == nil || !p.Table.ClusteredByUnit ||
		len(p.Query.Joins) > 0 || p.Query.Pre != nil || p.Selection != nil || len(p.Statistics) == 0 {
		return nil
	}
	col := p.Table.Column(p.Table.PrivacyUnit)
	if col == nil || col.Type != schema.Int || !col.Bounded() {
		return nil
	}
	lo, hi := math.Ceil(*col.Lower), math.Floor(*col.Upper)
	const limit = 1 << 61 // every boundary, width and product below fits an int64
	if !(lo <= hi) || lo < -limit || hi > limit {
		return nil
	}
	span := hi - lo + 1 // at most 2^62 + 1, rounded for huge spans (only the count of ranges depends on it)
	n := math.Min(math.Ceil(span/UnitsPerRange), MaxUnitRanges)
	if n < 2 {
		return nil
	}
	width := int64(math.Ceil(span / n))
	base := int64(lo)
	k := int(n)
	out := make([]UnitRange, k)
	for i := range out {
		if i > 0 {
			b := base + int64(i)*width
			out[i].Lo = &b
			out[i-1].Hi = &b
		}
	}
	// The last boundaries may pass the upper bound when width was rounded
	// up: drop ranges that would be empty of declared units (the open last
	// range still takes every unit above).
	for len(out) > 1 && *out[len(out)-1].Lo > int64(hi) {
		out = out[:len(out)-1]
		out[len(out)-1].Hi = nil
	}
	return out
}

// RangeSQL is FormSQL restricted to the persons whose privacy unit lies in
// r (a range of UnitRanges).
func RangeSQL(p *dpplan.Plan, d engine.Dialect, f dpplan.Form, r UnitRange) (string, error) {
	g := newSQLGen(d, p, f)
	g.unitRange = &r
	return g.generate()
}

// rangeConditions spells the row filter of g's unit range, if any.
func (g *sqlGen) rangeConditions() []string {
	r := g.unitRange
	if r == nil {
		return nil
	}
	var conds []string
	u := g.colRef(g.p.Table.PrivacyUnit)
	if r.Lo != nil {
		conds = append(conds, u+" >= "+g.intConst(*r.Lo))
	}
	if r.Hi != nil {
		conds = append(conds, u+" < "+g.intConst(*r.Hi))
	}
	return conds
}
