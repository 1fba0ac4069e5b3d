package server

import (
	"context"
	"log"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/dpstat/dpstat/ledger"
)

// Check is one readiness probe: a dependency the server needs to answer
// (the ledger, an engine).
type Check struct {
	// Name names the dependency in /readyz's answer.
	Name string
	// Probe returns nil when the dependency is reachable.
	Probe func(ctx context.Context) error
}

// LedgerCheck probes the ledger with a read (of its file, or of its
// database within the probe's deadline).
func LedgerCheck(led *ledger.Ledger) Check {
	return Check{Name: "ledger", Probe: led.Ping}
}

// Health answers load balancers: GET /healthz is 200 while the process
// serves; GET /readyz is 200 when every check passes, else 503 naming what
// is down (the causes go to the log only: they may name hosts). Neither
// needs a token. A nil *Health has no checks.
type Health struct {
	checks   []Check
	log      *log.Logger
	stopping atomic.Bool
	// Timeout bounds all the probes of one /readyz.
	Timeout time.Duration
}

// NewHealth returns a Health running checks on /readyz; logger (nil: the
// standard logger) receives why a check failed.
func NewHealth(logger *log.Logger, checks ...Check) *Health {
	if logger == nil {
		logger = log.Default()
	}
	return &Health{checks: checks, log: logger, Timeout: 2 * time.Second}
}

// Stopping makes /readyz answer 503 from now on, so that a load balancer
// stops sending requests while a graceful shutdown finishes.
func (h *Health) Stopping() { h.stopping.Store(true) }

// readiness is /readyz's body.
type readiness struct {
	Status string            `json:"status"`
	Down   map[string]string `json:"down,omitempty"`
}

// Ready runs the checks and returns what is down (nil when ready).
func (h *Health) Ready(ctx context.Context) map[string]string {
	down := map[string]string{}
	if h.stopping.Load() {
		down["server"] = "shutting down"
	}
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	for _, c := range h.checks {
		if err := c.Probe(ctx); err != nil {
			h.log.Printf("dpstat serve: readiness: %s is down: %v", c.Name, err)
			down[c.Name] = "cannot be reached"
		}
	}
	if len(down) == 0 {
		return nil
	}
	return down
}

// Register adds GET /healthz and GET /readyz to mux.
func (h *Health) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, readiness{Status: "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if down := h.Ready(r.Context()); down != nil {
			writeJSON(w, http.StatusServiceUnavailable, readiness{Status: "unavailable", Down: down})
			return
		}
		writeJSON(w, http.StatusOK, readiness{Status: "ready"})
	})
}
