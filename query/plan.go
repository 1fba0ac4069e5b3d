package query

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/dpstat/dpstat/catalog"
)

// A plan answers a Query in four stages, and each stage states what it
// guarantees so that the next one can derive its sensitivity:
//
//  1. Contribution bounding (in the engine) keeps, for each person, at most
//     MaxRowsPerGroup rows in each group and at most MaxGroupsPerUnit
//     groups, chosen at random. It guarantees a Contribution: one person
//     changes at most Groups groups, by at most RowsPerGroup rows each.
//  2. Clamping (in the engine) maps each row to a Summand: 1 for a counted
//     row, or the column's value clamped to the declared bounds and
//     rounded onto a fixed-point grid. It guarantees a bound PerRow on the
//     absolute value of one row's summand.
//  3. Aggregation (in the engine) sums summands per group, exactly, into a
//     Statistic. By 1 and 2, adding or removing one person moves the vector
//     of a statistic's per-group values by at most Contribution.L1(PerRow)
//     in L1 norm.
//  4. Noise (in Go) releases each Release with a mechanism calibrated to
//     that L1 sensitivity and the release's share of ε.
//
// The only place a sensitivity is computed is Contribution.L1, from a
// summand bound: no aggregate states its own sensitivity.

// Contribution is the guarantee of the bounding stage: adding or removing
// one person changes at most Groups groups, and at most RowsPerGroup rows
// in each.
type Contribution struct {
	Groups       int64
	RowsPerGroup int64
	// GroupSize is how many people are protected together (the catalog's
	// group_size; 0 means 1): by the triangle inequality, a change of that
	// many people moves every statistic by at most GroupSize times what one
	// person can.
	GroupSize int64
}

// People returns GroupSize, at least 1.
func (c Contribution) People() int64 { return max(c.GroupSize, 1) }

// L1 is the L1 sensitivity, across all groups, of a per-group sum of
// summands bounded by perRow in absolute value.
func (c Contribution) L1(perRow float64) float64 {
	return float64(c.People()) * float64(c.Groups) * float64(c.RowsPerGroup) * perRow
}

// SummandKind says what one row contributes to a statistic.
type SummandKind int

// The summand kinds.
const (
	// RowCount adds 1 per row.
	RowCount SummandKind = iota
	// NonNullCount adds 1 per row whose column is not NULL.
	NonNullCount
	// FixedPointSum adds the column's value, clamped to [Lower, Upper] and
	// rounded to a multiple of 2^Exp, as the integer number of grid steps;
	// NULL adds nothing.
	FixedPointSum
	// DistinctUnits adds 1 per person present in the group, however many
	// rows the person has there.
	DistinctUnits
	// CentredSquareSum adds (x − m)², x the column's value clamped to the
	// declared bounds and m their midpoint, rounded to a multiple of 2^Exp,
	// as an integer number of grid steps in [Lower, Upper] (Lower = 0);
	// NULL adds nothing.
	CentredSquareSum
	// DistinctValues is the number of distinct non-NULL values of the
	// column among the group's bounded rows. It is computed by its own
	// engine statement (a Histogram with Distinct set); the main statement
	// reads 0 for it.
	DistinctValues
)

// Summand is the guarantee of the clamping stage for one statistic.
type Summand struct {
	Kind   SummandKind
	Column string
	// Exp is the fixed-point exponent: a summand of n steps is worth
	// n·2^Exp. 0 for counts and int columns.
	Exp int
	// Lower and Upper are the clamping bounds in grid steps
	// (FixedPointSum only).
	Lower, Upper int64
	// LowerValue and UpperValue are the declared bounds.
	LowerValue, UpperValue float64
}

// PerRow bounds the absolute value of one row's summand, in value units.
func (s Summand) PerRow() float64 {
	if s.Kind != FixedPointSum && s.Kind != CentredSquareSum {
		return 1
	}
	return math.Ldexp(float64(max(abs64(s.Lower), abs64(s.Upper))), s.Exp)
}

// CentredPerRow bounds one row's summand after subtracting the midpoint of
// the clamping range, in value units: (Upper − Lower)/2 grid steps.
func (s Summand) CentredPerRow() float64 {
	return math.Ldexp(float64(s.Upper-s.Lower)/2, s.Exp)
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// Statistic is an exact per-group aggregate that the engine computes.
type Statistic struct {
	Summand Summand
	// Rows and Values index the statistics that count, in the same group,
	// the rows and the non-NULL values of the summand's column (sums
	// only). The engine may sum a fixed-point column as doubles, which is
	// exact while Rows times the largest summand fits 53 bits, and it maps
	// a NULL to the lower bound's grid step, which Values corrects (see
	// Plan.finishExact).
	Rows, Values int
}

// ReleaseKind says how a noisy value is formed from statistics.
type ReleaseKind int

// The release kinds.
const (
	// NoisyCount releases a count statistic with geometric noise.
	NoisyCount ReleaseKind = iota
	// NoisySum releases a fixed-point sum statistic with grid Laplace noise.
	NoisySum
	// NoisyCentredSum releases Σ(x − m) = sum − m·count, m the midpoint of
	// the clamping range, with grid Laplace noise.
	NoisyCentredSum
	// RankSelect selects a quantile among a histogram's candidate values
	// with the exponential mechanism; Stat indexes Plan.Histograms.
	RankSelect
)

// Release is one noisy value per group.
type Release struct {
	Kind ReleaseKind
	// Stat indexes Plan.Statistics: the count or the sum released.
	Stat int
	// CountStat indexes the count that centres a NoisyCentredSum.
	CountStat int
	// PerRow is the summand bound this release's sensitivity derives from.
	PerRow float64
	// Sensitivity is Contribution.L1(PerRow).
	Sensitivity float64
	// Epsilon is the release's share of the query's ε.
	Epsilon float64
}

// AggregatePlan is how one output aggregate is answered.
type AggregatePlan struct {
	// Output indexes Query.Outputs.
	Output    int
	Aggregate Aggregate
	// Releases index Plan.Releases: one for COUNT and SUM; for AVG the
	// centred sum and the count.
	Releases []int
	// Epsilon is the aggregate's share of the query's ε.
	Epsilon float64
	// Lower and Upper are the declared bounds (SUM, AVG, variances,
	// quantiles).
	Lower, Upper float64
}

// Plan is a checked query with its stages, sensitivities and ε split.
type Plan struct {
	Query   *Query
	Table   *catalog.Table
	Epsilon float64
	// Contribution is the bounding stage's guarantee.
	Contribution Contribution
	// Bounded reports whether the engine must bound contributions (the
	// table has a privacy unit); BoundGroups whether it must also limit the
	// number of groups per person.
	Bounded, BoundGroups bool
	// PerShard is set when the table is distributed over shards by its
	// privacy unit (engine.UnitSharder): the statement then bounds each
	// person's contribution on the shards, where the dialect can
	// (engine.ShardBounder).
	PerShard bool
	// Keys lists every group of the answer: the cross product of the
	// GROUP BY columns' public value lists (one empty key without GROUP BY).
	Keys [][]any
	// Statistics are the exact aggregates the engine computes per group.
	Statistics []Statistic
	// Releases are the noisy values released per group.
	Releases   []Release
	Aggregates []AggregatePlan
	// Histograms are the per-group counts over public candidate grids that
	// quantiles select from; each is computed by its own engine statement.
	Histograms []Histogram
	// Selection is set when a GROUP BY column has no public value list:
	// the released keys are chosen by DP key selection, and Keys is nil.
	Selection *KeySelection
	// TopK is set for a most-common-values query.
	TopK *TopKPlan
}

// MaxGroups caps the number of groups a query may release, so that a cross
// product of value lists cannot exhaust memory.
const MaxGroups = 1_000_000

// fixedPointBits is the number of bits a fixed-point float summand may use:
// each clamped value is at most 2^fixedPointBits grid steps in magnitude, so
// it fits a 32-bit integer, which engines sum fastest. The step is then at
// most 2^-30 of the larger bound, at least 2^9 times finer than the noise
// grid of any sum over the column (2^-20 of its sensitivity, or coarser).
const fixedPointBits = 30

// NewPlan builds the plan for q over table with total privacy parameter
// epsilon, split equally among the aggregates (and, for AVG, equally
// between its centred sum and its count).
func NewPlan(q *Query, table *catalog.Table, epsilon float64) (*Plan, error) {
	return NewPlanDelta(q, table, epsilon, 0)
}

// NewPlanDelta is NewPlan with the δ the query may spend: a GROUP BY column
// without a public value list needs δ > 0 for key selection, which takes
// all of δ (see KeySelection): when the query has a count (COUNT, AVG's
// count, COUNT(DISTINCT unit)), its noisy value selects and the aggregates
// share all of ε; otherwise the selection takes half of ε and the
// aggregates share the other half.
func NewPlanDelta(q *Query, table *catalog.Table, epsilon, delta float64) (*Plan, error) {
	if math.IsNaN(epsilon) || math.IsInf(epsilon, 0) || epsilon <= 0 {
		return nil, refuse("epsilon = %v: want a finite number > 0", epsilon)
	}
	// The relation the plan aggregates: the table with the bounds WHERE
	// implies and the derived columns of the project stage.
	table, err := relation(q, table)
	if err != nil {
		return nil, err
	}
	p := &Plan{Query: q, Table: table, Epsilon: epsilon}
	for _, b := range q.Buckets {
		if err := b.checkCount(table); err != nil {
			return nil, err
		}
		if n := len(b.Values(table)); n > MaxGroups {
			return nil, refuse("GROUP BY %s gives %d bins: want at most %d", b, n, MaxGroups)
		}
	}
	var undeclared []string
	for _, g := range q.GroupBy {
		if p.keyValues(g) == nil {
			undeclared = append(undeclared, g)
		}
	}
	aggEpsilon := epsilon
	if len(undeclared) > 0 {
		if !(delta > 0 && delta < 1) {
			return nil, refuse("GROUP BY %s needs δ > 0: column(s) %s have no public value list, so the released keys are chosen by DP key selection, which spends δ; pass a δ (e.g. --delta 1e-6) or declare `values:` in the catalog",
				q.keyNames(), strings.Join(undeclared, ", "))
		}
		p.Selection = &KeySelection{Columns: undeclared, Delta: delta, Release: -1}
		if !countSelects(q, table) {
			p.Selection.Epsilon = epsilon / 2
			aggEpsilon = epsilon / 2
			if len(q.Aggregates()) == 0 && q.TopK == 0 {
				// The keys alone: the selection takes all of ε.
				p.Selection.Epsilon, aggEpsilon = epsilon, 0
			}
		}
	}

	// Groups: the cross product of public value lists.
	p.Keys = [][]any{{}}
	for _, g := range q.GroupBy {
		if p.Selection != nil {
			p.Keys = nil
			break
		}
		vals := p.keyValues(g)
		if len(p.Keys)*len(vals) > MaxGroups {
			return nil, refuse("GROUP BY %s gives more than %d groups; want at most %d", q.keyNames(), MaxGroups, MaxGroups)
		}
		next := make([][]any, 0, len(p.Keys)*len(vals))
		for _, k := range p.Keys {
			for _, v := range vals {
				nk := append(append([]any{}, k...), v)
				next = append(next, nk)
			}
		}
		p.Keys = next
	}

	// Stage 1: contribution bounding.
	p.Contribution = Contribution{Groups: 1, RowsPerGroup: 1, GroupSize: max(table.GroupSize, 1)}
	if m := q.JoinRows; m > 1 && !table.HasPrivacyUnit() {
		// Without a privacy unit each row is a person, and the joins turn
		// it into at most m rows, in at most m groups (see join.go).
		if m > catalog.MaxRowsPerGroup {
			return nil, refuse("the joins can turn one row into %d rows; want at most %d: join on keys the public tables hold fewer times, or declare a privacy unit", m, catalog.MaxRowsPerGroup)
		}
		p.Contribution.Groups, p.Contribution.RowsPerGroup = m, m
	}
	if table.HasPrivacyUnit() {
		p.Bounded = true
		p.Contribution.RowsPerGroup = table.MaxRowsPerGroup
		p.Contribution.Groups = table.MaxGroupsPerUnit
		// A person cannot touch more groups than there are.
		if p.Selection != nil {
			p.BoundGroups = true
		} else if n := int64(len(p.Keys)); n <= p.Contribution.Groups {
			p.Contribution.Groups = n
		} else {
			p.BoundGroups = true
		}
	}

	// Stages 2–4 per aggregate.
	if p.Selection != nil && !countSelects(q, table) {
		// Each person is one distinct unit in at most Contribution.Groups
		// keys.
		p.Selection.Stat = p.statistic(Summand{Kind: DistinctUnits, Column: table.PrivacyUnit})
		p.Selection.Sensitivity = p.Contribution.People() * p.Contribution.Groups
		p.Selection.MaxCount = p.Contribution.People()
	}
	if q.TopK > 0 {
		// The selection of the most common keys takes all of the ε left,
		// or half of it when their counts are released too.
		if len(q.Aggregates()) > 0 {
			aggEpsilon /= 2
		}
		p.planTopK(aggEpsilon)
	}
	shares := splitEpsilon(aggEpsilon, len(q.Aggregates()))
	k := 0
	for i, o := range q.Outputs {
		if o.Agg == nil {
			continue
		}
		a := *o.Agg
		share := shares[k]
		k++
		ap := AggregatePlan{Output: i, Aggregate: a, Epsilon: share}
		switch a.Func {
		case CountStar:
			st := p.statistic(Summand{Kind: RowCount})
			ap.Releases = []int{p.release(NoisyCount, st, -1, 1, share)}
		case Count:
			st := p.statistic(Summand{Kind: NonNullCount, Column: a.Column})
			ap.Releases = []int{p.release(NoisyCount, st, -1, 1, share)}
		case Sum:
			sm := fixedPointSummand(table.Column(a.Column))
			st := p.sumStatistic(sm)
			ap.Lower, ap.Upper = sm.LowerValue, sm.UpperValue
			ap.Releases = []int{p.release(NoisySum, st, -1, sm.PerRow(), share)}
		case Avg:
			sm := fixedPointSummand(table.Column(a.Column))
			st := p.sumStatistic(sm)
			cnt := p.statistic(Summand{Kind: NonNullCount, Column: a.Column})
			ap.Lower, ap.Upper = sm.LowerValue, sm.UpperValue
			ap.Releases = []int{
				p.release(NoisyCentredSum, st, cnt, sm.CentredPerRow(), share/2),
				p.release(NoisyCount, cnt, -1, 1, share/2),
			}
		case CountDistinct:
			if !table.HasPrivacyUnit() || a.Column != table.PrivacyUnit {
				p.planDistinctValues(&ap, share)
				break
			}
			st := p.statistic(Summand{Kind: DistinctUnits, Column: a.Column})
			// One person is one distinct unit in each of the at most
			// Contribution.Groups groups it touches, whatever its rows.
			r := p.release(NoisyCount, st, -1, 1, share)
			p.Releases[r].Sensitivity = float64(p.Contribution.People() * p.Contribution.Groups)
			ap.Releases = []int{r}
		case VarPop, VarSamp, StddevPop, StddevSamp:
			p.planVariance(&ap, share)
		case Quantile:
			p.planQuantile(&ap, share)
		default:
			return nil, fmt.Errorf("query: no plan for aggregate %v", a)
		}
		p.Aggregates = append(p.Aggregates, ap)
	}
	p.selectByCount()
	return p, nil
}

// splitEpsilon divides epsilon into n equal shares whose exact (real)
// sum is at most epsilon: ε/n rounded down to 30 significant bits, so that
// the shares and their halves add up in floating point without rounding.
// One aggregate gets all of ε.
func splitEpsilon(epsilon float64, n int) []float64 {
	out := make([]float64, n)
	s := epsilon
	if n > 1 {
		s = epsilon / float64(n)
		_, e := math.Frexp(s)
		s = math.Ldexp(math.Floor(math.Ldexp(s, 30-e)), e-30)
		// The float quotient may round up; n·s ≤ ε must hold exactly.
		total := new(big.Rat).Mul(new(big.Rat).SetFloat64(s), new(big.Rat).SetInt64(int64(n)))
		if total.Cmp(new(big.Rat).SetFloat64(epsilon)) > 0 {
			s = math.Ldexp(math.Floor(math.Ldexp(s, 30-e))-1, e-30)
		}
	}
	for i := range out {
		out[i] = s
	}
	return out
}

// statistic returns the index of the statistic with summand s, adding it
// if the plan does not compute it yet (SUM(x) and AVG(x) share sum(x)).
func (p *Plan) statistic(s Summand) int {
	for i, st := range p.Statistics {
		if st.Summand == s {
			return i
		}
	}
	p.Statistics = append(p.Statistics, Statistic{Summand: s})
	return len(p.Statistics) - 1
}

// sumStatistic is statistic for a FixedPointSum or CentredSquareSum: it
// also adds the counts of rows and of non-NULL values that the exact
// reading of the sum needs (Statistic.Rows and Values).
func (p *Plan) sumStatistic(s Summand) int {
	i := p.statistic(s)
	rows := p.statistic(Summand{Kind: RowCount})
	values := p.statistic(Summand{Kind: NonNullCount, Column: s.Column})
	p.Statistics[i].Rows, p.Statistics[i].Values = rows, values
	return i
}

// release adds a release whose sensitivity is derived from the bounding
// stage's Contribution and the clamping stage's per-row bound.
func (p *Plan) release(kind ReleaseKind, stat, countStat int, perRow, eps float64) int {
	p.Releases = append(p.Releases, Release{
		Kind: kind, Stat: stat, CountStat: countStat,
		PerRow: perRow, Sensitivity: p.Contribution.L1(perRow), Epsilon: eps,
	})
	return len(p.Releases) - 1
}

// fixedPointSummand chooses the grid for summing a bounded column exactly:
// int columns sum their integer values (Exp = 0); float columns sum
// x·2^−Exp rounded to an integer, with Exp chosen so that the larger bound is
// below 2^fixedPointBits steps.
func fixedPointSummand(col *catalog.Column) Summand {
	lo, hi := *col.Lower, *col.Upper
	s := Summand{Kind: FixedPointSum, Column: col.Name, LowerValue: lo, UpperValue: hi}
	if col.Type == catalog.Int {
		s.Lower, s.Upper = int64(lo), int64(hi)
		return s
	}
	m := math.Max(math.Abs(lo), math.Abs(hi))
	if m == 0 {
		s.Exp = -fixedPointBits
	} else {
		_, e := math.Frexp(m) // m < 2^e
		s.Exp = e - fixedPointBits
	}
	// Scaling by a power of two is exact. The engine rounds each scaled
	// value to an integer by its own rule (nearest, with either tie rule);
	// any such rounding of a value in [lo, hi] lands in [floor, ceil] of the
	// scaled bounds, whatever the engine.
	s.Lower = int64(math.Floor(math.Ldexp(lo, -s.Exp)))
	s.Upper = int64(math.Ceil(math.Ldexp(hi, -s.Exp)))
	return s
}
