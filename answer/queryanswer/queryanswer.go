// Package queryanswer answers the server's DP SQL requests with package
// query: it adapts a query.Service over a catalog to answer.Answerer.
//
// Unlike the command line, the server answers only on tables where an
// administrator granted the analyst a budget: a request on any other table
// is refused as not granted, before the engine runs and without creating a
// budget.
package queryanswer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// maxPreviewGroups bounds the groups a dry run lists.
const maxPreviewGroups = 1000

// Answerer is an answer.Answerer over a query.Service.
type Answerer struct {
	svc    *query.Service
	cat    *catalog.Catalog
	ledger *ledger.Ledger
	opts   Options
	tables []answer.TableInfo
}

// Options says how an Answerer treats budgets; the zero value is the
// server's.
type Options struct {
	// CatalogBudgets answers on every table, creating the analyst's budget
	// from the catalog's on first use, as the command line does. Without
	// it only tables on which an administrator granted the analyst a
	// budget are answered.
	CatalogBudgets bool
	// Advice, when set, says how to spend more after a budget refused a
	// charge (total: the table's total budget, every analyst together,
	// refused it); nil gives the server's advice (an admin raises the
	// grant).
	Advice func(total bool, table, analyst string) string
}

// New returns an Answerer that answers with svc over cat and checks grants
// in led (the ledger svc charges).
func New(svc *query.Service, cat *catalog.Catalog, led *ledger.Ledger) (*Answerer, error) {
	return NewWith(svc, cat, led, Options{})
}

// NewWith is New with options.
func NewWith(svc *query.Service, cat *catalog.Catalog, led *ledger.Ledger, opts Options) (*Answerer, error) {
	if svc == nil || cat == nil || led == nil {
		return nil, errors.New("queryanswer: service, catalog and ledger are required")
	}
	a := &Answerer{svc: svc, cat: cat, ledger: led, opts: opts}
	for _, t := range cat.Tables {
		a.tables = append(a.tables, tableInfo(t))
	}
	return a, nil
}

func tableInfo(t *catalog.Table) answer.TableInfo {
	ti := answer.TableInfo{Name: t.Name, IDSpace: t.IDSpace, PrivacyUnit: t.PrivacyUnit, Public: t.Public}
	if t.HasPrivacyUnit() {
		ti.MaxGroupsPerUnit, ti.MaxRowsPerGroup = int(t.MaxGroupsPerUnit), int(t.MaxRowsPerGroup)
	}
	for _, c := range t.Columns {
		ci := answer.ColumnInfo{Name: c.Name, Type: c.Type, Lower: c.Lower, Upper: c.Upper, Nullable: c.Nullable}
		for _, v := range c.Values {
			if c.Type.Temporal() {
				ci.Values = append(ci.Values, schema.FormatValue(c.Type, v))
				continue
			}
			ci.Values = append(ci.Values, valueText(v))
		}
		if c.Type.Temporal() && c.Bounded() {
			ci.Range = []string{schema.FormatValue(c.Type, int64(*c.Lower)), schema.FormatValue(c.Type, int64(*c.Upper))}
		}
		ti.Columns = append(ti.Columns, ci)
	}
	return ti
}

func valueText(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// Tables lists the catalog's tables on which analyst has a budget; ""
// lists them all.
func (a *Answerer) Tables(analyst string) []answer.TableInfo {
	var out []answer.TableInfo
	for _, t := range a.tables {
		if analyst != "" && !t.Public {
			// A public table has no budget: every analyst may join it.
			if _, err := a.ledger.Status(ledger.Key{Dataset: t.BudgetDataset(), Analyst: analyst}); err != nil {
				continue
			}
		}
		out = append(out, t)
	}
	return out
}

// classify turns the query package's errors into answer errors.
func (a *Answerer) classify(err error, table, analyst string) error {
	var re *ir.RefusedError
	var ex *accounting.ExceededError
	var ee *query.EngineError
	var ue *engine.UnavailableError
	switch {
	case errors.As(err, &ex):
		total := errors.Is(err, ledger.ErrTotalExceeded)
		advice := ". To spend more, an admin raises the analyst's grant (the dashboard's admin view or POST /v1/admin/grants)"
		if total {
			advice = ". The total budget of every analyst together is spent; to spend more, an admin raises the table's total (POST /v1/admin/grants with \"total\": true)"
		}
		if a.opts.Advice != nil {
			advice = ". " + a.opts.Advice(total, table, analyst)
		}
		return &answer.Error{Kind: answer.KindBudgetExceeded, Err: err, Message: err.Error() + advice}
	case errors.As(err, &re):
		kind := answer.KindRefused
		switch re.Kind {
		case ir.KindSyntax:
			kind = answer.KindSyntax
		case ir.KindUnknownTable:
			kind = answer.KindUnknownTable
		case ir.KindUnknownColumn:
			kind = answer.KindUnknownColumn
		}
		return &answer.Error{Kind: kind, Message: err.Error(), Err: err}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		if errors.As(err, &ee) {
			// Stopped while the engine ran: its cost had been charged.
			return &answer.Error{Kind: answer.KindTimeout, Message: ee.Error(), Err: err}
		}
		return &answer.Error{Kind: answer.KindTimeout, Message: "the query ran out of time before its cost was charged; nothing was charged", Err: err}
	case errors.As(err, &ue):
		// The driver's text (hosts, users) is for the data owner's logs.
		return &answer.Error{Kind: answer.KindUnavailable, Message: "the database that holds the table cannot be reached; the query was refused and nothing was charged; try again later", Err: err}
	case errors.As(err, &ee):
		// The message withholds the engine's text; it is safe to show.
		return &answer.Error{Kind: answer.KindInternal, Message: ee.Error(), Err: err}
	}
	return err
}

// Answer answers req: every refusal, the grant check and a dry run happen
// before the engine runs; an answer is returned only after its charge has
// committed.
func (a *Answerer) Answer(ctx context.Context, req answer.Request) (*answer.Response, error) {
	opts := query.Options{Epsilon: req.Epsilon, Delta: req.Delta, Confidence: req.Confidence, Analyst: req.Analyst, Fresh: req.Fresh, Dropped: req.Dropped,
		RequireGrant: !a.opts.CatalogBudgets}
	if a := req.Accuracy; a != nil {
		opts.Accuracy = &query.Accuracy{All: a.All, Columns: a.Columns}
	}
	if opts.Epsilon == 0 && opts.Accuracy == nil {
		opts.Epsilon = query.DefaultEpsilon
	}
	if opts.Confidence == 0 {
		opts.Confidence = query.DefaultConfidence
	}
	p, err := a.svc.PrepareContext(ctx, req.SQL, opts)
	if err != nil {
		var re *ir.RefusedError
		if errors.As(err, &re) {
			return nil, a.classify(err, "", req.Analyst)
		}
		return nil, &answer.Error{Kind: answer.KindBadRequest, Message: err.Error(), Err: err}
	}
	if req.DryRun {
		return a.dryRun(p, req.Analyst)
	}
	// The grant check is the service's: it reads whether the budget exists
	// once, before anything is read or charged, and the reply's budget is
	// the charge's receipt (or, for a free answer, the ledger's figures at
	// that moment), so nothing here reads the budget again.
	res, err := a.svc.Run(ctx, p)
	if errors.Is(err, ledger.ErrNoBudget) {
		return nil, notGranted(req.Analyst, p.Plan.Table.Name)
	}
	if err != nil {
		return nil, a.classify(err, p.Plan.Table.Name, req.Analyst)
	}
	resp := &answer.Response{
		Columns: res.Columns,
		Types:   p.Plan.ColumnTypes(),
		Rows:    res.Rows,
		CI:      make([][]*[2]float64, len(res.CI)),
		Cost:    answer.Pair{Epsilon: res.Cost.Epsilon, Delta: res.Cost.Delta},
		Budget: answer.BudgetLeft{
			Spent:     answer.Pair{Epsilon: res.Budget.Spent.Epsilon, Delta: res.Budget.Spent.Delta},
			Remaining: answer.Pair{Epsilon: res.Budget.Remaining.Epsilon, Delta: res.Budget.Remaining.Delta},
			Total:     answer.TotalInfoOf(res.Budget.Total),
			Dataset:   res.Budget.Dataset,
			Analyst:   res.Budget.Analyst,
		},
		Table:      p.Plan.Table.Name,
		Notes:      append(splitNotes(res.Split), res.Notes...),
		Confidence: res.Confidence,
		ReleaseID:  res.ReleaseID,
		Split:      shares(res.Split),
	}
	resp.Budget.Rule = string(res.Budget.Rule)
	if d := res.Derived; d != nil {
		resp.Derived = &answer.Derived{Releases: d.Releases, Variances: d.Variances, TopUp: d.TopUp}
	}
	if d := res.Dropped; d != nil {
		resp.Dropped = &answer.Dropped{Share: d.Share, Low: d.Low, High: d.High, Kept: d.Kept, Dropped: d.Dropped, CapPerPerson: d.Cap, Epsilon: d.Epsilon}
	}
	if res.Repeated {
		resp.Repeated = true
		resp.OriginalCost = &answer.Pair{Epsilon: res.OriginalCost.Epsilon, Delta: res.OriginalCost.Delta}
		resp.Notes = append([]string{fmt.Sprintf("repeated query: the answer stored when it was first asked is returned; nothing was charged now (it cost ε=%s, δ=%s then)",
			accounting.Num(res.OriginalCost.Epsilon), accounting.Num(res.OriginalCost.Delta))}, resp.Notes...)
	}
	for i, row := range res.CI {
		resp.CI[i] = make([]*[2]float64, len(row))
		for j, iv := range row {
			if iv != nil {
				resp.CI[i][j] = &[2]float64{iv.Low, iv.High}
			}
		}
	}
	return resp, nil
}

// notGranted is the refusal of a query on a table where analyst has no
// budget.
func notGranted(analyst, table string) error {
	return answer.Errorf(answer.KindNotGranted, "analyst %q has no budget on table %q: ask an administrator for a grant", analyst, table)
}

// dryRun answers a dry run of p: what it would cost and whether it would
// be refused, with the analyst's budget as the ledger holds it now.
func (a *Answerer) dryRun(p *query.Prepared, analyst string) (*answer.Response, error) {
	key := ledger.Key{Dataset: p.Decl().BudgetDataset(), Analyst: analyst}
	st, err := a.ledger.Status(key)
	if errors.Is(err, ledger.ErrNoBudget) && a.opts.CatalogBudgets {
		// Created from the catalog's budget when the answer is charged.
		st, err = ledger.Status{Key: key}, nil
	}
	if errors.Is(err, ledger.ErrNoBudget) {
		return nil, notGranted(analyst, p.Plan.Table.Name)
	}
	if err != nil {
		return nil, err
	}
	resp, err := a.preview(p, st)
	if err != nil {
		return nil, err
	}
	cost, note := a.svc.PreviewCost(p, key)
	if note != "" {
		resp.Cost = answer.Pair{Epsilon: cost.Epsilon, Delta: cost.Delta}
		resp.Notes = append([]string{note}, resp.Notes...)
	}
	resp.WouldRefuse = a.wouldRefuse(p, key, cost)
	return resp, nil
}

// wouldRefuse says whether running p now would be refused for its budget,
// as the run itself checks before reading any data, at cost (what the run
// would charge): nil when the cost fits, when the query is free (public
// keys only, asked before: its stored answer is returned, or derived from
// earlier releases), or when the check itself failed (the run then says
// why).
func (a *Answerer) wouldRefuse(p *query.Prepared, key ledger.Key, cost accounting.Cost) *answer.Refusal {
	if p.ExplainOnly || p.Plan.PublicKeysOnly() || cost.Epsilon == 0 && cost.Delta == 0 {
		return nil
	}
	err := a.svc.CheckCost(p, key, cost)
	var ex *accounting.ExceededError
	if !errors.As(err, &ex) {
		return nil
	}
	se := answer.AsError(a.classify(err, p.Plan.Table.Name, key.Analyst))
	return &answer.Refusal{Kind: se.Kind, Reason: se.Message}
}

func shares(split []dpplan.Share) []answer.Share {
	var out []answer.Share
	for _, sh := range split {
		s := answer.Share{Column: sh.Column, Epsilon: sh.Epsilon, Delta: sh.Delta, Mechanisms: []answer.Mechanism{}}
		for _, m := range sh.Mechanisms {
			s.Mechanisms = append(s.Mechanisms, answer.Mechanism{Name: m.Name, Epsilon: m.Epsilon, Sensitivity: m.Sensitivity, Scale: m.Scale})
		}
		out = append(out, s)
	}
	return out
}

func splitNotes(split []dpplan.Share) []string {
	if len(split) < 2 {
		return nil
	}
	var parts []string
	for _, s := range split {
		parts = append(parts, fmt.Sprintf("%s ε=%s", s.Column, accounting.Note(s.Epsilon)))
	}
	return []string{"ε split among the aggregates: " + strings.Join(parts, ", ")}
}

// preview describes what a query would release without touching the data:
// the groups (from the public value lists), the cost, the budget before the
// charge, and for each noisy value the interval half-width as [-h, h]. The
// half-widths of COUNT and SUM do not depend on the data; an AVG's depends
// on the noisy count and a quantile's on the values, so theirs are the
// widest the declared range allows, and the response names those columns
// (DataDependent) and says so in a note. Nothing is charged.
func (a *Answerer) preview(p *query.Prepared, st ledger.Status) (*answer.Response, error) {
	q := p.Plan.Query
	resp := &answer.Response{
		Cost:       answer.Pair{Epsilon: p.Noise.Cost.Epsilon, Delta: p.Noise.Cost.Delta},
		Budget:     answer.BudgetLeft{Spent: answer.Pair{Epsilon: st.Spent.Epsilon, Delta: st.Spent.Delta}, Remaining: answer.Pair{Epsilon: st.Remaining.Epsilon, Delta: st.Remaining.Delta}, Total: answer.TotalInfoOf(st.Total)},
		Table:      p.Plan.Table.Name,
		DryRun:     true,
		Confidence: p.Opts.Confidence,
		Types:      p.Plan.ColumnTypes(),
	}
	resp.Budget.Rule = string(st.Rule)
	for _, o := range q.Outputs {
		if !o.Hidden {
			resp.Columns = append(resp.Columns, o.Name)
		}
	}
	keys := p.Plan.Released()
	if len(keys) > maxPreviewGroups {
		resp.Notes = append(resp.Notes, fmt.Sprintf("preview lists the first %d of %d groups", maxPreviewGroups, len(keys)))
		keys = keys[:maxPreviewGroups]
	}
	half := make([]float64, len(p.Plan.Aggregates))
	if len(p.Plan.Released()) <= maxPreviewGroups {
		// Every cell, the hidden ones too (dpplan.Plan.MeasureRest): the
		// noise is laid out over all of them.
		zero := &dpplan.Exact{Stats: make([][]*big.Int, len(p.Plan.Keys))}
		for g := range zero.Stats {
			zero.Stats[g] = make([]*big.Int, len(p.Plan.Statistics))
			for s := range zero.Stats[g] {
				zero.Stats[g][s] = new(big.Int)
			}
		}
		_, cis, err := p.Noise.Apply(zero, p.Opts.Confidence)
		if err != nil {
			return nil, err
		}
		if len(cis) > 0 {
			for j, iv := range cis[0] {
				half[j] = (iv.High - iv.Low) / 2
			}
		}
	}
	// A COUNT's or SUM's half-width does not depend on the data: it is
	// the noise's, not the width of one noisy draw's interval (which the
	// range a count or sum lies in can cut: a draw below zero gave ±0).
	for j := range half {
		if h, note := p.Noise.HalfWidth(j, p.Opts.Confidence); note == "" && h > 0 && !math.IsInf(h, 0) {
			half[j] = h
		}
	}
	aggCol := map[int]int{}
	for j, ag := range p.Plan.Aggregates {
		aggCol[ag.Output] = j
	}
	keyCol := map[string]int{}
	for i, g := range q.GroupBy {
		keyCol[g] = i
	}
	for _, key := range keys {
		row := make([]any, len(q.Outputs))
		ci := make([]*[2]float64, len(q.Outputs))
		for i, o := range q.Outputs {
			switch {
			case o.Post != nil:
				continue // computed from released values: no preview
			case o.Agg == nil:
				row[i] = key[keyCol[o.Key]]
				continue
			}
			h := half[aggCol[i]]
			ci[i] = &[2]float64{-h, h}
		}
		row, ci = visible(q, row, ci)
		resp.Rows = append(resp.Rows, row)
		resp.CI = append(resp.CI, ci)
	}
	// How the released groups are chosen: the public lists, or DP key
	// selection with its share of the budget and its threshold, in which
	// case no group can be listed before the run.
	resp.Notes = append(resp.Notes, "groups: "+p.Explain().Keys)
	resp.Notes = append(resp.Notes, "dry run: nothing was read or charged; intervals are shown as ± half-widths around zero")
	if p.Accuracy != nil {
		resp.Notes = append(resp.Notes, p.Accuracy.Lines()...)
	}
	if d := p.Dropped; d != nil {
		resp.Notes = append(resp.Notes, fmt.Sprintf("the run also estimates the share of rows contribution bounding drops, at ε=%s of the cost", accounting.Note(d.Epsilon)))
	}
	for i, o := range q.Outputs {
		if o.Agg == nil || o.Hidden {
			continue
		}
		if dpplan.DataIndependentWidth(o.Agg.Func) {
			continue
		}
		resp.DataDependent = append(resp.DataDependent, o.Name)
		h := half[aggCol[i]]
		resp.Notes = append(resp.Notes, fmt.Sprintf("%s (%s): its interval depends on the data (the group's size, or its values for a quantile), unknown before the run; ±%s is the widest the declared bounds allow, and the answer's interval is usually far narrower", o.Name, o.Agg.Func, strconv.FormatFloat(h, 'g', 4, 64)))
	}
	return resp, nil
}

// visible keeps a preview row's cells of the outputs that are shown
// (hidden aggregates feed computed columns only).
func visible(q *ir.Query, row []any, ci []*[2]float64) ([]any, []*[2]float64) {
	var r []any
	var c []*[2]float64
	for i, o := range q.Outputs {
		if !o.Hidden {
			r, c = append(r, row[i]), append(c, ci[i])
		}
	}
	return r, c
}
