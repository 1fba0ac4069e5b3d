// Package synth releases a differentially private synthetic copy of a
// catalog's table with MST (McKenna, Miklau & Sheldon 2021, "Winning the
// NIST Contest: A scalable and general approach to differentially private
// synthetic data").
//
// A synthetic table is released once, under one charge, and can then be
// loaded into anything: every statistic computed from it is post-processing
// and costs nothing more. The steps:
//
//  1. Discretize: text, int, float and bool columns with a public value
//     list keep those values; int and float columns with declared bounds
//     are cut into bins over the bounds; a nullable column has NULL as a
//     value of its own. Columns with no public domain (and the privacy
//     unit) are left out, and the plan says so.
//  2. Read the table through the engine with each person bounded to the
//     rows the catalog declares (at most max_groups_per_unit ×
//     max_rows_per_group rows per person, chosen at random), grouped into
//     the counts of each combination of discretized values.
//  3. Measure every 1-way marginal with the exact discrete Gaussian.
//  4. Choose a maximum spanning tree of the columns with the exponential
//     mechanism, scoring each pair by how badly the noisy 1-way marginals
//     explain its true 2-way marginal (the L1 error, as MST does) minus
//     the noise its measurement would add (AIM's correction, McKenna et
//     al. 2022: it steers the tree away from pairs with many cells, whose
//     noisy measurement would be worth little).
//  5. Measure the 2-way marginals of the tree's edges with the discrete
//     Gaussian.
//  6. Fit a tree graphical model to the noisy marginals (non-negative,
//     consistent 1-way margins) and sample rows from it, root to leaves.
//
// The whole release is ρ-zCDP (steps 3, 4 and 5 each take a third of ρ)
// and is charged as the (ε, δ) that ρ converts to with the tight bound of
// accounting.ZCDPToEpsilon. Steps 6 and the writing of the output are
// post-processing.
package synth

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/schema"
)

// DefaultBins is the number of bins a bounded numeric column is cut into
// unless Options.Bins says otherwise. An int column with fewer values
// than that gets one bin per value.
const DefaultBins = 16

// MaxBins is the largest number of bins Options.Bins accepts.
const MaxBins = 1000

// MaxDomain is the largest number of values one column may have after
// discretization (its value list or bins, plus NULL): a longer list is
// left out. It keeps every 2-way marginal within about a million cells.
const MaxDomain = MaxBins + 1

// MaxRows is the largest number of rows a synthetic table may have.
const MaxRows = 10_000_000

// DefaultDelta is the δ a release spends when the caller does not say.
const DefaultDelta = 1e-6

// Options configures a synthetic release.
type Options struct {
	// Epsilon is the release's ε > 0.
	Epsilon float64
	// Delta is the release's δ in (0, 1); MST's Gaussian noise needs δ > 0.
	Delta float64
	// Bins is the number of bins of a bounded numeric column without a
	// value list; 0 means DefaultBins.
	Bins int
	// Rows is the number of rows to write; 0 means the DP estimate of the
	// table's size taken from the noisy marginals.
	Rows int64
}

// Kind says how a column is discretized.
type Kind string

// The kinds of discretized columns.
const (
	// Listed columns take the values of their public list.
	Listed Kind = "values"
	// Binned columns are numeric columns cut into bins over their bounds.
	Binned Kind = "bins"
	// Boolean columns take false and true.
	Boolean Kind = "bool"
)

// Attr is one column of the synthetic table with its discrete domain.
type Attr struct {
	// Name is the declared column name.
	Name string
	// Type is the declared type.
	Type schema.Type
	// Kind says how the column is discretized.
	Kind Kind
	// Nullable adds NULL as the last value of the domain.
	Nullable bool
	// Values is the public value list of a Listed column.
	Values []any
	// Lower and Upper are the declared bounds of a Binned column.
	Lower, Upper float64
	// Edges are the lower edges of a Binned column's bins (Edges[0] =
	// Lower); for an int, date or timestamp column each bin holds the
	// integers (days, microseconds) from its edge up to the next edge
	// minus one (the last one up to Upper), for a float column the reals
	// from its edge up to the next edge.
	Edges []float64
	// Calendar is the unit of a date or timestamp column's bins: "day",
	// "week", "month" or "year" (each bin one of them, clipped to the
	// bounds), or "" where even years would be more bins than asked for.
	Calendar string
}

// integral reports whether the column's values are whole numbers: ints,
// and dates and timestamps (read as days and microseconds).
func (a *Attr) integral() bool { return a.Type == schema.Int || a.Type.Temporal() }

// Size is the number of values of the column's domain, NULL included.
func (a *Attr) Size() int {
	n := 0
	switch a.Kind {
	case Listed:
		n = len(a.Values)
	case Binned:
		n = len(a.Edges)
	case Boolean:
		n = 2
	}
	if a.Nullable {
		n++
	}
	return n
}

// IsNull reports whether index i is the column's NULL value.
func (a *Attr) IsNull(i int) bool { return a.Nullable && i == a.Size()-1 }

// Label describes value i of the domain for people.
func (a *Attr) Label(i int) string {
	if a.IsNull(i) {
		return "NULL"
	}
	switch a.Kind {
	case Listed:
		return fmt.Sprint(a.Values[i])
	case Boolean:
		return fmt.Sprint(i == 1)
	}
	lo, hi := a.binRange(i)
	if a.Type.Temporal() {
		if lo == hi || a.Calendar == "day" && a.Type == schema.Date {
			return schema.FormatValue(a.Type, int64(lo))
		}
		return fmt.Sprintf("[%s, %s]", schema.FormatValue(a.Type, int64(lo)), schema.FormatValue(a.Type, int64(hi)))
	}
	if a.Type == schema.Int {
		if lo == hi {
			return strconv.FormatInt(int64(lo), 10)
		}
		return fmt.Sprintf("[%d, %d]", int64(lo), int64(hi))
	}
	if i == len(a.Edges)-1 {
		return fmt.Sprintf("[%g, %g]", lo, hi)
	}
	return fmt.Sprintf("[%g, %g)", lo, hi)
}

// binRange returns bin i's range: for an int column the first and last
// integer, for a float column the edges.
func (a *Attr) binRange(i int) (lo, hi float64) {
	lo = a.Edges[i]
	if i+1 < len(a.Edges) {
		hi = a.Edges[i+1]
		if a.integral() {
			hi--
		}
		return lo, hi
	}
	return lo, a.Upper
}

// LeftOut is a declared column the synthetic table does not have, and why.
type LeftOut struct {
	// Column is the declared column's name.
	Column string `json:"column"`
	// Reason says why it is left out and what would include it.
	Reason string `json:"reason"`
}

// Plan is a checked synthetic release: the columns and their domains, the
// contribution bound, the split of ρ and the noise of each step. Making a
// plan reads no data and costs nothing.
type Plan struct {
	// Table is the declared table.
	Table *catalog.Table
	// Attrs are the columns of the synthetic table, in declaration order.
	Attrs []*Attr
	// LeftOut lists the declared columns left out, with the reason.
	LeftOut []LeftOut
	// RowsPerPerson is how many rows of one person are kept (1 without a
	// privacy unit; max_groups_per_unit × max_rows_per_group with one).
	RowsPerPerson int64
	// Sensitivity is the L1 and L2 sensitivity of any marginal's counts,
	// and of the selection score: RowsPerPerson × group_size.
	Sensitivity int64
	// Epsilon and Delta are the release's cost in (ε, δ); Rho is the ρ of
	// zCDP that converts to it.
	Epsilon, Delta, Rho float64
	// One and Two are the discrete Gaussians of the 1-way and 2-way
	// measurements.
	One, Two Gauss
	// SelectEpsilon is the ε of each of the len(Attrs)−1 rounds of the
	// exponential mechanism that choose the tree (ε²/8-zCDP each).
	SelectEpsilon float64
	// Rows is the number of rows asked for (0: the DP estimate).
	Rows int64
}

// Cost is what the release is charged: (ε, δ) with its zCDP ρ.
func (p *Plan) Cost() accounting.Cost {
	return accounting.Cost{Epsilon: p.Epsilon, Delta: p.Delta, Rho: p.Rho}
}

// Edges is the number of 2-way marginals the tree measures.
func (p *Plan) Edges() int {
	if len(p.Attrs) < 2 {
		return 0
	}
	return len(p.Attrs) - 1
}

// NewPlan checks the options against the table's declaration and returns
// the plan, or an error naming the offending value and what is accepted.
func NewPlan(t *catalog.Table, o Options) (*Plan, error) {
	if t == nil {
		return nil, errors.New("synth: no table given")
	}
	if t.Public {
		return nil, fmt.Errorf("table %s is declared public: it is about no one, so release it as it is instead of a synthetic copy", t.Name)
	}
	if math.IsNaN(o.Epsilon) || math.IsInf(o.Epsilon, 0) || o.Epsilon <= 0 {
		return nil, fmt.Errorf("--epsilon %v: want a finite number > 0", o.Epsilon)
	}
	if math.IsNaN(o.Delta) || o.Delta <= 0 || o.Delta >= 1 {
		return nil, fmt.Errorf("--delta %v: want a number in (0, 1); MST's Gaussian noise needs δ > 0 (e.g. %g)", o.Delta, DefaultDelta)
	}
	bins := o.Bins
	if bins == 0 {
		bins = DefaultBins
	}
	if bins < 1 || bins > MaxBins {
		return nil, fmt.Errorf("--bins %d: want an integer from 1 to %d", o.Bins, MaxBins)
	}
	if o.Rows < 0 || o.Rows > MaxRows {
		return nil, fmt.Errorf("--rows %d: want an integer from 1 to %d (0 or no flag: the DP estimate of the table's size)", o.Rows, MaxRows)
	}
	p := &Plan{Table: t, Epsilon: o.Epsilon, Delta: o.Delta, Rows: o.Rows}
	for _, c := range t.Columns {
		a, why := discretize(t, c, bins)
		if a == nil {
			p.LeftOut = append(p.LeftOut, LeftOut{Column: c.Name, Reason: why})
			continue
		}
		p.Attrs = append(p.Attrs, a)
	}
	if len(p.Attrs) == 0 {
		var why []string
		for _, l := range p.LeftOut {
			why = append(why, l.Column+": "+l.Reason)
		}
		return nil, fmt.Errorf("table %s has no column with a public domain to synthesize (%s): declare a values: list, or lower: and upper: bounds for a numeric column", t.Name, strings.Join(why, "; "))
	}
	p.RowsPerPerson = 1
	if t.HasPrivacyUnit() {
		l0, linf := max(t.MaxGroupsPerUnit, 1), max(t.MaxRowsPerGroup, 1)
		p.RowsPerPerson = l0 * linf
	}
	p.Sensitivity = p.RowsPerPerson * max(t.GroupSize, 1)
	rho, err := rhoFor(o.Epsilon, o.Delta)
	if err != nil {
		return nil, err
	}
	p.Rho = rho
	parts := 1.0
	if p.Edges() > 0 {
		parts = 3
	}
	part := rho / parts
	// The 1-way step measures len(Attrs) marginals, each with L2
	// sensitivity Δ: ρ = k·Δ²/(2σ²).
	k := float64(len(p.Attrs))
	if p.One, err = newGauss(float64(p.Sensitivity)*math.Sqrt(k/(2*part)), p.Sensitivity); err != nil {
		return nil, fmt.Errorf("--epsilon %v: %w", o.Epsilon, err)
	}
	if e := p.Edges(); e > 0 {
		if p.Two, err = newGauss(float64(p.Sensitivity)*math.Sqrt(float64(e)/(2*part)), p.Sensitivity); err != nil {
			return nil, fmt.Errorf("--epsilon %v: %w", o.Epsilon, err)
		}
		p.SelectEpsilon = math.Sqrt(8 * part / float64(e))
	}
	return p, nil
}

// discretize returns the column's discrete domain, or nil and the reason
// it is left out.
func discretize(t *catalog.Table, c *catalog.Column, bins int) (*Attr, string) {
	if t.HasPrivacyUnit() && strings.EqualFold(c.Name, t.PrivacyUnit) {
		return nil, "the privacy unit: it identifies people and is never released"
	}
	a := &Attr{Name: c.Name, Type: c.Type, Nullable: c.Nullable}
	switch {
	case len(c.Values) > 0:
		if len(c.Values)+1 > MaxDomain {
			return nil, fmt.Sprintf("its value list has %d values, more than the %d a synthetic column may have", len(c.Values), MaxDomain-1)
		}
		a.Kind = Listed
		a.Values = c.Values
	case c.Type == schema.Bool:
		a.Kind = Boolean
	case c.Type.Temporal() && c.Bounded():
		// Dates and timestamps are binned by the calendar, so that each
		// bin is one a person can read: days, weeks, months or years.
		a.Kind = Binned
		a.Lower, a.Upper = *c.Lower, *c.Upper
		a.Edges, a.Calendar = calendarEdges(c.Type, a.Lower, a.Upper, bins)
	case (c.Type == schema.Int || c.Type == schema.Float) && c.Bounded():
		a.Kind = Binned
		a.Lower, a.Upper = *c.Lower, *c.Upper
		a.Edges = binEdges(c.Type, a.Lower, a.Upper, bins)
	case c.Type == schema.Text:
		return nil, "a text column without a public values: list"
	default:
		return nil, fmt.Sprintf("a %s column without declared lower: and upper: bounds or a values: list", c.Type)
	}
	return a, ""
}

// binEdges cuts [lo, hi] into at most bins bins of (nearly) equal width.
// Int bounds are integers of magnitude at most 2^53 (the catalog checks),
// so the integer arithmetic below cannot overflow.
func binEdges(t schema.Type, lo, hi float64, bins int) []float64 {
	if t == schema.Int {
		l, h := int64(math.Ceil(lo)), int64(math.Floor(hi))
		if h < l {
			h = l
		}
		n := h - l + 1
		b := int64(bins)
		if n <= b {
			b = n
		}
		edges := make([]float64, 0, b)
		for k := int64(0); k < b; k++ {
			// floor(k·n/b) without overflow: n ≤ 2^54 + 1 and k < 1000.
			q, r := n/b, n%b
			edges = append(edges, float64(l+k*q+(k*r)/b))
		}
		return dedupe(edges)
	}
	if hi <= lo {
		return []float64{lo}
	}
	edges := make([]float64, 0, bins)
	for k := 0; k < bins; k++ {
		f := float64(k) / float64(bins)
		// lo·(1−f) + hi·f cannot overflow, unlike lo + f·(hi−lo).
		edges = append(edges, lo*(1-f)+hi*f)
	}
	return dedupe(edges)
}

func dedupe(edges []float64) []float64 {
	sort.Float64s(edges)
	out := edges[:0]
	for i, e := range edges {
		if i == 0 || e > out[len(out)-1] {
			out = append(out, e)
		}
	}
	return out
}

// rhoFor returns the largest ρ whose conversion to (ε, δ)-DP (the tight
// bound of accounting.ZCDPToEpsilon) is at most ε.
func rhoFor(eps, delta float64) (float64, error) {
	lo, hi := 0.0, eps
	for i := 0; i < 200; i++ {
		mid := (lo + hi) / 2
		e, err := accounting.ZCDPToEpsilon(mid, delta)
		if err != nil {
			return 0, err
		}
		if e <= eps {
			lo = mid
		} else {
			hi = mid
		}
	}
	if lo <= 0 {
		return 0, fmt.Errorf("--epsilon %v with --delta %v leaves no zCDP budget: want a larger epsilon", eps, delta)
	}
	return lo, nil
}

// Gauss is an exact discrete Gaussian on a power-of-two grid: a count c
// is released as (c·2^Exp + Z)/2^Exp with Z discrete Gaussian of σ = Steps
// grid steps, i.e. σ = Steps/2^Exp in counts. The sensitivity of c·2^Exp
// is Δ·2^Exp, so one measurement of L2 sensitivity Δ is
// (Δ·2^Exp)²/(2·Steps²)-zCDP (Canonne, Kamath & Steinke 2020), at most the
// ρ it was calibrated for since Steps is rounded up.
type Gauss struct {
	// Exp is the grid's exponent: the grid step is 2^-Exp counts.
	Exp int
	// Steps is σ in grid steps.
	Steps int64
}

// Sigma is σ in counts.
func (g Gauss) Sigma() float64 { return math.Ldexp(float64(g.Steps), -g.Exp) }

// gaussGridBits: σ gets at least 2^20 grid steps when the grid can be
// that fine (at most 2^-20 of a count).
const gaussGridBits = 20

// maxSteps keeps σ within the sampler's range.
const maxSteps = 1 << 31

func newGauss(sigma float64, sens int64) (Gauss, error) {
	if math.IsNaN(sigma) || math.IsInf(sigma, 0) || sigma <= 0 {
		return Gauss{}, fmt.Errorf("the noise scale %v is not a positive number", sigma)
	}
	exp := gaussGridBits
	for exp > 0 && math.Ldexp(sigma, exp) > maxSteps/2 {
		exp--
	}
	steps := math.Ceil(math.Ldexp(sigma, exp))
	if steps > maxSteps {
		return Gauss{}, fmt.Errorf("the noise σ = %.4g counts (%d rows per person) is beyond the sampler's range of 2^31: want a larger epsilon", sigma, sens)
	}
	return Gauss{Exp: exp, Steps: int64(steps)}, nil
}
