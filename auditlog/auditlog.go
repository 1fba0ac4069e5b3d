package server

import (
	"encoding/json"
	"fmt"
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

// AuditEvent is one line of the audit log.
type AuditEvent struct {
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
	Limit *Pair `json:"limit,omitempty"`
	// Detail says why, for failures and refusals.
	Detail string `json:"detail,omitempty"`
	// RequestID is the request's id, as in the server's log lines (and,
	// for an HTTP request, its X-Request-Id header).
	RequestID string `json:"request_id,omitempty"`
}

// AuditLog writes audit events as JSON lines. It is safe for concurrent
// use; a nil *AuditLog records nothing.
type AuditLog struct {
	mu  sync.Mutex
	w   io.Writer
	f   *os.File
	err error
}

// NewAuditLog writes events to w.
func NewAuditLog(w io.Writer) *AuditLog { return &AuditLog{w: w} }

// OpenAuditLog appends events to the file at path, creating it readable
// by its owner only.
func OpenAuditLog(path string) (*AuditLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	return &AuditLog{w: f, f: f}, nil
}

// Record writes one event (its time set to now if zero), synced to disk
// when the log is a file. A failure to write is kept for Err and does not
// stop the service.
func (l *AuditLog) Record(e AuditEvent) {
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
func (l *AuditLog) Err() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Close closes the log's file, if it opened one.
func (l *AuditLog) Close() error {
	if l == nil || l.f == nil {
		return nil
	}
	return l.f.Close()
}
