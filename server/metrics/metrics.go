// Package metrics exposes dpstat serve's metrics in the Prometheus text
// format: queries by front end and outcome, refusals by kind, ε and δ
// charged per table, query, engine and ledger latencies, requests in
// flight, PostgreSQL connections, catalog reloads and build information.
// No label carries SQL text or data: labels are front ends, outcomes,
// error kinds, table names from the catalog and ledger operations.
package metrics

import (
	"net/http"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/pgwire"
	"github.com/dpstat/dpstat/server"
)

// Metrics holds dpstat's collectors in a registry of their own. Its
// methods are safe for concurrent use.
type Metrics struct {
	reg            *prometheus.Registry
	queries        *prometheus.CounterVec
	refusals       *prometheus.CounterVec
	epsilon, delta *prometheus.CounterVec
	querySeconds   *prometheus.HistogramVec
	engineSeconds  *prometheus.HistogramVec
	ledgerSeconds  *prometheus.HistogramVec
	reloads        *prometheus.CounterVec
	tables         prometheus.Gauge
}

// buckets are latency buckets in seconds, from 1 ms to 30 s.
var buckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// New returns the metrics, with the Go runtime's and the process's
// collectors and dpstat_build_info.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpstat_queries_total",
			Help: "DP queries by front end (http, pg) and outcome (answered, repeated, dry_run, refused, budget_exceeded, limited, timeout, unavailable, error)."},
			[]string{"frontend", "outcome"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpstat_refusals_total",
			Help: "DP queries not answered, by error kind (syntax_error, refused, unknown_table, unknown_column, not_granted, bad_request, budget_exceeded, overloaded, rate_limited, timeout, unavailable, internal)."},
			[]string{"kind"}),
		epsilon: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpstat_epsilon_spent_total",
			Help: "Privacy loss ε charged by this process, per table queried."}, []string{"table"}),
		delta: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpstat_delta_spent_total",
			Help: "Privacy loss δ charged by this process, per table queried."}, []string{"table"}),
		querySeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "dpstat_query_duration_seconds",
			Help: "Time to answer or refuse a DP query, by front end.", Buckets: buckets}, []string{"frontend"}),
		engineSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "dpstat_engine_duration_seconds",
			Help: "Engine time of a charged query (its statements and the noise), by outcome (ok, error).", Buckets: buckets}, []string{"outcome"}),
		ledgerSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "dpstat_ledger_duration_seconds",
			Help: "Ledger operation time, by operation (charge: a durable commit).", Buckets: buckets}, []string{"op"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpstat_catalog_reloads_total",
			Help: "Catalog reloads by outcome (ok, refused)."}, []string{"outcome"}),
		tables: prometheus.NewGauge(prometheus.GaugeOpts{Name: "dpstat_catalog_tables",
			Help: "Tables of the catalog being served."}),
	}
	version, goVersion := "devel", runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		version = bi.Main.Version
	}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dpstat_build_info",
		Help: "dpstat's version and the Go version it was built with; always 1."}, []string{"version", "goversion"})
	build.WithLabelValues(version, goVersion).Set(1)
	m.reg.MustRegister(m.queries, m.refusals, m.epsilon, m.delta, m.querySeconds, m.engineSeconds, m.ledgerSeconds,
		m.reloads, m.tables, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The outcomes every dashboard plots exist from the start, at zero.
	for _, fe := range []string{"http", "pg"} {
		for _, o := range []string{answer.OutcomeAnswered, answer.OutcomeRefused, answer.OutcomeBudgetExceeded, answer.OutcomeError} {
			m.queries.WithLabelValues(fe, o)
		}
	}
	return m
}

// Registry is the registry the metrics are in.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveQuery implements answer.Observer.
func (m *Metrics) ObserveQuery(ev answer.QueryEvent) {
	m.queries.WithLabelValues(ev.Frontend, ev.Outcome).Inc()
	if ev.Kind != "" {
		m.refusals.WithLabelValues(string(ev.Kind)).Inc()
	}
	if ev.ReleaseID != 0 && ev.Table != "" {
		m.epsilon.WithLabelValues(ev.Table).Add(ev.Cost.Epsilon)
		m.delta.WithLabelValues(ev.Table).Add(ev.Cost.Delta)
	}
	if ev.Duration > 0 {
		m.querySeconds.WithLabelValues(ev.Frontend).Observe(ev.Duration.Seconds())
	}
}

// EngineDone records the engine time of a charged query (it implements
// query.Observer).
func (m *Metrics) EngineDone(d time.Duration, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.engineSeconds.WithLabelValues(outcome).Observe(d.Seconds())
}

// LedgerDone records the time of one ledger operation.
func (m *Metrics) LedgerDone(op string, d time.Duration) {
	m.ledgerSeconds.WithLabelValues(op).Observe(d.Seconds())
}

// Reloaded records a catalog reload: ok, and the tables served after it.
func (m *Metrics) Reloaded(ok bool, tables int) {
	if !ok {
		m.reloads.WithLabelValues("refused").Inc()
		return
	}
	m.reloads.WithLabelValues("ok").Inc()
	m.tables.Set(float64(tables))
}

// SetTables sets the number of tables served (at start).
func (m *Metrics) SetTables(n int) { m.tables.Set(float64(n)) }

// WatchServer exposes the requests s serves at once and its limit.
func (m *Metrics) WatchServer(s *server.Server) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dpstat_requests_in_flight",
			Help: "HTTP API requests and PostgreSQL statements being served now (beyond dpstat_requests_max, requests are refused, not queued)."},
			func() float64 { return float64(s.InFlight()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dpstat_requests_max",
			Help: "The most requests served at once (--max-concurrent)."},
			func() float64 { return float64(s.MaxConcurrent()) }),
	)
}

// WatchPG exposes the PostgreSQL front end's connections.
func (m *Metrics) WatchPG(p *pgwire.Server) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dpstat_pg_sessions",
			Help: "Logged-in PostgreSQL sessions."}, func() float64 { return float64(p.Stats().Sessions) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dpstat_pg_pending_connections",
			Help: "PostgreSQL connections that have not logged in yet."}, func() float64 { return float64(p.Stats().Pending) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "dpstat_pg_displaced_connections_total",
			Help: "Connections waiting to log in that were closed at the pending cap to make room for another address."},
			func() float64 { return float64(p.Stats().Displaced) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "dpstat_pg_refused_connections_total",
			Help: "Connections refused at the pending cap."}, func() float64 { return float64(p.Stats().RefusedPending) }),
	)
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Mux serves GET /metrics, and /healthz and /readyz from h, for the
// metrics address.
func (m *Metrics) Mux(h *server.Health) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	if h != nil {
		h.Register(mux)
	}
	return mux
}
