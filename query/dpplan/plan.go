package dpplan

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/dpstat/dpstat/epoch"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// Share is one aggregate's part of the query's ε.
type Share struct {
	Column  string  `json:"column"`
	Epsilon float64 `json:"epsilon"`
	// Delta is the share of δ (key selection only).
	Delta      float64         `json:"delta,omitempty"`
	Mechanisms []MechanismInfo `json:"mechanisms"`
}

// Notes explains the answer's construction.
func (p *Plan) Notes() []string {
	var n []string
	if pre := p.Query.Pre; pre != nil {
		var aggs []string
		for _, c := range pre.Columns {
			if c.Agg != nil {
				aggs = append(aggs, c.Name+" = "+c.Agg.String())
			}
		}
		rows := "one row per person, so each row is a person and no bounding is needed"
		keys := strings.Join(pre.Keys, ", ")
		if p.Epochs != nil {
			// sqlgen groups the pre-aggregation by the epoch too.
			rows = "one row per person and " + p.EpochEvery + ", so each row is one (person, " + p.EpochEvery + ") unit and no bounding is needed"
			keys += ", date_trunc('" + p.EpochEvery + "', " + p.EpochColumn + ")"
		}
		if len(pre.Keys) > 1 {
			rows = "one row per person and " + strings.Join(pre.Keys, ", ") + ": the table's declared bounds apply to them"
			if p.Epochs != nil {
				var others []string
				for _, k := range pre.Keys {
					if k != pre.Unit {
						others = append(others, k)
					}
				}
				rows = "one row per person, " + p.EpochEvery + " and " + strings.Join(others, ", ") + ": the table's declared bounds apply to them per (person, " + p.EpochEvery + ")"
			}
		}
		n = append(n, fmt.Sprintf("reads a per-person pre-aggregation of %s grouped by %s (%s), %s; each output's bounds come from the plan (COUNT(*) is at least 1, COUNT(col) at least 0; clamp with LEAST/GREATEST where there is no bound)",
			pre.Query.Table, keys, strings.Join(aggs, ", "), rows))
	}
	for _, j := range p.Query.Joins {
		kind := "joined"
		if j.Left {
			kind = "left-joined"
		}
		var on []string
		for k, e := range j.On {
			if f := j.OnTrunc(k); f != "" {
				on = append(on, "date_trunc('"+f+"', "+e[0]+") = date_trunc('"+f+"', "+e[1]+")")
				continue
			}
			on = append(on, e[0]+" = "+e[1])
		}
		table := j.Table
		if j.Alias != j.Table {
			table += " AS " + j.Alias
		}
		if j.Private {
			who, whose := "person", "one person's"
			if p.Epochs != nil {
				who, whose = "(person, "+p.EpochEvery+")", "one (person, "+p.EpochEvery+")'s, both sides of one "+p.EpochEvery
			}
			n = append(n, fmt.Sprintf("%s with %s on %s, a table about the same people: every joined row is %s; before the join each %s keeps at most %d row(s) of each table of the join, chosen at random, and each %s's joined rows are bounded as above", kind, table, strings.Join(on, " AND "), whose, who, max(p.Contribution.Groups*p.Contribution.RowsPerGroup, 1), who))
			continue
		}
		n = append(n, fmt.Sprintf("%s with public table %s on %s (public: its values are read from the data at no cost)", kind, table, strings.Join(on, " AND ")))
	}
	if len(p.Query.Joins) > 0 && !p.Bounded && p.Query.JoinRows > 1 {
		n = append(n, fmt.Sprintf("each row is a person and the joins turn a row into at most %d rows: every sensitivity counts %d rows in each of %d groups", p.Query.JoinRows, p.Query.JoinRows, p.Query.JoinRows))
	}
	if g := p.Contribution.People(); g > 1 {
		n = append(n, fmt.Sprintf("groups of %d people are protected together (group_size): every sensitivity is multiplied by %d", g, g))
	}
	if p.Bounded {
		n = append(n, fmt.Sprintf("each %s contributes at most %d row(s) per group and to at most %d group(s), chosen at random; rows beyond these bounds (max_rows_per_group, max_groups_per_unit) are not counted, so counts and sums can be below the table's (the dropped-rows estimate says how many: dpstat query --dropped, \"dropped\": true over HTTP, SET dpstat.dropped = on)",
			p.Table.PrivacyUnit, p.Contribution.RowsPerGroup, p.Contribution.Groups))
	}
	for _, a := range p.Aggregates {
		if note := a.agg.note(a); note != "" {
			n = append(n, note)
		}
	}
	if len(p.Query.GroupBy) > 0 && p.Selection == nil && p.TopK == nil {
		n = append(n, "every group of the public value lists is released, including groups with no rows")
	}
	return n
}

// PublicKeysOnly reports whether the query releases only the keys of
// public value lists: no aggregate, no key selection, no most common values.
func (p *Plan) PublicKeysOnly() bool {
	return len(p.Releases) == 0 && p.Selection == nil && p.TopK == nil && len(p.Query.GroupBy) > 0
}

// KeyValues returns the public values of group key g, or nil when it has
// none (key selection).
func (p *Plan) KeyValues(g string) []any {
	if b := p.Query.Buckets[g]; b != nil {
		return b.Values(p.Table)
	}
	return p.Table.Column(g).Values
}

// ColumnTypes names the type of each visible output, in the order of the
// answer's columns, as the catalog spells types: a group key its
// column's or its computed values' type ("int", "float", "text", "bool",
// "date", "timestamp"); a COUNT "int" (counts are released as whole
// numbers); a MIN, MAX or quantile of a date or timestamp "date" or
// "timestamp"; every other aggregate and computed output "float". Every
// front end types its result columns by it.
func (p *Plan) ColumnTypes() []schema.Type {
	var out []schema.Type
	for _, o := range p.Query.Outputs {
		if o.Hidden {
			continue
		}
		out = append(out, p.outputType(o))
	}
	return out
}

// outputType is the type of one output (see ColumnTypes).
func (p *Plan) outputType(o ir.Output) schema.Type {
	switch {
	case o.Post != nil:
		return schema.Float
	case o.Agg != nil:
		if t := ir.AggTemporal(o.Agg, p.Query.Derived, p.Table); t != "" {
			return t
		}
		if o.Agg.Func.Info().Result == ir.ResultInt {
			return schema.Int
		}
		return schema.Float
	}
	b := p.Query.Buckets[o.Key]
	if b == nil {
		if c := p.Table.Column(o.Key); c != nil {
			return c.Type
		}
		return ""
	}
	switch {
	case b.Kind == ir.DateBucket && b.Trunc:
		return b.Type
	case b.Kind == ir.DateBucket, b.Kind == ir.WidthBucket, b.Kind == ir.RangeBucket:
		return schema.Int
	case b.Kind == ir.TextBucket:
		return map[string]schema.Type{"text": schema.Text, "number": schema.Int, "bool": schema.Bool}[b.Fn.ValueKind()]
	case b.Kind == ir.CaseBucket && b.ValueKind() != "number":
		return schema.Type(b.ValueKind())
	}
	// Numbers: typed as the planned values are (the SQL casts the key to
	// that type too): any double makes the column a float.
	if b.Kind == ir.FloorBucket {
		return schema.Float
	}
	for _, v := range p.KeyValues(o.Key) {
		if _, ok := v.(float64); ok {
			return schema.Float
		}
	}
	return schema.Int
}

// gridValue spells a candidate of an aggregate's quantile grid for
// EXPLAIN: a date or timestamp for a temporal aggregate, else the number.
func (p *Plan) gridValue(a ir.Aggregate, x float64) string {
	if t := ir.AggTemporal(&a, p.Query.Derived, p.Table); t != "" {
		return ir.TemporalValue(t, x)
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// planDistinctValues plans COUNT(DISTINCT col) of a column other than the
// privacy unit: one noisy count of its own statistic.
func (p *Plan) planDistinctValues(ap *AggregatePlan, share float64) {
	st := p.statistic(Summand{Kind: DistinctValues, Column: ap.Aggregate.Column})
	p.Histograms = append(p.Histograms, Histogram{Column: ap.Aggregate.Column, Distinct: true, Stat: st, Step: 1})
	ap.Releases = []int{p.release(NoisyCount, st, -1, 1, share)}
}

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

// GroupsTouched is the most groups whose statistics a protected set of
// People people changes: People·Groups. It is the L1 sensitivity of a
// count of distinct people (each is one unit in each group it touches,
// whatever its rows) and of a key selection, and the number of groups
// whose rounding onto a grid can each add one step.
func (c Contribution) GroupsTouched() int64 { return c.People() * c.Groups }

// KeyRows is the most rows a protected set of People people has under one
// key: People·RowsPerGroup, the sensitivity of one key's count.
func (c Contribution) KeyRows() int64 { return c.People() * c.RowsPerGroup }

// KeyCount is the most a protected set of People people adds to one key's
// count whose summand is of kind k: People for a count of distinct people,
// KeyRows for a count of rows or values.
func (c Contribution) KeyCount(k SummandKind) int64 {
	if k == DistinctUnits {
		return c.People()
	}
	return c.KeyRows()
}

// Sensitivity is the L1 sensitivity, across all groups, of a statistic
// whose summand is of kind k and bounded by perRow: GroupsTouched for a
// count of distinct people, L1(perRow) for every other summand.
func (c Contribution) Sensitivity(k SummandKind, perRow float64) float64 {
	if k == DistinctUnits {
		return float64(c.GroupsTouched())
	}
	return c.L1(perRow)
}

// L2 is the L2 sensitivity across groups of a release whose L1
// sensitivity is l1 = People·Groups·c, c the most one person changes one
// group's value. A protected set of People people changes each group's
// value by at most People·c, and the changes add up to at most l1, so the
// L2 norm is at most √(People·c · l1) = People·c·√Groups = l1/√Groups.
func (c Contribution) L2(l1 float64) float64 { return l1 / math.Sqrt(float64(c.Groups)) }

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
	// Stat indexes Plan.Statistics: the count or the sum released (-1 for
	// a RankSelect).
	Stat int
	// Histogram indexes Plan.Histograms: the histogram a RankSelect
	// chooses from (-1 for the other kinds).
	Histogram int
	// CountStat indexes the count that centres a NoisyCentredSum.
	CountStat int
	// PerRow is the summand bound this release's sensitivity derives from.
	PerRow float64
	// Sensitivity is Contribution.Sensitivity of the statistic's summand
	// and PerRow.
	Sensitivity float64
	// Epsilon is the release's share of the query's ε.
	Epsilon float64
}

// AggregatePlan is how one output aggregate is answered.
type AggregatePlan struct {
	// Output indexes Query.Outputs.
	Output    int
	Aggregate ir.Aggregate
	// Releases index Plan.Releases: one for COUNT and SUM; for AVG the
	// centred sum and the count.
	Releases []int
	// Epsilon is the aggregate's share of the query's ε.
	Epsilon float64
	// Lower and Upper are the declared bounds (SUM, AVG, variances,
	// quantiles).
	Lower, Upper float64

	// agg is the aggregate's kind, which planned it and finishes it.
	agg aggregator
}

// Plan is a checked query with its stages, sensitivities and ε split.
type Plan struct {
	Query   *ir.Query
	Table   *ir.Table
	Epsilon float64
	// Epochs are the epochs the query reads, on a table that declares an
	// epoch (ir.Table.Epoch; nil otherwise): the privacy unit is then
	// (person, epoch), and the query's cost is charged in each of them.
	// EpochColumn and EpochEvery name the declaration, and
	// DeclaredEpochs are all the epochs the table declares.
	Epochs         *epoch.Range
	EpochColumn    string
	EpochEvery     string
	DeclaredEpochs epoch.Range
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
	// GROUP BY columns' public value lists (one empty key without GROUP BY),
	// followed by the Hidden cells MeasureRest adds.
	Keys [][]any
	// Hidden is the number of trailing Keys that the answer never shows:
	// the rows whose value of a Rest column is NULL or outside its list,
	// measured for reuse only (MeasureRest).
	Hidden int
	// Rest marks, per GROUP BY column, that some hidden cells hold its
	// rows outside the list (their key is nil there).
	Rest []bool
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

// fixedPointBits is the number of bits a fixed-point float summand may use:
// each clamped value is at most 2^fixedPointBits grid steps in magnitude, so
// it fits a 32-bit integer, which engines sum fastest. The step is then at
// most 2^-30 of the larger bound, at least 2^9 times finer than the noise
// grid of any sum over the column (2^-20 of its sensitivity, or coarser).
const fixedPointBits = 30

// minGridExp is the finest grid a sum is rounded onto, 2^−1000: its
// scale 2^1000 and the grid step itself are finite normal doubles, which
// the engines spell as literals. Bounds of smaller magnitude (the
// subnormals) are summed on it: their values round to 0 or 1 step, which
// costs accuracy, never privacy (the sensitivity counts the steps).
const minGridExp = -1000

// NewPlan builds the plan for q over table with total privacy parameter
// epsilon, split equally among the aggregates (and, for AVG, equally
// between its centred sum and its count).
func NewPlan(q *ir.Query, table *ir.Table, epsilon float64) (*Plan, error) {
	return NewPlanDelta(q, table, epsilon, 0)
}

// NewPlanDelta is NewPlan with the δ the query may spend: a GROUP BY column
// without a public value list needs δ > 0 for key selection, which takes
// all of δ (see KeySelection): when the query has a count (COUNT, AVG's
// count, COUNT(DISTINCT unit)), its noisy value selects and the aggregates
// share all of ε; otherwise the selection takes half of ε and the
// aggregates share the other half.
func NewPlanDelta(q *ir.Query, table *ir.Table, epsilon, delta float64) (*Plan, error) {
	return newPlan(q, table, epsilon, delta, nil)
}

// Replan is NewPlanDelta(p.Query, table, epsilon, delta) for the table p
// was planned over: the same query at another ε and δ. It reuses p's
// groups instead of listing them again (they depend on the query and the
// catalog only), so that a search over ε plans a query of many groups
// quickly; the plans share Keys, which no stage modifies.
func (p *Plan) Replan(table *ir.Table, epsilon, delta float64) (*Plan, error) {
	np, err := newPlan(p.Query, table, epsilon, delta, p.Keys)
	if err != nil {
		return nil, err
	}
	// The epochs read are the query's, whatever its ε: a plan at another
	// ε is charged in the same epochs and bounds the same units.
	np.Epochs, np.EpochColumn, np.EpochEvery, np.DeclaredEpochs = p.Epochs, p.EpochColumn, p.EpochEvery, p.DeclaredEpochs
	if np.Selection == nil {
		np.Hidden, np.Rest = p.Hidden, p.Rest
	}
	return np, nil
}

func newPlan(q *ir.Query, table *ir.Table, epsilon, delta float64, keys [][]any) (*Plan, error) {
	if math.IsNaN(epsilon) || math.IsInf(epsilon, 0) || epsilon <= 0 {
		return nil, ir.Refuse("epsilon = %v: want a finite number > 0", epsilon)
	}
	// The relation the plan aggregates: the table with the bounds WHERE
	// implies and the derived columns of the project stage.
	table, err := ir.Relation(q, table)
	if err != nil {
		return nil, err
	}
	p := &Plan{Query: q, Table: table, Epsilon: epsilon}
	for _, b := range q.Buckets {
		if err := b.CheckCount(table); err != nil {
			return nil, err
		}
		if n := len(b.Values(table)); n > ir.MaxGroups {
			return nil, ir.Refuse("GROUP BY %s gives %d bins: want at most %d", b, n, ir.MaxGroups)
		}
	}
	var undeclared []string
	for _, g := range q.GroupBy {
		if p.KeyValues(g) == nil {
			undeclared = append(undeclared, g)
		}
	}
	aggEpsilon := epsilon
	if len(undeclared) > 0 {
		if !(delta > 0 && delta < 1) {
			return nil, ir.Refuse("GROUP BY %s needs δ > 0: column(s) %s have no public value list, so the released keys are chosen by DP key selection, which spends δ; pass a δ (e.g. --delta 1e-6) or declare `values:` in the catalog",
				q.KeyNames(), strings.Join(undeclared, ", "))
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
	switch {
	case p.Selection != nil && len(q.GroupBy) > 0:
		p.Keys = nil
	case keys != nil:
		p.Keys = keys // reused (Replan)
	default:
		lists := make([][]any, len(q.GroupBy))
		for i, g := range q.GroupBy {
			lists[i] = p.KeyValues(g)
		}
		var ok bool
		if p.Keys, ok = crossProduct(lists); !ok {
			return nil, ir.Refuse("GROUP BY %s gives more than %d groups; want at most %d", q.KeyNames(), ir.MaxGroups, ir.MaxGroups)
		}
	}

	// Stage 1: contribution bounding.
	p.Contribution = Contribution{Groups: 1, RowsPerGroup: 1, GroupSize: max(table.GroupSize, 1)}
	if m := q.JoinRows; m > 1 && !table.HasPrivacyUnit() {
		// Without a privacy unit each row is a person, and the joins turn
		// it into at most m rows, in at most m groups (see join.go).
		if m > schema.MaxRowsPerGroup {
			return nil, ir.Refuse("the joins can turn one row into %d rows; want at most %d: join on keys the public tables hold fewer times, or declare a privacy unit", m, schema.MaxRowsPerGroup)
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
		p.Selection.Sensitivity = p.Contribution.GroupsTouched()
		p.Selection.MaxCount = p.Contribution.KeyCount(DistinctUnits)
		if !p.Bounded {
			// Without a privacy unit the engine counts rows (each row is
			// a person), and the joins turn one row into up to
			// RowsPerGroup rows under one key: a key only one person has
			// counts up to KeyRows, not 1.
			p.Selection.MaxCount = p.Contribution.KeyRows()
		}
	}
	if q.TopK > 0 {
		// The selection of the most common keys takes all of the ε left,
		// or half of it when their counts are released too.
		if len(q.Aggregates()) > 0 {
			aggEpsilon /= 2
		}
		p.planTopK(aggEpsilon)
	}
	shares := SplitEpsilon(aggEpsilon, len(q.Aggregates()))
	k := 0
	for i, o := range q.Outputs {
		if o.Agg == nil {
			continue
		}
		a := *o.Agg
		share := shares[k]
		k++
		agg, err := aggregatorOf(a)
		if err != nil {
			return nil, err
		}
		ap := AggregatePlan{Output: i, Aggregate: a, Epsilon: share, agg: agg}
		agg.plan(p, &ap, share)
		p.Aggregates = append(p.Aggregates, ap)
	}
	p.selectByCount()
	return p, nil
}

// SplitEpsilon divides epsilon into n equal shares whose exact (real)
// sum is at most epsilon: ε/n rounded down to 30 significant bits, so that
// the shares and their halves add up in floating point without rounding.
// One aggregate gets all of ε.
func SplitEpsilon(epsilon float64, n int) []float64 {
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

// release adds a release of statistic stat whose sensitivity is derived
// from the bounding stage's Contribution, the statistic's summand and the
// clamping stage's per-row bound.
func (p *Plan) release(kind ReleaseKind, stat, countStat int, perRow, eps float64) int {
	p.Releases = append(p.Releases, Release{
		Kind: kind, Stat: stat, Histogram: -1, CountStat: countStat, PerRow: perRow,
		Sensitivity: p.Contribution.Sensitivity(p.Statistics[stat].Summand.Kind, perRow), Epsilon: eps,
	})
	return len(p.Releases) - 1
}

// rankRelease adds the selection of a value from histogram h by ranks:
// one row moves every rank by at most 1, so its sensitivity is
// Contribution.L1(1).
func (p *Plan) rankRelease(h int, eps float64) int {
	p.Releases = append(p.Releases, Release{
		Kind: RankSelect, Stat: -1, Histogram: h, CountStat: -1, PerRow: 1,
		Sensitivity: p.Contribution.L1(1), Epsilon: eps,
	})
	return len(p.Releases) - 1
}

// fixedPointSummand chooses the grid for summing a bounded column exactly:
// int columns sum their integer values (Exp = 0); float columns sum
// x·2^−Exp rounded to an integer, with Exp chosen so that the larger bound is
// below 2^fixedPointBits steps.
func fixedPointSummand(col *ir.Column) Summand {
	lo, hi := *col.Lower, *col.Upper
	s := Summand{Kind: FixedPointSum, Column: col.Name, LowerValue: lo, UpperValue: hi}
	if col.Type == schema.Int {
		s.Lower, s.Upper = int64(lo), int64(hi)
		return s
	}
	m := math.Max(math.Abs(lo), math.Abs(hi))
	if m == 0 {
		s.Exp = -fixedPointBits
	} else {
		_, e := math.Frexp(m) // m < 2^e
		s.Exp = max(e-fixedPointBits, minGridExp)
	}
	// Scaling by a power of two is exact. The engine rounds each scaled
	// value to an integer by its own rule (nearest, with either tie rule);
	// any such rounding of a value in [lo, hi] lands in [floor, ceil] of the
	// scaled bounds, whatever the engine.
	s.Lower = int64(math.Floor(math.Ldexp(lo, -s.Exp)))
	s.Upper = int64(math.Ceil(math.Ldexp(hi, -s.Exp)))
	return s
}
