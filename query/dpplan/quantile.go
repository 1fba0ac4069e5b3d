package dpplan

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// QuantileBins is the most candidate values a quantile chooses among, plus
// one: candidates are Lower + i·(Upper − Lower)/QuantileBins for i = 0 …
// QuantileBins, or every integer of the declared range for an int, date or
// timestamp column whose range is at most QuantileBins wide.
const QuantileBins = 1024

// Histogram is the statistic a quantile selects from: per group, the
// number of (bounded) non-NULL values in each bin of a public grid of
// candidate values. Candidate i is Lower + i·Step (Upper for i = Bins);
// bin i < Bins holds the clamped values in [candidate i, candidate i+1),
// bin Bins holds the values equal to Upper.
type Histogram struct {
	Column       string
	Lower, Upper float64
	Bins         int
	Step         float64
	// Distinct marks the statement of a COUNT(DISTINCT column): one bin
	// (Bins = 0) holding the number of distinct values among the group's
	// bounded rows, which is statistic Stat.
	Distinct bool
	Stat     int
}

// Candidate returns the value of candidate i.
func (h Histogram) Candidate(i int) float64 {
	if i >= h.Bins {
		return h.Upper
	}
	return h.Lower + float64(i)*h.Step
}

// newHistogram chooses the public candidate grid of a bounded column.
func newHistogram(col *ir.Column) Histogram {
	lo, hi := *col.Lower, *col.Upper
	h := Histogram{Column: col.Name, Lower: lo, Upper: hi}
	switch {
	case hi == lo:
		h.Bins, h.Step = 0, 1
	case (col.Type == schema.Int || col.Type.Temporal()) && hi-lo <= QuantileBins:
		h.Bins, h.Step = int(hi-lo), 1
	default:
		h.Bins, h.Step = QuantileBins, (hi-lo)/QuantileBins
		if h.Step == 0 {
			// A range narrower than QuantileBins steps of the smallest
			// double (e.g. [0, 4.9e-324]): one bin over it.
			h.Bins, h.Step = 1, hi-lo
		}
	}
	return h
}

// planQuantile plans a quantile: one histogram statistic and one
// exponential-mechanism selection per group. The utility of candidate c is
// −|rank(c) − q·n|, rank(c) = #{x < c} + #{x = c}/2 (counting bins), n the
// group's number of values. Adding or removing one row moves every utility
// by at most max(q, 1 − q) ≤ 1, so the selection's sensitivity is the
// bounding stage's Contribution.L1(1): RowsPerGroup rows in each of Groups
// groups.
func (p *Plan) planQuantile(ap *AggregatePlan, share float64) {
	col := p.Table.Column(ap.Aggregate.Column)
	h := newHistogram(col)
	p.Histograms = append(p.Histograms, h)
	// The main statement computes at least one statistic (it is not
	// released by this aggregate).
	p.statistic(Summand{Kind: NonNullCount, Column: col.Name})
	ap.Lower, ap.Upper = h.Lower, h.Upper
	ap.Releases = []int{p.rankRelease(len(p.Histograms)-1, share)}
}

// QuantileScores returns the utility of every candidate for quantile q
// given a group's bin counts: −|rank − q·n|.
func QuantileScores(counts []int64, bins int, q float64) []float64 {
	return rankScores(counts, bins, false, func(n int64) float64 { return q * float64(n) })
}

// rankScores returns −|rank(c) − target(n)| for every candidate c, n the
// group's number of values and rank(c) = #{x < c} + #{x = c}/2, counted
// from the top (#{x > c} + #{x = c}/2) when fromTop is set. One row moves
// every rank, and so every utility, by at most 1 (for a target q·n, by at
// most max(q, 1 − q)).
func rankScores(counts []int64, bins int, fromTop bool, target func(n int64) float64) []float64 {
	var n int64
	for _, c := range counts {
		n += c
	}
	t := target(n)
	scores := make([]float64, bins+1)
	var below int64
	for i := 0; i <= bins; i++ {
		var c int64
		if i < len(counts) {
			c = counts[i]
		}
		rank := float64(below) + float64(c)/2
		if fromTop {
			rank = float64(n-below-c) + float64(c)/2
		}
		scores[i] = -math.Abs(rank - t)
		below += c
	}
	return scores
}

// ExtremeConfidence is the probability with which MIN and MAX land within
// their stated rank range (see extremeRank).
const ExtremeConfidence = 0.95

// extremeRank is the rank r from the bottom (MIN) or the top (MAX) that
// MIN and MAX aim at. An exact minimum or maximum is never released: one
// person moves it anywhere in the declared range. The exponential
// mechanism over the histogram's candidates with utility −|rank − r| picks
// a value whose rank is within ±r of r with probability
// ExtremeConfidence, r being that accuracy bound plus one half: the
// released MIN lies, with that probability, between the smallest value and
// the value of rank 2r (MAX likewise from the top). r depends only on ε and the number of
// candidates, never on the data.
func (n *Noise) extremeRank(a AggregatePlan, h Histogram) float64 {
	// Half a value above the bound: a candidate whose rank interval
	// [#{x < c}, #{x ≤ c}] comes within the bound of r reaches 0.5, so at
	// least one value is at or below it (MIN; at or above it, MAX): with
	// probability ExtremeConfidence MIN is never below the true minimum,
	// nor MAX above the maximum.
	return n.Selects[a.Releases[0]].UtilityBound(h.Bins+1, 1-ExtremeConfidence) + 0.5
}

// extremeScores returns the utility of every candidate for MIN (extreme
// < 0, ranks counted from the bottom) or MAX (extreme > 0, from the top):
// minus the distance from r to the candidate's rank interval [#{x < c},
// #{x ≤ c}], zero when r lies in it. A candidate that many values equal
// (a tied minimum) thus scores as well as any, while an empty candidate
// beyond the extreme keeps the distance r: counting tied values as halves
// (rank #{x < c} + #{x = c}/2, as quantiles do) would put a tied minimum's
// rank at half its count, far from r, and release a value below the true
// minimum. One row moves each end of every interval by at most 1 and r
// not at all, so every utility moves by at most 1.
func extremeScores(counts []int64, bins int, extreme int, r float64) []float64 {
	scores := make([]float64, bins+1)
	var n int64
	for _, c := range counts {
		n += c
	}
	var below int64
	for i := 0; i <= bins; i++ {
		var c int64
		if i < len(counts) {
			c = counts[i]
		}
		lo, hi := float64(below), float64(below+c)
		if extreme > 0 {
			lo, hi = float64(n-below-c), float64(n-below)
		}
		switch {
		case r < lo:
			scores[i] = -(lo - r)
		case r > hi:
			scores[i] = -(r - hi)
		}
		below += c
	}
	return scores
}

// ReadHistogram adds the engine's rows for histogram h to ex.
func (p *Plan) ReadHistogram(ex *Exact, h int, rows *engine.Rows) error {
	nk := len(p.Query.GroupBy)
	if len(rows.Columns) != nk+2 {
		return fmt.Errorf("query: engine returned %d histogram columns, want %d", len(rows.Columns), nk+2)
	}
	bins := p.Histograms[h].Bins
	keys := p.Keys
	if p.Selection != nil {
		keys = ex.Keys
	}
	index := ir.KeyIndex(keys)
	for len(ex.Hist) < len(p.Histograms) {
		ex.Hist = append(ex.Hist, nil)
	}
	if ex.Hist[h] == nil {
		ex.Hist[h] = make([][]int64, len(keys))
	}
	for _, r := range rows.Rows {
		key := ir.ReadKey(r, nk)
		g, ok := index[ir.KeyID(key)]
		if !ok && p.Selection != nil {
			// The histogram's statement bounds each person on its own
			// (DuckDB and PostgreSQL choose the kept groups at random in
			// each statement): it may keep a group the main statement
			// dropped. Such a group has no count there, so key
			// selection never releases it; its rows are left out as
			// the selection would leave it out.
			continue
		}
		if !ok {
			return &ir.UnknownKeyError{Key: key}
		}
		b, err := ir.ToBig(r[nk])
		if err != nil || !b.IsInt64() || b.Int64() < 0 || b.Int64() > int64(bins) {
			return fmt.Errorf("query: histogram bin out of range")
		}
		c, err := ir.ToBig(r[nk+1])
		if err != nil || !c.IsInt64() {
			return fmt.Errorf("query: histogram count out of range")
		}
		if ex.Hist[h][g] == nil {
			ex.Hist[h][g] = make([]int64, bins+1)
		}
		ex.Hist[h][g][b.Int64()] += c.Int64()
		if st := p.Histograms[h].Stat; p.Histograms[h].Distinct && g < len(ex.Stats) && st < len(ex.Stats[g]) {
			ex.Stats[g][st].Add(ex.Stats[g][st], big.NewInt(c.Int64()))
		}
	}
	return nil
}

// OnlyHistograms reports whether every release selects a quantile from a
// histogram over public keys, so that the main statement's statistics are
// not needed.
func (p *Plan) OnlyHistograms() bool {
	if p.Selection != nil || p.TopK != nil || len(p.Histograms) == 0 {
		return false
	}
	for _, r := range p.Releases {
		// A quantile's rank selection, or a distinct count, reads only its
		// own statement.
		distinct := r.Kind == NoisyCount && p.Statistics[r.Stat].Summand.Kind == DistinctValues
		if r.Kind != RankSelect && !distinct {
			return false
		}
	}
	return true
}

// quantileAgg is percentile_cont, MEDIAN, MIN and MAX: a value chosen by
// the exponential mechanism on ranks over the public candidate grid of a
// histogram statement (planQuantile, Noise.quantile). Its interval is the
// declared range.
type quantileAgg struct{}

func init() { register(quantileAgg{}, ir.Quantile) }

func (quantileAgg) plan(p *Plan, ap *AggregatePlan, share float64) { p.planQuantile(ap, share) }

func (quantileAgg) release(n *Noise, ex *Exact, g int, a AggregatePlan, _ []float64, _ float64) (any, Interval, error) {
	v, err := n.quantile(ex, g, a)
	if err != nil {
		return nil, Interval{}, err
	}
	return v, Interval{a.Lower, a.Upper}, nil
}

func (quantileAgg) halfWidth(n *Noise, a AggregatePlan, confidence float64) (float64, string) {
	r := n.plan.Releases[a.Releases[0]]
	h := n.plan.Histograms[r.Histogram]
	if a.Aggregate.Extreme != 0 {
		rank := n.extremeRank(a, h)
		end, side := "smallest", "bottom"
		if a.Aggregate.Extreme > 0 {
			end, side = "largest", "top"
		}
		return 0, fmt.Sprintf("never the exact value: the exponential mechanism aims at the value of rank %s from the %s, so with probability %s the released value lies between the %s value and the value of rank %s from the %s, on a grid of %d candidates in [%s, %s]; the interval shown is the declared range",
			fmtG(rank), side, accounting.Num(ExtremeConfidence), end, fmtG(2*rank), side, h.Bins+1, n.plan.gridValue(a.Aggregate, h.Lower), n.plan.gridValue(a.Aggregate, h.Upper))
	}
	t := n.Selects[a.Releases[0]].UtilityBound(h.Bins+1, 1-confidence)
	return 0, fmt.Sprintf("the released value's rank is within ±%s of q·n (n values in the group) on a grid of %d candidates in [%s, %s]; the interval shown is the declared range",
		fmtG(t), h.Bins+1, n.plan.gridValue(a.Aggregate, h.Lower), n.plan.gridValue(a.Aggregate, h.Upper))
}

func (quantileAgg) selectingCount(ir.Aggregate, *ir.Table) (int, bool) { return 0, false }

func (quantileAgg) note(AggregatePlan) string { return "" }
