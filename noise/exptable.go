package noise

import (
	"encoding/binary"
	"math/big"

	"github.com/dpstat/dpstat/random"
)

// expWords is the number of 64-bit words of e^-q kept per integer q.
const expWords = 3

// expTable[q] holds floor(e^-q · 2^192) as three words, most significant
// first, for q = 1 .. expIntSteps.
var expTable = buildExpTable()

// buildExpTable computes e^-1 by its alternating series to 512 bits, its
// powers by repeated multiplication, and takes the floors at 2^-192. The
// series' 3·150 roundings and its truncation (1/150! < 2^-800) leave a
// relative error below 2^-500 in e^-1, and each of the 256 multiplications
// adds at most 2^-512, so every power is within a relative 2^-490; the floor
// is taken from a lower and an upper bound at the wider relative distance
// 2^-480 and the two must agree (they do unless e^-q lies within 2^-480 of
// a multiple of 2^-192, which is checked here, not assumed). It takes well
// under a millisecond at start-up.
func buildExpTable() [expIntSteps + 1][expWords]uint64 {
	const prec = 512
	inv := new(big.Float).SetPrec(prec) // e^-1 = Σ (−1)^k / k!
	term := new(big.Float).SetPrec(prec).SetInt64(1)
	for k := int64(1); k < 150; k++ {
		if k%2 == 1 {
			inv.Add(inv, term)
		} else {
			inv.Sub(inv, term)
		}
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(k))
	}
	// Step k added or subtracted 1/(k−1)!, so inv = Σ_{j<149} (−1)^j/j!,
	// whose truncation error is below 1/149! < 2^-800.
	var t [expIntSteps + 1][expWords]uint64
	x := new(big.Float).SetPrec(prec).SetInt64(1)
	scale := new(big.Float).SetPrec(prec).SetMantExp(big.NewFloat(1), 64*expWords)
	rel := new(big.Float).SetPrec(prec).SetMantExp(big.NewFloat(1), -480)
	one := new(big.Float).SetPrec(prec).SetInt64(1)
	for q := 1; q <= expIntSteps; q++ {
		x.Mul(x, inv)
		lo := new(big.Float).SetPrec(prec).Mul(x, scale)
		hi := new(big.Float).SetPrec(prec).Set(lo)
		lo.Mul(lo, new(big.Float).SetPrec(prec).Sub(one, rel))
		hi.Mul(hi, new(big.Float).SetPrec(prec).Add(one, rel))
		li, _ := lo.Int(nil)
		hiI, _ := hi.Int(nil)
		if li.Cmp(hiI) != 0 {
			panic("noise: e^-q table: floor not determined; raise the precision")
		}
		var buf [8 * expWords]byte
		li.FillBytes(buf[:]) // e^-q < 1, so the floor fits in 192 bits
		for i := range t[q] {
			t[q][i] = binary.BigEndian.Uint64(buf[8*i:])
		}
	}
	return t
}

// bernoulliExpInt returns true with probability e^-q for an integer q: it
// compares a uniform binary fraction with floor(e^-q·2^192), one word at a
// time. A tie over all three words (probability 2^-192) is a cut-off and
// answers false; so does q > expIntSteps (exact probability below e^-256).
// It draws one word except with probability at most 2^-64.
func bernoulliExpInt(src random.Source, q uint64) bool {
	if q == 0 {
		return true
	}
	if q > expIntSteps {
		return false
	}
	w := &expTable[q]
	for i := 0; i < expWords; i++ {
		u := src.Uint64()
		if u != w[i] {
			return u < w[i]
		}
	}
	return false
}

// expFirst[v] is the first (most significant) word of expTable[v], kept
// apart for a cache-friendly search; expFirst[0] stands for e^0 = 1 and is
// never read.
var expFirst = func() (f [expIntSteps + 1]uint64) {
	for v := range f {
		f[v] = expTable[v][0]
	}
	return f
}()

// geometricE1 returns V with P(V = v) = (1 − e^-1)·e^-v, v ≥ 0, and ok =
// false on a cut-off. It locates a uniform binary fraction U among the
// values e^-v: V = max{v : U < e^-v}, so P(V ≥ v) = P(U < e^-v) = e^-v.
//
// The first word u0 of U decides every comparison except with an entry
// whose first word equals u0 (probability below 2^-56): V is the number of
// v ≥ 1 with expFirst[v] > u0, found by an eight-step binary search whose
// running time does not depend on V; only in the rare undecided case are
// two more words drawn and compared. Cut-offs: U equal to a table entry in
// all 192 bits (probability at most 2^-184) and V ≥ expIntSteps
// (probability e^-256).
func geometricE1(src random.Source) (v uint64, ok bool) {
	u0 := src.Uint64()
	// expFirst[1..256] is non-increasing; count the entries above u0.
	n := 0
	for step := (expIntSteps + 1) / 2; step > 0; step /= 2 {
		if expFirst[n+step] > u0 {
			n += step
		}
	}
	if n < expIntSteps && expFirst[n+1] == u0 {
		// Undecided for entries whose first word is u0: compare all words.
		u := [expWords]uint64{u0, src.Uint64(), src.Uint64()}
		for n < expIntSteps && expFirst[n+1] == u0 {
			switch cmpWords(&u, &expTable[n+1]) {
			case -1:
				n++
				continue
			case 0:
				return 0, false // tie in all 192 bits
			}
			break
		}
	}
	if n >= expIntSteps {
		return 0, false
	}
	return uint64(n), true
}

// cmpWords compares two 192-bit fractions, most significant word first.
func cmpWords(a, b *[expWords]uint64) int {
	for i := 0; i < expWords; i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}
