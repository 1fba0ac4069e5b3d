package dpplan

import (
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/mechanism"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/random"
)

// KeySelection chooses the released groups when a GROUP BY column has no
// public value list. It works in one of two ways.
//
// By the query's count (Release ≥ 0), when an aggregate is COUNT(*),
// COUNT(col), AVG(col) (its count) or COUNT(DISTINCT unit) and the query is
// not a most-common-values query: that count's own noisy value, discrete
// Laplace of scale b = Δ1/ε_c with Δ1 = L0·Linf its L1 sensitivity (L0
// keys per person, Linf rows per key; COUNT(DISTINCT unit) has Linf = 1),
// decides whether a key is released (noisy count ≥ Threshold) and is the
// released count, so the count's whole share of ε buys accuracy and no ε
// is set aside for the selection.
//
// By a separate noisy count (Release = −1) otherwise (only SUM, quantiles,
// variances, or a most-common-values query): for every key the
// engine counts the distinct people with rows under it after each person
// has been bounded to L0 keys (so one person changes at most L0 counts,
// each by 1: L1 sensitivity L0); Go adds discrete Laplace noise of scale
// b ≥ L0/Epsilon and releases the keys whose noisy count reaches
// Threshold. This spends half of the query's ε; the aggregates share the
// other half, and the noisy distinct counts are never released.
//
// The threshold. One person (or one protected group of group_size people)
// has rows under at most Sensitivity keys, and a key that only they have
// has a count of at most MaxCount (Linf, or 1 for distinct people; without
// a privacy unit the engine counts rows, and a row that the joins turn into
// m rows counts m under one key; times group_size). τ is the smallest
// integer with
//
//	Sensitivity · P(Z ≥ τ − MaxCount) ≤ Delta,  P(Z ≥ k) = a^k/(1 + a) for k ≥ 1,  a = exp(−1/b),
//
// the exact discrete-Laplace tail, so the event B that any key only that
// person has is released has probability p ≤ Delta.
//
// The proof. Let D = D' plus one person's rows, K' the keys of D' and N the
// at most Sensitivity keys only D has. Outside B, M(D) is a function g of
// the noisy statistics of the keys in K' (noise is drawn independently per
// key), and on K' those statistics are an ε-DP release (ε the query's:
// the person changes the counts of K' by at most Δ1 in all). For any set S
// of outputs: P[M(D) ∈ S] ≤ P[g(D) ∈ S] + p ≤ e^ε·P[M(D') ∈ S] + Delta.
// Conversely, with x = P[g(D) ∈ S], P[M(D) ∈ S] ≥ x·(1 − p) and
// P[M(D') ∈ S] ≤ min(1, e^ε·x): if e^ε·x ≤ 1 this is at most
// e^ε·x·(1 − p) + p ≤ e^ε·P[M(D) ∈ S] + Delta, and if e^ε·x > 1 then
// e^ε·P[M(D) ∈ S] + Delta ≥ (1 − p) + p = 1. The query is (ε, Delta)-DP
// in both directions, and it is charged exactly (ε, Delta).
type KeySelection struct {
	// Columns are the GROUP BY columns without public value lists.
	Columns []string
	// Epsilon is the ε of the noisy count that selects: half of the
	// query's for a separate count, the count aggregate's share when
	// Release ≥ 0 (then already part of the aggregates' ε, not extra).
	// Delta is all of the query's δ.
	Epsilon, Delta float64
	// Release indexes Plan.Releases: the noisy count that both selects and
	// is released; −1 for a separate distinct-person count.
	Release int
	// Aggregate indexes Plan.Aggregates: the aggregate whose count selects
	// (when Release ≥ 0).
	Aggregate int
	// Stat indexes Plan.Statistics: the per-key count that selects.
	Stat int
	// Sensitivity is how many keys one person (or protected group) can
	// count in.
	Sensitivity int64
	// MaxCount is the largest count a key that only one person (or
	// protected group) has can reach.
	MaxCount int64
}

// selectingCount reports whether aggregate a has a noisy count that can
// select keys, and the index of that count among a's releases: COUNT(*),
// COUNT(col) and AVG(col)'s count (a key only one person has counts at
// most L∞ of their rows), and COUNT(DISTINCT) of the privacy unit (of any
// column when each row is one person: at most 1).
func selectingCount(a ir.Aggregate, table *ir.Table) (int, bool) {
	agg, err := aggregatorOf(a)
	if err != nil {
		return 0, false
	}
	return agg.selectingCount(a, table)
}

// countSelects reports whether the query has an aggregate whose noisy count
// can select the keys (see KeySelection and selectingCount), outside a
// most-common-values query.
func countSelects(q *ir.Query, table *ir.Table) bool {
	if q.TopK > 0 {
		return false
	}
	for _, a := range q.Aggregates() {
		if _, ok := selectingCount(a, table); ok {
			return true
		}
	}
	return false
}

// selectByCount completes a key selection by one of the query's counts:
// of the aggregates' selecting counts, the one with the least noise, then
// the lowest threshold, then the first.
func (p *Plan) selectByCount() {
	ks := p.Selection
	if ks == nil || !countSelects(p.Query, p.Table) {
		return
	}
	bestScale, bestMax := math.Inf(1), int64(math.MaxInt64)
	for j, ap := range p.Aggregates {
		k, ok := ap.agg.selectingCount(ap.Aggregate, p.Table)
		if !ok {
			continue
		}
		r := ap.Releases[k]
		maxCount := p.Contribution.KeyCount(p.Statistics[p.Releases[r].Stat].Summand.Kind)
		// The least noise wins, then the lowest threshold.
		scale := p.Releases[r].Sensitivity / p.Releases[r].Epsilon
		if scale < bestScale || scale == bestScale && maxCount < bestMax {
			bestScale, bestMax = scale, maxCount
			ks.Release, ks.Aggregate = r, j
			ks.Stat = p.Releases[r].Stat
			ks.Epsilon = p.Releases[r].Epsilon
			ks.MaxCount = maxCount
		}
	}
	ks.Sensitivity = p.Contribution.GroupsTouched()
}

// selection is the calibrated key-selection stage of a Noise.
type selection struct {
	M         countMechanism
	Threshold int64
	// single is the probability that a key only one person (or protected
	// group) has is released.
	Single float64
}

// newSelection calibrates the noise and threshold of a key selection.
// counts holds the calibrated count releases: a selection by the query's
// count uses that count's mechanism, and costs only its δ (the ε is the
// count's, already accounted).
func newSelection(ks *KeySelection, counts map[int]countMechanism, src random.Source) (*selection, accounting.Cost, error) {
	var m countMechanism
	var c accounting.Cost
	if ks.Release >= 0 {
		m = counts[ks.Release]
		if m == nil {
			return nil, accounting.Cost{}, fmt.Errorf("query: key selection by release %d, which is not a count", ks.Release)
		}
	} else {
		g, err := mechanism.NewGeometric(mechanism.GeometricOptions{Epsilon: ks.Epsilon, Sensitivity: ks.Sensitivity, Source: src})
		if err != nil {
			return nil, accounting.Cost{}, ir.Refuse("key selection: %v", err)
		}
		m = g
		c = g.Cost()
	}
	tau, single := selectionThreshold(m.Scale(), ks.Sensitivity, ks.Delta)
	// A key that only one person or protected group has starts at most at
	// MaxCount instead of 1: the threshold moves up by MaxCount − 1.
	tau += max(ks.MaxCount, 1) - 1
	c.Delta = ks.Delta
	c.RhoDelta = ks.Delta
	return &selection{M: m, Threshold: tau, Single: single}, c, nil
}

// selectionThreshold returns the smallest τ ≥ 1 with
// l0·a^(τ−1)/(1+a) ≤ delta for discrete Laplace noise of scale b
// (a = exp(−1/b)), and the release probability a^(τ−1)/(1+a) of a key with
// one person.
func selectionThreshold(b float64, l0 int64, delta float64) (int64, float64) {
	a := math.Exp(-1 / b)
	// ln P(Z ≥ k) = k·ln a − ln(1 + a) for k ≥ 1; P(Z ≥ 0) = 1/(1+a).
	tail := func(k int64) float64 {
		if k <= 0 {
			return 1 - (a/(1+a))*math.Pow(a, float64(-k)) // P(Z ≥ k) = 1 − P(Z ≤ k − 1)
		}
		return math.Exp(float64(k)*math.Log(a) - math.Log1p(a))
	}
	k := int64(math.Ceil(b * math.Log(float64(l0)/((1+a)*delta))))
	if k < 0 {
		k = 0
	}
	for float64(l0)*tail(k) > delta {
		k++
	}
	// Step down while the smaller threshold still meets the bound (the
	// formula may round up by one).
	for k > 0 && float64(l0)*tail(k-1) <= delta {
		k--
	}
	return k + 1, tail(k)
}

// ReleaseProbability is the probability that a key with n distinct people
// (after bounding) is released: P(n + Z ≥ τ).
func (s *selection) ReleaseProbability(n int64) float64 {
	a := math.Exp(-1 / s.M.Scale())
	k := s.Threshold - n
	if k <= 0 {
		// 1 − P(Z ≤ k − 1) = 1 − a^(1−k)/(1+a)
		return 1 - math.Pow(a, float64(1-k))/(1+a)
	}
	return math.Pow(a, float64(k)) / (1 + a)
}

// readSelectedKeys reads the engine's rows in key-selection mode: every
// key the data has is a candidate.
func (p *Plan) readSelectedKeys(rows *engine.Rows, f Form) (*Exact, error) {
	nk := len(p.Query.GroupBy)
	ex := &Exact{}
	index := map[string]int{}
	for _, r := range rows.Rows {
		key := ir.ReadKey(r, nk)
		ks := ir.KeyID(key)
		g, ok := index[ks]
		if !ok {
			g = len(ex.Keys)
			index[ks] = g
			ex.Keys = append(ex.Keys, key)
			stats := make([]*big.Int, len(p.Statistics))
			for j := range stats {
				stats[j] = new(big.Int)
			}
			ex.Stats = append(ex.Stats, stats)
		}
		for j := range p.Statistics {
			v, err := p.statValue(j, r[nk+j], f)
			if err != nil {
				return nil, err
			}
			ex.Stats[g][j].Add(ex.Stats[g][j], v)
		}
	}
	return ex, nil
}

// SelectKeys keeps the keys whose noisy count reaches the threshold, sorted
// by key, with their statistics and histograms; in a selection by the
// query's count it keeps their noisy counts too (Exact.Selected).
func (n *Noise) SelectKeys(ex *Exact) *Exact {
	ks := n.plan.Selection
	out := &Exact{}
	var kept []int
	noisy := make([]int64, len(ex.Keys))
	for g := range ex.Keys {
		noisy[g] = n.Sel.M.Release(saturatedInt64(ex.Stats[g][ks.Stat]))
		if noisy[g] >= n.Sel.Threshold {
			kept = append(kept, g)
		}
	}
	sort.SliceStable(kept, func(i, j int) bool {
		a, b := ex.Keys[kept[i]], ex.Keys[kept[j]]
		for c := range a {
			if d := ir.CompareKeys(a[c], b[c]); d != 0 {
				return d < 0
			}
		}
		return false
	})
	out.Hist = make([][][]int64, len(ex.Hist))
	for _, g := range kept {
		out.Keys = append(out.Keys, ex.Keys[g])
		out.Stats = append(out.Stats, ex.Stats[g])
		if ks.Release >= 0 {
			// The count that selected the key is the count released.
			out.Selected = append(out.Selected, noisy[g])
		}
		for h := range ex.Hist {
			var c []int64
			if ex.Hist[h] != nil {
				c = ex.Hist[h][g]
			}
			out.Hist[h] = append(out.Hist[h], c)
		}
	}
	return out
}

// DescribeSelection explains a key selection for EXPLAIN and notes.
func (n *Noise) DescribeSelection() string {
	ks := n.plan.Selection
	if ks.Release >= 0 {
		a := n.plan.Aggregates[ks.Aggregate].Aggregate
		what := a.String()
		if a.Func == ir.Avg {
			what = "the count of " + what
		}
		return fmt.Sprintf("DP key selection on %s (no public value list for %s) by the query's own count: per key, %s plus discrete Laplace noise of scale %s (its ε=%s) is both the selection and the released count; keys with a noisy count ≥ %d are released, so all of ε buys accuracy. One person%s has rows under at most %d key(s), and a key only they have counts at most %d, so it is released with probability %.3g (≤ δ/%d): the selection adds δ=%s and no ε",
			n.plan.Query.KeyNames(), strings.Join(ks.Columns, ", "), what, fmtG(n.Sel.M.Scale()), fmtG(ks.Epsilon),
			n.Sel.Threshold, groupWords(n.plan.Contribution.People()), ks.Sensitivity, max(ks.MaxCount, 1), n.Sel.Single, ks.Sensitivity, accounting.Num(ks.Delta))
	}
	what := fmt.Sprintf("the number of distinct people (each counted in at most %d key(s))", ks.Sensitivity)
	if people := n.plan.Contribution.People(); ks.MaxCount > people {
		// Without a privacy unit, rows are counted, and the joins turn one
		// row into several.
		what = fmt.Sprintf("the number of rows (each row is a person, and the joins turn it into at most %d rows under one key, in at most %d key(s))", ks.MaxCount/people, ks.Sensitivity)
	}
	return fmt.Sprintf("DP key selection on %s (no public value list for %s; no aggregate has a count to select with, so it is a separate noisy count): per key, %s plus discrete Laplace noise of scale %s (ε=%s); keys with a noisy count ≥ %d are released. A key that only one person%s has counts at most %d and is released with probability %.3g (≤ δ/%d), so the selection costs ε=%s, δ=%s",
		n.plan.Query.KeyNames(), strings.Join(ks.Columns, ", "), what, fmtG(n.Sel.M.Scale()), fmtG(ks.Epsilon),
		n.Sel.Threshold, groupWords(n.plan.Contribution.People()), max(ks.MaxCount, 1), n.Sel.Single, ks.Sensitivity, accounting.Num(ks.Epsilon), accounting.Num(ks.Delta))
}

func groupWords(k int64) string {
	if k > 1 {
		return fmt.Sprintf(" (or one protected group of %d people)", k)
	}
	return ""
}

// KeyThreshold is the threshold of a key selection with discrete Laplace
// noise of scale b: the smallest integer τ with
// keys·P(Z ≥ τ − maxCount) ≤ delta, where one person has rows under at
// most keys keys and a key only they have counts at most maxCount (see
// KeySelection). It also returns the probability that such a key is
// released. keys and maxCount below 1 count as 1.
func KeyThreshold(b float64, keys, maxCount int64, delta float64) (int64, float64) {
	tau, single := selectionThreshold(b, max(keys, 1), delta)
	return tau + max(maxCount, 1) - 1, single
}
