package synth

import (
	"fmt"
	"math"

	"github.com/dpstat/dpstat/mechanism"
	"github.com/dpstat/dpstat/noise"
	"github.com/dpstat/dpstat/random"
)

// Measurements are MST's noisy marginals: the only outputs of the release
// that read data. Everything computed from them is post-processing.
type Measurements struct {
	// One[j] holds the noisy counts of column j's values.
	One [][]float64
	// Tree lists the selected pairs of columns (indices into Plan.Attrs),
	// in the order the exponential mechanism chose them.
	Tree [][2]int
	// Two[e] holds the noisy counts of Tree[e]'s 2-way marginal, row-major:
	// Two[e][a·d_j + b] counts value a of column i with value b of column j.
	Two [][]float64
}

// marginal returns the exact counts of the columns idx (one or two).
func marginal(p *Plan, data *Data, idx ...int) []int64 {
	size := 1
	for _, j := range idx {
		size *= p.Attrs[j].Size()
	}
	out := make([]int64, size)
	for r, cells := range data.Cells {
		k := 0
		for _, j := range idx {
			k = k*p.Attrs[j].Size() + int(cells[j])
		}
		out[k] = satAdd(out[k], data.Counts[r])
	}
	return out
}

func satAdd(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxInt64
}

// Measure adds exact discrete Gaussian noise g to each count: the release
// is (c·2^Exp + Z)/2^Exp, formed exactly in integers and only then turned
// into a float (a function of the released integer, i.e. post-processing).
func (g Gauss) Measure(counts []int64, src random.Source) []float64 {
	// c·2^Exp must fit in 62 bits: larger counts (impossible in practice)
	// saturate, which depends on nothing but the count.
	limit := int64(1) << (62 - g.Exp)
	out := make([]float64, len(counts))
	for i, c := range counts {
		if c > limit {
			c = limit
		}
		z := noise.DiscreteGaussian(src, g.Steps)
		out[i] = math.Ldexp(float64(c<<g.Exp+z), -g.Exp)
	}
	return out
}

// Measure runs MST's three measuring steps on the bounded data: the
// 1-way marginals, the tree chosen by the exponential mechanism, and the
// 2-way marginals of its edges.
func (p *Plan) Measure(data *Data, src random.Source) (*Measurements, error) {
	m := &Measurements{}
	for j := range p.Attrs {
		m.One = append(m.One, p.One.Measure(marginal(p, data, j), src))
	}
	if p.Edges() == 0 {
		return m, nil
	}
	tree, err := p.selectTree(data, m.One, src)
	if err != nil {
		return nil, err
	}
	m.Tree = tree
	for _, e := range tree {
		m.Two = append(m.Two, p.Two.Measure(marginal(p, data, e[0], e[1]), src))
	}
	return m, nil
}

// selectTree chooses len(Attrs)−1 pairs forming a spanning tree, as MST
// does: each round, among the pairs joining two different components, the
// exponential mechanism picks one with score the L1 distance between the
// pair's true 2-way marginal and the one the noisy 1-way marginals predict
// under independence, minus (as AIM does) the expected L1 norm of the
// noise that measuring the pair will add. Adding or removing one person
// changes a true marginal by at most Sensitivity in L1, hence each score
// by at most that; the noise term is a constant.
func (p *Plan) selectTree(data *Data, one [][]float64, src random.Source) ([][2]int, error) {
	k := len(p.Attrs)
	probs := make([][]float64, k)
	total := estimateTotal(one, p.One.Sigma())
	for j := range p.Attrs {
		probs[j] = simplexProbs(one[j])
	}
	type pair struct {
		i, j  int
		score float64
	}
	var pairs []pair
	for i := 0; i < k; i++ {
		for j := i + 1; j < k; j++ {
			exact := marginal(p, data, i, j)
			dj := p.Attrs[j].Size()
			// AIM's correction (McKenna et al. 2022): a pair is worth
			// measuring by how much its error exceeds the noise its
			// measurement will add, sqrt(2/π)·σ per cell in expectation.
			// The shift does not depend on the data.
			penalty := math.Sqrt(2/math.Pi) * p.Two.Sigma() * float64(p.Attrs[i].Size()*dj)
			s := exactScore(exact, probs[i], probs[j], total, penalty)
			pairs = append(pairs, pair{i, j, s})
		}
	}
	em, err := mechanism.NewExponential(mechanism.ExponentialOptions{Epsilon: p.SelectEpsilon, Sensitivity: float64(p.Sensitivity), Source: src})
	if err != nil {
		return nil, fmt.Errorf("synth: tree selection: %w", err)
	}
	comp := make([]int, k)
	for i := range comp {
		comp[i] = i
	}
	var find func(int) int
	find = func(x int) int {
		for comp[x] != x {
			comp[x] = comp[comp[x]]
			x = comp[x]
		}
		return x
	}
	var tree [][2]int
	for len(tree) < k-1 {
		var cand []pair
		var scores []float64
		for _, pr := range pairs {
			if find(pr.i) != find(pr.j) {
				cand = append(cand, pr)
				scores = append(scores, pr.score)
			}
		}
		c, err := em.Select(scores)
		if err != nil {
			return nil, fmt.Errorf("synth: tree selection: %w", err)
		}
		tree = append(tree, [2]int{cand[c].i, cand[c].j})
		comp[find(cand[c].i)] = find(cand[c].j)
	}
	return tree, nil
}

// scoreBits: scores are computed exactly in integers, in units of
// 2^-scoreBits counts.
const scoreBits = 10

// scoreCap bounds every integer in the score (2^53 units), so that the
// result converts to a float exactly.
const scoreCap = int64(1) << 53

// exactScore returns Σ|exact − total·pa·pb| − penalty, computed so that
// the data enter only through integer arithmetic: the data-independent
// terms are rounded onto a grid of 2^-scoreBits, each count is clamped to
// 2^42 and the sum saturates at 2^53 grid units (clamping and saturating a
// sum of non-negative terms are 1-Lipschitz), so that adding or removing
// one person's rows changes the score by at most their L1 change,
// exactly, with no floating-point rounding in between. The float result
// is exact (an integer below 2^53 times a power of two).
func exactScore(exact []int64, pi, pj []float64, total, penalty float64) float64 {
	grid := func(x float64) int64 {
		y := math.Round(math.Ldexp(x, scoreBits))
		if !(y > 0) {
			return 0
		}
		if y >= float64(scoreCap) {
			return scoreCap
		}
		return int64(y)
	}
	dj := len(pj)
	var sum int64
	for a, pa := range pi {
		for b, pb := range pj {
			e := min(exact[a*dj+b], int64(1)<<42) << scoreBits
			c := grid(total * pa * pb)
			d := e - c
			if d < 0 {
				d = -d
			}
			sum = min(sum+d, scoreCap)
		}
	}
	return math.Ldexp(float64(sum-grid(penalty)), -scoreBits)
}

// estimateTotal is the inverse-variance weighted mean of the marginals'
// sums (each sum has variance cells·σ²); all measure one total.
func estimateTotal(ms [][]float64, sigma float64) float64 {
	num, den := 0.0, 0.0
	for _, m := range ms {
		s := 0.0
		for _, v := range m {
			s += v
		}
		w := 1 / (float64(len(m)) * sigma * sigma)
		num += w * s
		den += w
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// simplexProbs projects noisy counts onto the probability simplex after
// scaling them by their (positive part of the) sum.
func simplexProbs(counts []float64) []float64 {
	s := 0.0
	for _, v := range counts {
		s += v
	}
	return projectSimplex(counts, math.Max(s, 1))
}

// projectSimplex returns the Euclidean projection of v onto
// {x ≥ 0, Σx = total}, divided by total (so it sums to 1).
func projectSimplex(v []float64, total float64) []float64 {
	n := len(v)
	out := make([]float64, n)
	if n == 0 {
		return out
	}
	if total <= 0 || math.IsNaN(total) {
		for i := range out {
			out[i] = 1 / float64(n)
		}
		return out
	}
	// The projection is max(v_i − τ, 0) with τ such that the sum is
	// total; find τ by bisection (no sort, bounded steps).
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range v {
		lo = math.Min(lo, x)
		hi = math.Max(hi, x)
	}
	lo -= total / float64(n)
	sum := func(t float64) float64 {
		s := 0.0
		for _, x := range v {
			if x > t {
				s += x - t
			}
		}
		return s
	}
	for i := 0; i < 100; i++ {
		mid := (lo + hi) / 2
		if sum(mid) > total {
			lo = mid
		} else {
			hi = mid
		}
	}
	tau := (lo + hi) / 2
	s := 0.0
	for i, x := range v {
		if x > tau {
			out[i] = x - tau
			s += out[i]
		}
	}
	if s <= 0 {
		for i := range out {
			out[i] = 1 / float64(n)
		}
		return out
	}
	for i := range out {
		out[i] /= s
	}
	return out
}
