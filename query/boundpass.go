package query

import (
	"errors"
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
)

// boundPass bounds each person's contribution while it reads the rows of
// one range of the privacy unit in the engine's order, person after person
// (the streaming form of a table declared clustered_by_unit, see
// streamRanges). For each person it holds only that person's (group,
// rows) pairs, in a small array; when the next person starts it keeps a
// uniform random subset of at most L0 of the person's groups and adds the
// kept pairs' bounded statistics to per-group sums. Nothing else is kept:
// its memory is the groups of the range and the largest person's pairs.
//
// The rows kept per pair are those the one-pass SQL form keeps
// (sqlgen's onePassPerUnit): every row draws one i.i.d. uniform 64-bit key
// from a ChaCha8 generator keyed from the service's secure source, shared
// by the row's values; a value column keeps, among the pair's non-NULL
// rows, the row with the smallest key (L∞ = 1), or the rows with the
// smallest and the largest key (L∞ = 2; all of them when there are at
// most 2). With distinct keys the keys' ranks are a uniform random
// permutation of the rows, so the first and the last are a uniform random
// 2-subset. Ties (probability at most m²/2⁶⁵ for a pair of m rows, below
// the 2⁻⁵³ resolution of the engine's random() that the SQL form uses)
// still keep two distinct rows: the smallest is the first of the tied rows
// and the largest the last. The kept groups are a partial Fisher–Yates
// shuffle of the person's pairs with unbiased draws (rand.IntN): exactly a
// uniform random subset of min(L0, pairs). Which rows and groups are kept
// depends only on the person's rows and the generator, never on other
// persons: the contribution bound holds whatever the data.
type boundPass struct {
	rng   *rand.Rand
	limit int64 // L∞: rows per (person, group)
	// groups is L0, the groups kept per person; 0 keeps every group.
	groups int
	stats  []passStat
	nv     int // value columns (accumulators per pair)
	isInt  []bool

	// The current person.
	open  bool
	cur   int64
	pairG []int32 // each pair's group
	pairN []int64 // each pair's rows
	acc   []valueAcc
	index map[int32]int32 // group → pair, once the person has many pairs
	perm  []int32

	// The range's groups.
	seen []bool
	gacc []groupAcc // len(seen) × len(stats)
}

// The kinds of statistic a boundPass adds per group.
const (
	passRows  = iota // COUNT(*): min(rows, L∞) per kept pair
	passUnits        // a count of persons: 1 per kept pair
	passCount        // a count of values: min(non-NULL values, L∞), NULL for none
	passSum          // a sum of the kept values, NULL for none
)

// passStat is one statistic of a boundPass: its kind and, for counts and
// sums of values, its value column.
type passStat struct {
	kind int
	col  int
}

// valueAcc is one value column of one (person, group) pair: its non-NULL
// rows and the values of the rows with the smallest and largest key.
type valueAcc struct {
	cnt        int64
	kmin, kmax uint64
	fmin, fmax float64
	imin, imax int64
}

// groupAcc is one statistic of one group: an exact integer (counts, sums
// of integers) or a sum of doubles (on their grid, as the SQL forms sum).
type groupAcc struct {
	i       i128
	f       float64
	nonNull bool
}

// errUnordered reports a stream whose unit goes back: a person's rows
// were not contiguous, and the range is read again with SQL.
var errUnordered = errors.New("the rows are not in the order of the privacy unit")

// newBoundPass starts a pass keeping limit rows per pair and groups
// groups per person (0: all), seeded with seed.
func newBoundPass(seed [32]byte, limit int64, groups int, stats []passStat, isInt []bool) *boundPass {
	return &boundPass{rng: rand.New(rand.NewChaCha8(seed)), limit: limit, groups: groups, stats: stats, nv: len(isInt), isInt: isInt}
}

// pair returns the current person's pair of group g, adding it if new.
func (b *boundPass) pair(g int32) int {
	if b.index != nil {
		if p, ok := b.index[g]; ok {
			return int(p)
		}
	} else {
		for p, pg := range b.pairG {
			if pg == g {
				return p
			}
		}
	}
	p := len(b.pairG)
	b.pairG = append(b.pairG, g)
	b.pairN = append(b.pairN, 0)
	for range b.nv {
		b.acc = append(b.acc, valueAcc{})
	}
	if b.index != nil {
		b.index[g] = int32(p)
	} else if p >= 16 {
		// Many groups: look them up in a map from now on.
		b.index = make(map[int32]int32, 2*p)
		for q, pg := range b.pairG {
			b.index[pg] = int32(q)
		}
	}
	return p
}

// start makes u the current person, flushing the previous one; a unit
// below the previous one is errUnordered.
func (b *boundPass) start(u int64) error {
	if b.open {
		if u == b.cur {
			return nil
		}
		if u < b.cur {
			return errUnordered
		}
		b.flush()
	}
	b.cur, b.open = u, true
	return nil
}

// rowKey draws a row's random key (only when some statistic reads values).
func (b *boundPass) rowKey() uint64 { return b.rng.Uint64() }

// addFloat records value v of column c for pair p, in a row with key k.
func (b *boundPass) addFloat(p, c int, k uint64, v float64) {
	a := &b.acc[p*b.nv+c]
	a.cnt++
	if a.cnt == 1 || k < a.kmin {
		a.kmin, a.fmin = k, v
	}
	if a.cnt == 1 || k >= a.kmax {
		a.kmax, a.fmax = k, v
	}
}

// addInt records integer value v of column c for pair p, in a row with key k.
func (b *boundPass) addInt(p, c int, k uint64, v int64) {
	a := &b.acc[p*b.nv+c]
	a.cnt++
	if a.cnt == 1 || k < a.kmin {
		a.kmin, a.imin = k, v
	}
	if a.cnt == 1 || k >= a.kmax {
		a.kmax, a.imax = k, v
	}
}

// flush adds the current person's kept pairs to their groups and forgets
// the person.
func (b *boundPass) flush() {
	np := len(b.pairG)
	kept := np
	b.perm = b.perm[:0]
	for p := range np {
		b.perm = append(b.perm, int32(p))
	}
	if b.groups > 0 && np > b.groups {
		kept = b.groups
		for i := range kept {
			j := i + b.rng.IntN(np-i)
			b.perm[i], b.perm[j] = b.perm[j], b.perm[i]
		}
	}
	ns := len(b.stats)
	for _, p := range b.perm[:kept] {
		g := int(b.pairG[p])
		for len(b.seen) <= g {
			b.seen = append(b.seen, false)
			b.gacc = append(b.gacc, make([]groupAcc, ns)...)
		}
		b.seen[g] = true
		for s, st := range b.stats {
			ga := &b.gacc[g*ns+s]
			switch st.kind {
			case passRows:
				ga.i.add(min(b.pairN[p], b.limit))
				ga.nonNull = true
			case passUnits:
				ga.i.add(1)
				ga.nonNull = true
			case passCount:
				if c := b.acc[int(p)*b.nv+st.col].cnt; c > 0 {
					ga.i.add(min(c, b.limit))
					ga.nonNull = true
				}
			case passSum:
				a := &b.acc[int(p)*b.nv+st.col]
				if a.cnt == 0 {
					continue
				}
				ga.nonNull = true
				two := a.cnt > 1 && b.limit > 1
				if b.isInt[st.col] {
					ga.i.add(a.imin)
					if two {
						ga.i.add(a.imax)
					}
				} else if two {
					ga.f += a.fmin + a.fmax
				} else {
					ga.f += a.fmin
				}
			}
		}
	}
	b.pairG, b.pairN, b.acc, b.index = b.pairG[:0], b.pairN[:0], b.acc[:0], nil
	b.open = false
}

// finish flushes the last person.
func (b *boundPass) finish() {
	if b.open {
		b.flush()
	}
}

// value is statistic s of group g as the SQL statement returns it: nil
// for a sum of no values, an int64 or *big.Int for exact integers, a
// float64 for sums of doubles.
func (b *boundPass) value(g, s int) any {
	ga := &b.gacc[g*len(b.stats)+s]
	if !ga.nonNull {
		return nil
	}
	st := b.stats[s]
	if st.kind == passSum && !b.isInt[st.col] {
		return ga.f
	}
	return ga.i.value()
}

// i128 is a signed 128-bit integer, two's complement: sums of int64
// values that never overflow.
type i128 struct {
	hi int64
	lo uint64
}

// add adds v.
func (x *i128) add(v int64) {
	var carry uint64
	x.lo, carry = bits.Add64(x.lo, uint64(v), 0)
	ext := int64(0)
	if v < 0 {
		ext = -1
	}
	x.hi += ext + int64(carry)
}

// value is x as an int64 when it fits, else as a *big.Int.
func (x i128) value() any {
	if (x.hi == 0 && x.lo <= math.MaxInt64) || (x.hi == -1 && x.lo > math.MaxInt64) {
		return int64(x.lo)
	}
	b := new(big.Int).SetInt64(x.hi)
	b.Lsh(b, 64)
	return b.Add(b, new(big.Int).SetUint64(x.lo))
}
