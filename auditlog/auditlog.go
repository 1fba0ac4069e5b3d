// Package auditlog is the audit log of dpstat's front ends: one JSON line
// per login, failed login, admin action, grant and refusal for a spent
// budget, appended to a file readable by its owner only.
package auditlog

import (
	"encoding/json"
	"fmt"
	"github.com/dpstat/dpstat/answer"
	"io"
	"os"
	"sync"
	"time"
)

// Audit events, the "event" field of each line of the audit log.
const (
	// EventLogin: an analyst logged in (a PostgreSQL session, or the
	// dashboard's sign-in, GET /v1/me).
	EventLogin = "login"
	// EventLoginFailed: a token or SCRAM proof was refused; "analyst" is
	// the name the client gave, if any.
	EventLoginFailed = "login_failed"
	// EventAdmin: an admin action (add, revoke, rotate an analyst);
	// "actor" is the admin.
	EventAdmin = "admin"
	// EventGrant: a budget was set: an analyst's ("analyst") or a
	// table's total ("total": true); "actor" is the admin.
	EventGrant = "grant"
	// EventRefusedBudget: a query was refused because a budget was spent.
	EventRefusedBudget = "refused_over_budget"
)

// Event is one line of the audit log.
type Event struct {
	Time    time.Time `json:"time"`
	Event   string    `json:"event"`
	Address string    `json:"address,omitempty"`
	// Via is "http" or "pg".
	Via     string `json:"via,omitempty"`
	Actor   string `json:"actor,omitempty"`
	Analyst string `json:"analyst,omitempty"`
	Action  string `json:"action,omitempty"`
	Table   string `json:"table,omitempty"`
	Total   bool   `json:"total,omitempty"`
	// Limit is a grant's new limit.
	Limit *answer.Pair `json:"limit,omitempty"`
	// Detail says why, for failures and refusals.
	Detail string `json:"detail,omitempty"`
	// RequestID is the request's id, as in the server's log lines (and,
	// for an HTTP request, its X-Request-Id header).
	RequestID string `json:"request_id,omitempty"`
}

// Log writes audit events as JSON lines. It is safe for concurrent
// use; a nil *Log records nothing.
type Log struct {
	mu  sync.Mutex
	w   io.Writer
	f   *os.File
	err error
}

// New writes events to w.
func New(w io.Writer) *Log { return &Log{w: w} }

// Open appends events to the file at path, creating it readable
// by its owner only.
func Open(path string) (*Log, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	return &Log{w: f, f: f}, nil
}

// Record writes one event (its time set to now if zero), synced to disk
// when the log is a file. A failure to write is kept for Err and does not
// stop the service.
func (l *Log) Record(e Event) {
	if l == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.w.Write(append(b, '\n')); err != nil && l.err == nil {
		l.err = err
	}
	if l.f != nil {
		if err := l.f.Sync(); err != nil && l.err == nil {
			l.err = err
		}
	}
}

// Err is the first error writing the log met, if any.
func (l *Log) Err() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Close closes the log's file, if it opened one.
func (l *Log) Close() error {
	if l == nil || l.f == nil {
		return nil
	}
	return l.f.Close()
}
