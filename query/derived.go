package query

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/query/parse"
	"github.com/dpstat/dpstat/query/reuse"
	"github.com/dpstat/dpstat/query/sqlgen"
)

// Derivation says which releases an answer was derived from.
type Derivation struct {
	// Releases are the ledger's release IDs whose noisy values the answer
	// post-processed.
	Releases []uint64 `json:"releases"`
	// Variances holds, per answer row and column, the propagated variance
	// of the derived statistic behind the value (its centred sum's for an
	// AVG; 0 for a key).
	Variances [][]float64 `json:"variances,omitempty"`
	// TopUp, when not zero, is the ε of a fresh measurement combined with
	// the releases (the answer's cost); zero when the answer cost nothing.
	TopUp float64 `json:"top_up_epsilon,omitempty"`
	// Reconciled says that overlapping releases were reconciled by least
	// squares, so that totals and parts derived from them agree.
	Reconciled bool `json:"reconciled,omitempty"`
}

// Note is the derivation as the answer's notes, the psql notices and the
// dashboard say it: "derived from releases 3, 7, cost 0".
func (d *Derivation) Note() string {
	return "derived from releases " + joinIDs(d.Releases) + ", cost 0: post-processing of their noisy values, no data read, nothing charged (--fresh asks for a fresh answer)"
}

// AnswerLister lists the answers stored for a dataset; *ledger.Ledger
// provides it. With it the service reads the measurements of earlier
// releases kept with their stored answers when it first answers a query
// on the dataset.
type AnswerLister interface {
	Answers(dataset, prefix string) ([]ledger.StoredAnswer, error)
}

// tableSource is the table's source as the answer key spells it.
func tableSource(t *catalog.Table) string {
	if src, err := filepath.Abs(t.Source); err == nil {
		return src
	}
	return t.Source
}

// declared returns the catalog's declaration of p's table when p's
// relation is the one it and p's query make (ir.Relation: the declared
// bounds narrowed by the WHERE clause), else nil: reuse compares cells by
// the declaration, never by bounds a query narrowed.
func (s *Service) declared(p *Prepared) *catalog.Table {
	return declaredFor(p.decl, p.Plan)
}

// declaredFor is decl when plan's relation is the one decl and plan's
// query make, else nil (Service.declared).
func declaredFor(decl *catalog.Table, plan *dpplan.Plan) *catalog.Table {
	q := plan.Query
	if decl == nil || q == nil || q.Base == nil || plan.Table == nil {
		return nil
	}
	rel, err := ir.Relation(q, parse.Bind(decl, q.Base.Alias))
	if err != nil {
		return nil
	}
	a, errA := json.Marshal(rel)
	b, errB := json.Marshal(plan.Table)
	if errA != nil || errB != nil || string(a) != string(b) {
		return nil
	}
	return decl
}

// measureRest makes plan measure the rows outside the lists of the
// columns it groups by (dpplan.Plan.MeasureRest), when its cells are
// kept for reuse: each grouped column with a declared value list that
// WHERE does not restrict. The released answer is unchanged; the kept
// measurements then add up to every total of their context, so that a
// roll-up is a sum of them. It depends on the plan and the catalog only.
func measureRest(plan *dpplan.Plan, decl *catalog.Table) {
	shape, why := reuse.ShapeOf(plan, declaredFor(decl, plan), tableSource(decl))
	if why != "" {
		return
	}
	var cols []string
	for _, c := range shape.GroupBy {
		if _, restricted := shape.Restrict[c]; !restricted && shape.Bins[c] == nil {
			cols = append(cols, c)
		}
	}
	plan.MeasureRest(cols)
}

// measurements returns the record of a fresh answer's measurements, or nil
// when its plan's cells cannot be reused; shape is the plan's, or nil to
// compute it.
func (s *Service) measurements(p *Prepared, res *Result, releaseID uint64, key ledger.Key, shape *reuse.Shape) *reuse.Record {
	if res == nil || res.measured == nil {
		return nil
	}
	if shape == nil {
		var why string
		if shape, why = reuse.ShapeOf(p.Plan, s.declared(p), tableSource(p.decl)); why != "" {
			return nil
		}
	}
	return reuse.NewRecord(shape, p.Noise, res.measured, releaseID, key.Analyst)
}

// loadMeasurements reads, once per dataset, the measurements kept with
// the stored answers in the ledger.
func (s *Service) loadMeasurements(dataset string) error {
	lister, ok := s.led.(AnswerLister)
	if !ok {
		return nil
	}
	return s.reuse.Load(dataset, func() ([]*reuse.Record, error) {
		stored, err := lister.Answers(dataset, answerKeyVersion+":")
		if err != nil {
			return nil, err
		}
		var out []*reuse.Record
		for _, a := range stored {
			var sa struct {
				Measured *reuse.Record `json:"measured"`
			}
			if json.Unmarshal(a.Answer, &sa) == nil && sa.Measured != nil {
				out = append(out, sa.Measured)
			}
		}
		return out, nil
	})
}

// reuseRequest is the derivation request of p by the analyst of key, or
// nil when p's answer cannot be derived.
func (s *Service) reuseRequest(p *Prepared, key ledger.Key) *reuse.Request {
	// A query that also asks for the dropped-rows estimate is answered
	// afresh: the estimate is a release of its own, charged with it.
	if p.Opts.Fresh || p.ExplainOnly || p.Dropped != nil || reuse.Eligible(p.Plan) != "" {
		return nil
	}
	shape, why := reuse.ShapeOf(p.Plan, s.declared(p), tableSource(p.decl))
	if why != "" {
		return nil
	}
	if err := s.loadMeasurements(key.Dataset); err != nil {
		s.logger().Warn("the measurements of earlier releases could not be read; answering afresh", "table", key.Dataset, "error", err.Error())
		return nil
	}
	req := &reuse.Request{Plan: p.Plan, Noise: p.Noise, Shape: shape, Confidence: p.Opts.Confidence,
		Analyst: key.Analyst, Shared: p.decl.ReuseReleases == catalog.ReuseShared}
	if p.Accuracy != nil {
		req.Targets = map[int]float64{}
		for o, h := range p.acc.targets {
			req.Targets[o] = h
		}
	}
	return req
}

// fromReleases returns the answer of p derived from earlier releases at no
// charge, or else the top-up that answers it for less, or neither, and
// the shape of p's cells when it was computed and p is what runs (for
// storeAnswer). The
// decision depends on the plan and on what was released (how many cells,
// with which noise), never on the data.
func (s *Service) fromReleases(p *Prepared, key ledger.Key) (*Result, *topUp, *reuse.Shape) {
	req := s.reuseRequest(p, key)
	if req == nil {
		return nil, nil, nil
	}
	prior, why := reuse.Gather(*req, s.reuse.Records(key.Dataset, req.Shape.Context))
	if why != "" {
		return nil, nil, req.Shape
	}
	if ans, why := prior.Answer(*req); why == "" {
		return derivedResult(p, ans), nil, req.Shape
	}
	if t := s.topUp(p, *req, prior); t != nil {
		// The top-up's plan is another ε's (its sums' grids may differ):
		// its shape is its own.
		return nil, t, nil
	}
	return nil, nil, req.Shape
}

// topUp is the partly derived answer of p: when earlier releases cover
// every cell (prior) but not accurately enough, a fresh measurement at a
// smaller ε, combined with them by inverse-variance weighting, may meet
// the accuracy asked. It returns p planned at that ε with what the
// releases give, or nil when the fresh answer at p's own ε is as cheap.
func (s *Service) topUp(p *Prepared, req reuse.Request, prior *reuse.Prior) *topUp {
	if p.Noise.Gaussian {
		return nil
	}
	// The plans the search makes, kept for the one it settles on.
	plans := map[float64]*dpplan.Plan{}
	noiseAt := func(eps float64) (*dpplan.Noise, error) {
		plan, err := p.Plan.Replan(p.Plan.Table, eps, p.Opts.Delta)
		if err != nil {
			return nil, err
		}
		plans[eps] = plan
		return plan.NewNoise(nil)
	}
	eps, ok := prior.SmallestTopUp(req, noiseAt)
	if !ok || eps >= p.Opts.Epsilon {
		return nil
	}
	plan := plans[eps]
	if plan == nil {
		return nil
	}
	nz, err := plan.NewNoise(p.Opts.Source)
	if err != nil || nz.Gaussian {
		return nil
	}
	text, err := sqlgen.SQL(plan, p.dialect)
	if err != nil {
		return nil
	}
	q := *p
	q.Plan, q.Noise, q.SQL = plan, nz, text
	q.Opts.Epsilon = eps
	if statementsFit(&q) != nil {
		return nil
	}
	return &topUp{orig: p, fresh: &q, req: req, prior: prior}
}

// topUp is what a partly derived answer combines its fresh measurement
// with.
type topUp struct {
	// orig is the query as asked, fresh the same at the top-up's ε.
	orig, fresh *Prepared
	req         reuse.Request
	prior       *reuse.Prior
}

// combine turns the fresh answer of the topped-up query into the answer
// combined with the earlier releases; if the combination fails (it was
// checked before the charge, so only a damaged record can make it), the
// fresh answer is released as it is.
func (t *topUp) combine(fresh *Prepared, res *Result) *Result {
	ans, why := t.prior.Combine(t.req, fresh.Noise, res.measured)
	if why != "" {
		return res
	}
	out := derivedResult(t.orig, ans)
	out.Cost, out.Split, out.measured = res.Cost, res.Split, res.measured
	out.Derived.TopUp = fresh.Opts.Epsilon
	out.Notes[0] = fmt.Sprintf("combined with releases %s: a fresh measurement at ε=%g instead of ε=%g, weighted with the earlier noisy values by inverse variance; only ε=%g was charged",
		joinIDs(ans.Releases), fresh.Opts.Epsilon, t.orig.Opts.Epsilon, fresh.Opts.Epsilon)
	return out
}

func joinIDs(ids []uint64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(s, ", ")
}

// derivedResult lays a derived answer out as a released one.
func derivedResult(p *Prepared, ans *reuse.Answer) *Result {
	plan, q := p.Plan, p.Plan.Query
	aggCol := map[int]int{}
	for j, a := range plan.Aggregates {
		aggCol[a.Output] = j
	}
	keyCol := map[string]int{}
	for i, g := range q.GroupBy {
		keyCol[g] = i
	}
	d := &Derivation{Releases: ans.Releases, Reconciled: ans.Reconciled}
	res := &Result{Confidence: p.Opts.Confidence, Cost: accounting.Cost{}, Derived: d}
	for _, o := range q.Outputs {
		res.Columns = append(res.Columns, o.Name)
	}
	for g, key := range plan.Released() {
		row := make([]any, len(q.Outputs))
		ci := make([]*dpplan.Interval, len(q.Outputs))
		vars := make([]float64, len(q.Outputs))
		for i, o := range q.Outputs {
			if o.IsKey() {
				row[i] = key[keyCol[o.Key]]
				continue
			}
			j := aggCol[i]
			row[i] = ans.Values[g][j]
			iv := ans.CI[g][j]
			ci[i] = &iv
			vars[i] = ans.Variance[g][plan.Aggregates[j].Releases[0]]
		}
		res.Rows = append(res.Rows, row)
		res.CI = append(res.CI, ci)
		d.Variances = append(d.Variances, vars)
	}
	renderTemporalAggregates(plan, res)
	renderTemporalKeys(plan, res)
	res.Notes = append([]string{d.Note()}, plan.Notes()...)
	if d.Reconciled {
		res.Notes = append(res.Notes, "releases "+joinIDs(d.Releases)+" overlap: reconciled by least squares, so that totals and parts derived from them agree")
	}
	if p.Accuracy != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("accuracy: asked %s at %g%%; the derived intervals meet it", p.Accuracy.Asked, p.Opts.Confidence*100))
	}
	return res
}

// explainDerived says, for EXPLAIN, whether running the query would derive
// its answer from earlier releases, or top them up, and at what cost.
func (s *Service) explainDerived(p *Prepared, key ledger.Key) string {
	q := *p
	q.ExplainOnly = false
	res, t, _ := s.fromReleases(&q, key)
	if res != nil {
		return "running this query now derives its answer from releases " + joinIDs(res.Derived.Releases) + " at no cost (--fresh answers afresh)"
	}
	if t != nil {
		return fmt.Sprintf("running this query now combines releases %s with a fresh measurement at ε=%g instead of ε=%g (--fresh answers afresh)",
			joinIDs(t.prior.Releases()), t.fresh.Opts.Epsilon, p.Opts.Epsilon)
	}
	return ""
}

// storeAnswer stores a charged answer for repeats, with the measurements
// of its release for later derivations, and indexes them. takeOver says
// the answer key was reserved by another run, which never stored its
// answer: if one has been stored since, that one stays. shape is the
// shape of p's cells when the run computed it, else nil.
func (s *Service) storeAnswer(store AnswerStore, key ledger.Key, answerKey string, p *Prepared, res *Result, releaseID uint64, takeOver bool, shape *reuse.Shape) {
	rec := s.measurements(p, res, releaseID, key, shape)
	blob, err := encodeAnswerWith(res, rec)
	if err != nil || len(blob) > ledger.MaxAnswerLen {
		// Not storable (a value without a stored form, or too long):
		// the reservation is marked, and repeats are charged afresh.
		if !takeOver {
			s.abandon(store, key, answerKey)
		}
		return
	}
	if err := store.StoreAnswer(key, answerKey, blob); err != nil {
		if takeOver && errors.Is(err, ledger.ErrNoPendingAnswer) {
			// The slow run stored its own answer after all.
			return
		}
		// The answer is released all the same: it was charged. Asking
		// again then charges again, with fresh noise.
		s.logger().Warn("the answer could not be stored for repeats", "table", key.Dataset,
			"analyst", key.Analyst, "release", releaseID, "error", err.Error())
		return
	}
	s.reuse.Add(key.Dataset, rec)
}

// PreviewCost is what running p now would charge the analyst of key, as a
// dry run says it: nothing when the query was answered before or its
// answer would be derived from earlier releases, the fresh measurement's cost when releases would be topped up,
// else p's own cost; note says which (empty for p's own cost). Like the
// run's own decision, it reads the plan and the releases' noise, never the
// data.
func (s *Service) PreviewCost(p *Prepared, key ledger.Key) (accounting.Cost, string) {
	if p.ExplainOnly {
		return p.Noise.Cost, ""
	}
	// In the run's own order: a stored answer, then a derived one, then a
	// top-up.
	if store, ok := s.led.(AnswerStore); ok {
		if _, ok, err := storedResult(store, key, p.AnswerKey()); err == nil && ok {
			return accounting.Cost{}, "this query was answered before: running it returns the stored answer at no cost"
		}
	}
	res, t, _ := s.fromReleases(p, key)
	if res != nil {
		return accounting.Cost{}, "running this query now derives its answer from releases " + joinIDs(res.Derived.Releases) + " at no cost (--fresh answers afresh)"
	}
	if t != nil {
		return t.fresh.Noise.Cost, fmt.Sprintf("running this query now combines releases %s with a fresh measurement at ε=%s instead of ε=%s (--fresh answers afresh)",
			joinIDs(t.prior.Releases()), accounting.Num(t.fresh.Opts.Epsilon), accounting.Num(p.Opts.Epsilon))
	}
	return p.Noise.Cost, ""
}
