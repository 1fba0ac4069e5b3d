package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/query/parse"
)

// DefaultSelectionDelta is the δ an accuracy-first query spends on key
// selection (a GROUP BY column without a public value list) when the
// analyst gives no δ: the δ the docs suggest per key selection.
const DefaultSelectionDelta = 1e-6

// Accuracy is what an analyst asks for instead of an ε: the half-width of
// the released values' intervals at the query's confidence level. dpstat
// then spends the smallest ε that gives every targeted cell an interval at
// most that wide (see docs/sql.md, "Asking for an accuracy").
type Accuracy struct {
	// All, when > 0, is the half-width asked for every column whose
	// half-width the plan decides alone: COUNT(*), COUNT(col),
	// COUNT(DISTINCT col) and SUM(col).
	All float64
	// Columns holds a half-width per output column name, when All is 0.
	Columns map[string]float64
}

// String spells the accuracy as the front ends read it (answer.ParseAccuracy),
// columns sorted.
func (a *Accuracy) String() string {
	if a == nil {
		return ""
	}
	if len(a.Columns) == 0 {
		return strconv.FormatFloat(a.All, 'g', -1, 64)
	}
	names := make([]string, 0, len(a.Columns))
	for n := range a.Columns {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + strconv.FormatFloat(a.Columns[n], 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

// validate checks the numbers of an accuracy, as the front ends do
// (answer.ParseAccuracy, Accuracy.Check there), for callers of the service
// that build one themselves.
func (a *Accuracy) validate() error {
	if len(a.Columns) == 0 {
		return checkHalfWidth("accuracy", a.All)
	}
	if a.All != 0 {
		return ir.Refuse("accuracy: give one half-width for every column or one per column, not both")
	}
	for n, h := range a.Columns {
		if strings.TrimSpace(n) == "" {
			return ir.Refuse("accuracy names an empty column: want column=half-width pairs such as n=20")
		}
		if err := checkHalfWidth("accuracy of "+n, h); err != nil {
			return err
		}
	}
	return nil
}

func checkHalfWidth(what string, h float64) error {
	if math.IsNaN(h) || math.IsInf(h, 0) || h <= 0 {
		return ir.Refuse("%s = %v: want a finite number > 0 (a half-width, such as 20)", what, h)
	}
	return nil
}

// AccuracyPlan says how an accuracy target chose a query's ε; EXPLAIN,
// the dry run and the answer's notes show it.
type AccuracyPlan struct {
	// Asked is the accuracy as given (Accuracy.String).
	Asked string `json:"asked"`
	// Confidence is the level the half-widths are at.
	Confidence float64 `json:"confidence"`
	// Epsilon is the smallest ε (of dpplan.EpsilonDigits significant
	// digits) whose planned half-widths meet every target; Delta the δ
	// spent with it (the analyst's, or DefaultSelectionDelta when key
	// selection needs one and none was given).
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// DefaultDelta is true when Delta is DefaultSelectionDelta.
	DefaultDelta bool `json:"default_delta,omitempty"`
	// Targets are the targeted columns.
	Targets []AccuracyTarget `json:"targets"`
	// Untargeted names the noisy columns the target does not apply to,
	// with the reason.
	Untargeted []string `json:"untargeted,omitempty"`
}

// AccuracyTarget is one targeted column: the half-width asked and the one
// planned at the chosen ε (at most the one asked).
type AccuracyTarget struct {
	Column    string  `json:"column"`
	Aggregate string  `json:"aggregate"`
	Asked     float64 `json:"asked"`
	Planned   float64 `json:"planned"`
}

// Lines are the accuracy's lines of EXPLAIN and of the answer's notes.
func (a *AccuracyPlan) Lines() []string {
	var parts []string
	for _, t := range a.Targets {
		parts = append(parts, fmt.Sprintf("%s (%s) ±%g, planned ±%.4g", t.Column, t.Aggregate, t.Asked, t.Planned))
	}
	pct := strconv.FormatFloat(a.Confidence*100, 'g', -1, 64)
	l := []string{fmt.Sprintf("accuracy: asked at %s%%: %s; ε=%g is the smallest (to %d significant digits) whose planned half-widths meet every target in every released group",
		pct, strings.Join(parts, ", "), a.Epsilon, dpplan.EpsilonDigits)}
	if a.DefaultDelta {
		l = append(l, fmt.Sprintf("accuracy: the query selects its groups by DP key selection and no δ was given: it spends the default δ=%g", a.Delta))
	}
	return append(l, a.Untargeted...)
}

// accuracySearch is what planning for an accuracy keeps, so that a
// refusal for budget can say what the budget left would buy.
type accuracySearch struct {
	q          *ir.Query
	table      *ir.Table
	delta      float64
	confidence float64
	// targets maps an output index to its asked half-width.
	targets map[int]float64
	// base is the query planned once, whose groups later plans reuse.
	base *dpplan.Plan
}

// build plans the query at eps and calibrates its noise as Prepare does.
func (s *accuracySearch) build(eps float64) (*dpplan.Plan, *dpplan.Noise, error) {
	var plan *dpplan.Plan
	var err error
	if s.base == nil {
		plan, err = dpplan.NewPlanDelta(s.q, s.table, eps, s.delta)
	} else {
		plan, err = s.base.Replan(s.table, eps, s.delta)
	}
	if err != nil {
		return nil, nil, err
	}
	nz, err := plan.NewNoise(nil)
	if err != nil {
		return nil, nil, err
	}
	return plan, plan.ChooseNoise(nz, nil, s.delta, s.confidence), nil
}

// widths returns the planned half-width of every targeted aggregate at
// the noise nz, with its output index.
func (s *accuracySearch) widths(plan *dpplan.Plan, nz *dpplan.Noise) map[int]float64 {
	out := map[int]float64{}
	for j, a := range plan.Aggregates {
		if _, ok := s.targets[a.Output]; !ok {
			continue
		}
		h, ok := nz.TargetedHalfWidth(j, s.confidence)
		if !ok || math.IsNaN(h) {
			h = math.Inf(1)
		}
		out[a.Output] = math.Max(h, 0) // never −0
	}
	return out
}

// meets reports whether the plan at eps gives every target its half-width.
func (s *accuracySearch) meets(eps float64) bool {
	plan, nz, err := s.build(eps)
	if err != nil {
		return false
	}
	w := s.widths(plan, nz)
	for o, h := range s.targets {
		if got, ok := w[o]; !ok || got > h {
			return false
		}
	}
	return true
}

// resolveAccuracy maps an accuracy to the outputs it targets (output index
// to half-width) and says why the other noisy outputs are not targeted.
// A per-column accuracy naming a column that is not an output, or whose
// half-width depends on the data, is refused naming the columns accepted.
func resolveAccuracy(q *ir.Query, acc *Accuracy) (map[int]float64, []string, error) {
	var accepted []string
	why := map[int]string{}
	for i, o := range q.Outputs {
		if o.Hidden || o.IsKey() {
			continue
		}
		if o.Agg != nil && o.Post == nil && dpplan.DataIndependentWidth(o.Agg.Func) {
			accepted = append(accepted, o.Name)
			continue
		}
		why[i] = untargetedReason(q, o)
	}
	targets := map[int]float64{}
	if len(acc.Columns) == 0 {
		for i, o := range q.Outputs {
			if _, bad := why[i]; !o.Hidden && !o.IsKey() && !bad {
				targets[i] = acc.All
			}
		}
		if len(targets) == 0 {
			var reasons []string
			for i := range q.Outputs {
				if r, ok := why[i]; ok {
					reasons = append(reasons, r)
				}
			}
			return nil, nil, ir.Refuse("accuracy %g: the query has no COUNT, SUM or COUNT(DISTINCT) column, whose half-width the plan decides before any data is read (%s); ask for an ε instead (--epsilon), or add the COUNT and SUM the column is made of",
				acc.All, strings.Join(reasons, "; "))
		}
	} else {
		names := make([]string, 0, len(acc.Columns))
		for n := range acc.Columns {
			names = append(names, n)
		}
		sort.Strings(names)
		list := strings.Join(accepted, ", ")
		if list == "" {
			list = "none: the query has no COUNT, SUM or COUNT(DISTINCT) column"
		}
		for _, n := range names {
			found := false
			for i, o := range q.Outputs {
				if o.Hidden || !strings.EqualFold(o.Name, n) {
					continue
				}
				found = true
				if o.IsKey() {
					return nil, nil, ir.Refuse("accuracy of %s: %s is a group key, not a noisy value; the columns that accept an accuracy are %s", n, o.Name, list)
				}
				if r, bad := why[i]; bad {
					return nil, nil, ir.Refuse("accuracy of %s: %s; the columns that accept an accuracy are %s", n, r, list)
				}
				targets[i] = acc.Columns[n]
			}
			if !found {
				return nil, nil, ir.RefuseAs(ir.KindUnknownColumn, "accuracy of %s: the query has no output column %s; the columns that accept an accuracy are %s", n, n, list)
			}
		}
	}
	var untargeted []string
	for i, o := range q.Outputs {
		if _, t := targets[i]; t || o.Hidden || o.IsKey() {
			continue
		}
		if r, ok := why[i]; ok {
			untargeted = append(untargeted, "accuracy: not targeted: "+r+"; it gets its share of the ε chosen, and the interval reported with the answer is the real one")
		} else {
			untargeted = append(untargeted, fmt.Sprintf("accuracy: not targeted: %s (no half-width asked for it); it gets its share of the ε chosen", o.Name))
		}
	}
	return targets, untargeted, nil
}

// untargetedReason says why output o's half-width is not known before the
// data is read.
func untargetedReason(q *ir.Query, o ir.Output) string {
	if o.Post != nil {
		return fmt.Sprintf("%s (%s) is computed from other released values, its interval from theirs", o.Name, ir.PostString(o.Post, q))
	}
	a := o.Agg
	switch a.Func {
	case ir.Avg:
		return fmt.Sprintf("%s (%s) has a half-width that depends on the noisy count (about ±h/n for a group of n rows): ask for the accuracy of the SUM and COUNT it is made of", o.Name, a)
	case ir.VarPop, ir.VarSamp, ir.StddevPop, ir.StddevSamp:
		return fmt.Sprintf("%s (%s) has a half-width that depends on the group's size", o.Name, a)
	}
	return fmt.Sprintf("%s (%s) is chosen among candidate values by their ranks: its interval depends on the values", o.Name, a)
}

// needsSelection reports whether q groups by a column without public
// values, which key selection (and so δ) answers.
func needsSelection(q *ir.Query, table *ir.Table) bool {
	rel, err := ir.Relation(q, table)
	if err != nil {
		return false
	}
	p := &dpplan.Plan{Query: q, Table: rel}
	for _, g := range q.GroupBy {
		if p.KeyValues(g) == nil {
			return true
		}
	}
	return false
}

// planAccuracy finds the ε (and δ) of an accuracy-first query: the
// smallest ε whose planned half-widths meet every target. Only the plan
// and the catalog decide it; nothing is read or charged.
func planAccuracy(ctx context.Context, q *ir.Query, table *ir.Table, opts Options) (*AccuracyPlan, *accuracySearch, error) {
	targets, untargeted, err := resolveAccuracy(q, opts.Accuracy)
	if err != nil {
		return nil, nil, err
	}
	s := &accuracySearch{q: q, table: table, delta: opts.Delta, confidence: opts.Confidence, targets: targets}
	ap := &AccuracyPlan{Asked: opts.Accuracy.String(), Confidence: opts.Confidence, Untargeted: untargeted}
	if s.delta == 0 && needsSelection(q, table) {
		s.delta, ap.DefaultDelta = DefaultSelectionDelta, true
	}
	// A refusal that does not depend on ε comes first, as with --epsilon.
	base, _, err := s.build(DefaultEpsilon)
	if err != nil {
		return nil, nil, err
	}
	s.base = base
	eps, ok := dpplan.SmallestEpsilon(func(e float64) bool { return ctx.Err() == nil && s.meets(e) })
	if err := ctx.Err(); err != nil {
		return nil, nil, parse.TimeRefusal(err)
	}
	plan, nz, err := s.build(eps)
	if err != nil {
		return nil, nil, err
	}
	w := s.widths(plan, nz)
	if !ok {
		var parts []string
		for _, o := range sortedOutputs(targets) {
			parts = append(parts, fmt.Sprintf("%s ±%.4g (asked ±%g)", q.Outputs[o].Name, w[o], targets[o]))
		}
		return nil, nil, ir.Refuse("accuracy %s: no ε up to %g gives it; at ε=%g the planned half-widths are %s",
			ap.Asked, dpplan.MaxSearchEpsilon, dpplan.MaxSearchEpsilon, strings.Join(parts, ", "))
	}
	ap.Epsilon, ap.Delta = eps, s.delta
	for _, o := range sortedOutputs(targets) {
		ap.Targets = append(ap.Targets, AccuracyTarget{Column: q.Outputs[o].Name, Aggregate: q.Outputs[o].Agg.String(), Asked: targets[o], Planned: w[o]})
	}
	return ap, s, nil
}

func sortedOutputs(m map[int]float64) []int {
	out := make([]int, 0, len(m))
	for o := range m {
		out = append(out, o)
	}
	sort.Ints(out)
	return out
}

// bestWithin says what the budget left would buy an accuracy-first query
// that it cannot pay for: the largest ε whose cost fits (found by a
// bisection of fixed length between dpplan.MinSearchEpsilon and the ε
// refused) and the half-widths it gives the targeted columns. fits decides
// from the budget alone.
func (s *accuracySearch) bestWithin(refused float64, fits func(accounting.Cost) bool) string {
	costFits := func(eps float64) bool {
		_, nz, err := s.build(eps)
		return err == nil && fits(nz.Cost)
	}
	if !costFits(dpplan.MinSearchEpsilon) {
		return fmt.Sprintf("the budget left cannot pay for any ε ≥ %g with δ=%g, so it buys no accuracy", dpplan.MinSearchEpsilon, s.delta)
	}
	lo, hi := math.Log(dpplan.MinSearchEpsilon), math.Log(refused)
	for i := 0; i < dpplan.SearchSteps; i++ {
		mid := lo + (hi-lo)/2
		if costFits(math.Exp(mid)) {
			lo = mid
		} else {
			hi = mid
		}
	}
	best := math.Exp(lo)
	plan, nz, err := s.build(best)
	if err != nil {
		return ""
	}
	w := s.widths(plan, nz)
	var parts []string
	for _, o := range sortedOutputs(s.targets) {
		parts = append(parts, fmt.Sprintf("%s ±%.4g (asked ±%g)", s.q.Outputs[o].Name, w[o], s.targets[o]))
	}
	return fmt.Sprintf("the best the budget left would buy is ε≈%.4g: %s", best, strings.Join(parts, ", "))
}

// budgetRefusal is the error of a query its budget cannot pay for
// (err wraps an *accounting.ExceededError): nothing was charged. An
// accuracy-first query also says the best half-widths the budget left
// would buy.
func (p *Prepared) budgetRefusal(err error, led Ledger, key ledger.Key) error {
	if p.acc == nil {
		return fmt.Errorf("query refused, nothing charged: %w", err)
	}
	var ex *accounting.ExceededError
	errors.As(err, &ex)
	fits := func(c accounting.Cost) bool {
		return c.Epsilon <= ex.Remaining.Epsilon && c.Delta <= ex.Remaining.Delta
	}
	if chk, ok := led.(BudgetChecker); ok {
		fits = func(c accounting.Cost) bool { return chk.Check(key, c) == nil }
	}
	return fmt.Errorf("query refused, nothing charged: accuracy %s needs ε=%g δ=%g: %w; %s",
		p.Accuracy.Asked, p.Accuracy.Epsilon, p.Accuracy.Delta, err, p.acc.bestWithin(p.Opts.Epsilon, fits))
}
