package query

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"testing"

	"github.com/dpstat/dpstat/internal/stattest"
)

// passPerson feeds one person's rows to b: per group g (0, 1, …) the
// values of vals[g], NaN standing for NULL.
func passPerson(t *testing.T, b *boundPass, u int64, vals [][]float64) {
	t.Helper()
	if err := b.start(u); err != nil {
		t.Fatal(err)
	}
	for g, vs := range vals {
		for _, v := range vs {
			p := b.pair(int32(g))
			b.pairN[p]++
			k := b.rowKey()
			if !math.IsNaN(v) {
				b.addFloat(p, 0, k, v)
			}
		}
	}
}

// TestBoundPassKeepsUniformly: the streaming pass's random choice, per
// pair and per person. One person with the values 1, 2, 4, 8 and a NULL
// in each of 4 groups, bounded to L0 = 2 groups and L∞ = 2 values: each
// of the 6 pairs of values of a kept group must be kept with probability
// 1/6 (their sums 3, 5, 9, 6, 10, 12 tell them apart), each of the 6
// pairs of groups with probability 1/6, never the NULL, and COUNT(*)
// counts 2 rows of the 5. With L∞ = 1 each of the 4 values is kept with
// probability 1/4. 6,000 persons per test from a fixed seed (the test is
// deterministic); the stated false-failure probability of each
// chi-square test, over seeds, is 1e-6.
func TestBoundPassKeepsUniformly(t *testing.T) {
	const n = 6000
	person := [][]float64{}
	for range 4 {
		person = append(person, []float64{1, math.NaN(), 2, 4, 8})
	}
	stats := []passStat{{kind: passRows}, {kind: passSum, col: 0}, {kind: passCount, col: 0}}
	for _, limit := range []int64{1, 2} {
		t.Run(fmt.Sprintf("L∞=%d", limit), func(t *testing.T) {
			var seed [32]byte
			seed[0] = byte(limit)
			sums := map[float64]int{3: 0, 5: 1, 9: 2, 6: 3, 10: 4, 12: 5}
			if limit == 1 {
				sums = map[float64]int{1: 0, 2: 1, 4: 2, 8: 3}
			}
			values := make([]int, len(sums))
			groupPairs := make([]int, 6)
			pairIndex := map[[2]int]int{{0, 1}: 0, {0, 2}: 1, {0, 3}: 2, {1, 2}: 3, {1, 3}: 4, {2, 3}: 5}
			for i := range n {
				seed[1], seed[2] = byte(i), byte(i>>8)
				b := newBoundPass(seed, limit, 2, stats, []bool{false})
				passPerson(t, b, 7, person)
				b.finish()
				var kept []int
				for g, ok := range b.seen {
					if !ok {
						continue
					}
					kept = append(kept, g)
					rows, sum, count := b.value(g, 0), b.value(g, 1), b.value(g, 2)
					j, found := sums[sum.(float64)]
					if rows != limit || count != limit || !found {
						t.Fatalf("group %d keeps %v rows, %v values summing to %v: want %d and a sum of %d of 1, 2, 4, 8", g, rows, count, sum, limit, limit)
					}
					values[j]++
				}
				if len(kept) != 2 {
					t.Fatalf("kept groups %v, want 2", kept)
				}
				groupPairs[pairIndex[[2]int{kept[0], kept[1]}]]++
			}
			probs := make([]float64, len(values))
			for i := range probs {
				probs[i] = 1 / float64(len(values))
			}
			stattest.ChiSquare(t, "kept values per pair", values, probs, 2*n, 1e-6)
			stattest.ChiSquare(t, "kept groups per person", groupPairs, []float64{1. / 6, 1. / 6, 1. / 6, 1. / 6, 1. / 6, 1. / 6}, n, 1e-6)
		})
	}
}

// TestBoundPassPersons: persons are flushed in turn, each bounded on its
// own rows (a person with at most L0 groups and L∞ rows keeps them all);
// a unit going back is errUnordered; integer sums never overflow.
func TestBoundPassPersons(t *testing.T) {
	stats := []passStat{{kind: passRows}, {kind: passUnits}, {kind: passSum, col: 0}}
	b := newBoundPass([32]byte{1}, 2, 2, stats, []bool{true})
	add := func(u int64, g int32, v int64) error {
		if err := b.start(u); err != nil {
			return err
		}
		p := b.pair(g)
		b.pairN[p]++
		b.addInt(p, 0, b.rowKey(), v)
		return nil
	}
	for _, r := range []struct {
		u int64
		g int32
		v int64
	}{{1, 0, math.MaxInt64}, {1, 0, math.MaxInt64}, {1, 1, 5}, {2, 0, math.MaxInt64}, {3, 1, -7}, {3, 1, -8}} {
		if err := add(r.u, r.g, r.v); err != nil {
			t.Fatal(err)
		}
	}
	if err := add(2, 0, 1); !errors.Is(err, errUnordered) {
		t.Fatalf("unit 2 after 3: %v, want errUnordered", err)
	}
	b.finish()
	want := new(big.Int).Mul(big.NewInt(math.MaxInt64), big.NewInt(3))
	if got := fmt.Sprint(b.value(0, 0), b.value(0, 1), b.value(0, 2)); got != fmt.Sprint(int64(3), int64(2), want) {
		t.Errorf("group 0: %s, want 3 rows, 2 persons, sum %v", got, want)
	}
	if got := fmt.Sprint(b.value(1, 0), b.value(1, 1), b.value(1, 2)); got != fmt.Sprint(int64(3), int64(2), int64(-10)) {
		t.Errorf("group 1: %s, want 3 rows, 2 persons, sum -10", got)
	}
	var x i128
	for range 3 {
		x.add(math.MinInt64)
	}
	x.add(math.MaxInt64)
	if got, want := fmt.Sprint(x.value()), new(big.Int).Add(new(big.Int).Mul(big.NewInt(math.MinInt64), big.NewInt(3)), big.NewInt(math.MaxInt64)).String(); got != want {
		t.Errorf("i128: %s, want %s", got, want)
	}
}
