package server

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/auditlog"
)

// Generation is one catalog's answerer, with what to release once no
// request uses it any more (its engine).
type Generation struct {
	Answerer answer.Answerer
	// Close, if set, runs once the generation is replaced and its last
	// request has finished; it reports its own errors.
	Close func()

	mu     sync.RWMutex
	closed bool
}

// SwitchAnswerer is an Answerer that forwards to the current generation
// and can be switched to a new one atomically while requests run: a
// request runs to its end on the generation it started on, and a replaced
// generation is closed after its last request. It is safe for concurrent
// use.
type SwitchAnswerer struct {
	cur atomic.Pointer[Generation]
}

// NewSwitchAnswerer starts with g.
func NewSwitchAnswerer(g *Generation) *SwitchAnswerer {
	s := &SwitchAnswerer{}
	s.cur.Store(g)
	return s
}

// Swap makes g current at once; the generation it replaces is closed in
// the background once its requests have finished. The returned channel is
// closed when that is done.
func (s *SwitchAnswerer) Swap(g *Generation) <-chan struct{} {
	done := make(chan struct{})
	old := s.cur.Swap(g)
	if old == nil || old == g {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		old.mu.Lock()
		defer old.mu.Unlock()
		old.closed = true
		if old.Close != nil {
			old.Close()
		}
	}()
	return done
}

// Current is the current generation's answerer.
func (s *SwitchAnswerer) Current() answer.Answerer { return s.cur.Load().Answerer }

// acquire returns the current generation, held until release.
func (s *SwitchAnswerer) acquire() *Generation {
	for {
		g := s.cur.Load()
		g.mu.RLock()
		if !g.closed {
			return g
		}
		// Replaced and closed between the load and the lock: take the
		// new one.
		g.mu.RUnlock()
	}
}

// Answer implements Answerer.
func (s *SwitchAnswerer) Answer(ctx context.Context, req answer.Request) (*answer.Response, error) {
	g := s.acquire()
	defer g.mu.RUnlock()
	return g.Answerer.Answer(ctx, req)
}

// Tables implements Answerer.
func (s *SwitchAnswerer) Tables(analyst string) []answer.TableInfo {
	g := s.acquire()
	defer g.mu.RUnlock()
	return g.Answerer.Tables(analyst)
}

// ReloadFunc re-reads the catalog and switches to it, or returns why the
// new catalog was refused (the old one keeps serving).
type ReloadFunc func(ctx context.Context) (ReloadReport, error)

// ReloadReport says what a reload changed.
type ReloadReport struct {
	// Tables are the tables served now.
	Tables []string `json:"tables"`
	// Added and Removed are the tables the reload added and removed.
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
}

// ErrReloadUnavailable: the server was started without a way to reload.
var ErrReloadUnavailable = errors.New("this server cannot reload its catalog")

// handleReload re-reads the catalog (POST /v1/admin/reload). A catalog
// that does not load is refused with 422 "catalog_refused" and its error;
// the old catalog keeps serving.
func (s *Server) handleReload(w http.ResponseWriter, r *http.Request) error {
	if s.opts.Reload == nil {
		return &httpError{http.StatusNotImplemented, "not_implemented", ErrReloadUnavailable.Error()}
	}
	rep, err := s.opts.Reload(r.Context())
	ev := auditlog.Event{Event: auditlog.EventAdmin, Via: "http", Address: r.RemoteAddr, Actor: analystOf(r).Name, Action: "reload", RequestID: answer.RequestIDOf(r.Context())}
	if err != nil {
		ev.Detail = err.Error()
		s.opts.Audit.Record(ev)
		return &httpError{http.StatusUnprocessableEntity, "catalog_refused", "the new catalog was refused; the old one keeps serving: " + err.Error()}
	}
	s.opts.Audit.Record(ev)
	if rep.Tables == nil {
		rep.Tables = []string{}
	}
	if rep.Added == nil {
		rep.Added = []string{}
	}
	if rep.Removed == nil {
		rep.Removed = []string{}
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
