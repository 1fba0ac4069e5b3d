package query

import (
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/mechanism"
	"github.com/dpstat/dpstat/random"
)

// KeySelection chooses the released groups when a GROUP BY column has no
// public value list. For every key present in the data, the engine counts
// the distinct people with rows under it after each person has been
// bounded to Sensitivity keys (so one person changes at most Sensitivity
// counts, each by 1: L1 sensitivity Sensitivity). Go adds discrete Laplace
// noise of scale b ≥ Sensitivity/Epsilon and releases the keys whose noisy
// count is at least Threshold.
//
// The threshold is the smallest integer τ with
//
//	Sensitivity · P(Z ≥ τ − 1) = Sensitivity · a^(τ−1)/(1 + a) ≤ Delta,  a = exp(−1/b),
//
// the exact discrete-Laplace tail: a key that only one person has (count
// 1) is released with probability at most Delta/Sensitivity, and the at
// most Sensitivity keys one person can add are released together with
// probability at most Delta. On keys that both neighbouring tables have the
// noisy counts are an Epsilon-DP release, so the selection is
// (Epsilon, Delta)-DP. The released keys' aggregates then spend the rest of
// the query's ε; their noisy distinct counts are never released.
type KeySelection struct {
	// Columns are the GROUP BY columns without public value lists.
	Columns []string
	// Epsilon and Delta are the selection's share of the query's budget.
	Epsilon, Delta float64
	// Stat indexes Plan.Statistics: the per-key distinct-person count.
	Stat int
	// Sensitivity is how many keys one person (or protected group) can
	// count in.
	Sensitivity int64
	// MaxCount is the largest count a key that only one protected group
	// has can reach: 1, or the catalog's group_size.
	MaxCount int64
}

// selection is the calibrated key-selection stage of a Noise.
type selection struct {
	m         *mechanism.Geometric
	threshold int64
	// single is the probability that a key with one person is released.
	single float64
}

// newSelection calibrates the noise and threshold of a key selection.
func newSelection(ks *KeySelection, src random.Source) (*selection, accounting.Cost, error) {
	m, err := mechanism.NewGeometric(mechanism.GeometricOptions{Epsilon: ks.Epsilon, Sensitivity: ks.Sensitivity, Source: src})
	if err != nil {
		return nil, accounting.Cost{}, refuse("key selection: %v", err)
	}
	tau, single := selectionThreshold(m.Scale(), ks.Sensitivity, ks.Delta)
	// A key that only one protected group of MaxCount people has starts at
	// MaxCount instead of 1: the threshold moves up by MaxCount − 1.
	tau += max(ks.MaxCount, 1) - 1
	c := m.Cost()
	c.Delta = ks.Delta
	c.RhoDelta = ks.Delta
	return &selection{m: m, threshold: tau, single: single}, c, nil
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
	a := math.Exp(-1 / s.m.Scale())
	k := s.threshold - n
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
		key := readKey(r, nk)
		ks := keyID(key)
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

// selectKeys keeps the keys whose noisy distinct-person count reaches the
// threshold, sorted by key, with their statistics and histograms.
func (n *Noise) selectKeys(ex *Exact) *Exact {
	ks := n.plan.Selection
	out := &Exact{}
	var kept []int
	for g := range ex.Keys {
		if n.sel.m.Release(saturatedInt64(ex.Stats[g][ks.Stat])) >= n.sel.threshold {
			kept = append(kept, g)
		}
	}
	sort.SliceStable(kept, func(i, j int) bool {
		a, b := ex.Keys[kept[i]], ex.Keys[kept[j]]
		for c := range a {
			if d := compareKeys(a[c], b[c]); d != 0 {
				return d < 0
			}
		}
		return false
	})
	out.Hist = make([][][]int64, len(ex.Hist))
	for _, g := range kept {
		out.Keys = append(out.Keys, ex.Keys[g])
		out.Stats = append(out.Stats, ex.Stats[g])
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

// compareKeys orders key values, NULL first.
func compareKeys(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	return compareValues(a, b)
}

// describeSelection explains a key selection for EXPLAIN and notes.
func (n *Noise) describeSelection() string {
	ks := n.plan.Selection
	return fmt.Sprintf("DP key selection on %s (no public value list for %s): per key, the number of distinct people (each counted in at most %d key(s)) plus discrete Laplace noise of scale %.4g (ε=%g); keys with a noisy count ≥ %d are released. A key that only one person%s has is released with probability %.3g (≤ δ/%d), so the selection costs ε=%g, δ=%g",
		n.plan.Query.keyNames(), strings.Join(ks.Columns, ", "), ks.Sensitivity, n.sel.m.Scale(), ks.Epsilon,
		n.sel.threshold, groupWords(ks.MaxCount), n.sel.single, ks.Sensitivity, ks.Epsilon, ks.Delta)
}

func groupWords(k int64) string {
	if k > 1 {
		return fmt.Sprintf(" (or one protected group of %d people)", k)
	}
	return ""
}
