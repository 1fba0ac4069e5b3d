package reuse

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// The bounds of one reconciliation, fixed before it starts and
// independent of the data: at most maxReconciled releases are considered
// (those restricting only columns the query restricts first, then the
// coarsest, then the newest), the cells they and the query
// split the table into number at most maxAtoms before they are merged
// into at most maxClasses classes no release tells apart, and at most
// maxObservations released cells enter the least-squares system.
const (
	maxReconciled   = 16
	maxAtoms        = 1 << 15
	maxClasses      = 256
	maxObservations = 4096
	// maxCellChecks caps the query cells times the atoms whose membership
	// is tested (the query's cells against the atoms, one test each), so
	// that a query with many groups over many released cells falls back
	// to the cell-by-cell derivation instead of planning for seconds.
	maxCellChecks = 1 << 20
)

// system is the least-squares system of one statistic over some releases:
// the table's rows split into classes (sets of cells that no release and
// no query cell tells apart), each released cell an observation of the
// sum of the classes it holds.
type system struct {
	recs []*Record
	meas []*Measured
	// classes is the number of classes; obs the released cells, each the
	// classes it sums (sorted), its record and its cell.
	classes int
	obs     []observation
	// query holds, per query cell, its classes, or nil when the cell cuts
	// a class (no release tells its part of the class apart).
	query [][]int
}

// domain is what the shape of a query says of its table's columns.
type domain struct {
	// lists maps each column with a declared value list, or whose ranges
	// can be coordinates (ranged), to its number of values.
	lists map[string]int
	// complete marks the lists known to hold every row's value, which
	// then need no value for the rest (as Record.match takes them).
	// Shapes mark none: a declared list does not exclude NULL or unlisted
	// values (ShapeOf); the tests use it to check the least-squares
	// system on tables whose lists cover every row.
	complete map[string]int
	ranged   map[string]bool
	// binned says that the query groups by bins.
	binned bool
}

// size is the number of value indices of column c: its values, and one
// more for the rest unless its list is complete, or rangeExtra more for a
// range column.
func (d domain) size(c string) (int, int, bool) {
	n, ok := d.lists[c]
	switch {
	case !ok:
		return 0, 0, false
	case d.ranged[c]:
		return n, n + rangeExtra, true
	}
	if _, full := d.complete[c]; full {
		return n, n, true
	}
	return n, n + 1, true
}

type observation struct {
	rec, cell int
	classes   []int
}

// reconcile derives statistic id over each query cell (boxes) from the
// releases recs by generalized least squares: the unknowns are the cells'
// exact values, each released noisy value observes the sum of its cells
// with its noise's variance, and each query cell's estimate is the
// best linear unbiased one (the minimum-variance combination of released
// values that is exact whatever the data). Estimates of overlapping cells
// are then consistent: a total's estimate is the sum of its parts'. It
// returns false, to derive cell by cell instead, when fewer than two
// releases measure the statistic, when a measurement's variance is not
// finite, when the bounds above are exceeded, or when some query cell is
// not estimable from the releases kept. Measurements without variance in
// doubles (ε = 1e20) are reconciled among themselves alone.
func reconcile(id string, boxes []map[string][]int, dom domain, recs []*Record) ([]*estimate, []uint64, bool) {
	// Measurements whose noise has no variance in doubles (ε = 1e20) are
	// as good as exact: when there are any, they alone are reconciled,
	// with equal weights.
	var cand, exact []*Record
	for _, r := range recs {
		if m := r.stat(id); m != nil {
			v := m.Law.Variance()
			switch {
			case v == 0:
				exact = append(exact, r)
			case !(v > 0) || math.IsInf(v, 0):
				return nil, nil, false
			}
			cand = append(cand, r)
		}
	}
	if len(exact) > 0 {
		cand = exact
	}
	// One release is reconciled only when bins are involved (the cells of
	// bins are derived here alone).
	binned := dom.binned
	for _, r := range cand {
		binned = binned || len(r.Bins) > 0
	}
	if len(cand) == 0 || (len(cand) < 2 && !binned) {
		return nil, nil, false
	}
	// A release restricting a column no query cell restricts (a range of
	// ages when the query reads all of them) helps only with others that
	// cover the rest: those come last.
	restricted := map[string]bool{}
	for _, b := range boxes {
		for c := range b {
			restricted[c] = true
		}
	}
	aside := func(r *Record) bool {
		for c := range r.Restrict {
			if !restricted[c] {
				return true
			}
		}
		return false
	}
	sort.SliceStable(cand, func(a, b int) bool {
		if aa, ab := aside(cand[a]), aside(cand[b]); aa != ab {
			return ab
		}
		if len(cand[a].Keys) != len(cand[b].Keys) {
			return len(cand[a].Keys) < len(cand[b].Keys)
		}
		return cand[a].ReleaseID > cand[b].ReleaseID
	})
	if len(cand) > maxReconciled {
		cand = cand[:maxReconciled]
	}
	// The releases kept: each in turn, unless it makes the system too big.
	var kept []*Record
	var sys *system
	for _, r := range cand {
		try := append(append([]*Record(nil), kept...), r)
		if s, ok := build(id, try, boxes, dom); ok {
			kept, sys = try, s
		}
	}
	if sys == nil || (len(kept) < 2 && !binned) {
		return nil, nil, false
	}
	for _, q := range sys.query {
		if q == nil {
			return nil, nil, false
		}
	}
	return sys.solve()
}

// build sets up the system of releases rs for the query cells boxes, or
// false when it exceeds the bounds.
func build(id string, rs []*Record, boxes []map[string][]int, dom domain) (*system, bool) {
	colSet := map[string]bool{}
	for _, r := range rs {
		for _, c := range r.GroupBy {
			colSet[c] = true
		}
		for c := range r.Restrict {
			colSet[c] = true
		}
	}
	for _, b := range boxes {
		for c := range b {
			colSet[c] = true
		}
	}
	cols := make([]string, 0, len(colSet))
	for c := range colSet {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	// Per column, its values (the declared list, and one more standing for
	// every value outside it, NULL included, unless the list is complete)
	// merged into classes that no release and no query cell tells apart;
	// reps holds each class's first value.
	reps := make([][]int, len(cols))
	atoms := 1
	// binOf maps, per release and binned column, each value index to its
	// bin (or −1).
	binOf := make([]map[string][]int, len(rs))
	for ci, c := range cols {
		n, d, ok := dom.size(c)
		if !ok {
			return nil, false
		}
		for ri, r := range rs {
			bins, ok := r.Bins[c]
			if !ok {
				continue
			}
			inv := make([]int, d)
			for v := range inv {
				inv[v] = -1
			}
			for j, set := range bins {
				for _, v := range set {
					if v < 0 || v >= d {
						return nil, false
					}
					inv[v] = j
				}
			}
			if binOf[ri] == nil {
				binOf[ri] = map[string][]int{}
			}
			binOf[ri][c] = inv
		}
		reps[ci] = valueClasses(c, n, d, rs, binOf, boxes)
		atoms *= len(reps[ci])
		if atoms > maxAtoms {
			return nil, false
		}
	}
	// Each atom (one class of values per column) falls in at most one cell
	// of each release; atoms in the same cells form one class.
	s := &system{recs: rs}
	for _, r := range rs {
		s.meas = append(s.meas, r.stat(id))
	}
	classOf := map[string]int{}
	var atomClass []int
	var atomVals [][]int
	obsOf := map[[2]int]int{}
	val := make([]int, len(cols))
	key := []int{}
	var sig []byte
	for a := 0; a < atoms; a++ {
		x := a
		for ci := range cols {
			val[ci] = reps[ci][x%len(reps[ci])]
			x /= len(reps[ci])
		}
		sig = sig[:0]
		cells := make([]int, len(rs))
		for ri, r := range rs {
			cells[ri] = atomCell(r, cols, val, dom.lists, binOf[ri], &key)
			sig = strconv.AppendInt(sig, int64(cells[ri]), 10)
			sig = append(sig, ',')
		}
		k := string(sig)
		cl, ok := classOf[k]
		if !ok {
			cl = len(classOf)
			if cl >= maxClasses {
				return nil, false
			}
			classOf[k] = cl
			for ri, c := range cells {
				if c < 0 {
					continue
				}
				o, ok := obsOf[[2]int{ri, c}]
				if !ok {
					o = len(s.obs)
					if o >= maxObservations {
						return nil, false
					}
					obsOf[[2]int{ri, c}] = o
					s.obs = append(s.obs, observation{rec: ri, cell: c})
				}
				s.obs[o].classes = append(s.obs[o].classes, cl)
			}
		}
		atomClass = append(atomClass, cl)
		atomVals = append(atomVals, append([]int(nil), val...))
	}
	s.classes = len(classOf)
	if len(boxes)*len(atomClass) > maxCellChecks {
		return nil, false
	}
	// Each query cell's classes: every class wholly in the cell, or the
	// cell is not a union of classes.
	for _, b := range boxes {
		in := make([]int8, s.classes) // 0 unseen, 1 in, 2 out
		whole := true
		for a, cl := range atomClass {
			st := int8(2)
			if inBox(b, cols, atomVals[a]) {
				st = 1
			}
			if in[cl] != 0 && in[cl] != st {
				whole = false
				break
			}
			in[cl] = st
		}
		var q []int
		if whole {
			q = []int{}
			for cl, st := range in {
				if st == 1 {
					q = append(q, cl)
				}
			}
		}
		s.query = append(s.query, q)
	}
	return s, true
}

// valueClasses merges the values 0 … d−1 of column c (n listed values,
// d − n standing for the rest) into classes that no release of rs and no
// query cell tells apart, and returns each class's first value.
func valueClasses(c string, n, d int, rs []*Record, binOf []map[string][]int, boxes []map[string][]int) []int {
	var reps []int
	seen := map[string]bool{}
	for v := 0; v < d; v++ {
		var sig strings.Builder
		for ri, r := range rs {
			if g := indexOf(r.GroupBy, c); g >= 0 {
				k := v
				if inv, ok := binOf[ri][c]; ok {
					k = inv[v]
				} else if v >= n {
					k = r.restIndex(c)
				}
				if k >= 0 && inRestrict(r.Restrict, c, v) {
					sig.WriteString(strconv.Itoa(k))
				}
				sig.WriteByte('|')
			} else if rr, ok := r.Restrict[c]; ok {
				sig.WriteByte("01"[b2i(contains(rr, v))])
			}
		}
		for _, b := range boxes {
			if t, ok := b[c]; ok {
				sig.WriteByte("01"[b2i(contains(t, v))])
			}
		}
		if k := sig.String(); !seen[k] {
			seen[k] = true
			reps = append(reps, v)
		}
	}
	return reps
}

// atomCell returns the cell of r holding the rows whose columns hold val
// (a value index, or the list's length for a value outside it), or -1.
func atomCell(r *Record, cols []string, val []int, lists map[string]int, binOf map[string][]int, key *[]int) int {
	for c, rr := range r.Restrict {
		if indexOf(r.GroupBy, c) < 0 && !contains(rr, val[indexOf(cols, c)]) {
			return -1
		}
	}
	*key = (*key)[:0]
	for _, c := range r.GroupBy {
		v := val[indexOf(cols, c)]
		k := v
		if inv, ok := binOf[c]; ok {
			k = inv[v]
		} else if v >= lists[c] {
			k = r.restIndex(c)
		}
		if k < 0 || !inRestrict(r.Restrict, c, v) {
			return -1
		}
		*key = append(*key, k)
	}
	i, ok := r.cell(*key)
	if !ok {
		return -1
	}
	return i
}

// inBox says whether rows whose columns hold val lie in the query cell b.
func inBox(b map[string][]int, cols []string, val []int) bool {
	for c, t := range b {
		if !contains(t, val[indexOf(cols, c)]) {
			return false
		}
	}
	return true
}

// solve computes each query cell's estimate: with N = Σ w·a·aᵀ over the
// observations (w the inverse variance, a the classes observed) and q the
// cell's classes, z solves N·z = q and the estimate is Σ c·y with
// c = w·aᵀz, exact whenever the noisy values are (Σ c·a = N·z = q), of
// variance Σ c²·v = qᵀz, the least of any such combination.
func (s *system) solve() ([]*estimate, []uint64, bool) {
	vmin := math.Inf(1)
	for _, m := range s.meas {
		vmin = math.Min(vmin, m.Law.Variance())
	}
	w := make([]float64, len(s.recs))
	for i, m := range s.meas {
		w[i] = 1
		if vmin > 0 {
			w[i] = vmin / m.Law.Variance()
		}
	}
	n := s.classes
	N := mat.NewSymDense(n, nil)
	for _, o := range s.obs {
		for _, a := range o.classes {
			for _, b := range o.classes {
				if a <= b {
					N.SetSym(a, b, N.At(a, b)+w[o.rec])
				}
			}
		}
	}
	solveFor := pseudoSolver(N)
	if solveFor == nil {
		return nil, nil, false
	}
	used := make([]bool, len(s.recs))
	out := make([]*estimate, len(s.query))
	for qi, cls := range s.query {
		q := make([]float64, n)
		for _, c := range cls {
			q[c] = 1
		}
		z, ok := solveFor(q)
		if !ok {
			return nil, nil, false
		}
		e := &estimate{exact: true}
		for _, o := range s.obs {
			c := 0.0
			for _, a := range o.classes {
				c += z[a]
			}
			c *= w[o.rec]
			if c == 0 {
				continue
			}
			e.value += c * s.meas[o.rec].Values[o.cell]
			e.v += c * c * s.meas[o.rec].Law.Variance()
			used[o.rec] = true
			e.terms = append(e.terms, term{law: s.meas[o.rec].Law, coef: c, n: 1})
		}
		e.terms = compact(e.terms)
		out[qi] = e
	}
	var from []uint64
	for i, r := range s.recs {
		if used[i] {
			from = append(from, r.ReleaseID)
		}
	}
	sort.Slice(from, func(a, b int) bool { return from[a] < from[b] })
	return out, from, true
}

// maxTerms bounds the terms of a reconciled estimate, so that its
// interval takes a bounded time to compute.
const maxTerms = 48

// compact merges the noises of one law whose weights are (nearly) equal
// into one term, the largest weight of the group standing for all: adding
// independent symmetric unimodal noises with larger weights can only
// widen every central interval (Anderson's theorem), so the interval
// stays valid and the propagated variance (computed from the exact
// weights) is never larger than the interval's. Weights within a factor
// 2^(1e-6) are merged, or, when that leaves more than maxTerms terms,
// within 2^(1/64), 2^(1/16), 2^(1/4) in turn.
func compact(ts []term) []term {
	var out []term
	for _, res := range []float64{1e6, 64, 16, 4} {
		idx := map[[2]any]int{}
		out = out[:0]
		for _, t := range ts {
			k := [2]any{t.law, math.Round(math.Log2(math.Abs(t.coef)) * res)}
			i, ok := idx[k]
			if !ok {
				i = len(out)
				idx[k] = i
				out = append(out, term{law: t.law})
			}
			out[i].n += t.n
			out[i].coef = math.Max(out[i].coef, math.Abs(t.coef))
		}
		if len(out) <= maxTerms {
			break
		}
	}
	return out
}

// pseudoSolver returns a function solving N·z = q for a q in N's range:
// by Cholesky when N is well conditioned, else through its eigenvectors
// with the eigenvalues below 1e-10 of the largest taken as zero, and
// false when q is not in the range (the cell is not estimable). Nil when
// N cannot be factorized.
func pseudoSolver(N *mat.SymDense) func(q []float64) ([]float64, bool) {
	n, _ := N.Dims()
	var ch mat.Cholesky
	if ch.Factorize(N) && ch.Cond() < 1e10 {
		return func(q []float64) ([]float64, bool) {
			var z mat.VecDense
			if err := ch.SolveVecTo(&z, mat.NewVecDense(n, q)); err != nil {
				return nil, false
			}
			return z.RawVector().Data, true
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(N, true) {
		return nil
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	lmax := 0.0
	for _, l := range vals {
		lmax = math.Max(lmax, math.Abs(l))
	}
	return func(q []float64) ([]float64, bool) {
		z := make([]float64, n)
		for k, l := range vals {
			dot := 0.0
			for i := 0; i < n; i++ {
				dot += vecs.At(i, k) * q[i]
			}
			if math.Abs(l) <= 1e-10*lmax {
				// q must have no part along N's null space.
				if math.Abs(dot) > 1e-7 {
					return nil, false
				}
				continue
			}
			for i := 0; i < n; i++ {
				z[i] += vecs.At(i, k) * dot / l
			}
		}
		return z, true
	}
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func contains(sorted []int, v int) bool {
	i := sort.SearchInts(sorted, v)
	return i < len(sorted) && sorted[i] == v
}

func inRestrict(restrict map[string][]int, c string, v int) bool {
	rr, ok := restrict[c]
	return !ok || contains(rr, v)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
