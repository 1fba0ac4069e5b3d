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
	"strings"
	"sync"
	"time"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/epoch"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/query/reuse"
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
	// unordered remembers the tables declared clustered_by_unit whose
	// rows a streaming pass found out of the unit's order: their next
	// queries run the ranged SQL form at once, so that how a person's rows
	// lie in the file costs the time of a second read once, not on every
	// query.
	unordered map[string]bool
	// flights holds a channel per repeat-safe query being answered now,
	// closed when it is done, so that an identical query waits for its
	// stored answer instead of paying again.
	flights map[string]chan struct{}
	// repeatWait bounds how long a query whose answer key another run
	// reserved waits for that run's stored answer (SetRepeatWait).
	repeatWait time.Duration
	log        *slog.Logger
	// public holds the facts of the catalog's public tables, read when
	// the service starts.
	public map[string]*ir.PublicFacts
	// obs is told the engine time of each charged query (observe.go).
	obs Observer
	// reuse indexes the measurements of earlier releases (derived.go).
	reuse reuse.Index
	// known holds the budgets (ledger.Key) and totals (totalKey) known to
	// exist, so that their existence is read once (known.go).
	known sync.Map
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
	// Fresh asks for a fresh answer even when one could be derived from
	// released measurements at no cost (see package query/reuse).
	Fresh bool
	// Source is the noise source; nil means the secure pooled source.
	// Tests may pass a seeded source.
	Source random.Source
	// RequireGrant asks that the analyst's budget on the table exist
	// already: Run then refuses, before anything is read or charged, with
	// an error wrapping ledger.ErrNoBudget, instead of creating the budget
	// with the catalog's limit.
	RequireGrant bool
	// Dropped asks for a DP estimate of the share of rows contribution
	// bounding dropped (dpplan.Dropped), paid with dpplan.DroppedShare of
	// Epsilon; free, with a note, when the table has no privacy unit.
	Dropped bool
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
	if o.Accuracy != nil && o.Dropped {
		return ir.Refuse("an accuracy and the dropped-rows estimate were both asked: the estimate takes %g%% of the query's ε, which an accuracy chooses; ask the estimate with an ε", 100*dpplan.DroppedShare)
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
	// Derived is set when the answer was derived from earlier releases
	// by post-processing: nothing was read and Cost is zero.
	Derived *Derivation

	// measured holds the noisy value of every release for every group of
	// the plan, kept with the stored answer for later derivations.
	measured [][]float64
	// Dropped is the estimate of the rows contribution bounding dropped,
	// when Options.Dropped asked for it and the table bounds contributions.
	Dropped *dpplan.DroppedEstimate
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
	// Epochs, on a table that declares epochs, are the epochs the query
	// was charged in (e.g. "2024-01..2024-03"); Spent, Remaining and
	// Total's figures are then those of Epoch, the one with the least
	// left.
	Epochs string `json:"epochs,omitempty"`
	Epoch  string `json:"epoch,omitempty"`
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
	key, limit := s.budgetOf(p.decl, p.Opts.Analyst)
	if err := s.ensureTotal(p.decl); err != nil {
		return nil, err
	}
	if err := s.ensureBudget(key, limit, p.Opts.RequireGrant); err != nil {
		return nil, err
	}
	store, repeatSafe := s.led.(AnswerStore)
	answerKey := ""
	if repeatSafe {
		answerKey = p.AnswerKey()
	}
	// free returns an answer that charged nothing with the budget as the
	// ledger holds it now.
	free := func(res *Result) (*Result, error) {
		b, err := s.budgetNow(key, limit)
		if err != nil {
			return nil, err
		}
		res.Budget = b
		return res, nil
	}
	if p.ExplainOnly {
		return free(s.explainRun(p, key, store, answerKey))
	}
	if p.Plan.PublicKeysOnly() {
		// The keys of public value lists, with nothing else: public
		// information, released without reading data or charging.
		res, err := p.Release(&dpplan.Exact{Stats: make([][]*big.Int, len(p.Plan.Keys))})
		if err != nil {
			return nil, err
		}
		res.Notes = append(res.Notes, "the groups are the catalog's public value lists: released at no cost, no data read")
		return free(res)
	}
	if repeatSafe {
		res, ok, err := storedResult(store, key, answerKey)
		if err != nil {
			return nil, fmt.Errorf("reading the stored answer: %w", err)
		}
		if ok {
			return free(res)
		}
	}
	// An answer derived from earlier releases at no charge, or a fresh
	// measurement at a smaller ε combined with them (derived.go).
	res, top, shape := s.fromReleases(p, key)
	if res != nil {
		return free(res)
	} else if top != nil {
		p = top.fresh
	}
	// A query the budget cannot pay for is refused before any data is
	// read. The check is advisory: the charge below decides, atomically.
	if err := s.CheckCost(p, key, p.Noise.Cost); err != nil {
		return nil, err
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
				return free(res)
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
		Epochs:      p.Plan.Epochs,
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
	receipt, stored, takeOver, err := s.chargeOnce(ctx, store, &charge)
	if stored != nil {
		return free(stored)
	}
	if err != nil {
		var ex *accounting.ExceededError
		if errors.As(err, &ex) {
			return nil, p.budgetRefusal(err, s.led, key)
		}
		return nil, fmt.Errorf("charging the ledger failed, nothing read or released: %w", err)
	}
	computing := time.Now()
	res, err = s.compute(ctx, p)
	s.engineDone(time.Since(computing), err)
	if err != nil {
		if charge.AnswerKey != "" {
			s.abandon(store, key, answerKey)
		}
		ee := &EngineError{Table: p.Plan.Table.Name, ReleaseID: receipt.ReleaseID, Err: err}
		s.logger().Error("query failed after its charge", "table", ee.Table, "analyst", key.Analyst,
			"release", receipt.ReleaseID, "query", p.Plan.Query.Text, "error", err.Error())
		return nil, ee
	}
	if top != nil {
		res = top.combine(p, res)
	}
	if charge.AnswerKey != "" || takeOver {
		s.storeAnswer(store, key, answerKey, p, res, receipt.ReleaseID, takeOver, shape)
	}
	res.ReleaseID = receipt.ReleaseID
	res.Budget = BudgetState{Dataset: key.Dataset, Analyst: key.Analyst, Rule: receipt.Rule, Spent: receipt.Spent, Remaining: receipt.Remaining, Total: receipt.Total}
	if receipt.Epochs != nil {
		res.Budget.Epochs, res.Budget.Epoch = receipt.Epochs.String(), receipt.LeastEpoch
		res.Notes = append(res.Notes, epochWords(receipt.Epochs, p.Plan.DeclaredEpochs, p.Plan.EpochColumn, receipt.Cost.Epsilon, p.decl)+
			fmt.Sprintf("; the budget figures are those of %s, the epoch with the least left", receipt.LeastEpoch))
	}
	return res, nil
}

// explainRun is Run of a prepared EXPLAIN: the plan's description, and
// whether running it would return a stored or a derived answer.
func (s *Service) explainRun(p *Prepared, key ledger.Key, store AnswerStore, answerKey string) *Result {
	res := explainResult(p)
	if n := s.streamNote(p); n != "" {
		res.Notes = append(res.Notes, n)
	}
	if store != nil {
		if _, ok, err := storedResult(store, key, answerKey); err == nil && ok {
			res.Notes = append(res.Notes, "this query was answered before: running it returns the stored answer at no cost")
		}
	}
	if n := s.explainDerived(p, key); n != "" {
		res.Notes = append(res.Notes, n)
	}
	return res
}

// CheckCost refuses, before any data is read, a run of p charging cost
// that the analyst's budgets (each epoch's, on a table with epochs)
// cannot pay for, with the refusal the run gives (wrapping the ledger's
// accounting.ExceededError). It is advisory: the charge decides,
// atomically. Dry runs ask it what the run would say.
func (s *Service) CheckCost(p *Prepared, key ledger.Key, cost accounting.Cost) error {
	var err error
	if chk, ok := s.led.(EpochChecker); ok && p.Plan.Epochs != nil {
		err = chk.CheckEpochs(key, *p.Plan.Epochs, cost)
	} else if chk, ok := s.led.(BudgetChecker); ok && p.Plan.Epochs == nil {
		err = chk.Check(key, cost)
	}
	if err == nil {
		return nil
	}
	var ex *accounting.ExceededError
	if errors.As(err, &ex) {
		return p.budgetRefusal(err, s.led, key)
	}
	return fmt.Errorf("checking the budget failed, nothing read or charged: %w", err)
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
	res, err := p.Release(exact)
	if err != nil {
		return nil, err
	}
	if err := s.releaseDropped(ctx, p, res); err != nil {
		return nil, err
	}
	return res, nil
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
		rows, err := s.queryRanges(ctx, p, f, table)
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

// rangeRows runs the SQL statement of p in form f over range r of the
// privacy unit.
func (s *Service) rangeRows(ctx context.Context, p *Prepared, f dpplan.Form, r sqlgen.UnitRange, table string) (*engine.Rows, error) {
	text, err := p.RangeSQL(f, r)
	if err != nil {
		return nil, err
	}
	return s.query(ctx, table, text)
}

// queryRanges runs the statement of p in form f, or, on a table read in
// ranges of its privacy unit (Prepared.Ranges), the statement of each
// range in turn (the whole table's is then never built), one after the other so that the engine holds one
// range's pairs at a time (or, where the plan and the engine allow, the
// streaming form: streamRanges). The ranges' rows are concatenated:
// ReadExactForm adds the rows of one group exactly (each person is in one
// range, so the sums of the ranges are the table's).
func (s *Service) queryRanges(ctx context.Context, p *Prepared, f dpplan.Form, table string) (*engine.Rows, error) {
	if len(p.ranges) == 0 {
		text, err := p.FormSQL(f)
		if err != nil {
			return nil, err
		}
		return s.query(ctx, table, text)
	}
	if rows, ok, err := s.streamRanges(ctx, p, f, table); ok {
		return rows, err
	}
	var all *engine.Rows
	for _, r := range p.ranges {
		rows, err := s.rangeRows(ctx, p, f, r, table)
		if err != nil {
			return nil, err
		}
		if all == nil {
			all = rows
		} else {
			all.Rows = append(all.Rows, rows.Rows...)
		}
	}
	return all, nil
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

// EpochChecker is implemented by ledgers that can say, without charging,
// whether a cost fits every epoch of a range now (*ledger.Ledger does).
type EpochChecker interface {
	CheckEpochs(k ledger.Key, r epoch.Range, c accounting.Cost) error
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
