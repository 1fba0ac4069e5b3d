package dpplan

import (
	"errors"
	"fmt"
	"math"
	"math/big"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/mechanism"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/random"
)

// Exact holds the engine's exact statistics for every group of the plan,
// empty groups included (their counts and sums are zero).
type Exact struct {
	// Stats[g][s] is statistic s of group Plan.Keys[g]: a count, or a
	// fixed-point sum in grid steps of 2^Summand.Exp.
	Stats [][]*big.Int
	// Keys are the groups of Stats in key-selection mode (nil when the
	// plan's groups are public: they are Plan.Keys).
	Keys [][]any
	// Hist[h][g] holds the bin counts of histogram h (Plan.Histograms) in
	// group g; nil means no values.
	Hist [][][]int64
	// Selected holds, in a key selection by the query's count
	// (KeySelection.Release ≥ 0), each kept key's noisy count: the value
	// that selected it, released as that count. Nil otherwise.
	Selected []int64
}

// ReadExact matches the engine's rows of SQL (the plan's first form) to
// the plan's public keys, by value (KeyID). Rows whose key is not in the
// public lists cannot occur (the SQL filters them): one is an internal
// error (UnknownKeyError), never dropped. Groups without rows get zeros. See ReadExactForm for the errors that send a query to another
// form.
func (p *Plan) ReadExact(rows *engine.Rows) (*Exact, error) {
	return p.ReadExactForm(rows, p.FirstForm())
}

// ErrGroupTooLarge says that a group has too many rows for its double sums
// to be exact; IntegerForm answers the query. It depends on the data only
// through the answer's speed: every form gives the same statistics.
var ErrGroupTooLarge = errors.New("query: a group is too large for exact double sums")

// ReadExactForm reads the result of FormSQL in form f. It returns an error
// wrapping ErrGroupTooLarge when a double sum of the form cannot be exact.
func (p *Plan) ReadExactForm(rows *engine.Rows, f Form) (*Exact, error) {
	nk := len(p.Query.GroupBy)
	if len(rows.Columns) != nk+len(p.Statistics) {
		return nil, fmt.Errorf("query: engine returned %d columns, want %d", len(rows.Columns), nk+len(p.Statistics))
	}
	if p.Selection != nil {
		ex, err := p.readSelectedKeys(rows, f)
		if err != nil {
			return nil, err
		}
		return ex, p.finishExact(ex, f)
	}
	index := ir.KeyIndex(p.Keys)
	ex := &Exact{Stats: make([][]*big.Int, len(p.Keys))}
	for i := range ex.Stats {
		ex.Stats[i] = make([]*big.Int, len(p.Statistics))
		for j := range ex.Stats[i] {
			ex.Stats[i][j] = new(big.Int)
		}
	}
	for _, r := range rows.Rows {
		key := ir.ReadKey(r, nk)
		g, ok := index[ir.KeyID(key)]
		if !ok {
			return nil, &ir.UnknownKeyError{Key: key}
		}
		for j := range p.Statistics {
			v, err := p.statValue(j, r[nk+j], f)
			if err != nil {
				return nil, err
			}
			ex.Stats[g][j].Add(ex.Stats[g][j], v)
		}
	}
	return ex, p.finishExact(ex, f)
}

// statValue reads statistic j from one engine value: an exact integer, or
// in the double forms a grid-summed double, scaled to grid steps.
func (p *Plan) statValue(j int, v any, f Form) (*big.Int, error) {
	if f != IntegerForm && p.GridSummed(j) {
		switch x := v.(type) {
		case nil:
			return new(big.Int), nil
		case float64:
			steps := math.Ldexp(x, -p.Statistics[j].Summand.Exp)
			if steps != math.Trunc(steps) || math.IsInf(steps, 0) {
				// Not on the grid: the sum was not exact.
				return nil, fmt.Errorf("statistic %d: %w", j, ErrGroupTooLarge)
			}
			b, _ := new(big.Float).SetFloat64(steps).Int(nil)
			return b, nil
		}
	}
	b, err := ir.ToBig(v)
	if err != nil {
		return nil, fmt.Errorf("query: statistic %d: %w", j, err)
	}
	return b, nil
}

// ExactDoubleSum is the largest magnitude every partial sum of a double
// sum of integers may reach and stay exact: 2^53.
var ExactDoubleSum = new(big.Int).Lsh(big.NewInt(1), 53)

// finishExact completes the statistics of the double forms: it checks that
// every double sum was exact (the group's rows times the largest summand
// within 2^53, so that every partial sum, in any order, is an integer the
// double represents) and takes out what the NULLs, clamped to the lower
// bound, added.
func (p *Plan) finishExact(ex *Exact, f Form) error {
	if f == IntegerForm {
		return nil
	}
	for i, st := range p.Statistics {
		s := st.Summand
		if s.Kind != FixedPointSum && s.Kind != CentredSquareSum {
			continue
		}
		grid := p.GridSummed(i)
		var largest, null *big.Int
		if grid {
			largest = big.NewInt(max(abs64(s.Lower), abs64(s.Upper)))
		}
		if s.Kind == FixedPointSum && p.NullsClamped(f) {
			null = big.NewInt(p.nullSteps(s))
		}
		for g := range ex.Stats {
			stats := ex.Stats[g]
			if grid {
				bound := new(big.Int).Mul(stats[st.Rows], largest)
				if bound.Cmp(ExactDoubleSum) > 0 {
					return fmt.Errorf("statistic %d: %w", i, ErrGroupTooLarge)
				}
			}
			if null != nil && null.Sign() != 0 {
				nulls := new(big.Int).Sub(stats[st.Rows], stats[st.Values])
				stats[i].Sub(stats[i], nulls.Mul(nulls, null))
			}
		}
	}
	return nil
}

// nullSteps is what the double forms add for a NULL of a FixedPointSum, in
// grid steps: the lower bound, rounded onto the grid exactly as the engine
// rounds it (same IEEE 754 operations).
func (p *Plan) nullSteps(s Summand) int64 {
	if p.IntColumn(s) {
		return s.Lower
	}
	c := math.Ldexp(1.5, 52+s.Exp)
	lo := s.LowerValue
	r := float64(lo+c) - c
	return int64(math.Ldexp(r, -s.Exp))
}

// countMechanism and sumMechanism are what the noise stage needs of the
// mechanisms; mechanism.Geometric and mechanism.Laplace provide them.
type countMechanism interface {
	Release(x int64) int64
	Scale() float64
	Cost() accounting.Cost
	Interval(confidence float64) float64
}

type sumMechanism interface {
	Release(x float64) (float64, error)
	Scale() float64
	Granularity() float64
	Cost() accounting.Cost
	Interval(confidence float64) float64
}

// Noise is the noise stage of a plan: one calibrated mechanism per release.
type Noise struct {
	plan    *Plan
	Counts  map[int]countMechanism
	Sums    map[int]sumMechanism
	Selects map[int]*mechanism.Exponential
	Sel     *selection
	Topk    *mechanism.ReportNoisyMax
	// Mechanisms describes each release's mechanism, in release order.
	Mechanisms []MechanismInfo
	// Cost is the sequential composition of every release's cost.
	Cost accounting.Cost
	// Gaussian is true when the releases use Gaussian noise accounted in
	// zCDP (see Plan.ChooseNoise).
	Gaussian bool
	// Choice says which noise was chosen and why, when there was a choice.
	Choice string
}

// MechanismInfo describes the mechanism of one release.
type MechanismInfo struct {
	Name        string  `json:"mechanism"`
	Epsilon     float64 `json:"epsilon"`
	Sensitivity float64 `json:"sensitivity"`
	Scale       float64 `json:"scale"`
}

// NewNoise calibrates a mechanism for every release of the plan. src nil
// means the secure pooled source; tests pass a seeded one.
func (p *Plan) NewNoise(src random.Source) (*Noise, error) {
	n := &Noise{plan: p, Counts: map[int]countMechanism{}, Sums: map[int]sumMechanism{}, Selects: map[int]*mechanism.Exponential{}}
	var costs []accounting.Cost
	for i, r := range p.Releases {
		switch r.Kind {
		case NoisyCount:
			sens := int64(r.Sensitivity)
			m, err := mechanism.NewGeometric(mechanism.GeometricOptions{Epsilon: r.Epsilon, Sensitivity: sens, Source: src})
			if err != nil {
				return nil, ir.Refuse("%v", err)
			}
			n.Counts[i] = m
			costs = append(costs, m.Cost())
			n.Mechanisms = append(n.Mechanisms, MechanismInfo{"geometric", r.Epsilon, float64(sens), m.Scale()})
		case RankSelect:
			m, err := mechanism.NewExponential(mechanism.ExponentialOptions{Epsilon: r.Epsilon, Sensitivity: r.Sensitivity, Source: src})
			if err != nil {
				return nil, ir.Refuse("%v", err)
			}
			n.Selects[i] = m
			costs = append(costs, m.Cost())
			n.Mechanisms = append(n.Mechanisms, MechanismInfo{"exponential", r.Epsilon, r.Sensitivity, 2 * r.Sensitivity / r.Epsilon})
		default:
			m, sens, err := p.newSumMechanism(r, src)
			if err != nil {
				return nil, ir.Refuse("%v", err)
			}
			n.Sums[i] = m
			costs = append(costs, m.Cost())
			n.Mechanisms = append(n.Mechanisms, MechanismInfo{"laplace", r.Epsilon, sens, m.Scale()})
		}
	}
	if p.Selection != nil {
		s, cost, err := newSelection(p.Selection, n.Counts, src)
		if err != nil {
			return nil, err
		}
		n.Sel = s
		costs = append(costs, cost)
	}
	if p.TopK != nil {
		m, cost, err := newTopK(p.TopK, src)
		if err != nil {
			return nil, err
		}
		n.Topk = m
		costs = append(costs, cost)
	}
	c, err := accounting.Sequential(costs...)
	if err != nil {
		return nil, ir.Refuse("%v", err)
	}
	// The shares add up to at most the query's ε (SplitEpsilon), so the
	// query is charged exactly the ε it asked for, never a float sum that
	// rounding pushed above it.
	if c.Epsilon > p.Epsilon || len(p.Releases) > 1 || p.Selection != nil || p.TopK != nil {
		c.Epsilon = p.Epsilon
	}
	n.Cost = c
	return n, nil
}

// newSumMechanism calibrates grid Laplace noise for a sum release. Each of
// the up to Contribution.Groups groups that one person changes is rounded
// to the grid separately, which can add one grid step per group; the
// mechanism accounts for one, so the others are added to the sensitivity
// (found by a short fixed-point iteration, as the grid depends on it).
func (p *Plan) newSumMechanism(r Release, src random.Source) (*mechanism.Laplace, float64, error) {
	extra := float64(p.Contribution.GroupsTouched() - 1)
	sens := r.Sensitivity
	if sens <= 0 {
		// A column declared with lower == upper: every row adds the same
		// value, but noise is still calibrated to one grid step.
		sens = math.SmallestNonzeroFloat64
	}
	want := sens
	for i := 0; i < 8; i++ {
		m, err := mechanism.NewLaplace(mechanism.LaplaceOptions{Epsilon: r.Epsilon, Sensitivity: want, Source: src})
		if err != nil {
			return nil, 0, err
		}
		need := sens + extra*m.Granularity()
		if need <= want {
			return m, want, nil
		}
		want = need
	}
	return nil, 0, errors.New("query: could not calibrate the grid of a sum")
}

// Interval is a confidence interval for one released value.
type Interval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// Apply adds noise to the exact statistics and returns the released value
// of every aggregate for every group (rows follow Plan.Keys, columns follow
// Plan.Aggregates) with confidence intervals.
func (n *Noise) Apply(ex *Exact, confidence float64) (values [][]any, cis [][]Interval, err error) {
	values, cis, _, err = n.ApplyMeasured(ex, confidence)
	return values, cis, err
}

// ApplyMeasured is Apply that also returns the noisy value of every release
// for every group (rows follow the groups, columns Plan.Releases; 0 for a
// RankSelect), before any post-processing: the measurements that later
// answers may be derived from (package query/reuse).
func (n *Noise) ApplyMeasured(ex *Exact, confidence float64) (values [][]any, cis [][]Interval, measured [][]float64, err error) {
	p := n.plan
	values = make([][]any, len(ex.Stats))
	cis = make([][]Interval, len(ex.Stats))
	measured = make([][]float64, len(ex.Stats))
	for g := range ex.Stats {
		noisy := make([]float64, len(p.Releases))
		for i, r := range p.Releases {
			switch r.Kind {
			case NoisyCount:
				if ks := p.Selection; ks != nil && ks.Release == i && ex.Selected != nil {
					noisy[i] = float64(ex.Selected[g])
					continue
				}
				noisy[i] = float64(n.Counts[i].Release(saturatedInt64(ex.Stats[g][r.Stat])))
			case RankSelect:
				// Selected per aggregate below.
			case NoisySum, NoisyCentredSum:
				m := n.Sums[i]
				x := onGrid(ex, g, r, p, m.Granularity())
				v, err := m.Release(x)
				if err != nil {
					return nil, nil, nil, err
				}
				noisy[i] = v
			}
		}
		row := make([]any, len(p.Aggregates))
		ci := make([]Interval, len(p.Aggregates))
		for j, a := range p.Aggregates {
			var err error
			if row[j], ci[j], err = a.agg.release(n, ex, g, a, noisy, confidence); err != nil {
				return nil, nil, nil, err
			}
		}
		values[g] = row
		cis[g] = ci
		measured[g] = noisy
	}
	return values, cis, measured, nil
}

// feasible intersects an interval with the range [lo, hi] that the exact
// value always lies in (a count is ≥ 0; a sum of values declared ≥ 0 is
// ≥ 0): coverage is unchanged, the width can only shrink. When the two do
// not meet (the noise took the released value far outside the range), the
// interval is the end of the range nearest to it.
func feasible(iv Interval, lo, hi float64) Interval {
	iv.Low, iv.High = math.Max(iv.Low, lo), math.Min(iv.High, hi)
	if iv.Low > iv.High {
		if iv.High < lo {
			iv.Low, iv.High = lo, lo
		} else {
			iv.Low, iv.High = hi, hi
		}
	}
	return iv
}

// average post-processes a noisy centred sum c and a noisy count n into a
// mean clamped to [lo, hi]; when n ≤ 0 the mean is the midpoint. The
// interval takes every (sum, count) pair within the half-widths hs and hc
// of the noisy ones (each covering with probability 1 − α/2, so both with
// 1 − α) and is clamped to [lo, hi]; when the count's interval reaches 0 it
// is [lo, hi].
func average(c, n, hs, hc, lo, hi float64) (float64, Interval) {
	mid := lo + (hi-lo)/2
	clamp := func(x float64) float64 { return math.Min(hi, math.Max(lo, x)) }
	v := mid
	if n > 0 {
		v = clamp(mid + c/n)
	}
	if n-hc < 1 {
		return v, Interval{lo, hi}
	}
	low, high := math.Inf(1), math.Inf(-1)
	for _, s := range []float64{c - hs, c + hs} {
		for _, d := range []float64{n - hc, n + hc} {
			q := s / d
			low, high = math.Min(low, q), math.Max(high, q)
		}
	}
	return v, Interval{clamp(mid + low), clamp(mid + high)}
}

// saturatedInt64 converts an exact count to int64, saturating.
func saturatedInt64(b *big.Int) int64 {
	if b.IsInt64() {
		return b.Int64()
	}
	if b.Sign() > 0 {
		return math.MaxInt64
	}
	return math.MinInt64
}

// maxGridSteps bounds a pre-rounded sum in grid steps so that it converts
// to float64 exactly; saturating there is a 1-Lipschitz map, so it keeps
// the sensitivity.
const maxGridSteps = 1<<53 - 1

// onGrid returns a sum release's exact value rounded to the mechanism's
// grid (computed on integers) and saturated, as a float64 that is exactly a
// grid point, so no float rounding of a large exact sum can move it.
func onGrid(ex *Exact, g int, r Release, p *Plan, gran float64) float64 {
	sm := p.Statistics[r.Stat].Summand
	steps := new(big.Int).Set(ex.Stats[g][r.Stat]) // value = steps·2^exp
	exp := sm.Exp
	if r.Kind == NoisyCentredSum {
		// Σ(x − m) with m = (Lower+Upper)/2 steps: 2·sum − count·(Lower+Upper)
		// in half steps.
		cnt := ex.Stats[g][r.CountStat]
		mid := new(big.Int).Mul(cnt, big.NewInt(sm.Lower+sm.Upper))
		steps.Lsh(steps, 1).Sub(steps, mid)
		exp--
	}
	frac, gexp := math.Frexp(gran) // gran = 0.5·2^gexp exactly (a power of two)
	if frac != 0.5 {
		// Not a power of two: the mechanism's own rounding applies.
		f, _ := new(big.Float).SetMantExp(new(big.Float).SetInt(steps), exp).Float64()
		return f
	}
	j := gexp - 1
	rounded := roundShift(steps, exp-j)
	if rounded.Cmp(big.NewInt(maxGridSteps)) > 0 {
		rounded.SetInt64(maxGridSteps)
	} else if rounded.Cmp(big.NewInt(-maxGridSteps)) < 0 {
		rounded.SetInt64(-maxGridSteps)
	}
	return math.Ldexp(float64(rounded.Int64()), j)
}

// roundShift returns round(x·2^shift), halves away from zero.
func roundShift(x *big.Int, shift int) *big.Int {
	if shift >= 0 {
		return new(big.Int).Lsh(x, uint(shift))
	}
	neg := x.Sign() < 0
	a := new(big.Int).Abs(x)
	// floor((|x| + 2^(s−1)) / 2^s)
	s := uint(-shift)
	half := new(big.Int).Lsh(big.NewInt(1), s-1)
	a.Add(a, half).Rsh(a, s)
	if neg {
		a.Neg(a)
	}
	return a
}

// quantile selects aggregate a's candidate value for group g.
func (n *Noise) quantile(ex *Exact, g int, a AggregatePlan) (float64, error) {
	r := n.plan.Releases[a.Releases[0]]
	h := n.plan.Histograms[r.Histogram]
	var counts []int64
	if r.Histogram < len(ex.Hist) && ex.Hist[r.Histogram] != nil {
		counts = ex.Hist[r.Histogram][g]
	}
	var scores []float64
	if a.Aggregate.Extreme != 0 {
		scores = extremeScores(counts, h.Bins, a.Aggregate.Extreme, n.extremeRank(a, h))
	} else {
		scores = QuantileScores(counts, h.Bins, a.Aggregate.Q)
	}
	i, err := n.Selects[a.Releases[0]].Select(scores)
	if err != nil {
		return 0, err
	}
	return h.Candidate(i), nil
}
