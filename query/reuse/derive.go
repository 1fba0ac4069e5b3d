package reuse

import (
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
)

// Request is a prepared query that might be answered from released
// measurements.
type Request struct {
	Plan  *dpplan.Plan
	Noise *dpplan.Noise
	Shape *Shape
	// Confidence is the level of the intervals.
	Confidence float64
	// Targets maps an output index to the half-width asked for it (an
	// accuracy-first query); an aggregate without one must be at least as
	// tight as a fresh answer at the query's ε.
	Targets map[int]float64
	// Analyst is who asks; Shared allows every analyst's releases, else
	// only the analyst's own.
	Analyst string
	Shared  bool
}

// Answer is a derived answer: per group of the plan (Plan.Keys), the
// value and interval of each aggregate (Plan.Aggregates), computed from
// released noisy values only.
type Answer struct {
	Values [][]any
	CI     [][]dpplan.Interval
	// Releases lists the releases the answer was derived from.
	Releases []uint64
	// Variance holds, per group and release of the plan, the propagated
	// variance of the derived statistic (NaN where none was derived).
	Variance [][]float64
	// Reconciled says that some statistic was reconciled by least
	// squares over overlapping releases (reconcile).
	Reconciled bool
}

// estimate is one derived statistic of one cell: its value, and its
// noise as terms. v, when set (exact), is the noise's exact variance, which
// the terms may overstate (compact).
type estimate struct {
	value float64
	terms []term
	v     float64
	exact bool
}

// variance is the estimate's propagated variance.
func (e *estimate) variance() float64 {
	if e.exact {
		return e.v
	}
	return variance(e.terms)
}

// Eligible says whether the query's answer can be derived at all: COUNT,
// SUM and AVG only, and no HAVING, ORDER BY, LIMIT, OFFSET or computed
// outputs (a first landing: their post-processing is not reproduced).
func Eligible(plan *dpplan.Plan) string {
	q := plan.Query
	if q.Having != nil || len(q.OrderBy) > 0 || q.Limit >= 0 || q.Offset > 0 {
		return "HAVING, ORDER BY, LIMIT and OFFSET are answered afresh"
	}
	for _, o := range q.Outputs {
		if o.Post != nil || o.Hidden {
			return "computed outputs are answered afresh"
		}
	}
	for _, a := range plan.Aggregates {
		switch a.Aggregate.Func {
		case ir.CountStar, ir.Count, ir.Sum, ir.Avg:
		default:
			return a.Aggregate.String() + " is answered afresh (only COUNT, SUM and AVG are derived)"
		}
	}
	if len(plan.Aggregates) == 0 {
		return "no aggregate"
	}
	return ""
}

// Derive answers req from records (of the request's dataset and context),
// or says why not: a cell that no release covers exactly, or a derived
// interval wider than asked (or than a fresh answer's at the query's ε).
func Derive(req Request, recs []*Record) (*Answer, string) {
	pr, why := Gather(req, recs)
	if why != "" {
		return nil, why
	}
	return pr.Answer(req)
}

// Answer checks the prior's estimates against the accuracy req asks and
// finishes them into its answer, or says why not (Derive without the
// gathering, for a caller that tops the prior up when it falls short).
func (pr *Prior) Answer(req Request) (*Answer, string) {
	return pr.answer(req, pr.est)
}

// Prior is what earlier releases give a query: for every group and
// release of its plan, the estimate derived from them.
type Prior struct {
	est        [][]*estimate
	releases   []uint64
	reconciled bool
}

// Releases lists the releases the prior was derived from.
func (pr *Prior) Releases() []uint64 { return pr.releases }

// Gather derives, for every group and release of the request's plan, an
// estimate from the records, without checking its accuracy; it says why
// not when some cell is not exactly a union of released cells.
func Gather(req Request, recs []*Record) (*Prior, string) {
	p, s := req.Plan, req.Shape
	if why := Eligible(p); why != "" {
		return nil, why
	}
	var usable []*Record
	for _, r := range recs {
		if r.Context == s.Context && (req.Shared || r.Analyst == req.Analyst) {
			usable = append(usable, r)
		}
	}
	if len(usable) == 0 {
		return nil, "no earlier release of this table, filter and bounds"
	}
	used := map[uint64]bool{}
	pr := &Prior{}
	boxes := make([]map[string][]int, len(s.Keys)-s.Hidden)
	for g := range boxes {
		boxes[g] = s.cellBox(g)
		for _, idx := range boxes[g] {
			if len(idx) == 0 {
				return nil, "the filter excludes a group"
			}
		}
		pr.est = append(pr.est, make([]*estimate, len(p.Releases)))
	}
	for _, a := range p.Aggregates {
		for _, i := range a.Releases {
			if len(boxes) == 0 || pr.est[0][i] != nil {
				continue
			}
			// Overlapping releases reconciled by least squares, or else
			// each cell from the releases that cover it exactly.
			dom := domain{lists: s.lists, ranged: s.ranged, binned: len(s.Bins) > 0}
			est, from, ok := reconcile(s.Stats[i], boxes, dom, usable)
			// The exact covers, unless reconciled; when a cell has one, the
			// reconciled estimate must be at least as precise (the releases
			// the reconciliation kept within its bounds may leave out a
			// precise one).
			single := make([]*estimate, len(boxes))
			var covers [][]uint64
			for g, box := range boxes {
				e, cf := deriveStat(s.Stats[i], box, nil, usable)
				single[g] = e
				covers = append(covers, cf)
				if ok && e != nil && !(est[g].variance() <= e.variance()*(1+1e-9)) {
					ok = false
				}
			}
			if ok {
				single, covers = est, [][]uint64{from}
				pr.reconciled = pr.reconciled || len(from) > 1
			}
			for g, e := range single {
				if e == nil {
					return nil, fmt.Sprintf("no release covers %s of group %d exactly", a.Aggregate, g+1)
				}
				pr.est[g][i] = e
			}
			for _, ids := range covers {
				for _, id := range ids {
					used[id] = true
				}
			}
		}
	}
	for id := range used {
		pr.releases = append(pr.releases, id)
	}
	sort.Slice(pr.releases, func(a, b int) bool { return pr.releases[a] < pr.releases[b] })
	return pr, ""
}

// answer finishes the estimates est (per group and release) into an
// answer, checking each aggregate's accuracy.
func (pr *Prior) answer(req Request, est [][]*estimate) (*Answer, string) {
	ans := &Answer{Releases: pr.releases, Reconciled: pr.reconciled}
	memo := widths{}
	for g := range est {
		row, ci, why := req.finish(g, est[g], memo)
		if why != "" {
			return nil, why
		}
		vars := make([]float64, len(est[g]))
		for i, e := range est[g] {
			vars[i] = math.NaN()
			if e != nil {
				vars[i] = e.variance()
			}
		}
		ans.Values, ans.CI, ans.Variance = append(ans.Values, row), append(ans.CI, ci), append(ans.Variance, vars)
	}
	return ans, ""
}

// Combine answers req from the prior and a fresh measurement of the same
// plan at another ε (its noise fresh, its noisy values measured, per group
// and release, or nil to check the accuracy only): each statistic is the
// inverse-variance weighted mean of the prior estimate and the fresh
// value. It says why not when the combination misses the accuracy asked.
func (pr *Prior) Combine(req Request, fresh *dpplan.Noise, measured [][]float64) (*Answer, string) {
	est := make([][]*estimate, len(pr.est))
	for g, row := range pr.est {
		est[g] = make([]*estimate, len(row))
		for i, e := range row {
			if e == nil {
				continue
			}
			law, ok := fresh.Law(i)
			if !ok {
				return nil, "the fresh measurement has no usable noise law"
			}
			vp, vf := e.variance(), law.Variance()
			x := 0.0
			if measured != nil {
				x = measured[g][i]
			}
			switch {
			case vp == 0:
				est[g][i] = e
				continue
			case vf == 0:
				// The fresh value has no noise to speak of: it alone.
				est[g][i] = &estimate{value: x, terms: []term{{law: law, coef: 1, n: 1}}}
				continue
			case !(vf > 0):
				return nil, "the fresh measurement has no finite variance"
			}
			wp := (1 / vp) / (1/vp + 1/vf)
			c := &estimate{value: wp*e.value + (1-wp)*x, v: wp*wp*vp + (1-wp)*(1-wp)*vf, exact: true}
			for _, t := range e.terms {
				t.coef *= wp
				c.terms = append(c.terms, t)
			}
			c.terms = append(c.terms, term{law: law, coef: 1 - wp, n: 1})
			est[g][i] = c
		}
	}
	return pr.answer(req, est)
}

// SmallestTopUp returns the smallest ε (of dpplan.EpsilonDigits
// significant digits) at which a fresh measurement combined with the prior
// meets the request's accuracy, and whether there is one; noiseAt plans
// the query at an ε. The search depends on the plan and on the prior's
// noise laws only, never on values.
func (pr *Prior) SmallestTopUp(req Request, noiseAt func(eps float64) (*dpplan.Noise, error)) (float64, bool) {
	return dpplan.SmallestEpsilon(func(eps float64) bool {
		nz, err := noiseAt(eps)
		if err != nil {
			return false
		}
		_, why := pr.Combine(req, nz, nil)
		return why == ""
	})
}

// deriveStat derives statistic id over the cell box from every record
// that covers it exactly, combining their independent estimates by
// inverse-variance weighting; nil when none does.
func deriveStat(id string, box map[string][]int, complete map[string]int, recs []*Record) (*estimate, []uint64) {
	if id == "" {
		return nil, nil
	}
	type part struct {
		sum float64
		t   term
		v   float64
	}
	var parts []part
	var from []uint64
	for _, r := range recs {
		m := r.stat(id)
		if m == nil {
			continue
		}
		cells, ok := r.match(box, complete)
		if !ok {
			continue
		}
		sum := 0.0
		for _, c := range cells {
			sum += m.Values[c]
		}
		t := term{law: m.Law, coef: 1, n: float64(len(cells))}
		v := variance([]term{t})
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		if v == 0 {
			// Noise too small to have a variance in doubles (ε of 1e20):
			// this measurement alone is the estimate.
			return &estimate{value: sum, terms: []term{t}}, []uint64{r.ReleaseID}
		}
		parts = append(parts, part{sum, t, v})
		from = append(from, r.ReleaseID)
	}
	if len(parts) == 0 {
		return nil, nil
	}
	if len(parts) == 1 {
		return &estimate{value: parts[0].sum, terms: []term{parts[0].t}}, from
	}
	inv := 0.0
	for _, pt := range parts {
		inv += 1 / pt.v
	}
	e := &estimate{}
	for _, pt := range parts {
		w := (1 / pt.v) / inv
		e.value += w * pt.sum
		t := pt.t
		t.coef = w
		e.terms = append(e.terms, t)
	}
	return e, from
}

// finish turns group g's derived statistics into the aggregates' values
// and intervals, and checks each against what was asked.
func (req Request) finish(g int, est []*estimate, memo widths) ([]any, []dpplan.Interval, string) {
	p, conf := req.Plan, req.Confidence
	row := make([]any, len(p.Aggregates))
	ci := make([]dpplan.Interval, len(p.Aggregates))
	for j, a := range p.Aggregates {
		i := a.Releases[0]
		e := est[i]
		switch a.Aggregate.Func {
		case ir.CountStar, ir.Count, ir.Sum:
			h := memo.halfWidth(e.terms, conf)
			limit, asked := req.Targets[a.Output]
			if !asked {
				limit, _ = req.Noise.HalfWidth(j, conf)
			}
			if !(h <= limit*(1+1e-9)) {
				return nil, nil, fmt.Sprintf("%s: the releases give ±%.4g, wider than the ±%.4g %s", a.Aggregate, h, limit, map[bool]string{true: "asked", false: "of a fresh answer"}[asked])
			}
			v := e.value
			if a.Aggregate.Func != ir.Sum {
				// A count is released as a whole number; its interval is
				// the whole numbers within h of the unrounded estimate
				// (the exact count is one), which covers as often.
				row[j] = int64(math.Round(v))
				iv := dpplan.Interval{Low: math.Ceil(v - h - 1e-9), High: math.Floor(v + h + 1e-9)}
				if iv.Low > iv.High {
					iv.Low, iv.High = math.Round(v), math.Round(v)
				}
				ci[j] = feasible(iv, 0, math.Inf(1))
				continue
			}
			if e.variance() == 0 && i < len(p.Releases) && p.Releases[i].Stat >= 0 && p.Releases[i].Stat < len(p.Statistics) {
				// Every noise is below a double's precision (ε = 1e20):
				// the sum is a whole number of its grid's steps, and the
				// least-squares weights leave rounding error only.
				step := math.Ldexp(1, p.Statistics[p.Releases[i].Stat].Summand.Exp)
				if r := math.Round(v/step) * step; !math.IsInf(r, 0) && !math.IsNaN(r) {
					v = r
				}
			}
			row[j] = v
			iv := dpplan.Interval{Low: v - h, High: v + h}
			if a.Lower >= 0 {
				iv = feasible(iv, 0, math.Inf(1))
			} else if a.Upper <= 0 {
				iv = feasible(iv, math.Inf(-1), 0)
			}
			ci[j] = iv
		case ir.Avg:
			si, ni := a.Releases[0], a.Releases[1]
			for _, k := range []int{si, ni} {
				law, ok := req.Noise.Law(k)
				if !ok || !(est[k].variance() <= law.Variance()) {
					return nil, nil, fmt.Sprintf("%s: the releases measure its sum or count less precisely than a fresh answer would", a.Aggregate)
				}
			}
			tail := 1 - (1-conf)/2
			hs, hc := memo.halfWidth(est[si].terms, tail), memo.halfWidth(est[ni].terms, tail)
			row[j], ci[j] = average(est[si].value, est[ni].value, hs, hc, a.Lower, a.Upper)
		}
	}
	return row, ci, ""
}

// feasible intersects an interval with the range its exact value lies in
// (as the fresh answers do).
func feasible(iv dpplan.Interval, lo, hi float64) dpplan.Interval {
	iv.Low, iv.High = math.Max(iv.Low, lo), math.Min(iv.High, hi)
	if iv.Low > iv.High {
		if iv.High < lo {
			iv.Low, iv.High = lo, lo
		} else {
			iv.Low, iv.High = hi, hi
		}
	}
	return iv
}

// average is the mean of a derived centred sum c and count n, clamped to
// [lo, hi] (the midpoint when n ≤ 0), with the interval spanned by every
// (sum, count) pair within the half-widths hs and hc, each covering with
// probability 1 − α/2; [lo, hi] when the count's interval reaches below 1.
func average(c, n, hs, hc, lo, hi float64) (float64, dpplan.Interval) {
	mid := lo + (hi-lo)/2
	clamp := func(x float64) float64 { return math.Min(hi, math.Max(lo, x)) }
	v := mid
	if n > 0 {
		v = clamp(mid + c/n)
	}
	if n-hc < 1 {
		return v, dpplan.Interval{Low: lo, High: hi}
	}
	low, high := math.Inf(1), math.Inf(-1)
	for _, s := range []float64{c - hs, c + hs} {
		for _, d := range []float64{n - hc, n + hc} {
			low, high = math.Min(low, s/d), math.Max(high, s/d)
		}
	}
	return v, dpplan.Interval{Low: clamp(mid + low), High: clamp(mid + high)}
}

// widths computes the half-widths of one answer through a cache shared by
// every answer: a half-width depends only on the laws, weights and
// numbers of the noises summed, which the cells of a roll-up and the
// repeats of a question share.
type widths struct{}

var widthCache struct {
	sync.Mutex
	m map[string]float64
}

// maxCachedWidths bounds the cache; it is emptied when full.
const maxCachedWidths = 1 << 14

func (widths) halfWidth(ts []term, confidence float64) float64 {
	k := fmt.Sprint(confidence, ts)
	widthCache.Lock()
	h, ok := widthCache.m[k]
	widthCache.Unlock()
	if ok {
		return h
	}
	h = halfWidth(ts, confidence)
	widthCache.Lock()
	if widthCache.m == nil || len(widthCache.m) >= maxCachedWidths {
		widthCache.m = map[string]float64{}
	}
	widthCache.m[k] = h
	widthCache.Unlock()
	return h
}
