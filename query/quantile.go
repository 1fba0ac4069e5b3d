package query

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
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
func newHistogram(col *catalog.Column) Histogram {
	lo, hi := *col.Lower, *col.Upper
	h := Histogram{Column: col.Name, Lower: lo, Upper: hi}
	switch {
	case hi == lo:
		h.Bins, h.Step = 0, 1
	case (col.Type == catalog.Int || col.Type.Temporal()) && hi-lo <= QuantileBins:
		h.Bins, h.Step = int(hi-lo), 1
	default:
		h.Bins, h.Step = QuantileBins, (hi-lo)/QuantileBins
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
	ap.Releases = []int{p.release(RankSelect, len(p.Histograms)-1, -1, 1, share)}
}

// quantileScores returns the utility of every candidate for quantile q
// given a group's bin counts: −|rank − q·n|.
func quantileScores(counts []int64, bins int, q float64) []float64 {
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
	// Half a value above the bound: a rank of at least 0.5 (rank counts
	// values equal to the candidate as halves) is at or beyond the true
	// extreme, so with probability ExtremeConfidence MIN is never below
	// the true minimum, nor MAX above the maximum.
	return n.selects[a.Releases[0]].UtilityBound(h.Bins+1, 1-ExtremeConfidence) + 0.5
}

// extremeScores returns the utility of every candidate for MIN (extreme
// < 0: −|rank − r|, rank counted from the bottom) or MAX (extreme > 0:
// rank counted from the top). Like quantileScores, one row moves every
// utility by at most 1.
func extremeScores(counts []int64, bins int, extreme int, r float64) []float64 {
	return rankScores(counts, bins, extreme > 0, func(int64) float64 { return r })
}

// HistogramSQL generates the engine statement computing histogram h per
// group: columns k0, k1, …, then b (the bin) and c (its count). Rows are
// bounded as for the main statement (at most RowsPerGroup rows per person
// and group, at most Groups groups per person), with their own random
// choices.
func HistogramSQL(p *Plan, d engine.Dialect, h int) (string, error) {
	g := newSQLGen(d, p, CleanForm) // histograms read the view where NaN is NULL
	if err := g.checkJoins(); err != nil {
		return "", err
	}
	hist := p.Histograms[h]
	nk := len(p.Query.GroupBy)
	keys := make([]string, nk)
	var cols []string
	if p.Bounded {
		cols = append(cols, g.colRef(p.Table.PrivacyUnit)+" AS u")
	}
	for i, k := range p.Query.GroupBy {
		keys[i] = "k" + strconv.Itoa(i)
		e, err := g.keyExpr(k)
		if err != nil {
			return "", err
		}
		cols = append(cols, e+" AS "+keys[i])
	}
	col, err := g.column(hist.Column)
	if err != nil {
		return "", err
	}
	// The value each kept row adds: its bin, or for a distinct count the
	// value itself.
	value := col
	if !hist.Distinct {
		if value, err = g.bin(hist, col); err != nil {
			return "", err
		}
	}
	cols = append(cols, value+" AS b")
	sm, sampler := d.(engine.Sampler)
	if p.Bounded && sampler {
		cols = append(cols, d.Random()+" AS rk") // see below
	}
	conds, err := g.conditions()
	if err != nil {
		return "", err
	}
	conds = append(conds, col+" IS NOT NULL")
	source, err := g.fromClause(p.Table.Name)
	if err != nil {
		return "", err
	}
	rows := "SELECT " + strings.Join(cols, ", ") + " FROM " + source + " WHERE " + strings.Join(conds, " AND ")
	outKeys := strings.Join(append(append([]string{}, keys...), "b"), ", ")
	// final counts the kept rows per (group, bin), or the distinct values
	// per group.
	final := func(from string) string {
		if !hist.Distinct {
			return "SELECT " + outKeys + ", count(*) AS c FROM " + from + " GROUP BY " + outKeys
		}
		if _, nested := d.(engine.Nested); nested {
			// Such a dialect (ClickHouse) reads an alias anywhere in its
			// SELECT: 0 AS b would be counted instead of the column b (and
			// 0 is a UInt8, which reads as a bool).
			inner := strings.Join(append(append([]string{}, keys...), "count(DISTINCT b) AS c"), ", ")
			outer := strings.Join(append(append([]string{}, keys...), "CAST(0 AS "+d.TypeName(engine.Integer)+") AS b", "c"), ", ")
			grouped := ""
			if len(keys) > 0 {
				grouped = " GROUP BY " + strings.Join(keys, ", ")
			}
			return "SELECT " + outer + " FROM (SELECT " + inner + " FROM " + from + grouped + ") AS distinct_values"
		}
		list := strings.Join(append(append([]string{}, keys...), "0 AS b", "count(DISTINCT b) AS c"), ", ")
		if len(keys) == 0 {
			return "SELECT " + list + " FROM " + from
		}
		return "SELECT " + list + " FROM " + from + " GROUP BY " + strings.Join(keys, ", ")
	}
	st := g.newStages()
	if !p.Bounded {
		st.add("r", "", rows)
		return st.finish(final(st.from("r"))), nil
	}
	var b strings.Builder
	if sampler {
		// As the main statement: at most L∞ values per (person, group) by
		// the random key rk of each row, at most L0 groups per person below
		// a random threshold; then one row per kept value.
		b.WriteString("WITH r AS (" + rows + "),\n")
		unitKeys := strings.Join(append([]string{"u"}, keys...), ", ")
		list := strings.Join(append(append([]string{}, keys...), sm.SmallestN("b", "rk", p.Contribution.RowsPerGroup)+" AS bs"), ", ")
		from := g.keepGroups(&b, sm, list, "r GROUP BY "+unitKeys)
		kept := strings.Join(append(append([]string{}, keys...), sm.Unnest("bs")+" AS b"), ", ")
		b.WriteString(",\nkept AS (SELECT " + kept + " FROM " + from + ")")
		b.WriteString("\n" + final("kept"))
		return b.String(), nil
	}
	unitKeyList := append([]string{"u"}, keys...)
	unitKeys := strings.Join(unitKeyList, ", ")
	st.add("r", "", rows)
	st.add("r_bounded", "", g.keepRandom(st.from("r"), unitKeyList, append(append([]string{}, unitKeyList...), "b"), p.Contribution.RowsPerGroup))
	from := st.from("r_bounded")
	if lb, ok := d.(engine.LimitBy); ok && p.BoundGroups {
		// Each (person, group) collects its kept values into a list, at
		// most L0 of a person's groups are kept by the hash of the group,
		// and the list is unnested: the kept rows are read once.
		st.add("unit_groups_bounded", "", "SELECT "+unitKeys+", "+lb.Collect("b")+" AS bs FROM "+from+" GROUP BY "+unitKeys+" "+
			lb.KeepFirst(lb.RowKey(g.salt, unitKeyList), []string{"u"}, p.Contribution.Groups))
		st.add("kept", "", "SELECT "+strings.Join(append(append([]string{}, keys...), lb.Unnest("bs")+" AS b"), ", ")+" FROM "+st.from("unit_groups_bounded"))
		from = st.from("kept")
	} else if p.BoundGroups {
		st.add("unit_groups", "", "SELECT "+unitKeys+" FROM "+from+" GROUP BY "+unitKeys)
		st.add("unit_groups_bounded", "", g.keepRandom(st.from("unit_groups"), []string{"u"}, unitKeyList, p.Contribution.Groups))
		from = from + " JOIN " + st.from("unit_groups_bounded") + " USING (" + unitKeys + ")"
	}
	return st.finish(final(from)), nil
}

// bin spells the candidate bin of a histogram's column value.
func (g *sqlGen) bin(hist Histogram, col string) (string, error) {
	d := g.d
	lits := make([]string, 3)
	for i, v := range []float64{hist.Lower, hist.Upper, hist.Step} {
		l, err := engine.Literal(d, v)
		if err != nil {
			return "", err
		}
		lits[i] = l
	}
	// Total for every value the column can hold: the value is clamped to
	// the declared bounds (within ±2^53), so value − lower is finite, and
	// the bin is clamped into [0, Bins] before the cast.
	steps, err := engine.Divide(d, "("+g.clamp(col, lits[0], lits[1])+" - "+lits[0]+")", hist.Step)
	if err != nil {
		return "", err
	}
	return "CAST(" + g.clamp("floor("+steps+")", "0", strconv.Itoa(hist.Bins)) + " AS " + d.TypeName(engine.Integer32) + ")", nil
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
	index := keyIndex(keys)
	for len(ex.Hist) < len(p.Histograms) {
		ex.Hist = append(ex.Hist, nil)
	}
	if ex.Hist[h] == nil {
		ex.Hist[h] = make([][]int64, len(keys))
	}
	for _, r := range rows.Rows {
		key := readKey(r, nk)
		g, ok := index[keyID(key)]
		if !ok {
			return &UnknownKeyError{Key: key}
		}
		b, err := toBig(r[nk])
		if err != nil || !b.IsInt64() || b.Int64() < 0 || b.Int64() > int64(bins) {
			return fmt.Errorf("query: histogram bin out of range")
		}
		c, err := toBig(r[nk+1])
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

// onlyHistograms reports whether every release selects a quantile from a
// histogram over public keys, so that the main statement's statistics are
// not needed.
func (p *Plan) onlyHistograms() bool {
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
