// Package answer is dpstat's one answering contract: the request an analyst
// makes (SQL, ε or an accuracy, δ, confidence, dry run), the response every
// front end renders (typed columns, rows, intervals, cost, budgets left,
// notes, the stored release a repeated answer comes from), the refusal
// with its kind, and the Answerer interface that ties them. The command
// line, the HTTP server and the PostgreSQL wire protocol are adapters over
// it: each maps a Kind to its own status (an exit message, an HTTP status,
// a SQLSTATE) and renders a Response in its own format. Package
// answer/queryanswer implements Answerer with package query.
package answer

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/schema"
)

// Request is one DP SQL question from an authenticated analyst.
type Request struct {
	// Analyst is the authenticated analyst's name; budgets are charged to
	// (table, Analyst).
	Analyst string
	// SQL is the analyst's DP SQL text.
	SQL string
	// Epsilon and Delta are the total cost the analyst will pay for the
	// answer; zero means the answerer's default.
	Epsilon, Delta float64
	// Confidence is the level of the reported intervals, in (0, 1); zero
	// means the answerer's default (0.95).
	Confidence float64
	// DryRun asks for the cost and the expected interval widths without
	// touching the data or charging anything.
	DryRun bool
	// Accuracy, when set, asks for half-widths instead of an ε (Epsilon
	// is then 0): the answerer spends the smallest ε that meets them.
	Accuracy *Accuracy
	// Fresh asks for a fresh answer even when one could be derived from
	// earlier releases at no cost.
	Fresh bool
	// Dropped asks for a DP estimate of the share of the rows read that
	// contribution bounding dropped, paid from the query's ε.
	Dropped bool
}

// Accuracy is the half-width of the intervals an analyst asks for, at the
// request's confidence: All for every COUNT, SUM and COUNT(DISTINCT)
// column, or one per output column.
type Accuracy struct {
	All     float64
	Columns map[string]float64
}

// Derived says which releases a derived answer post-processed, and the
// propagated variance behind each value (per row and column; 0 for keys).
type Derived struct {
	Releases  []uint64    `json:"releases"`
	Variances [][]float64 `json:"variances,omitempty"`
	// TopUp is the ε of a fresh measurement combined with the releases
	// (the answer's cost), zero when the answer cost nothing.
	TopUp float64 `json:"top_up_epsilon,omitempty"`
}

// Pair is an (ε, δ) amount.
type Pair struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

// BudgetLeft is the budget of the table a query was charged to, after the
// charge.
type BudgetLeft struct {
	Spent     Pair   `json:"spent"`
	Remaining Pair   `json:"remaining"`
	Rule      string `json:"rule,omitempty"`
	// Total is the table's total budget (every analyst together), when it
	// has one.
	Total *TotalInfo `json:"total,omitempty"`
	// Dataset and Analyst name the budget charged: the ledger keeps a
	// table's budgets under its id space's name, or its own.
	Dataset string `json:"dataset,omitempty"`
	Analyst string `json:"analyst,omitempty"`
}

// Mechanism describes the noise of one release.
type Mechanism struct {
	Name        string  `json:"mechanism"`
	Epsilon     float64 `json:"epsilon"`
	Sensitivity float64 `json:"sensitivity"`
	Scale       float64 `json:"scale"`
}

// Share is one aggregate's part of a query's ε.
type Share struct {
	Column  string  `json:"column"`
	Epsilon float64 `json:"epsilon"`
	// Delta is the share of δ (key selection only).
	Delta      float64     `json:"delta,omitempty"`
	Mechanisms []Mechanism `json:"mechanisms"`
}

// Response is an answer in the shape `dpstat query --format json` prints:
// column names, rows of values, for each value its interval ([low, high], or
// nil for group keys and exact values), the cost and the budget left.
type Response struct {
	Columns []string `json:"columns"`
	// Types names each column's type as a catalog spells it (int, float,
	// text, bool, date, timestamp): a group key's type, "int" for a
	// count, "date" or "timestamp" for a MIN, MAX or quantile of one (its
	// interval stays in days or microseconds since 1970-01-01), "float"
	// for the other aggregates and computed columns. Empty when unknown.
	Types []schema.Type   `json:"types,omitempty"`
	Rows  [][]any         `json:"rows"`
	CI    [][]*[2]float64 `json:"ci"`
	// Confidence is the level of the intervals.
	Confidence float64    `json:"confidence,omitempty"`
	Cost       Pair       `json:"cost"`
	Budget     BudgetLeft `json:"budget"`
	// Split says how the cost was divided among the aggregates.
	Split []Share `json:"split,omitempty"`
	// ReleaseID identifies the charge in the ledger (zero for a dry run or
	// a repeated query).
	ReleaseID uint64 `json:"release_id,omitempty"`
	// Table is the table the query read and was charged to.
	Table string `json:"table,omitempty"`
	// DryRun is true for a preview: Rows hold no data (nil values) and CI
	// the expected interval half-widths around zero; nothing was charged.
	DryRun bool `json:"dry_run,omitempty"`
	// Repeated is true when the same analyst asked the same query before:
	// the stored answer is returned and Cost is zero.
	Repeated bool `json:"repeated,omitempty"`
	// Derived is set when the answer was derived from earlier releases by
	// post-processing: nothing was read and Cost is zero.
	Derived *Derived `json:"derived,omitempty"`
	// OriginalCost is, for a repeated answer, what the stored release it
	// is derived from cost when it was first asked.
	OriginalCost *Pair `json:"original_cost,omitempty"`
	// Notes are human-readable remarks such as how the cost was split.
	Notes []string `json:"notes,omitempty"`
	// DataDependent names, in a preview, the noisy columns whose interval
	// width depends on the data (an average's on the group's size, a
	// quantile's on the values): their half-widths are the widest the
	// declared bounds allow, not what the answer will show.
	DataDependent []string `json:"data_dependent,omitempty"`
	// Dropped is the DP estimate of the rows contribution bounding
	// dropped, when the request asked for it and the table bounds
	// contributions.
	Dropped *Dropped `json:"dropped,omitempty"`
	// WouldRefuse is set, in a preview, when running the query now would
	// be refused (its cost does not fit in the budget left): the preview
	// itself succeeded, so its status is 200 and the rest of the response
	// says what the query would cost.
	WouldRefuse *Refusal `json:"would_refuse,omitempty"`
}

// Dropped is the estimate of the rows contribution bounding dropped: the
// share of the rows read, its interval, the noisy counts it comes from
// (dropped rows counted up to CapPerPerson per person) and its ε, part of
// the query's cost.
type Dropped struct {
	Share        float64 `json:"share"`
	Low          float64 `json:"low"`
	High         float64 `json:"high"`
	Kept         int64   `json:"kept"`
	Dropped      int64   `json:"dropped"`
	CapPerPerson int64   `json:"cap_per_person"`
	Epsilon      float64 `json:"epsilon"`
}

// Refusal is what a refused query would have been told: the error's kind
// and its message.
type Refusal struct {
	Kind   Kind   `json:"kind"`
	Reason string `json:"reason"`
}

// ColumnInfo is one declared column: its type and the data owner's declared
// bounds or public values. It never carries data.
type ColumnInfo struct {
	Name     string      `json:"name"`
	Type     schema.Type `json:"type"`
	Lower    *float64    `json:"lower,omitempty"`
	Upper    *float64    `json:"upper,omitempty"`
	Values   []string    `json:"values,omitempty"`
	Nullable bool        `json:"nullable,omitempty"`
	// Range spells the bounds of a date or timestamp column as dates
	// ("2024-01-01"); Lower and Upper then hold them as days (or
	// microseconds) since 1970-01-01.
	Range []string `json:"range,omitempty"`
}

// TableInfo is a table an analyst may query, as declared in the catalog.
type TableInfo struct {
	Name string `json:"name"`
	// IDSpace names the tables whose budgets are one (their privacy units
	// name the same people); budgets of such a table are kept under the
	// id space's name.
	IDSpace          string `json:"id_space,omitempty"`
	PrivacyUnit      string `json:"privacy_unit,omitempty"`
	MaxGroupsPerUnit int    `json:"max_groups_per_unit,omitempty"`
	MaxRowsPerGroup  int    `json:"max_rows_per_group,omitempty"`
	// Public is true for a public table (no one's private data): it has no
	// budget and is not queried alone; analysts join it to private tables.
	Public  bool         `json:"public,omitempty"`
	Columns []ColumnInfo `json:"columns"`
}

// BudgetDataset is the name the table's budgets are kept under: its id
// space, or its own name.
func (t TableInfo) BudgetDataset() string {
	if t.IDSpace != "" {
		return t.IDSpace
	}
	return t.Name
}

// Answerer answers DP SQL. Implementations charge the ledger durably before
// an answer is returned and charge nothing for a refused question or a dry
// run. They must be safe for concurrent use.
type Answerer interface {
	// Answer answers req, or returns an *Error saying why not.
	Answer(ctx context.Context, req Request) (*Response, error)
	// Tables lists the tables the analyst may query, with their declared
	// schemas and bounds, and the public tables they may join (marked
	// Public).
	Tables(analyst string) []TableInfo
}

// Kind classifies a refusal or an error; each front end maps it to its own
// status (the server to an HTTP status, pgwire to a SQLSTATE). The
// comments give both.
type Kind string

// The kinds of error an Answerer or the server reports.
const (
	// KindBadRequest: a malformed request or parameter (400, 22023).
	KindBadRequest Kind = "bad_request"
	// KindSyntax: the SQL text does not parse (400, 42601).
	KindSyntax Kind = "syntax_error"
	// KindRefused: valid SQL that dpstat does not answer, e.g. SELECT *
	// (400, 0A000).
	KindRefused Kind = "refused"
	// KindNotGranted: no budget on that table for this analyst (403,
	// 42501).
	KindNotGranted Kind = "not_granted"
	// KindBudgetExceeded: the cost does not fit in the budget left (409,
	// 53400).
	KindBudgetExceeded Kind = "budget_exceeded"
	// KindUnknownTable: the table is not in the catalog (400, 42P01).
	KindUnknownTable Kind = "unknown_table"
	// KindUnknownColumn: the column is not declared (400, 42703).
	KindUnknownColumn Kind = "unknown_column"
	// KindTimeout: the query ran out of time (503, 57014).
	KindTimeout Kind = "timeout"
	// KindUnavailable: the database holding the table cannot be reached;
	// nothing was charged (503, 57P03).
	KindUnavailable Kind = "unavailable"
	// KindInternal: anything else; reported without details (500, XX000).
	KindInternal Kind = "internal"
	// KindOverloaded: the server is serving its maximum of requests at
	// once (429, 53000).
	KindOverloaded Kind = "overloaded"
	// KindRateLimited: the analyst is over its rate of requests (429,
	// 53400).
	KindRateLimited Kind = "rate_limited"
)

// Error is an error with a Kind and a message meant for the analyst.
type Error struct {
	Kind    Kind
	Message string
	// Err is the underlying cause, for logs only; it is never sent to
	// clients.
	Err error
}

// Error implements error.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error of kind k with a formatted message.
func Errorf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...)}
}

// AsError returns err as an *Error; an error of another type becomes
// KindInternal with a generic message (the cause kept in Err).
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Kind: KindTimeout, Message: "the query ran out of time", Err: err}
	}
	return &Error{Kind: KindInternal, Message: "internal error", Err: err}
}

// Param names a number of a request.
type Param int

// The numbers of a request.
const (
	// ParamEpsilon: a finite number > 0.
	ParamEpsilon Param = iota
	// ParamDelta: a number in [0, 1).
	ParamDelta
	// ParamConfidence: a number in (0, 1).
	ParamConfidence
)

// CheckParam checks one number an analyst gave, as every front end
// accepts it: ε a finite number > 0, δ in [0, 1), the confidence in
// (0, 1). name is how the front end spells the parameter ("epsilon",
// "--epsilon", "dpstat.epsilon"); the error is a KindBadRequest naming it,
// the value and what is accepted.
func CheckParam(p Param, name string, v float64) error {
	switch p {
	case ParamEpsilon:
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return Errorf(KindBadRequest, "%s = %v: want a finite number > 0", name, v)
		}
	case ParamDelta:
		if math.IsNaN(v) || v < 0 || v >= 1 {
			return Errorf(KindBadRequest, "%s = %v: want a number in [0, 1)", name, v)
		}
	case ParamConfidence:
		if math.IsNaN(v) || v <= 0 || v >= 1 {
			return Errorf(KindBadRequest, "%s = %v: want a number in (0, 1), e.g. 0.95", name, v)
		}
	}
	return nil
}

// TotalInfo is a table's (or id space's) total budget: everything released
// from it, whoever asked.
type TotalInfo struct {
	Table     string          `json:"table"`
	Rule      accounting.Rule `json:"rule"`
	Limit     Pair            `json:"limit"`
	Spent     Pair            `json:"spent"`
	Remaining Pair            `json:"remaining"`
	Releases  int             `json:"releases"`
}

// TotalInfoOf converts a ledger total budget; nil gives nil.
func TotalInfoOf(t *ledger.TotalStatus) *TotalInfo {
	if t == nil {
		return nil
	}
	return &TotalInfo{
		Table: t.Dataset, Rule: t.Rule,
		Limit:     Pair{t.Limit.Epsilon, t.Limit.Delta},
		Spent:     Pair{t.Spent.Epsilon, t.Spent.Delta},
		Remaining: Pair{t.Remaining.Epsilon, t.Remaining.Delta},
		Releases:  t.Releases,
	}
}
