package dpplan

import (
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// Form is one way of computing a plan's exact statistics in the engine.
// All forms give the same statistics; they differ in speed and in what
// they need of the data.
type Form int

// The forms, fastest first.
const (
	// FastForm rounds each clamped float value onto its power-of-two grid
	// in floating point and sums doubles, which is exact while a group's
	// rows times the largest summand stay below 2^53. A NULL is clamped to
	// the lower bound instead of being tested for (ReadExact takes it back
	// out). It reads the table with NaNs kept, which saves testing every
	// value for NaN: it runs only on tables whose owner declared them free
	// of NaN (ir.Table.NaNFree), never because of what the data
	// holds, and only for plans whose float columns appear in aggregates
	// alone (Plan.FirstForm), where a NaN found anyway is clamped to a
	// bound and counted as a value.
	FastForm Form = iota
	// CleanForm is FastForm over the table where a NaN reads as NULL.
	CleanForm
	// IntegerForm casts each clamped value, in grid steps, to a 32-bit
	// integer and sums into 128 bits: exact for any number of rows, and
	// slower.
	IntegerForm
)

// String names the form.
func (f Form) String() string {
	return [...]string{"fast", "clean", "integer"}[f]
}

// FirstForm is the form a query tries first: FastForm when the plan's
// float columns are read only by sums, counts and variances, else
// CleanForm. (FastForm also needs the table's declaration nan_free, which
// the service checks when the query runs.)
func (p *Plan) FirstForm() Form {
	if p.rawFloatsOK() {
		return FastForm
	}
	return CleanForm
}

// rawFloatsOK reports whether FastForm may skip the NaN test: some
// statistic reads a float column, and no float column is a key, the
// privacy unit or part of the WHERE clause.
func (p *Plan) rawFloatsOK() bool {
	if len(p.floatColumns()) == 0 || len(p.Query.Derived) > 0 || len(p.Query.Joins) > 0 || p.Query.Pre != nil {
		// Derived columns compute with their inputs: they read the view
		// where NaN is NULL.
		return false
	}
	isFloat := func(col string) bool {
		c := p.Table.Column(col)
		return c != nil && c.Type == schema.Float
	}
	if p.Bounded && isFloat(p.Table.PrivacyUnit) {
		return false
	}
	for _, k := range p.Query.GroupBy {
		if p.Query.Buckets[k] != nil || isFloat(k) {
			return false
		}
	}
	ok := true
	known := ir.WalkColumns(p.Query.Where, func(col string) { ok = ok && !isFloat(col) })
	return ok && known
}

// floatColumns lists the float columns the statistics read, in order.
func (p *Plan) floatColumns() []string {
	var out []string
	seen := map[string]bool{}
	for _, st := range p.Statistics {
		s := st.Summand
		switch s.Kind {
		case FixedPointSum, CentredSquareSum, NonNullCount:
		default:
			continue
		}
		if c := p.Table.Column(s.Column); c != nil && c.Type == schema.Float && !seen[c.Name] {
			seen[c.Name] = true
			out = append(out, c.Name)
		}
	}
	return out
}

// SamplesValues reports whether a statistic reads values (a count of
// values or a sum), which the sampled bounding keeps at most L∞ of per
// (person, group).
func (p *Plan) SamplesValues() bool {
	for _, st := range p.Statistics {
		switch st.Summand.Kind {
		case NonNullCount, FixedPointSum, CentredSquareSum:
			return true
		}
	}
	return false
}

// NullsClamped reports whether form f computes a FixedPointSum with each
// NULL clamped to the lower bound (corrected by ReadExactForm) rather than
// left out: the double forms of plans without a privacy unit. With one,
// the summand is carried through the bounding stages, and keeping NULLs
// NULL lets the count of values reuse it instead of carrying another
// column.
func (p *Plan) NullsClamped(f Form) bool { return f != IntegerForm && !p.Bounded }

// GridSummed reports whether the fast form (SQL) sums statistic i as
// doubles on its grid: sums of float columns and sums of squares.
func (p *Plan) GridSummed(i int) bool {
	s := p.Statistics[i].Summand
	switch s.Kind {
	case CentredSquareSum:
		return true
	case FixedPointSum:
		return !p.IntColumn(s)
	}
	return false
}

// IntColumn reports whether a FixedPointSum sums an int column's values as
// they are.
func (p *Plan) IntColumn(s Summand) bool {
	return s.Exp == 0 && p.Table.Column(s.Column).Type == schema.Int
}

// OnlyDistinctUnits reports whether every statistic counts distinct units.
func (p *Plan) OnlyDistinctUnits() bool {
	for _, st := range p.Statistics {
		if st.Summand.Kind != DistinctUnits {
			return false
		}
	}
	return len(p.Statistics) > 0
}
