// Package suggest proposes a catalog for a data file from differentially
// private estimates: numeric bounds from DP quantiles, public value lists
// from DP key selection, and contribution bounds from DP quantiles of what
// each person contributes. It is the data owner's tool (dpstat catalog
// suggest): every estimate is a DP release whose cost is known before the
// engine runs, and is charged by the caller before Run reads the data.
//
// The ε is split equally among the measurements: one share per numeric
// column (half for a coarse histogram of powers of ten, a quarter for each
// bound chosen among the readable numbers of the range it finds), one per
// date or timestamp column (half for a coarse histogram of the years
// 1900 to 2100, a quarter for each bound chosen among the first days of
// the months of the years it finds), one per text column (its key selection, which also takes an equal share of δ)
// and, with a privacy unit, one for the contribution bounds (half for
// groups per person, half for rows per group). Bool columns and the
// privacy unit itself need no estimate.
package suggest

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/mechanism"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/random"
	"github.com/dpstat/dpstat/schema"
)

// Engine is what Run needs of an engine: queries over a registered file.
type Engine interface {
	engine.Engine
	RegisterFile(ctx context.Context, name, path, format string, columns []engine.Column) error
}

// Options configure a suggestion.
type Options struct {
	// Data is the data file read (CSV or Parquet) and Format "csv" or
	// "parquet".
	Data, Format string
	// Table is the table's name and Source the file as the catalog names it.
	Table, Source string
	// Columns are the file's columns with the names the catalog gives them
	// (Source the header when it differs) and the types the reader infers.
	Columns []engine.Column
	// PrivacyUnit names the column identifying a person; empty means one
	// row per person.
	PrivacyUnit string
	// GroupBy lists the groupings analysts will group by, each one or
	// more columns (a GROUP BY of all of them): the contribution bounds
	// are the largest any of them needs. Empty means the first text
	// column that gets a value list. Needs a privacy unit.
	GroupBy [][]string
	// Epsilon and Delta are the total spent; Delta is used only by the
	// key selections of text columns.
	Epsilon, Delta float64
	// Rand is the random source; nil means the secure pooled source.
	Rand random.Source
}

// Quantiles the bounds estimate.
const (
	// LowerQ and UpperQ are the ranks of the numeric bounds: values below
	// the 1st or above the 99th percentile are clamped.
	LowerQ, UpperQ = 0.01, 0.99
	// ContributionQ is the rank of the contribution bounds: about 90% of
	// people keep all their rows.
	ContributionQ = 0.9
	// MaxValues is the longest value list suggested; a text column with
	// more released values gets none.
	MaxValues = 100
	// ValuesPerUnit bounds how many values of a text column one person
	// counts in during its key selection (with a privacy unit).
	ValuesPerUnit = 5
)

// Plan is a suggestion's measurements and their cost, known before any data
// is read.
type Plan struct {
	Opts     Options
	numeric  []int // indexes of Columns
	temporal []int
	text     []int
	unit     bool
	// Share is each measurement's ε; DeltaShare each text column's δ.
	Share, DeltaShare float64
	// Cost is what Run spends: the sequential composition of every
	// measurement, at most (Epsilon, Delta).
	Cost accounting.Cost
	// Split says, for people, how ε and δ are divided.
	Split string
}

// NewPlan checks the options and computes the split and cost.
func NewPlan(o Options) (*Plan, error) {
	if math.IsNaN(o.Epsilon) || math.IsInf(o.Epsilon, 0) || o.Epsilon <= 0 {
		return nil, fmt.Errorf("--epsilon %v: want a finite number > 0", o.Epsilon)
	}
	if !(o.Delta > 0 && o.Delta < 1) {
		return nil, fmt.Errorf("--delta %v: want a number in (0, 1)", o.Delta)
	}
	p := &Plan{Opts: o}
	found := o.PrivacyUnit == ""
	for i, c := range o.Columns {
		if c.Name == o.PrivacyUnit {
			found = true
			continue
		}
		switch c.Type {
		case engine.Integer, engine.Double:
			p.numeric = append(p.numeric, i)
		case engine.Date, engine.Timestamp:
			p.temporal = append(p.temporal, i)
		case engine.Text:
			p.text = append(p.text, i)
		}
	}
	if !found {
		var names []string
		for _, c := range o.Columns {
			names = append(names, c.Name)
		}
		return nil, fmt.Errorf("--privacy-unit %q: no such column; want one of %s", o.PrivacyUnit, strings.Join(names, ", "))
	}
	p.unit = o.PrivacyUnit != ""
	if err := checkGroupBy(o); err != nil {
		return nil, err
	}
	n := len(p.numeric) + len(p.temporal) + len(p.text)
	if p.unit {
		n += max(1, len(o.GroupBy))
	}
	if n == 0 {
		return nil, fmt.Errorf("%s has no numeric, date, timestamp or text column to estimate: nothing to suggest", o.Data)
	}
	p.Share = share(o.Epsilon, n)
	if len(p.text) > 0 {
		p.DeltaShare = share(o.Delta, len(p.text))
	}
	var costs []accounting.Cost
	for range p.numeric {
		costs = append(costs, accounting.Pure(p.Share/2), accounting.Pure(p.Share/4), accounting.Pure(p.Share/4))
	}
	for range p.temporal {
		costs = append(costs, accounting.Pure(p.Share/2), accounting.Pure(p.Share/4), accounting.Pure(p.Share/4))
	}
	for range p.text {
		costs = append(costs, accounting.Approximate(p.Share, p.DeltaShare))
	}
	if p.unit {
		for range max(1, len(o.GroupBy)) {
			costs = append(costs, accounting.Pure(p.Share/2), accounting.Pure(p.Share/2))
		}
	}
	c, err := accounting.Sequential(costs...)
	if err != nil {
		return nil, err
	}
	if c.Epsilon > o.Epsilon {
		c.Epsilon = o.Epsilon
	}
	if c.Delta > o.Delta {
		c.Delta = o.Delta
	}
	p.Cost = c
	var parts []string
	if len(p.numeric) > 0 {
		parts = append(parts, fmt.Sprintf("%d numeric column(s) × ε=%s (half for the coarse histogram, a quarter per bound)", len(p.numeric), fmtG(p.Share)))
	}
	if len(p.temporal) > 0 {
		parts = append(parts, fmt.Sprintf("%d date or timestamp column(s) × ε=%s (half for the coarse histogram of years, a quarter per bound)", len(p.temporal), fmtG(p.Share)))
	}
	if len(p.text) > 0 {
		parts = append(parts, fmt.Sprintf("%d text column(s) × ε=%s, δ=%s (key selection)", len(p.text), fmtG(p.Share), fmtG(p.DeltaShare)))
	}
	if p.unit && len(o.GroupBy) > 1 {
		parts = append(parts, fmt.Sprintf("contribution bounds: %d groupings × ε=%s (half each bound)", len(o.GroupBy), fmtG(p.Share)))
	} else if p.unit {
		parts = append(parts, fmt.Sprintf("contribution bounds ε=%s (half each)", fmtG(p.Share)))
	}
	p.Split = strings.Join(parts, "; ")
	return p, nil
}

// share is x/n, rounded down until n shares add up exactly (in rational
// arithmetic) to at most x, so that the measurements never spend more than
// was charged.
func share(x float64, n int) float64 {
	s := x / float64(n)
	limit := new(big.Rat).SetFloat64(x)
	for i := 0; i < 8; i++ {
		total := new(big.Rat).Mul(new(big.Rat).SetFloat64(s), new(big.Rat).SetInt64(int64(n)))
		if total.Cmp(limit) <= 0 {
			break
		}
		s = math.Nextafter(s, 0)
	}
	return s
}

// Suggestion is the result of Run: one entry per column and the
// contribution bounds, each with how it was obtained.
type Suggestion struct {
	Plan    *Plan
	Columns []Column
	// MaxGroups and MaxRows are the suggested contribution bounds (with a
	// privacy unit) and UnitNote how they were obtained.
	MaxGroups, MaxRows int64
	UnitNote           string
	// BoundsFrom says which grouping the contribution bounds came from.
	BoundsFrom string
}

// Column is one column's suggestion.
type Column struct {
	engine.Column
	// Lower and Upper are the suggested bounds (numeric columns; days or
	// microseconds since 1970 for date and timestamp columns).
	Lower, Upper *float64
	// Values is the suggested public list (text columns with few values).
	Values []string
	// Note says how the suggestion was obtained and what it cost.
	Note string
}

const view = "suggest_source"

// Run reads the data and makes the DP estimates. The caller must have
// charged p.Cost first.
func (p *Plan) Run(ctx context.Context, eng Engine) (*Suggestion, error) {
	o := p.Opts
	if err := eng.RegisterFile(ctx, view, o.Data, o.Format, o.Columns); err != nil {
		return nil, err
	}
	s := &Suggestion{Plan: p}
	for _, c := range o.Columns {
		s.Columns = append(s.Columns, Column{Column: c})
	}
	d := eng.Dialect()
	unitFilter := ""
	if p.unit {
		unitFilter = d.QuoteIdent(o.PrivacyUnit) + " IS NOT NULL AND "
	}
	for _, i := range p.numeric {
		c := &s.Columns[i]
		x := d.QuoteIdent(c.Name)
		// One value per person: the row's own without a privacy unit, else
		// the person's smallest (for the lower bound) and largest (for the
		// upper bound).
		lowFrom := fmt.Sprintf("SELECT %s AS x FROM %s WHERE %s%s IS NOT NULL", x, view, unitFilter, x)
		highFrom := lowFrom
		if p.unit {
			u := d.QuoteIdent(o.PrivacyUnit)
			lowFrom = fmt.Sprintf("SELECT min(%s) AS x FROM %s WHERE %s%s IS NOT NULL GROUP BY %s", x, view, unitFilter, x, u)
			highFrom = fmt.Sprintf("SELECT max(%s) AS x FROM %s WHERE %s%s IS NOT NULL GROUP BY %s", x, view, unitFilter, x, u)
		}
		integer := c.Type == engine.Integer
		// The coarse histogram counts every row, or each person's smallest
		// and largest value (two values per person: sensitivity 2).
		histFrom, histSens := lowFrom, int64(1)
		if p.unit {
			histFrom, histSens = lowFrom+" UNION ALL "+highFrom, 2
		}
		lo, hi, ok, err := p.coarseRange(ctx, eng, histFrom, histSens, integer, p.Share/2)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		how := fmt.Sprintf("coarse: DP histogram of powers of ten (geometric noise, ε=%s), the lowest and highest bins that clearly have values", fmtG(p.Share/2))
		if !ok {
			c.Note = how + ": no bin clearly has values, so no bounds are suggested; declare lower and upper from your knowledge of the domain"
			continue
		}
		var grid []float64
		for _, v := range readableGrid(integer) {
			if v >= lo && v <= hi {
				grid = append(grid, v)
			}
		}
		lower, err := p.quantile(ctx, eng, lowFrom, grid, LowerQ, p.Share/4)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		upper, err := p.quantile(ctx, eng, highFrom, grid, UpperQ, p.Share/4)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		// Noise may cross them: keep them ordered and apart, by widening
		// (post-processing of the released candidates).
		if lower > upper {
			lower, upper = upper, lower
		}
		if lower == upper {
			upper = nextAbove(readableGrid(integer), upper)
		}
		c.Lower, c.Upper = &lower, &upper
		per := "of the rows"
		if p.unit {
			per = "of each person's smallest (lower) and largest (upper) value"
		}
		c.Note = fmt.Sprintf("%s, [%s, %s]; fine: the 1st and 99th percentiles %s by the exponential mechanism over the %d readable numbers in that range, ε=%s each (ε=%s in all)",
			how, fmtG(lo), fmtG(hi), per, len(grid), fmtG(p.Share/4), fmtG(p.Share))
	}
	for _, i := range p.temporal {
		if err := p.temporalBounds(ctx, eng, &s.Columns[i], unitFilter); err != nil {
			return nil, fmt.Errorf("column %s: %w", s.Columns[i].Name, err)
		}
	}
	var groupCol string
	for _, i := range p.text {
		c := &s.Columns[i]
		if err := p.values(ctx, eng, c, unitFilter); err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		if groupCol == "" && len(c.Values) > 0 {
			groupCol = c.Name
		}
	}
	if p.unit {
		if err := p.contribution(ctx, eng, s, groupCol, unitFilter); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// decadeEdges are the coarse histogram's bin edges: 0 and ±10^k for k
// from −3 (0 for an int column) to 15; bins are [e_i, e_i+1), plus one
// below the first edge and one from the last.
func decadeEdges(integer bool) []float64 {
	from := -3
	if integer {
		from = 0
	}
	out := []float64{0}
	for k := from; k <= 15; k++ {
		v := math.Pow(10, float64(k))
		out = append(out, v, -v)
	}
	sort.Float64s(out)
	return out
}

// coarseRange releases a histogram of the values of from over the decade
// bins with discrete Laplace noise (one person's values change at most sens
// bin counts by 1 in all: L1 sensitivity sens, so the histogram is eps-DP)
// with sensitivity sens (how many of the values one person has)
// and returns the range from the lowest to the highest bin whose noisy
// count reaches a threshold that an empty bin passes with probability at
// most 1% over all bins. ok is false when no bin does.
func (p *Plan) coarseRange(ctx context.Context, eng Engine, from string, sens int64, integer bool, eps float64) (lo, hi float64, ok bool, err error) {
	edges := decadeEdges(integer)
	// Bin 0 is below edges[0], bin i is [edges[i−1], edges[i]), the last
	// bin is from the last edge up.
	sel := []string{fmt.Sprintf("count(*) FILTER (WHERE x < %s)", sqlNumber(edges[0]))}
	for i := 1; i < len(edges); i++ {
		sel = append(sel, fmt.Sprintf("count(*) FILTER (WHERE x >= %s AND x < %s)", sqlNumber(edges[i-1]), sqlNumber(edges[i])))
	}
	sel = append(sel, fmt.Sprintf("count(*) FILTER (WHERE x >= %s)", sqlNumber(edges[len(edges)-1])))
	rows, err := eng.Query(ctx, fmt.Sprintf("WITH v AS (%s) SELECT %s FROM v", from, strings.Join(sel, ", ")))
	if err != nil {
		return 0, 0, false, err
	}
	if len(rows.Rows) != 1 || len(rows.Rows[0]) != len(sel) {
		return 0, 0, false, fmt.Errorf("suggest: engine returned %d rows for a histogram, want 1", len(rows.Rows))
	}
	m, err := mechanism.NewGeometric(mechanism.GeometricOptions{Epsilon: eps, Sensitivity: sens, Source: p.Opts.Rand})
	if err != nil {
		return 0, 0, false, err
	}
	tau, _ := dpplan.KeyThreshold(m.Scale(), int64(len(sel)), 1, 0.01)
	first, last := -1, -1
	for i, v := range rows.Rows[0] {
		n, err := toInt(v)
		if err != nil {
			return 0, 0, false, err
		}
		if m.Release(n) >= tau {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return 0, 0, false, nil
	}
	// Bin i spans [edges[i−1], edges[i]); the open-ended bins end at the
	// grid's extremes.
	lo = edges[0] * 10
	if first > 0 {
		lo = edges[first-1]
	}
	hi = edges[len(edges)-1] * 10
	if last < len(edges) {
		hi = edges[last]
	}
	return lo, hi, true, nil
}

// quantile selects, by the exponential mechanism, the candidate c of grid
// whose rank interval [#{x < c}, #{x ≤ c}] among the n values of from is
// closest to q·n (score: minus the distance from q·n to the interval, so
// that on tied values the smallest candidate that reaches q·n wins). Each
// person contributes one value, so adding or removing one moves both ends
// of every interval by at most 1 in the same direction and q·n by q: every
// score changes by at most max(q, 1 − q) ≤ 1, sensitivity 1.
func (p *Plan) quantile(ctx context.Context, eng Engine, from string, grid []float64, q, eps float64) (float64, error) {
	if len(grid) == 0 {
		return 0, fmt.Errorf("suggest: no candidate in the range")
	}
	sel := []string{"count(*)"}
	for _, c := range grid {
		sel = append(sel, fmt.Sprintf("count(*) FILTER (WHERE x < %s)", sqlNumber(c)), fmt.Sprintf("count(*) FILTER (WHERE x <= %s)", sqlNumber(c)))
	}
	rows, err := eng.Query(ctx, fmt.Sprintf("WITH v AS (%s) SELECT %s FROM v", from, strings.Join(sel, ", ")))
	if err != nil {
		return 0, err
	}
	if len(rows.Rows) != 1 || len(rows.Rows[0]) != len(sel) {
		return 0, fmt.Errorf("suggest: engine returned %d rows for a quantile, want 1", len(rows.Rows))
	}
	r := rows.Rows[0]
	n, err := toInt(r[0])
	if err != nil {
		return 0, err
	}
	target := q * float64(n)
	scores := make([]float64, len(grid))
	for i := range grid {
		below, err := toInt(r[2*i+1])
		if err != nil {
			return 0, err
		}
		upto, err := toInt(r[2*i+2])
		if err != nil {
			return 0, err
		}
		scores[i] = -math.Max(0, math.Max(float64(below)-target, target-float64(upto)))
	}
	m, err := mechanism.NewExponential(mechanism.ExponentialOptions{Epsilon: eps, Sensitivity: 1, Source: p.Opts.Rand})
	if err != nil {
		return 0, err
	}
	i, err := m.Select(scores)
	if err != nil {
		return 0, err
	}
	return grid[i], nil
}

// values runs a key selection on text column c: per value, the number of
// people with it (each person counted under at most ValuesPerUnit values,
// so L1 sensitivity ValuesPerUnit; 1 without a privacy unit), discrete
// Laplace noise and the threshold of query.KeyThreshold at the column's δ.
func (p *Plan) values(ctx context.Context, eng Engine, c *Column, unitFilter string) error {
	d := eng.Dialect()
	x := d.QuoteIdent(c.Name)
	keys := int64(1)
	sql := fmt.Sprintf("SELECT %s, count(*) FROM %s WHERE %s%s IS NOT NULL GROUP BY %s", x, view, unitFilter, x, x)
	if p.unit {
		keys = ValuesPerUnit
		u := d.QuoteIdent(p.Opts.PrivacyUnit)
		sql = fmt.Sprintf(`WITH pv AS (SELECT DISTINCT %s AS u, %s AS x FROM %s WHERE %s%s IS NOT NULL),
ranked AS (SELECT u, x, row_number() OVER (PARTITION BY u ORDER BY hash(x), x) AS rn FROM pv)
SELECT x, count(*) FROM ranked WHERE rn <= %d GROUP BY x`, u, x, view, unitFilter, x, keys)
	}
	rows, err := eng.Query(ctx, sql)
	if err != nil {
		return err
	}
	m, err := mechanism.NewGeometric(mechanism.GeometricOptions{Epsilon: p.Share, Sensitivity: keys, Source: p.Opts.Rand})
	if err != nil {
		return err
	}
	tau, _ := dpplan.KeyThreshold(m.Scale(), keys, 1, p.DeltaShare)
	var kept []string
	for _, r := range rows.Rows {
		v, ok := r[0].(string)
		if !ok {
			continue
		}
		n, err := toInt(r[1])
		if err != nil {
			return err
		}
		if m.Release(n) >= tau {
			kept = append(kept, v)
		}
	}
	sort.Strings(kept)
	how := fmt.Sprintf("DP key selection: per value, the people with it%s plus discrete Laplace noise of scale %s, kept when at least %d; ε=%s, δ=%s",
		map[bool]string{true: fmt.Sprintf(" (each counted under at most %d values)", keys), false: ""}[p.unit], fmtG(m.Scale()), tau, fmtG(p.Share), fmtG(p.DeltaShare))
	switch {
	case len(kept) == 0:
		c.Note = "no value is common enough to list (" + how + "); GROUP BY it uses key selection"
	case len(kept) > MaxValues:
		c.Note = fmt.Sprintf("more than %d values are common: no list (%s); GROUP BY it uses key selection", MaxValues, how)
	default:
		c.Values = kept
		c.Note = "values kept by " + how + "; rarer values are left out (rows with them drop out of a GROUP BY)"
	}
	return nil
}

// readableGrid is the candidate grid of a numeric bound: 0 and
// ±m·10^k for m in {1, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9} and k from −3
// to 16 (integers only for an int column), sorted. It does not depend on
// the data.
func readableGrid(integer bool) []float64 {
	ms := []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9}
	out := []float64{0}
	for k := -3; k <= 16; k++ {
		for _, m := range ms {
			v, _ := strconv.ParseFloat(strconv.FormatFloat(m, 'g', -1, 64)+"e"+strconv.Itoa(k), 64)
			if integer && v != math.Trunc(v) {
				continue
			}
			out = append(out, v, -v)
		}
	}
	sort.Float64s(out)
	return out
}

// contributionGrid is the candidate grid of a contribution bound.
func contributionGrid() []float64 {
	var out []float64
	for _, k := range []float64{1, 10, 100} {
		for _, m := range []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9} {
			v := m * k
			if v == math.Trunc(v) {
				out = append(out, v)
			}
		}
	}
	return append(out, 1000)
}

func nextAbove(grid []float64, x float64) float64 {
	for _, v := range grid {
		if v > x {
			return v
		}
	}
	return x + 1
}

func sqlNumber(x float64) string {
	return "CAST(" + strconv.FormatFloat(x, 'g', -1, 64) + " AS DOUBLE)"
}

func toInt(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case int32:
		return int64(x), nil
	case uint64:
		if x > math.MaxInt64 {
			return math.MaxInt64, nil
		}
		return int64(x), nil
	case nil:
		return 0, nil
	}
	return 0, fmt.Errorf("suggest: engine returned %T for a count, want an integer", v)
}

func fmtG(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }

// Write writes the suggestion as a catalog file: the table, its source, the
// contribution bounds and every column, each estimate with a comment.
func (s *Suggestion) Write(w io.Writer) error {
	p := s.Plan
	o := p.Opts
	var b strings.Builder
	fmt.Fprintf(&b, `# Catalog suggested for %s from differentially private estimates.
# Cost: ε=%s δ=%s, charged to the data owner's budget on %s before this file was written.
# Split: %s.
# Review every value: they are estimates, and your knowledge of the domain may be better.
# Then run: dpstat catalog check THIS_FILE
budget: {epsilon: 10, delta: 1e-5}   # per analyst and table: about ten queries at the default epsilon of 1; choose yours
tables:
  %s:
    source: %s
`, o.Source, fmtG(p.Cost.Epsilon), fmtG(p.Cost.Delta), o.Table, p.Split, o.Table, quote(o.Source))
	if p.unit {
		fmt.Fprintf(&b, "    privacy_unit: %s\n", o.PrivacyUnit)
		fmt.Fprintf(&b, "    # %s\n", s.UnitNote)
		fmt.Fprintf(&b, "    max_groups_per_unit: %d\n    max_rows_per_group: %d\n", s.MaxGroups, s.MaxRows)
	}
	b.WriteString("    columns:\n")
	for _, c := range s.Columns {
		typ := map[engine.Type]string{engine.Integer: "int", engine.Double: "float", engine.Text: "text", engine.Boolean: "bool",
			engine.Date: "date", engine.Timestamp: "timestamp"}[c.Type]
		from := ""
		if c.Source != "" && c.Source != c.Name {
			from = "from: " + quote(c.Source) + ", "
		}
		if c.Note != "" {
			fmt.Fprintf(&b, "      # %s: %s\n", c.Name, c.Note)
		}
		extra := ""
		switch {
		case c.Lower != nil && (c.Type == engine.Date || c.Type == engine.Timestamp):
			t := schema.Date
			if c.Type == engine.Timestamp {
				t = schema.Timestamp
			}
			extra = fmt.Sprintf(", lower: %s, upper: %s", quote(schema.FormatValue(t, int64(*c.Lower))), quote(schema.FormatValue(t, int64(*c.Upper))))
		case c.Lower != nil:
			extra = fmt.Sprintf(", lower: %s, upper: %s", strconv.FormatFloat(*c.Lower, 'g', -1, 64), strconv.FormatFloat(*c.Upper, 'g', -1, 64))
		}
		if len(c.Values) > 0 {
			var q []string
			for _, v := range c.Values {
				q = append(q, quote(v))
			}
			extra = ", values: [" + strings.Join(q, ", ") + "]"
		}
		if c.Name == o.PrivacyUnit {
			extra += "}  # the privacy unit"
		} else {
			extra += "}"
		}
		fmt.Fprintf(&b, "      %s: {%stype: %s%s\n", c.Name, from, typ, extra)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// quote writes s as a YAML double-quoted scalar: backslash, quote and every
// control character escaped.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '\\' || r == '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// temporalBounds estimates the bounds of a date or timestamp column c in
// the two stages of a numeric column's. Coarse: a DP histogram of the
// years from 1900 to 2100 (geometric noise, ε = Share/2), the first and
// last years that clearly have values. Fine: the 1st percentile of the
// rows (or of each person's earliest value) and the 99th (of each
// person's latest) by the exponential mechanism over the first days of
// the months of those years, ε = Share/4 each. The upper bound is the last
// day (second) of the month chosen, so that it holds that month's values.
// The bounds are DP releases: no value is read as a bound.
func (p *Plan) temporalBounds(ctx context.Context, eng Engine, c *Column, unitFilter string) error {
	d := eng.Dialect()
	x := d.QuoteIdent(c.Name)
	lowFrom := fmt.Sprintf("SELECT %s AS x FROM %s WHERE %s%s IS NOT NULL", x, view, unitFilter, x)
	highFrom := lowFrom
	histFrom, histSens := lowFrom, int64(1)
	per := "of the rows"
	if p.unit {
		u := d.QuoteIdent(p.Opts.PrivacyUnit)
		lowFrom = fmt.Sprintf("SELECT min(%s) AS x FROM %s WHERE %s%s IS NOT NULL GROUP BY %s", x, view, unitFilter, x, u)
		highFrom = fmt.Sprintf("SELECT max(%s) AS x FROM %s WHERE %s%s IS NOT NULL GROUP BY %s", x, view, unitFilter, x, u)
		histFrom, histSens = lowFrom+" UNION ALL "+highFrom, 2
		per = "of each person's earliest (lower) and latest (upper) value"
	}
	unit := int64(1)
	if c.Type == engine.Timestamp {
		unit = schema.MicrosPerDay
	}
	day := func(y int, m time.Month) float64 { return float64(schema.DaysOf(y, m, 1) * unit) }
	// Bin i holds the values of year firstYear + i.
	const firstYear, lastYear = 1900, 2100
	var sel []string
	for y := firstYear; y <= lastYear; y++ {
		sel = append(sel, fmt.Sprintf("count(*) FILTER (WHERE x >= %s AND x < %s)", sqlNumber(day(y, time.January)), sqlNumber(day(y+1, time.January))))
	}
	rows, err := eng.Query(ctx, fmt.Sprintf("WITH v AS (%s) SELECT %s FROM v", histFrom, strings.Join(sel, ", ")))
	if err != nil {
		return err
	}
	if len(rows.Rows) != 1 || len(rows.Rows[0]) != len(sel) {
		return fmt.Errorf("suggest: engine returned %d rows for a histogram, want 1", len(rows.Rows))
	}
	m, err := mechanism.NewGeometric(mechanism.GeometricOptions{Epsilon: p.Share / 2, Sensitivity: histSens, Source: p.Opts.Rand})
	if err != nil {
		return err
	}
	tau, _ := dpplan.KeyThreshold(m.Scale(), int64(len(sel)), 1, 0.01)
	first, last := -1, -1
	for i, v := range rows.Rows[0] {
		n, err := toInt(v)
		if err != nil {
			return err
		}
		if m.Release(n) >= tau {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	how := fmt.Sprintf("coarse: DP histogram of the years %d to %d (geometric noise, ε=%s), the first and last years that clearly have values", firstYear, lastYear, fmtG(p.Share/2))
	if first < 0 {
		c.Note = how + ": no year clearly has values, so no bounds are suggested; declare lower and upper from your knowledge of the domain"
		return nil
	}
	var grid []float64
	for y := firstYear + first; y <= firstYear+last; y++ {
		for mo := time.January; mo <= time.December; mo++ {
			grid = append(grid, day(y, mo))
		}
	}
	lc, err := p.quantile(ctx, eng, lowFrom, grid, LowerQ, p.Share/4)
	if err != nil {
		return err
	}
	uc, err := p.quantile(ctx, eng, highFrom, grid, UpperQ, p.Share/4)
	if err != nil {
		return err
	}
	lower, upper := int64(lc)/unit, int64(uc)/unit
	if lower > upper {
		lower, upper = upper, lower
	}
	// The end of the upper bound's month (post-processing).
	y, mo, _ := schema.DateOf(upper)
	end := schema.DaysOf(y, mo+1, 1)
	lo, hi := float64(lower*unit), float64(end*unit-1)
	if c.Type == engine.Timestamp {
		hi = float64(end*unit - 1_000_000)
	}
	c.Lower, c.Upper = &lo, &hi
	c.Note = fmt.Sprintf("%s, %d to %d; fine: the 1st and 99th percentiles %s by the exponential mechanism over the first days of the %d months of those years, ε=%s each (ε=%s in all); the upper bound is the end of its month",
		how, firstYear+first, firstYear+last, per, len(grid), fmtG(p.Share/4), fmtG(p.Share))
	return nil
}
