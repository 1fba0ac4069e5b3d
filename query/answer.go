package query

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/query/parse"
	"github.com/dpstat/dpstat/query/sqlgen"
	"github.com/dpstat/dpstat/random"
)

// Ledger is what answering needs of a budget ledger; *ledger.Ledger
// provides it, and tests substitute their own.
type Ledger interface {
	// EnsureBudget creates the budget of k with limit def if it does not
	// exist and returns its status.
	EnsureBudget(k ledger.Key, def accounting.EpsDelta, rule accounting.Rule) (ledger.Status, error)
	// Charge commits a release's cost durably, or refuses it.
	Charge(ctx context.Context, c ledger.Charge) (ledger.Receipt, error)
}

// Service answers queries over a catalog's tables. It is safe for
// concurrent use if its engine and ledger are.
type Service struct {
	cat *catalog.Catalog
	eng engine.Engine
	led Ledger

	// forms remembers the tables that had a group too large for double
	// sums, so that their next queries go straight to IntegerForm instead
	// of running twice.
	mu    sync.Mutex
	forms map[string]dpplan.Form
	// flights holds a channel per repeat-safe query being answered now,
	// closed when it is done, so that an identical query waits for its
	// stored answer instead of paying again.
	flights map[string]chan struct{}
	log     *slog.Logger
	// public holds the facts of the catalog's public tables, read when
	// the service starts.
	public map[string]*ir.PublicFacts
	// obs is told the engine time of each charged query (observe.go).
	obs Observer
}

// NewService registers every table of the catalog with the engine (which
// must implement engine.Registrar) and returns a service that charges led.
func NewService(ctx context.Context, cat *catalog.Catalog, eng engine.Engine, led Ledger) (*Service, error) {
	if cat == nil || eng == nil || led == nil {
		return nil, errors.New("query: NewService needs a catalog, an engine and a ledger")
	}
	if err := Register(ctx, cat, eng); err != nil {
		return nil, err
	}
	public, err := readPublicFacts(ctx, cat, eng)
	if err != nil {
		return nil, err
	}
	return &Service{cat: cat, eng: eng, led: led, public: public}, nil
}

// Register exposes every table of the catalog in the engine under its
// name, with only its declared columns, cast to their declared types (a
// NaN reads as NULL). A table with float columns is also exposed with its
// NaNs kept, for the fast form of sums.
func Register(ctx context.Context, cat *catalog.Catalog, eng engine.Engine) error {
	for _, t := range cat.Tables {
		cols := make([]engine.Column, len(t.Columns))
		floats := false
		for i, c := range t.Columns {
			cols[i] = engine.Column{Name: c.Name, Type: engineType(c.Type), Source: c.From}
			floats = floats || c.Type == catalog.Float
		}
		if err := expose(ctx, eng, t, t.Name, cols); err != nil {
			return err
		}
		if !floats {
			continue
		}
		// The same table with NaN left in float columns, for the fast form
		// of sums (see SQL).
		for i := range cols {
			cols[i].KeepNaN = true
		}
		if err := expose(ctx, eng, t, sqlgen.RawView(t.Name), cols); err != nil {
			return err
		}
	}
	return nil
}

// DeclaredNaN checks, for the data owner, the tables of cat that declare
// nan_free (catalog.Table.NaNFree) against their data, registered in eng
// (Register): it returns one line for each float column of such a table
// that holds NaN, with how many, read as the difference between the
// column's count of values with NaN kept and with NaN read as NULL. The
// answer quotes the data: it is for the owner (dpstat catalog check, a
// server's log at start), never for analysts, and it never changes which
// form queries run. It scans each declared table once.
func DeclaredNaN(ctx context.Context, cat *catalog.Catalog, eng engine.Engine) ([]string, error) {
	var out []string
	d := eng.Dialect()
	for _, t := range cat.Tables {
		if !t.NaNFree {
			continue
		}
		var cols, counts []string
		for _, c := range t.Columns {
			if c.Type == catalog.Float {
				cols = append(cols, c.Name)
				counts = append(counts, "count("+d.QuoteIdent(c.Name)+")")
			}
		}
		if len(cols) == 0 {
			continue
		}
		var got [2][]any
		for i, view := range []string{sqlgen.RawView(t.Name), t.Name} {
			rows, err := eng.Query(ctx, "SELECT "+strings.Join(counts, ", ")+" FROM "+d.QuoteIdent(view))
			if err != nil {
				return nil, fmt.Errorf("table %s: counting NaN: %w", t.Name, err)
			}
			if len(rows.Rows) != 1 || len(rows.Rows[0]) != len(cols) {
				return nil, fmt.Errorf("table %s: counting NaN: want one row of %d counts, got %v", t.Name, len(cols), rows.Rows)
			}
			got[i] = rows.Rows[0]
		}
		for i, c := range cols {
			kept, err1 := strconv.ParseInt(fmt.Sprint(got[0][i]), 10, 64)
			clean, err2 := strconv.ParseInt(fmt.Sprint(got[1][i]), 10, 64)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("table %s: counting NaN in %s: want counts, got %v and %v", t.Name, c, got[0][i], got[1][i])
			}
			if kept > clean {
				out = append(out, fmt.Sprintf("table %s declares nan_free, but its column %s holds %d NaN: sums in the fast form count each as a value clamped to one of its bounds (drop the declaration to read NaN as missing)", t.Name, c, kept-clean))
			}
		}
	}
	return out, nil
}

// expose makes table t's source queryable under name: a file through
// engine.Registrar, a table or view of a server engine through
// engine.Binder.
func expose(ctx context.Context, eng engine.Engine, t *catalog.Table, name string, cols []engine.Column) error {
	if t.Format == catalog.Relation {
		b, ok := eng.(engine.Binder)
		if !ok {
			return fmt.Errorf("query: table %s names the relation %s, but engine %s reads only files; set the catalog's `engine: {kind: ...}` to the engine that holds it", t.Name, t.Source, eng.Dialect().Name())
		}
		return b.BindTable(ctx, name, t.Source, cols)
	}
	reg, ok := eng.(engine.Registrar)
	if !ok {
		return fmt.Errorf("query: table %s reads the file %s, but engine %s reads only its own tables; give a table or view of that engine as the source", t.Name, t.Source, eng.Dialect().Name())
	}
	return reg.RegisterFile(ctx, name, t.Source, t.Format, cols)
}

func engineType(t catalog.Type) engine.Type {
	switch t {
	case catalog.Int:
		return engine.Integer
	case catalog.Float:
		return engine.Double
	case catalog.Bool:
		return engine.Boolean
	case catalog.Date:
		return engine.Date
	case catalog.Timestamp:
		return engine.Timestamp
	}
	return engine.Text
}

// DefaultEpsilon is the ε a query spends when the caller does not say.
const DefaultEpsilon = 1.0

// DefaultConfidence is the confidence level of the reported intervals.
const DefaultConfidence = 0.95

// Options are the analyst's parameters for one query.
type Options struct {
	// Epsilon is the query's total ε, split among its aggregates.
	Epsilon float64
	// Delta is the δ the analyst allows, in [0, 1). Only key selection (a
	// GROUP BY column without a public value list) spends δ; other queries
	// are pure ε-DP and spend none.
	Delta float64
	// Confidence is the level of the reported intervals, in (0, 1).
	Confidence float64
	// Analyst names whose budget is charged.
	Analyst string
	// Accuracy, when set, asks for half-widths instead of an ε: Epsilon
	// must then be 0, and Prepare sets it to the smallest ε that meets the
	// accuracy (see Accuracy and Prepared.Accuracy).
	Accuracy *Accuracy
	// Source is the noise source; nil means the secure pooled source.
	// Tests may pass a seeded source.
	Source random.Source
}

func (o Options) validate() error {
	if o.Accuracy != nil {
		if o.Epsilon != 0 {
			return ir.Refuse("an accuracy and an ε (%v) were both given: keep one, the accuracy (dpstat then chooses the smallest ε that meets it) or the ε (dpstat then reports the half-widths it gives)", o.Epsilon)
		}
		if err := o.Accuracy.validate(); err != nil {
			return err
		}
		o.Epsilon = DefaultEpsilon // chosen by Prepare; checked there
	}
	if math.IsNaN(o.Epsilon) || math.IsInf(o.Epsilon, 0) || o.Epsilon <= 0 {
		return ir.Refuse("epsilon = %v: want a finite number > 0", o.Epsilon)
	}
	if math.IsNaN(o.Delta) || o.Delta < 0 || o.Delta >= 1 {
		return ir.Refuse("delta = %v: want a number in [0, 1)", o.Delta)
	}
	if math.IsNaN(o.Confidence) || o.Confidence <= 0 || o.Confidence >= 1 {
		return ir.Refuse("confidence = %v: want a number strictly between 0 and 1, e.g. 0.95", o.Confidence)
	}
	if strings.TrimSpace(o.Analyst) == "" {
		return ir.Refuse("analyst name is empty")
	}
	return nil
}

// Result is a released answer.
type Result struct {
	// Columns names the outputs.
	Columns []string
	// Rows holds one row per released group: keys as the catalog declares
	// them, COUNT as int64, SUM and AVG as float64.
	Rows [][]any
	// CI holds, for each cell of Rows, the interval of a noisy value or nil
	// for a group key.
	CI [][]*dpplan.Interval
	// Confidence is the level of the intervals.
	Confidence float64
	// Cost is what the query was charged.
	Cost accounting.Cost
	// Split says how the query's ε was divided among its aggregates.
	Split []dpplan.Share
	// Budget is the analyst's budget on the table after the charge.
	Budget BudgetState
	// ReleaseID identifies the charge in the ledger.
	ReleaseID uint64
	// Notes state how the answer was computed, for people.
	Notes []string
	// Explanation is set when the statement was EXPLAIN: Rows then hold
	// its text lines, and nothing was read or charged.
	Explanation *Explanation
	// Repeated is true when the same analyst had asked the same query with
	// the same parameters before: the stored answer is returned, Cost is
	// zero and nothing was charged; OriginalCost is what it cost then.
	Repeated     bool
	OriginalCost accounting.Cost
}

// BudgetState is the analyst's budget after a query.
type BudgetState struct {
	Dataset   string              `json:"dataset"`
	Analyst   string              `json:"analyst"`
	Rule      accounting.Rule     `json:"rule"`
	Spent     accounting.EpsDelta `json:"spent"`
	Remaining accounting.EpsDelta `json:"remaining"`
	// Total is the dataset's total budget (every analyst together), when
	// the catalog or an administrator declared one.
	Total *ledger.TotalStatus `json:"total,omitempty"`
}

// Prepared is a checked query ready to run: its plan, its noise and its
// engine SQL. Nothing has run and nothing has been charged.
type Prepared struct {
	Plan  *dpplan.Plan
	Noise *dpplan.Noise
	// SQL is the statement of the plan's first form (see Form); FormSQL
	// spells the later ones, which run only when the data needs them.
	SQL  string
	Opts Options
	// HistogramSQL holds one engine statement per Plan.Histograms entry,
	// run after SQL.
	HistogramSQL []string
	// ExplainOnly is true when the statement was EXPLAIN <query>: Run
	// returns the plan's description and neither reads data nor charges.
	ExplainOnly bool
	// EngineNotes says how the engine reads the table (engine.Describer),
	// for EXPLAIN.
	EngineNotes []string
	// Accuracy is set when the query asked for an accuracy: how its ε
	// (Opts.Epsilon) was chosen.
	Accuracy *AccuracyPlan

	acc *accuracySearch

	dialect engine.Dialect
}

// FormSQL is the engine statement of the prepared query in form f: SQL for
// the first form, generated on demand for the later ones. Empty when SQL is.
func (p *Prepared) FormSQL(f dpplan.Form) (string, error) {
	if p.SQL == "" || f == p.Plan.FirstForm() {
		return p.SQL, nil
	}
	return sqlgen.FormSQL(p.Plan, p.dialect, f)
}

// Prepare parses, checks and plans a query and calibrates its noise. Every
// refusal happens here, before any engine runs.
func (s *Service) Prepare(sql string, opts Options) (*Prepared, error) {
	return s.PrepareContext(context.Background(), sql, opts)
}

// PrepareContext is Prepare within ctx: planning that has not finished when
// ctx is done is refused (nothing is charged), so that a query timeout
// covers planning as well as the engine's run.
func (s *Service) PrepareContext(ctx context.Context, sql string, opts Options) (*Prepared, error) {
	p, err := prepareWith(ctx, s.cat, s.eng.Dialect(), sql, opts, s.public)
	if err != nil {
		return nil, err
	}
	if d, ok := s.eng.(engine.Describer); ok {
		p.EngineNotes = d.Describe(p.Plan.Table.Name, p.Plan.Table.PrivacyUnit)
	}
	if us, ok := s.eng.(engine.UnitSharder); ok && p.Plan.Bounded && us.ShardedByUnit(p.Plan.Table.Name, p.Plan.Table.PrivacyUnit) {
		// Each person's rows are on one shard: the statement bounds
		// them there (Plan.PerShard).
		p.Plan.PerShard = true
		if p.SQL != "" {
			if p.SQL, err = sqlgen.SQL(p.Plan, p.dialect); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

// Prepare parses, checks and plans a query against a catalog for an
// engine dialect, and calibrates its noise.
//
// Joins with public tables need those tables' values, which a Service reads
// when it starts: Prepare refuses them, Service.Prepare plans them.
func Prepare(cat *catalog.Catalog, d engine.Dialect, sql string, opts Options) (*Prepared, error) {
	return prepareWith(context.Background(), cat, d, sql, opts, nil)
}

func prepareWith(ctx context.Context, cat *catalog.Catalog, d engine.Dialect, sql string, opts Options, public map[string]*ir.PublicFacts) (*Prepared, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	sql, explain, err := explainStatement(sql)
	if err != nil {
		return nil, err
	}
	q, err := parse.ParseContext(ctx, sql, cat, public)
	if err != nil {
		return nil, err
	}
	if err := recordable(q); err != nil {
		return nil, err
	}
	table := cat.Table(q.Table)
	if q.Relation != nil {
		table = q.Relation
	}
	var accPlan *AccuracyPlan
	var acc *accuracySearch
	if opts.Accuracy != nil {
		if accPlan, acc, err = planAccuracy(ctx, q, table, opts); err != nil {
			return nil, err
		}
		opts.Epsilon, opts.Delta = accPlan.Epsilon, accPlan.Delta
	}
	plan, err := dpplan.NewPlanDelta(q, table, opts.Epsilon, opts.Delta)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, parse.TimeRefusal(err)
	}
	nz, err := plan.NewNoise(opts.Source)
	if err != nil {
		return nil, err
	}
	nz = plan.ChooseNoise(nz, opts.Source, opts.Delta, opts.Confidence)
	text := ""
	if !plan.OnlyHistograms() && !plan.PublicKeysOnly() {
		// Quantiles alone need only their histograms; public keys alone
		// need nothing.
		if text, err = sqlgen.SQL(plan, d); err != nil {
			return nil, err
		}
	}
	prep := &Prepared{Plan: plan, Noise: nz, SQL: text, Opts: opts, ExplainOnly: explain, dialect: d, Accuracy: accPlan, acc: acc}
	for h := range plan.Histograms {
		if err := ctx.Err(); err != nil {
			return nil, parse.TimeRefusal(err)
		}
		hs, err := sqlgen.HistogramSQL(plan, d, h)
		if err != nil {
			return nil, err
		}
		prep.HistogramSQL = append(prep.HistogramSQL, hs)
	}
	if err := statementsFit(prep); err != nil {
		return nil, err
	}
	return prep, nil
}

// statementsFit refuses, before the charge, a query any of whose
// statements (every form the data may need, and the histograms) is longer
// than an engine takes (engine.MaxStatementBytes): its length is a
// function of the query and the catalog alone, and a statement the engine
// refuses for its length would fail after the charge.
func statementsFit(p *Prepared) error {
	check := func(s string) error {
		if len(s) > engine.MaxStatementBytes {
			return ir.Refuse("the statement dpstat would run for this query is %d bytes, over the %d an engine takes: simplify nested expressions (a LEAST, GREATEST or CASE over a computed value repeats it in the statement)", len(s), engine.MaxStatementBytes)
		}
		return nil
	}
	if err := check(p.SQL); err != nil {
		return err
	}
	if p.SQL != "" {
		for f := p.Plan.FirstForm() + 1; f <= dpplan.IntegerForm; f++ {
			s, err := p.FormSQL(f)
			if err != nil {
				return err
			}
			if err := check(s); err != nil {
				return err
			}
		}
	}
	for _, hs := range p.HistogramSQL {
		if err := check(hs); err != nil {
			return err
		}
	}
	return nil
}

// EngineError reports that a query failed after its cost was charged: the
// engine failed, the request ended while it ran, or its result could not be
// read. An engine run is never free (docs/privacy.md, "Charge before the
// engine runs"), so the cost stays charged. The message says nothing about
// the data, whatever the failure: the engine's own text may quote values
// or depend on whether some row exists, and is only logged, in full, for the
// data owner.
type EngineError struct {
	Table string
	// ReleaseID is the charge the failed query was recorded under.
	ReleaseID uint64
	// Err is the underlying error, for the data owner's logs only.
	Err error
}

// Error says what the engine reported.
func (e *EngineError) Error() string {
	if errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, context.DeadlineExceeded) {
		return fmt.Sprintf("the query on table %s was stopped before it finished (%v); its cost had been charged as release %d", e.Table, e.Err, e.ReleaseID)
	}
	return fmt.Sprintf("internal error: the query on table %s failed after its cost was charged as release %d; the details are withheld because they may depend on the data, and are logged for the data owner", e.Table, e.ReleaseID)
}

// Unwrap returns the underlying error.
func (e *EngineError) Unwrap() error { return e.Err }

// Answer runs a query end to end: prepare (every refusal), charge the
// ledger durably, run the exact aggregation once in the engine, and only
// then add noise and release. A query refused before the charge costs
// nothing; once charged, it costs its ε whatever happens next.
func (s *Service) Answer(ctx context.Context, sql string, opts Options) (*Result, error) {
	p, err := s.PrepareContext(ctx, sql, opts)
	if err != nil {
		return nil, err
	}
	return s.Run(ctx, p)
}

// Run executes a prepared query: engine, charge, noise. A prepared
// EXPLAIN returns the plan's description without running the engine or
// charging.
func (s *Service) Run(ctx context.Context, p *Prepared) (*Result, error) {
	key, limit := s.budgetOf(p.Plan.Table, p.Opts.Analyst)
	if err := s.ensureTotal(p.Plan.Table); err != nil {
		return nil, err
	}
	st, err := s.led.EnsureBudget(key, limit, accounting.Basic)
	if err != nil {
		return nil, fmt.Errorf("budget for %s: %w", key, err)
	}
	store, repeatSafe := s.led.(AnswerStore)
	answerKey := ""
	if repeatSafe {
		answerKey = p.AnswerKey()
	}
	budget := func(spent, remaining accounting.EpsDelta, rule accounting.Rule) BudgetState {
		return BudgetState{Dataset: key.Dataset, Analyst: key.Analyst, Rule: rule, Spent: spent, Remaining: remaining, Total: st.Total}
	}
	if p.ExplainOnly {
		res := explainResult(p)
		res.Budget = budget(st.Spent, st.Remaining, st.Rule)
		if repeatSafe {
			if _, ok, err := store.Answer(key, answerKey); err == nil && ok {
				res.Notes = append(res.Notes, "this query was answered before: running it returns the stored answer at no cost")
			}
		}
		return res, nil
	}
	if p.Plan.PublicKeysOnly() {
		// The keys of public value lists, with nothing else: public
		// information, released without reading data or charging.
		res, err := p.Release(&dpplan.Exact{Stats: make([][]*big.Int, len(p.Plan.Keys))})
		if err != nil {
			return nil, err
		}
		res.Notes = append(res.Notes, "the groups are the catalog's public value lists: released at no cost, no data read")
		res.Budget = budget(st.Spent, st.Remaining, st.Rule)
		return res, nil
	}
	if repeatSafe {
		res, ok, err := storedResult(store, key, answerKey)
		if err != nil {
			return nil, fmt.Errorf("reading the stored answer: %w", err)
		}
		if ok {
			res.Budget = budget(st.Spent, st.Remaining, st.Rule)
			return res, nil
		}
	}
	// A query the budget cannot pay for is refused before any data is
	// read. The check is advisory: the charge below decides, atomically.
	if chk, ok := s.led.(BudgetChecker); ok {
		if err := chk.Check(key, p.Noise.Cost); err != nil {
			var ex *accounting.ExceededError
			if errors.As(err, &ex) {
				return nil, p.budgetRefusal(err, s.led, key)
			}
			return nil, fmt.Errorf("checking the budget failed, nothing read or charged: %w", err)
		}
	}
	// An identical query running in this process now: wait for it, and
	// return its answer if it stores one.
	if repeatSafe {
		for {
			flight, leader := s.join(key, answerKey)
			if leader {
				defer s.leave(key, answerKey, flight)
				break
			}
			select {
			case <-flight:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if res, ok, err := storedResult(store, key, answerKey); err == nil && ok {
				if now, err := s.led.EnsureBudget(key, limit, accounting.Basic); err == nil {
					st = now
				}
				res.Budget = budget(st.Spent, st.Remaining, st.Rule)
				return res, nil
			}
		}
	}
	// The charge commits before any engine runs: every query that reaches
	// the engine pays its cost, so that nothing the engine does (an error,
	// a timeout, how long it takes) is a free look at the data. With a
	// repeat-safe ledger the charge reserves the answer's key; the answer
	// is stored once it is computed.
	charge := ledger.Charge{
		RequestID:   newRequestID(),
		Key:         key,
		Description: p.Plan.Query.Text,
		Cost:        p.Noise.Cost,
	}
	if repeatSafe {
		charge.AnswerKey = answerKey
	}
	// An engine that cannot be reached refuses the query before the charge:
	// whether a server answers does not depend on anyone's data.
	if pinger, ok := s.eng.(engine.Pinger); ok {
		if err := pinger.Ping(ctx); err != nil {
			return nil, fmt.Errorf("query refused, nothing charged: %w", &engine.UnavailableError{Err: err})
		}
	}
	receipt, err := s.led.Charge(ctx, charge)
	if err != nil && repeatSafe && errors.Is(err, ledger.ErrAnswerExists) {
		// Charged before, by another process or by a run that did not
		// store its answer (it failed, or the process stopped): this run
		// is charged and answered on its own, with fresh noise at full
		// cost, and stores nothing.
		charge.AnswerKey, charge.RequestID = "", newRequestID()
		receipt, err = s.led.Charge(ctx, charge)
	}
	if err != nil {
		var ex *accounting.ExceededError
		if errors.As(err, &ex) {
			return nil, p.budgetRefusal(err, s.led, key)
		}
		return nil, fmt.Errorf("charging the ledger failed, nothing read or released: %w", err)
	}
	computing := time.Now()
	res, err := s.compute(ctx, p)
	s.engineDone(time.Since(computing), err)
	if err != nil {
		ee := &EngineError{Table: p.Plan.Table.Name, ReleaseID: receipt.ReleaseID, Err: err}
		s.logger().Error("query failed after its charge", "table", ee.Table, "analyst", key.Analyst,
			"release", receipt.ReleaseID, "query", p.Plan.Query.Text, "error", err.Error())
		return nil, ee
	}
	if charge.AnswerKey != "" {
		if blob, err := encodeAnswer(res); err == nil && len(blob) <= ledger.MaxAnswerLen {
			if err := store.StoreAnswer(key, answerKey, blob); err != nil {
				// The answer is released all the same: it was charged.
				// Asking again then charges again, with fresh noise.
				s.logger().Warn("the answer could not be stored for repeats", "table", key.Dataset,
					"analyst", key.Analyst, "release", receipt.ReleaseID, "error", err.Error())
			}
		}
	}
	res.ReleaseID = receipt.ReleaseID
	res.Budget = budget(receipt.Spent, receipt.Remaining, receipt.Rule)
	res.Budget.Total = receipt.Total
	return res, nil
}

// compute runs the engine for a charged query and releases its noisy
// answer.
func (s *Service) compute(ctx context.Context, p *Prepared) (*Result, error) {
	exact, err := s.exact(ctx, p)
	if err != nil {
		return nil, err
	}
	for h, hs := range p.HistogramSQL {
		rows, err := s.eng.Query(ctx, hs)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		if err := p.Plan.ReadHistogram(exact, h, rows); err != nil {
			return nil, err
		}
	}
	return p.Release(exact)
}

// join registers a run of the query with answer key answerKey for k. The
// first run in flight is the leader (true) and gets a channel that leave
// closes; a later one gets the leader's channel to wait on.
func (s *Service) join(k ledger.Key, answerKey string) (chan struct{}, bool) {
	id := k.String() + "\x00" + answerKey
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.flights[id]; ok {
		return c, false
	}
	if s.flights == nil {
		s.flights = map[string]chan struct{}{}
	}
	c := make(chan struct{})
	s.flights[id] = c
	return c, true
}

// leave ends the leader's run: waiters wake up and read its stored answer.
func (s *Service) leave(k ledger.Key, answerKey string, c chan struct{}) {
	id := k.String() + "\x00" + answerKey
	s.mu.Lock()
	if s.flights[id] == c {
		delete(s.flights, id)
		close(c)
	}
	s.mu.Unlock()
}

// SetLogger sets where failures after a charge are logged in full for the
// data owner; nil means slog's default logger.
func (s *Service) SetLogger(l *slog.Logger) {
	s.mu.Lock()
	s.log = l
	s.mu.Unlock()
}

func (s *Service) logger() *slog.Logger {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log != nil {
		return s.log
	}
	return slog.Default()
}

// exact runs the prepared statement and reads its exact statistics, in
// the plan's first form, or in a later one: FastForm only on a table whose
// owner declared it free of NaN (catalog.Table.NaNFree), else CleanForm,
// and IntegerForm once a group is too large for double sums. A table
// found to have such groups is remembered, so that its next queries start
// there. Which form runs never depends on whether the data holds a NaN: a
// NaN in a declared table is clamped to a bound and counted as a value.
func (s *Service) exact(ctx context.Context, p *Prepared) (*dpplan.Exact, error) {
	if p.SQL == "" {
		// Quantiles alone: their histograms have their own statements.
		rows := &engine.Rows{Columns: make([]string, len(p.Plan.Query.GroupBy)+len(p.Plan.Statistics))}
		return p.Plan.ReadExactForm(rows, dpplan.CleanForm)
	}
	table := p.Plan.Table.Name
	s.mu.Lock()
	f := max(p.Plan.FirstForm(), s.forms[table])
	s.mu.Unlock()
	if f == dpplan.FastForm && !p.Plan.Table.NaNFree {
		// Only the owner's declaration lets a query skip the NaN test.
		f = dpplan.CleanForm
	}
	for {
		text, err := p.FormSQL(f)
		if err != nil {
			return nil, err
		}
		rows, err := s.query(ctx, table, text)
		if err != nil {
			return nil, err
		}
		ex, err := p.Plan.ReadExactForm(rows, f)
		if !errors.Is(err, dpplan.ErrGroupTooLarge) || f == dpplan.IntegerForm {
			return ex, err
		}
		f = dpplan.IntegerForm
		s.mu.Lock()
		if s.forms == nil {
			s.forms = map[string]dpplan.Form{}
		}
		s.forms[table] = dpplan.IntegerForm
		s.mu.Unlock()
	}
}

func (s *Service) query(ctx context.Context, table, sql string) (*engine.Rows, error) {
	rows, err := s.eng.Query(ctx, sql)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("engine error on table %s: %w", table, err)
	}
	return rows, nil
}

// BudgetChecker is implemented by ledgers that can say, without charging,
// whether a cost fits a budget now (*ledger.Ledger does). The service uses
// it to refuse an over-budget query before reading any data.
type BudgetChecker interface {
	Check(k ledger.Key, c accounting.Cost) error
}

func newRequestID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("query: the operating system's entropy source failed: " + err.Error())
	}
	return "query-" + hex.EncodeToString(b[:])
}

// Release adds noise to exact statistics and post-processes the noisy
// values (AVG, HAVING, ORDER BY, LIMIT) into a Result. It must be called
// only after the cost has been charged; it is separate so that tests can
// re-noise one engine result many times.
func (p *Prepared) Release(exact *dpplan.Exact) (*Result, error) {
	plan, q := p.Plan, p.Plan.Query
	keys := plan.Keys
	if plan.Selection != nil {
		exact = p.Noise.SelectKeys(exact)
		keys = exact.Keys
	}
	if plan.TopK != nil {
		var err error
		if exact, keys, err = p.Noise.SelectTopK(exact, keys); err != nil {
			return nil, err
		}
	}
	values, cis, err := p.Noise.Apply(exact, p.Opts.Confidence)
	if err != nil {
		return nil, err
	}
	aggCol := map[int]int{} // output index → aggregate index
	for j, a := range plan.Aggregates {
		aggCol[a.Output] = j
	}
	keyCol := map[string]int{}
	for i, g := range q.GroupBy {
		keyCol[g] = i
	}
	res := &Result{Confidence: p.Opts.Confidence, Cost: p.Noise.Cost}
	for _, o := range q.Outputs {
		res.Columns = append(res.Columns, o.Name)
	}
	for g, key := range keys {
		row := make([]any, len(q.Outputs))
		ci := make([]*dpplan.Interval, len(q.Outputs))
		for i, o := range q.Outputs {
			switch {
			case o.Post != nil:
				continue // below, from the released values
			case o.IsKey():
				row[i] = key[keyCol[o.Key]]
				continue
			}
			j := aggCol[i]
			row[i] = values[g][j]
			iv := cis[g][j]
			ci[i] = &iv
		}
		for i, o := range q.Outputs {
			if o.Post != nil {
				v := dpplan.EvalPost(o.Post, row, ci)
				row[i], ci[i] = v.Value(), v.Interval()
			}
		}
		if q.Having != nil && !evalHaving(q.Having, row) {
			continue
		}
		res.Rows = append(res.Rows, row)
		res.CI = append(res.CI, ci)
	}
	if len(q.OrderBy) > 0 {
		idx := make([]int, len(res.Rows))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool {
			for _, t := range q.OrderBy {
				c := ir.CompareValues(res.Rows[idx[a]][t.Output], res.Rows[idx[b]][t.Output])
				if c != 0 {
					return (c < 0) != t.Desc
				}
			}
			return false
		})
		rows, ci := make([][]any, len(idx)), make([][]*dpplan.Interval, len(idx))
		for i, k := range idx {
			rows[i], ci[i] = res.Rows[k], res.CI[k]
		}
		res.Rows, res.CI = rows, ci
	}
	renderTemporalAggregates(plan, res)
	if q.Offset > 0 {
		off := min(q.Offset, int64(len(res.Rows)))
		res.Rows, res.CI = res.Rows[off:], res.CI[off:]
	}
	if q.Limit >= 0 && q.Limit < int64(len(res.Rows)) {
		res.Rows, res.CI = res.Rows[:q.Limit], res.CI[:q.Limit]
	}
	renderTemporalKeys(plan, res)
	dropHidden(res, q)
	// Mechanisms are listed in release order, which follows the aggregates.
	res.Split = p.Noise.Split()
	res.Notes = plan.Notes()
	if p.Noise.Choice != "" {
		res.Notes = append(res.Notes, p.Noise.Choice)
	}
	if plan.Selection != nil {
		res.Notes = append(res.Notes, p.Noise.DescribeSelection())
	}
	if plan.TopK != nil {
		res.Notes = append(res.Notes, p.Noise.DescribeTopK(plan.Candidates()))
	}
	for _, o := range q.Outputs {
		if o.Post != nil {
			res.Notes = append(res.Notes, dpplan.DescribePost(o, q, p.Opts.Confidence))
		}
	}
	if p.Accuracy != nil {
		res.Notes = append(res.Notes, p.Accuracy.Lines()...)
	}
	return res, nil
}

// dropHidden removes the hidden outputs (aggregates only a computed output
// reads) from a result, once HAVING, ORDER BY and LIMIT have used them.
func dropHidden(res *Result, q *ir.Query) {
	var keep []int
	for i, o := range q.Outputs {
		if !o.Hidden {
			keep = append(keep, i)
		}
	}
	if len(keep) == len(q.Outputs) {
		return
	}
	cols := make([]string, 0, len(keep))
	for _, i := range keep {
		cols = append(cols, res.Columns[i])
	}
	res.Columns = cols
	for r := range res.Rows {
		row, ci := make([]any, 0, len(keep)), make([]*dpplan.Interval, 0, len(keep))
		for _, i := range keep {
			row, ci = append(row, res.Rows[r][i]), append(ci, res.CI[r][i])
		}
		res.Rows[r], res.CI[r] = row, ci
	}
}

// evalHaving evaluates a HAVING condition on a noisy answer row.
func evalHaving(e ir.Expr, row []any) bool {
	val := func(o ir.Operand) any {
		if o.Kind == ir.OutputRef {
			return row[o.Output]
		}
		return o.Value
	}
	switch x := e.(type) {
	case ir.Compare:
		c := ir.CompareValues(val(x.Left), val(x.Right))
		switch x.Op {
		case "=":
			return c == 0
		case "<>":
			return c != 0
		case "<":
			return c < 0
		case "<=":
			return c <= 0
		case ">":
			return c > 0
		case ">=":
			return c >= 0
		}
	case ir.And:
		for _, a := range x.Args {
			if !evalHaving(a, row) {
				return false
			}
		}
		return true
	case ir.Or:
		for _, a := range x.Args {
			if evalHaving(a, row) {
				return true
			}
		}
		return false
	case ir.Not:
		return !evalHaving(x.Arg, row)
	case ir.In:
		v := val(x.Arg)
		found := false
		for _, w := range x.Values {
			found = found || ir.CompareValues(v, val(w)) == 0
		}
		return found != x.Negate
	case ir.IsNull:
		return (val(x.Arg) == nil) != x.Negate
	case ir.Between:
		v := val(x.Arg)
		in := ir.CompareValues(v, val(x.Low)) >= 0 && ir.CompareValues(v, val(x.High)) <= 0
		return in != x.Negate
	}
	return false
}
