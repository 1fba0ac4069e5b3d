package mechanism

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"

	"github.com/dpstat/dpstat/noise"
	"github.com/dpstat/dpstat/random"
)

// selector holds what the exact selection samplers (the exponential
// mechanism and permute-and-flip) share: the grid onto which scores are
// rounded and the exact rational c with which a candidate i gets the weight
// exp(−c·k_i), k_i = round(u_max/g) − round(u_i/g) ∈ ℕ.
//
// Rounding moves each score by at most g/2, so the rounded scores in grid
// steps have sensitivity at most Δ/g + 1. Weights exp(c·round(u/g)) with
// c ≤ ε/(2(Δ/g + 1)) are therefore those of the exponential mechanism (or of
// permute-and-flip) with parameter at most ε; c is rounded down, so the
// sampler is never less private than stated.
type selector struct {
	eps, sens float64
	grid      noise.Grid
	c         float64 // c as a float, for accuracy statements
	cNum      uint64  // c = cNum/cDen exactly
	cDen      uint64
}

// newSelector validates ε and Δ and computes the grid and c.
func newSelector(what string, eps, sens float64) (selector, error) {
	if err := checkEpsilon(eps); err != nil {
		return selector{}, fmt.Errorf("%s: %w", what, err)
	}
	if err := checkSensitivity("sensitivity", sens); err != nil {
		return selector{}, fmt.Errorf("%s: %w", what, err)
	}
	exp := floorLog2(sens) - gridBits
	if exp < -1074 {
		exp = -1074
	}
	ratio := math.Ldexp(sens, -exp)
	c := roundDown(eps / (2 * (ratio + 1)))
	s := selector{eps: eps, sens: sens, grid: noise.Grid{Exp: exp}}
	switch {
	case c >= 1<<62:
		s.cNum, s.cDen = 1<<62, 1
	default:
		_, e := math.Frexp(c)
		d := 62 - e // c·2^d < 2^62
		if d < 0 {
			d = 0
		}
		if d > 62 {
			d = 62
		}
		s.cNum, s.cDen = uint64(math.Floor(math.Ldexp(c, d))), 1<<uint(d)
	}
	s.c = float64(s.cNum) / float64(s.cDen)
	return s, nil
}

// weights holds, for the candidates that can be chosen at all, their index
// and the exact exponent whole + frac/cDen of their weight exp(−c·k_i).
type weights struct {
	idx   []int
	whole []uint64
	frac  []uint64
}

// prepare validates the scores and computes the candidates' exponents.
// Candidates whose exponent is at least 257 are left out: BernoulliExp would
// reject them at its loop cap anyway (noise.ExpNeverTrue), so leaving them
// out changes nothing but time. The candidate with the largest rounded score
// has exponent 0 and is always kept.
func (s *selector) prepare(what string, scores []float64) (weights, error) {
	if len(scores) == 0 {
		return weights{}, fmt.Errorf("%s: no candidates: want at least one score", what)
	}
	r := make([]int64, len(scores))
	fits := true
	for i, u := range scores {
		if math.IsNaN(u) || math.IsInf(u, 0) {
			return weights{}, fmt.Errorf("%s: score[%d] = %v: want a finite number", what, i, u)
		}
		v, ok := s.grid.RoundInt64(u)
		if !ok {
			fits = false
		}
		r[i] = v
	}
	ks := make([]uint64, len(scores))
	if fits {
		max := r[0]
		for _, v := range r {
			if v > max {
				max = v
			}
		}
		for i, v := range r {
			ks[i] = uint64(max - v) // |v| ≤ 2^62, so the difference fits
		}
	} else {
		s.bigDiffs(scores, ks)
	}
	w := weights{idx: make([]int, 0, len(scores)), whole: make([]uint64, 0, len(scores)), frac: make([]uint64, 0, len(scores))}
	for i, k := range ks {
		hi, lo := bits.Mul64(s.cNum, k)
		if hi >= s.cDen {
			continue // exponent ≥ 2^64
		}
		q, rem := bits.Div64(hi, lo, s.cDen)
		if noise.ExpNeverTrue(q) {
			continue
		}
		w.idx = append(w.idx, i)
		w.whole = append(w.whole, q)
		w.frac = append(w.frac, rem)
	}
	return w, nil
}

// bigDiffs computes k_i = round(u_max/g) − round(u_i/g) with big integers,
// saturating at 2^63.
func (s *selector) bigDiffs(scores []float64, ks []uint64) {
	r := make([]*big.Int, len(scores))
	var max *big.Int
	for i, u := range scores {
		r[i], _ = s.grid.Round(u) // finite: checked by the caller
		if max == nil || r[i].Cmp(max) > 0 {
			max = r[i]
		}
	}
	d := new(big.Int)
	for i := range r {
		d.Sub(max, r[i])
		if d.IsUint64() && d.Uint64() <= 1<<63 {
			ks[i] = d.Uint64()
		} else {
			ks[i] = 1 << 63
		}
	}
}

// exponentialRounds returns the cap on the rejection rounds of the
// exponential-mechanism sampler for n candidates: each round accepts with
// probability at least 1/n (the best candidate has weight 1), so 80n rounds
// all fail with probability below e^-80 < 2^-115.
func exponentialRounds(n int) int { return 80 * n }

// sampleExponential draws a candidate with probability proportional to its
// weight exp(−c·k_i), exactly: propose a candidate uniformly, accept it with
// probability exp(−c·k_i). On the (cut-off) failure of every round it
// returns a uniformly random candidate among all n, independently of the
// scores.
func (s *selector) sampleExponential(src random.Source, w weights, n int) int {
	m := uint64(len(w.idx))
	rounds := exponentialRounds(len(w.idx))
	for i := 0; i < rounds; i++ {
		j := noise.UniformInt(src, m)
		if noise.BernoulliExpSplit(src, w.whole[j], w.frac[j], s.cDen) {
			return w.idx[j]
		}
	}
	return int(noise.UniformInt(src, uint64(n)))
}

// samplePermuteAndFlip runs permute-and-flip (McKenna & Sheldon 2020): visit
// the candidates in a uniformly random order and stop at the first one that
// passes a Bernoulli(exp(−c·k_i)) trial. The best candidate always passes,
// so at most n trials are made. Candidates left out by prepare would fail
// their trial anyway, so visiting only the others in random order gives the
// same distribution.
func (s *selector) samplePermuteAndFlip(src random.Source, w weights) int {
	m := len(w.idx)
	perm := make([]int32, m)
	for i := range perm {
		perm[i] = int32(i)
	}
	for i := 0; i < m; i++ {
		j := i + int(noise.UniformInt(src, uint64(m-i)))
		perm[i], perm[j] = perm[j], perm[i]
		c := perm[i]
		if noise.BernoulliExpSplit(src, w.whole[c], w.frac[c], s.cDen) {
			return w.idx[c]
		}
	}
	// Unreachable: the best candidate has exponent 0 and always passes.
	return w.idx[perm[m-1]]
}

// utilityBound returns the score loss t such that the selected candidate's
// score is at least the best score minus t, except with probability
// failure, for n candidates: (ln n + ln(1/failure))/c grid steps, plus one
// grid step for rounding the scores. With c = ε/(2(Δ + g)) this is
// (2(Δ + g)/ε)(ln n + ln(1/failure)) + g.
func (s *selector) utilityBound(n int, failure float64) float64 {
	if n < 1 || math.IsNaN(failure) || !(failure > 0 && failure < 1) {
		return math.NaN()
	}
	g := s.grid.Granularity()
	if n == 1 {
		return 0
	}
	if s.c == 0 {
		return math.Inf(1)
	}
	return roundUp((math.Log(float64(n))+math.Log(1/failure))/s.c*g) + g
}
