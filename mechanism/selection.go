package mechanism

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"sync"

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
	cDen      uint64  // a power of two, 2^cShift
	cShift    uint
	inv       float64 // 2^-Exp when it is a normal float64, else 0
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
	s.cShift = uint(bits.TrailingZeros64(s.cDen))
	s.c = float64(s.cNum) / float64(s.cDen)
	if -exp >= -1022 && -exp <= 1023 {
		s.inv = math.Ldexp(1, -exp)
	}
	return s, nil
}

// weights lists the candidates that can be chosen at all: idx[j] is the
// candidate index of the weight w[j] = exp(−c·k) = exp(−(Whole + Frac/cDen)).
type weights struct {
	idx []int32
	w   []noise.ExpWeight
	sc  *scratch // the pooled buffers behind idx and w
}

// roundScore returns round(u/g) when it fits in 62 bits. u·2^-Exp is exact
// whenever the product is a normal float64; a subnormal product is below
// 2^-1022 in magnitude and rounds to 0 either way, and an overflow fails the
// range check.
func (s *selector) roundScore(u float64) (int64, bool) {
	if s.inv == 0 {
		return s.grid.RoundInt64(u)
	}
	v := u * s.inv
	if v < 0x1p62 && v > -0x1p62 {
		return int64(math.Round(v)), true
	}
	return 0, false
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
	if len(scores) > math.MaxInt32 {
		return weights{}, fmt.Errorf("%s: %d candidates: want at most 2^31 − 1", what, len(scores))
	}
	// k is kept in w[i].Frac until the exponents are computed.
	sc := scratchPool.Get().(*scratch)
	if cap(sc.w) < len(scores) {
		sc.w = make([]noise.ExpWeight, len(scores))
		sc.idx = make([]int32, len(scores))
	}
	w, idx := sc.w[:len(scores)], sc.idx[:len(scores)]
	fits := true
	max := int64(math.MinInt64)
	for i, u := range scores {
		if u-u != 0 { // NaN or ±Inf
			scratchPool.Put(sc)
			return weights{}, fmt.Errorf("%s: score[%d] = %v: want a finite number", what, i, u)
		}
		v, ok := s.roundScore(u)
		if !ok {
			fits = false
		}
		if v > max {
			max = v
		}
		w[i].Frac = uint64(v) // the rounded score, for now
	}
	if !fits {
		s.bigDiffs(scores, w)
	}
	n := 0
	shift := s.cShift
	for i := range w {
		k := w[i].Frac
		if fits {
			// |v| ≤ 2^62, so max − v ≤ 2^63 is right modulo 2^64.
			k = uint64(max - int64(k))
		}
		hi, lo := bits.Mul64(s.cNum, k)
		// q = floor((hi·2^64 + lo)/2^shift), rem = lo mod 2^shift.
		if hi>>shift != 0 {
			continue // q ≥ 2^64
		}
		q := lo >> shift
		if shift > 0 {
			q |= hi << (64 - shift)
		}
		if noise.ExpNeverTrue(q) {
			continue
		}
		w[n] = noise.ExpWeight{Whole: uint32(q), Frac: lo & (s.cDen - 1)}
		idx[n] = int32(i)
		n++
	}
	return weights{idx: idx[:n], w: w[:n], sc: sc}, nil
}

// scratch holds the per-call buffers of prepare, reused through a pool so
// that a selection allocates nothing in the steady state.
type scratch struct {
	w   []noise.ExpWeight
	idx []int32
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// done returns the buffers of w to the pool; w must not be used afterwards.
func (w weights) done() {
	if w.sc != nil {
		scratchPool.Put(w.sc)
	}
}

// bigDiffs computes k_i = round(u_max/g) − round(u_i/g) with big integers,
// saturating at 2^63, into w[i].Frac.
func (s *selector) bigDiffs(scores []float64, w []noise.ExpWeight) {
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
			w[i].Frac = d.Uint64()
		} else {
			w[i].Frac = 1 << 63
		}
	}
}

// sampleExponential draws a candidate with probability proportional to its
// weight exp(−c·k_i) with noise.SampleExpWeighted (exact up to a
// statistical distance of 2n·2^-192). On a cut-off it returns a uniformly
// random candidate among all n, independently of the scores.
func (s *selector) sampleExponential(src random.Source, w weights, n int) int {
	if j, ok := noise.SampleExpWeighted(src, w.w, s.cDen); ok {
		return int(w.idx[j])
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
	// Fisher–Yates in place on the weights (they belong to this call).
	m := len(w.w)
	for i := 0; i < m; i++ {
		j := i + int(noise.UniformInt(src, uint64(m-i)))
		w.w[i], w.w[j] = w.w[j], w.w[i]
		w.idx[i], w.idx[j] = w.idx[j], w.idx[i]
		if noise.BernoulliExpSplit(src, uint64(w.w[i].Whole), w.w[i].Frac, s.cDen) {
			return int(w.idx[i])
		}
	}
	// Unreachable: the best candidate has exponent 0 and always passes.
	return int(w.idx[m-1])
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
