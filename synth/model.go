package synth

import (
	"math"

	"github.com/dpstat/dpstat/noise"
	"github.com/dpstat/dpstat/random"
	"github.com/dpstat/dpstat/schema"
)

// Model is a tree graphical model (a forest when some columns are not
// joined) fitted to the noisy marginals: a distribution for each root and
// the distribution of each other column given its parent.
type Model struct {
	// Attrs are the plan's columns.
	Attrs []*Attr
	// N is the DP estimate of the number of rows, from every measurement.
	N float64
	// Marg[j] is column j's fitted distribution (non-negative, sums to 1).
	Marg [][]float64
	// Parent[j] is column j's parent in the tree, or −1 for a root.
	Parent []int
	// Order lists the columns parents first.
	Order []int
	// Cond[j], for a column with a parent q, is row-major d_q × d_j: the
	// distribution of j given each value of q (each row sums to 1).
	Cond [][]float64
}

// ipfRounds bounds the iterative proportional fitting of each edge.
const ipfRounds = 200

// Fit fits the tree model to the measurements, following the ideas of
// Private-PGM (McKenna, Sheldon & Miklau 2019) specialised to a tree,
// where the fit decomposes into the cliques:
//
//   - the table's size is the inverse-variance weighted mean of every
//     measured marginal's sum;
//   - each column's distribution combines its noisy 1-way marginal with
//     the margins of the noisy 2-way marginals it takes part in (inverse
//     variance weights per cell), projected onto the simplex;
//   - each edge's noisy 2-way marginal is projected onto the simplex and
//     then fitted (iterative proportional fitting) to the two columns'
//     distributions, so that the model's 1-way margins agree everywhere.
//
// It reads only the measurements: post-processing.
func Fit(p *Plan, m *Measurements) *Model {
	k := len(p.Attrs)
	s1, s2 := p.One.Sigma(), p.Two.Sigma()
	// The total.
	num, den := 0.0, 0.0
	add := func(v []float64, sigma float64) {
		s := 0.0
		for _, x := range v {
			s += x
		}
		w := 1 / (float64(len(v)) * sigma * sigma)
		num += w * s
		den += w
	}
	for _, v := range m.One {
		add(v, s1)
	}
	for _, v := range m.Two {
		add(v, s2)
	}
	total := 0.0
	if den > 0 {
		total = num / den
	}
	md := &Model{Attrs: p.Attrs, N: total, Marg: make([][]float64, k), Parent: make([]int, k), Cond: make([][]float64, k)}
	// Each column's distribution.
	for j, a := range p.Attrs {
		d := a.Size()
		w1 := 1 / (s1 * s1)
		sum := make([]float64, d)
		wsum := make([]float64, d)
		for b := 0; b < d; b++ {
			sum[b] = w1 * m.One[j][b]
			wsum[b] = w1
		}
		for e, pr := range m.Tree {
			if pr[0] != j && pr[1] != j {
				continue
			}
			di, dj := p.Attrs[pr[0]].Size(), p.Attrs[pr[1]].Size()
			other := dj
			if pr[1] == j {
				other = di
			}
			w := 1 / (float64(other) * s2 * s2)
			for a2 := 0; a2 < di; a2++ {
				for b2 := 0; b2 < dj; b2++ {
					v := m.Two[e][a2*dj+b2]
					c := a2
					if pr[1] == j {
						c = b2
					}
					sum[c] += w * v
				}
			}
			for c := 0; c < d; c++ {
				wsum[c] += w
			}
		}
		for b := range sum {
			sum[b] /= wsum[b]
		}
		md.Marg[j] = projectSimplex(sum, math.Max(total, 1))
	}
	// Each edge's joint, consistent with the columns' distributions.
	joints := make([][]float64, len(m.Tree))
	for e, pr := range m.Tree {
		di, dj := p.Attrs[pr[0]].Size(), p.Attrs[pr[1]].Size()
		joints[e] = fitJoint(m.Two[e], md.Marg[pr[0]], md.Marg[pr[1]], di, dj, total)
	}
	// Orient the forest: roots first, breadth first.
	adj := make([][]int, k) // edge indices
	for e, pr := range m.Tree {
		adj[pr[0]] = append(adj[pr[0]], e)
		adj[pr[1]] = append(adj[pr[1]], e)
	}
	seen := make([]bool, k)
	for r := 0; r < k; r++ {
		if seen[r] {
			continue
		}
		seen[r] = true
		md.Parent[r] = -1
		queue := []int{r}
		for len(queue) > 0 {
			q := queue[0]
			queue = queue[1:]
			md.Order = append(md.Order, q)
			for _, e := range adj[q] {
				pr := m.Tree[e]
				c := pr[0] + pr[1] - q
				if seen[c] {
					continue
				}
				seen[c] = true
				md.Parent[c] = q
				md.Cond[c] = conditional(joints[e], p.Attrs[pr[0]].Size(), p.Attrs[pr[1]].Size(), pr[0] == q, md.Marg[c])
				// The model is the root's distribution and the
				// conditionals: the child's distribution is what they
				// imply (equal to the fitted one once the fitting has
				// converged), so that the model's margins agree exactly.
				dc := p.Attrs[c].Size()
				implied := make([]float64, dc)
				for a, pa := range md.Marg[q] {
					for b := 0; b < dc; b++ {
						implied[b] += pa * md.Cond[c][a*dc+b]
					}
				}
				md.Marg[c] = implied
				queue = append(queue, c)
			}
		}
	}
	return md
}

// fitJoint projects a noisy di × dj table onto the simplex, smooths it
// slightly (so that every cell can carry mass), and fits its margins to
// pi and pj by iterative proportional fitting.
func fitJoint(noisy, pi, pj []float64, di, dj int, total float64) []float64 {
	t := projectSimplex(noisy, math.Max(total, 1))
	floor := 1e-6 / float64(len(t))
	for c := range t {
		t[c] += floor
	}
	for round := 0; round < ipfRounds; round++ {
		worst := 0.0
		for a := 0; a < di; a++ {
			s := 0.0
			for b := 0; b < dj; b++ {
				s += t[a*dj+b]
			}
			worst = math.Max(worst, math.Abs(s-pi[a]))
			f := 0.0
			if s > 0 {
				f = pi[a] / s
			}
			for b := 0; b < dj; b++ {
				t[a*dj+b] *= f
			}
		}
		for b := 0; b < dj; b++ {
			s := 0.0
			for a := 0; a < di; a++ {
				s += t[a*dj+b]
			}
			worst = math.Max(worst, math.Abs(s-pj[b]))
			f := 0.0
			if s > 0 {
				f = pj[b] / s
			}
			for a := 0; a < di; a++ {
				t[a*dj+b] *= f
			}
		}
		if worst < 1e-12 {
			break
		}
	}
	return t
}

// conditional returns the distribution of the child given the parent from
// a joint; parentFirst says whether the parent indexes the joint's rows.
// A parent value with no mass gets the child's own distribution.
func conditional(joint []float64, di, dj int, parentFirst bool, child []float64) []float64 {
	dp, dc := di, dj
	if !parentFirst {
		dp, dc = dj, di
	}
	out := make([]float64, dp*dc)
	for a := 0; a < dp; a++ {
		s := 0.0
		for b := 0; b < dc; b++ {
			var v float64
			if parentFirst {
				v = joint[a*dj+b]
			} else {
				v = joint[b*dj+a]
			}
			out[a*dc+b] = v
			s += v
		}
		for b := 0; b < dc; b++ {
			if s > 0 {
				out[a*dc+b] /= s
			} else {
				out[a*dc+b] = child[b]
			}
		}
	}
	return out
}

// Sample draws n rows from the model, root to leaves, and returns them by
// column: rows[j][r] is row r's value index in column j. It allocates
// counts rather than drawing each row independently (as Private-PGM's
// sampler does): n·P(v) rounded, with the remainders placed at random in
// proportion to their fractional parts, for the root and, for each other
// column, within each group of rows sharing the parent's value. The
// frequencies then match the model's to within one row per group.
func (md *Model) Sample(n int, src random.Source) [][]int32 {
	k := len(md.Attrs)
	rows := make([][]int32, k)
	for _, j := range md.Order {
		rows[j] = make([]int32, n)
		q := md.Parent[j]
		if q < 0 {
			fill(rows[j], allIndices(n), md.Marg[j], src)
			continue
		}
		dq, dj := md.Attrs[q].Size(), md.Attrs[j].Size()
		groups := make([][]int, dq)
		for r, v := range rows[q] {
			groups[v] = append(groups[v], r)
		}
		for a, g := range groups {
			if len(g) > 0 {
				fill(rows[j], g, md.Cond[j][a*dj:(a+1)*dj], src)
			}
		}
	}
	return rows
}

func allIndices(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// fill gives the rows at idx values allocated from probs, in random order.
func fill(col []int32, idx []int, probs []float64, src random.Source) {
	counts := allocate(len(idx), probs, src)
	vals := make([]int32, 0, len(idx))
	for v, c := range counts {
		for ; c > 0; c-- {
			vals = append(vals, int32(v))
		}
	}
	// Fisher–Yates with exact uniform integers.
	for i := len(vals) - 1; i > 0; i-- {
		j := int(noise.UniformInt(src, uint64(i+1)))
		vals[i], vals[j] = vals[j], vals[i]
	}
	for i, r := range idx {
		col[r] = vals[i]
	}
}

// allocate splits n into counts proportional to probs: floors first, then
// the remaining units one at a time to values drawn without replacement
// with probability proportional to their fractional parts.
func allocate(n int, probs []float64, src random.Source) []int {
	counts := make([]int, len(probs))
	frac := make([]float64, len(probs))
	used := 0
	for v, p := range probs {
		x := float64(n) * math.Max(p, 0)
		f := math.Floor(x)
		counts[v] = int(f)
		frac[v] = x - f
		used += counts[v]
	}
	for used > n { // rounding above n cannot happen with probs summing to 1; be safe
		for v := range counts {
			if counts[v] > 0 && used > n {
				counts[v]--
				used--
			}
		}
	}
	for ; used < n; used++ {
		v := weightedPick(frac, src)
		if v < 0 {
			v = weightedPick(probs, src)
		}
		if v < 0 {
			v = int(noise.UniformInt(src, uint64(len(probs))))
		}
		counts[v]++
		frac[v] = 0
	}
	return counts
}

// weightedPick draws an index with probability proportional to w, or −1
// when no weight is positive.
func weightedPick(w []float64, src random.Source) int {
	s := 0.0
	for _, x := range w {
		if x > 0 {
			s += x
		}
	}
	if !(s > 0) {
		return -1
	}
	u := uniform01(src) * s
	last := -1
	for i, x := range w {
		if x <= 0 {
			continue
		}
		last = i
		if u < x {
			return i
		}
		u -= x
	}
	return last
}

// uniform01 is a uniform float in [0, 1) with 53 random bits.
func uniform01(src random.Source) float64 {
	return float64(noise.UniformInt(src, 1<<53)) / (1 << 53)
}

// Value turns value index i of the column into an output value: a listed
// value, a bool, nil for NULL, or a number drawn uniformly within its bin
// (an integer for an int column, a date or timestamp, spelt as such, for
// a date or timestamp column).
func (a *Attr) Value(i int, src random.Source) any {
	if a.IsNull(i) {
		return nil
	}
	switch a.Kind {
	case Listed:
		return a.Values[i]
	case Boolean:
		return i == 1
	}
	lo, hi := a.binRange(i)
	if a.integral() {
		l, h := int64(lo), int64(hi)
		v := l
		if h > l {
			v = l + int64(noise.UniformInt(src, uint64(h-l)+1))
		}
		if a.Type.Temporal() {
			// Sampled back as a date or timestamp.
			return schema.FormatValue(a.Type, v)
		}
		return v
	}
	u := uniform01(src)
	v := lo*(1-u) + hi*u
	if v > hi {
		v = hi
	}
	return v
}
