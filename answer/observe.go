package answer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"
)

// Outcomes of a query, as QueryEvent.Outcome reports them.
const (
	// OutcomeAnswered: an answer was released (and charged).
	OutcomeAnswered = "answered"
	// OutcomeRepeated: the stored answer of an identical earlier query
	// was returned; nothing was charged.
	OutcomeRepeated = "repeated"
	// OutcomeDryRun: a preview; nothing was read or charged.
	OutcomeDryRun = "dry_run"
	// OutcomeRefused: refused before the charge (bad SQL, a query dpstat
	// does not answer, an unknown table or column, no grant, a bad
	// parameter); nothing was charged.
	OutcomeRefused = "refused"
	// OutcomeBudgetExceeded: the cost did not fit in a budget.
	OutcomeBudgetExceeded = "budget_exceeded"
	// OutcomeLimited: refused by the server's limits (requests at once,
	// the analyst's rate).
	OutcomeLimited = "limited"
	// OutcomeTimeout: the query ran out of time.
	OutcomeTimeout = "timeout"
	// OutcomeUnavailable: the database holding the table could not be
	// reached; nothing was charged.
	OutcomeUnavailable = "unavailable"
	// OutcomeError: an internal error.
	OutcomeError = "error"
)

// QueryEvent is one DP query a front end answered or refused, for logs
// and metrics. It never carries the SQL text or any data.
type QueryEvent struct {
	// RequestID identifies the request in logs and in the audit log.
	RequestID string
	// Frontend is "http" or "pg".
	Frontend string
	Analyst  string
	// Table is the table charged; empty when the query was refused.
	Table string
	// Outcome is one of the Outcome constants.
	Outcome string
	// Kind is the error's kind; empty when answered.
	Kind Kind
	// ReleaseID is the charge's release in the ledger (zero when nothing
	// was charged).
	ReleaseID uint64
	// Cost is what was charged (zero when nothing was).
	Cost     Pair
	Duration time.Duration
}

// NewQueryEvent describes the outcome of one query: its response, or the
// error it was refused with.
func NewQueryEvent(frontend, requestID, analyst string, resp *Response, err error, d time.Duration) QueryEvent {
	ev := QueryEvent{RequestID: requestID, Frontend: frontend, Analyst: analyst, Duration: d}
	if err != nil {
		e := AsError(err)
		ev.Kind, ev.Outcome = e.Kind, outcomeOf(e.Kind)
		return ev
	}
	ev.Table = resp.Table
	switch {
	case resp.DryRun:
		ev.Outcome = OutcomeDryRun
	case resp.Repeated:
		ev.Outcome = OutcomeRepeated
	default:
		ev.Outcome = OutcomeAnswered
		ev.ReleaseID, ev.Cost = resp.ReleaseID, resp.Cost
	}
	return ev
}

func outcomeOf(k Kind) string {
	switch k {
	case KindBudgetExceeded:
		return OutcomeBudgetExceeded
	case KindOverloaded, KindRateLimited:
		return OutcomeLimited
	case KindTimeout:
		return OutcomeTimeout
	case KindUnavailable:
		return OutcomeUnavailable
	case KindInternal:
		return OutcomeError
	}
	return OutcomeRefused
}

// Observer is told of every DP query the front ends answer or refuse. It
// must be safe for concurrent use and return quickly.
type Observer interface {
	ObserveQuery(QueryEvent)
}

// Observers tells each of its observers.
type Observers []Observer

// ObserveQuery implements Observer.
func (o Observers) ObserveQuery(ev QueryEvent) {
	for _, x := range o {
		if x != nil {
			x.ObserveQuery(ev)
		}
	}
}

// QueryLog is an Observer that writes one line per query to a structured
// logger: the request id, front end, analyst, outcome, table, release id
// and cost, never the SQL text.
type QueryLog struct{ Log *slog.Logger }

// ObserveQuery implements Observer.
func (q QueryLog) ObserveQuery(ev QueryEvent) {
	attrs := []slog.Attr{
		slog.String("request_id", ev.RequestID), slog.String("frontend", ev.Frontend),
		slog.String("analyst", ev.Analyst), slog.String("outcome", ev.Outcome),
		slog.Float64("duration_ms", float64(ev.Duration.Microseconds())/1000),
	}
	if ev.Table != "" {
		attrs = append(attrs, slog.String("table", ev.Table))
	}
	if ev.Kind != "" {
		attrs = append(attrs, slog.String("kind", string(ev.Kind)))
	}
	if ev.ReleaseID != 0 {
		attrs = append(attrs, slog.Uint64("release_id", ev.ReleaseID), slog.Float64("epsilon", ev.Cost.Epsilon), slog.Float64("delta", ev.Cost.Delta))
	}
	level := slog.LevelInfo
	if ev.Outcome == OutcomeError {
		level = slog.LevelError
	}
	q.Log.LogAttrs(context.Background(), level, "query", attrs...)
}

// NewRequestID returns a fresh random request id (24 hex digits).
func NewRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

type requestIDKey struct{}

// WithRequestID returns ctx carrying the request id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestIDOf is the request id ctx carries, or "".
func RequestIDOf(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}
