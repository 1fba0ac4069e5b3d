package noise

import (
	"math/bits"

	"github.com/dpstat/dpstat/random"
)

// ExpWeight is the weight exp(−(Whole + Frac/den)) of one candidate, for a
// denominator den shared by all candidates; Frac < den.
type ExpWeight struct {
	// Whole is the integer part of the exponent. Candidates with Whole >
	// 256 have weight below e^-256 relative to the best and must be left
	// out by the caller (ExpNeverTrue).
	Whole uint32
	// Frac is the numerator of the fractional part Frac/den < 1.
	Frac uint64
}

// expWeightedRounds caps the restarts of SampleExpWeighted: each round
// accepts with probability at least e^-1, so 256 rounds all fail with
// probability below (1 − e^-1)^256 < 2^-169.
const expWeightedRounds = 256

// SampleExpWeighted returns an index i with probability proportional to
// exp(−(w[i].Whole + w[i].Frac/den)), and false on a cut-off (then the
// index is 0). At least one weight must have Whole = 0.
//
// It is rejection sampling from the envelope exp(−Whole): a level q is
// chosen with probability proportional to (number of candidates at level
// q)·⌊e^-q·2^192⌋, computed and sampled exactly with 256-bit integers, a
// candidate is chosen uniformly within the level, and it is kept with
// probability exp(−Frac/den) ≥ e^-1 (otherwise the round restarts). Using
// ⌊e^-q·2^192⌋ for e^-q changes each candidate's envelope weight by less
// than 2^-192 while the total is at least 1, so the output distribution is
// within statistical distance 2·len(w)·2^-192 of the exact one (part of
// SamplerDelta). Work: O(len(w)) to sort the candidates by level, then an
// expected e rounds of O(number of levels).
func SampleExpWeighted(src random.Source, w []ExpWeight, den uint64) (int, bool) {
	if len(w) == 0 || den == 0 {
		return 0, false
	}
	// Counting sort of the candidates by level.
	var count [expIntSteps + 2]uint32
	for _, c := range w {
		q := c.Whole
		if q > expIntSteps {
			q = expIntSteps + 1 // never chosen: weight 0 in the envelope
		}
		count[q]++
	}
	if count[0] == 0 {
		return 0, false
	}
	var start [expIntSteps + 2]uint32
	for q := 1; q < len(start); q++ {
		start[q] = start[q-1] + count[q-1]
	}
	order := make([]int32, len(w))
	next := start
	for i, c := range w {
		q := c.Whole
		if q > expIntSteps {
			q = expIntSteps + 1
		}
		order[next[q]] = int32(i)
		next[q]++
	}
	// Level weights c_q·⌊e^-q·2^192⌋ (level 0: c_0·2^192) and their total,
	// at most 2^31·2^192 < 2^256.
	var lw [expIntSteps + 1]u256
	var total u256
	for q := 0; q <= expIntSteps; q++ {
		if count[q] == 0 {
			continue
		}
		if q == 0 {
			lw[0] = u256{0, 0, 0, uint64(count[0])}
		} else {
			lw[q] = mulTable(&expTable[q], uint64(count[q]))
		}
		total = add256(total, lw[q])
	}
	for round := 0; round < expWeightedRounds; round++ {
		r, ok := uniformBelow256(src, total)
		if !ok {
			return 0, false
		}
		q := 0
		for ; q < expIntSteps; q++ {
			if count[q] == 0 {
				continue
			}
			if less256(r, lw[q]) {
				break
			}
			r = sub256(r, lw[q])
		}
		if count[q] == 0 {
			continue // unreachable: r < total lands in a non-empty level
		}
		i := order[start[q]+uint32(UniformInt(src, uint64(count[q])))]
		if bernoulliExpFrac(src, w[i].Frac, den) {
			return int(i), true
		}
	}
	return 0, false
}

// u256 is a 256-bit unsigned integer, least significant word first.
type u256 [4]uint64

// mulTable returns ⌊e^-q·2^192⌋·c for a table entry t (most significant
// word first) and c < 2^32.
func mulTable(t *[expWords]uint64, c uint64) u256 {
	var out u256
	var carry uint64
	for i := 0; i < expWords; i++ {
		hi, lo := bits.Mul64(t[expWords-1-i], c)
		var cc uint64
		lo, cc = bits.Add64(lo, carry, 0)
		out[i] = lo
		carry = hi + cc
	}
	out[3] = carry
	return out
}

func add256(a, b u256) u256 {
	var c uint64
	for i := range a {
		a[i], c = bits.Add64(a[i], b[i], c)
	}
	return a
}

func sub256(a, b u256) u256 {
	var c uint64
	for i := range a {
		a[i], c = bits.Sub64(a[i], b[i], c)
	}
	return a
}

func less256(a, b u256) bool {
	for i := 3; i >= 0; i-- {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// uniformBelow256 returns a uniform integer in [0, n), n > 0, by drawing
// as many bits as n has and rejecting values ≥ n (each try is rejected with
// probability below 1/2; all uniformTries tries with probability below
// 2^-256).
func uniformBelow256(src random.Source, n u256) (u256, bool) {
	top := 3
	for top > 0 && n[top] == 0 {
		top--
	}
	mask := ^uint64(0)
	if lz := bits.LeadingZeros64(n[top]); lz < 64 {
		mask >>= uint(lz)
	}
	for try := 0; try < uniformTries; try++ {
		var r u256
		for i := 0; i <= top; i++ {
			r[i] = src.Uint64()
		}
		r[top] &= mask
		if less256(r, n) {
			return r, true
		}
	}
	return u256{}, false
}
