package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/dpstat/dpstat/analyst"
	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/auditlog"
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/pgwire"
	"github.com/dpstat/dpstat/query"
	"github.com/dpstat/dpstat/server"
	"github.com/dpstat/dpstat/server/metrics"
)

// serveConfig is what dpstat serve runs with.
type serveConfig struct {
	catalog, ledger  string
	httpAddr, pgAddr string
	tlsCert, tlsKey  string
	maxConns         int
	maxPending       int
	maxSessions      int
	auditLog         string
	maxConcurrent    int
	rate             float64
	maxSQL           int
	queryTimeout     time.Duration
	shutdownTimeout  time.Duration
	repeatWait       time.Duration
	threads          int
	memoryLimit      string
	loadTables       bool
	metricsAddr      string
	logFormat        string
	// logTo receives the log (nil: standard error).
	logTo io.Writer
	// reloadSignal, when set, delivers SIGHUP: each one reloads the
	// catalog.
	reloadSignal <-chan os.Signal
	// reloaded, when set, is told of each reload's outcome (tests).
	reloaded func(server.ReloadReport, error)
}

func newServeCmd() *cobra.Command {
	var cfg serveConfig
	cmd := &cobra.Command{
		Use:   "serve --catalog FILE [--ledger PATH] [--http ADDR] [--pg ADDR]",
		Short: "Serve DP SQL to many analysts over HTTP, the PostgreSQL protocol and a web dashboard",
		Long: `Serve DP SQL to the analysts of the ledger: a JSON API and a web dashboard on
--http, the PostgreSQL wire protocol on --pg (psql "host=... port=...
user=NAME password=TOKEN"). Every answer is charged to the analyst's budget on
the table before it is released; an analyst may query only the tables an
administrator granted (dpstat analyst add/grant, or the admin API).

Create analysts before starting: while the server runs it holds the ledger,
and the dpstat analyst commands cannot open it; use the admin API then.
SIGINT or SIGTERM stops the server gracefully: no new requests, requests in
flight finish, then the ledger is closed. SIGHUP (or POST /v1/admin/reload)
re-reads the catalog: a catalog that does not load is refused and the old
one keeps serving; sessions stay connected.

GET /healthz and /readyz answer load balancers on --http (no token) and on
--metrics, which also serves Prometheus metrics at /metrics.`,
		Example: `  dpstat analyst add curator --admin --ledger ./ledger.db
  dpstat analyst add alice --table adult --epsilon 3 --delta 1e-6 --ledger ./ledger.db
  dpstat serve --catalog examples/catalog.yaml --ledger ./ledger.db --http 127.0.0.1:8080 --pg 127.0.0.1:5433`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.repeatWait <= 0 {
				return fmt.Errorf("--repeat-wait %v: want a positive duration such as 10s", cfg.repeatWait)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			cfg.reloadSignal = hup
			return runServe(ctx, cfg, cmd.OutOrStdout(), nil)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.catalog, "catalog", "", "catalog file declaring the tables (required)")
	addLedgerFlag(cmd, &cfg.ledger)
	f.StringVar(&cfg.httpAddr, "http", "127.0.0.1:8080", "address of the HTTP API and dashboard; empty disables")
	f.StringVar(&cfg.pgAddr, "pg", "127.0.0.1:5433", "address of the PostgreSQL protocol; empty disables")
	f.StringVar(&cfg.tlsCert, "tls-cert", "", "TLS certificate (PEM) for HTTPS and PostgreSQL TLS; with --tls-key")
	f.StringVar(&cfg.tlsKey, "tls-key", "", "TLS private key (PEM)")
	f.IntVar(&cfg.maxConns, "max-conns", 128, "maximum PostgreSQL sessions")
	f.IntVar(&cfg.maxPending, "max-pending", pgwire.DefaultMaxPending, "maximum PostgreSQL connections still logging in, from every address together (at the cap, quieter addresses displace the busiest one's)")
	f.StringVar(&cfg.auditLog, "audit-log", "", "append an audit log (JSON lines: logins, failed logins, admin actions, grants, refusals over budget) to this file")
	f.IntVar(&cfg.maxSessions, "max-sessions-per-analyst", 64, "maximum PostgreSQL sessions of one analyst at once (0: only --max-conns)")
	f.IntVar(&cfg.maxConcurrent, "max-concurrent", server.DefaultMaxConcurrent, "maximum HTTP API requests served at once (429 beyond)")
	f.Float64Var(&cfg.rate, "rate", 0, "per-analyst requests per second, HTTP API and PostgreSQL statements together (0: unlimited; 429 or SQLSTATE 53400 beyond)")
	f.IntVar(&cfg.maxSQL, "max-sql", server.DefaultMaxSQLLen, "maximum SQL text length in bytes")
	f.DurationVar(&cfg.queryTimeout, "query-timeout", server.DefaultQueryTimeout, "maximum time for one query")
	f.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a graceful shutdown waits for requests in flight")
	f.DurationVar(&cfg.repeatWait, "repeat-wait", query.DefaultRepeatWait, "how long a query waits, at most, for the stored answer of the identical query another replica on the same ledger is answering, before it is charged and answered on its own")
	f.IntVar(&cfg.threads, "threads", 0, "engine worker threads (0: one per core)")
	f.BoolVar(&cfg.loadTables, "load-tables", true, "read each table's source into memory once at start (false: read the files on every query)")
	f.StringVar(&cfg.memoryLimit, "memory-limit", "", "engine memory limit, e.g. 2GB (default: the engine's)")
	f.StringVar(&cfg.metricsAddr, "metrics", "", "address of Prometheus metrics (/metrics) and health checks (/healthz, /readyz), e.g. 127.0.0.1:9090; empty disables")
	f.StringVar(&cfg.logFormat, "log-format", "text", "log format on standard error: text or json")
	return cmd
}

// runServe runs the server until ctx is done, then shuts it down
// gracefully. ready, if not nil, is called with the bound addresses once
// both listeners accept connections.
func runServe(ctx context.Context, cfg serveConfig, out io.Writer, ready func(httpAddr, pgAddr string)) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	tlsCfg, err := cfg.tls()
	if err != nil {
		return err
	}
	logTo := cfg.logTo
	if logTo == nil {
		logTo = os.Stderr
	}
	cat, err := catalog.Load(cfg.catalog)
	if err != nil {
		return err
	}
	// The catalog's DSN never holds a password, but it names the
	// database: it is kept out of the logs, with the password.
	password := ""
	if cat.Engine.PasswordEnv != "" {
		password = os.Getenv(cat.Engine.PasswordEnv)
	}
	slogger, err := newServeLogger(logTo, cfg.logFormat, cat.Engine.DSN, password)
	if err != nil {
		return err
	}
	logger := slog.NewLogLogger(slogger.Handler(), slog.LevelError)
	led, err := openLedger(cfg.ledger)
	if err != nil {
		return err
	}
	defer led.Close()
	reg, err := analyst.NewRegistry(led)
	if err != nil {
		return err
	}
	defer refreshSharedAnalysts(ctx, cfg.ledger, reg, slogger)()
	var m *metrics.Metrics
	var qled query.Ledger = led
	if cfg.metricsAddr != "" {
		m = metrics.New()
		qled = timedLedger{Ledger: led, m: m}
	}
	cs := &catalogServer{base: ctx, cfg: cfg, led: led, qled: qled, m: m, log: slogger}
	if err := cs.start(cat); err != nil {
		return err
	}
	defer cs.close()
	ans := cs.sw
	health := server.NewHealth(logger, server.LedgerCheck(led), cs.engineCheck())
	observer := answer.Observers{answer.QueryLog{Log: slogger}}
	if m != nil {
		observer = append(observer, m)
	}
	var audit *auditlog.Log
	if cfg.auditLog != "" {
		if audit, err = auditlog.Open(cfg.auditLog); err != nil {
			return fmt.Errorf("--audit-log: %w", err)
		}
		defer audit.Close()
	}
	var (
		api              *server.Server
		httpSrv          *http.Server
		pgSrv            *pgwire.Server
		pgLn             net.Listener
		errc             = make(chan error, 2)
		httpAddr, pgAddr string
	)
	if cfg.httpAddr != "" {
		api, err = server.New(server.Options{Answerer: ans, Ledger: led, Analysts: reg, MaxSQLLen: cfg.maxSQL,
			MaxConcurrent: cfg.maxConcurrent, RatePerAnalyst: cfg.rate, QueryTimeout: cfg.queryTimeout, Logger: logger,
			HSTS: tlsCfg != nil, Audit: audit, Observer: observer, Health: health, Reload: cs.reload})
		if err != nil {
			return err
		}
		if httpSrv, httpAddr, err = startHTTP(out, cfg.httpAddr, api, tlsCfg, errc); err != nil {
			return err
		}
	}
	if cfg.pgAddr != "" {
		if api == nil {
			// The PostgreSQL port alone still gets the same limits.
			if api, err = server.New(server.Options{Answerer: ans, Ledger: led, Analysts: reg, MaxSQLLen: cfg.maxSQL,
				MaxConcurrent: cfg.maxConcurrent, RatePerAnalyst: cfg.rate, QueryTimeout: cfg.queryTimeout, Logger: logger, Audit: audit,
				Observer: observer, Health: health, Reload: cs.reload}); err != nil {
				return err
			}
		}
		pgSrv, err = pgwire.New(pgwire.Options{Answerer: ans, Analysts: reg, TLS: tlsCfg, MaxConns: cfg.maxConns, MaxPending: cfg.maxPending,
			MaxSessionsPerAnalyst: cfg.maxSessions, Limits: api, Audit: audit,
			QueryTimeout: cfg.queryTimeout, MaxQueryLen: cfg.maxSQL, Logger: logger, Observer: observer})
		if err != nil {
			return err
		}
		if pgLn, err = net.Listen("tcp", cfg.pgAddr); err != nil {
			if httpSrv != nil {
				httpSrv.Close()
			}
			return fmt.Errorf("--pg %s: %w", cfg.pgAddr, err)
		}
		pgAddr = pgLn.Addr().String()
		go func() {
			if err := pgSrv.Serve(pgLn); !errors.Is(err, pgwire.ErrServerClosed) {
				errc <- fmt.Errorf("PostgreSQL server: %w", err)
			}
		}()
		host, port, _ := net.SplitHostPort(pgAddr)
		fmt.Fprintf(out, "dpstat serve: PostgreSQL protocol on %s (psql \"host=%s port=%s user=NAME password=TOKEN\")\n", pgAddr, host, port)
	}
	var metricsSrv *http.Server
	if m != nil {
		if metricsSrv, err = startMetrics(out, cfg.metricsAddr, m, health, api, pgSrv, logger, errc); err != nil {
			if httpSrv != nil {
				httpSrv.Close()
			}
			if pgSrv != nil {
				pgSrv.Close()
			}
			return err
		}
	}
	if tlsCfg == nil {
		for _, l := range []struct{ flag, addr string }{{"--http", httpAddr}, {"--pg", pgAddr}} {
			if l.addr != "" && !loopback(l.addr) {
				fmt.Fprintf(out, "dpstat serve: WARNING: %s %s listens beyond loopback without TLS: tokens, queries and answers cross the network in the clear; give --tls-cert and --tls-key (or listen on 127.0.0.1 behind a TLS proxy)\n", l.flag, l.addr)
			}
		}
	}
	printSummary(out, len(cat.Tables), reg, led.Path())
	if ready != nil {
		ready(httpAddr, pgAddr)
	}
	runErr := waitForStop(ctx, cfg, cs, errc)
	shutdown(out, cfg.shutdownTimeout, health, httpSrv, pgSrv, metricsSrv)
	// The deferred Close calls run now: the ledger closes only after every
	// request has finished or the shutdown timeout has passed.
	fmt.Fprintln(out, "dpstat serve: stopped")
	return runErr
}

// waitForStop serves until the context ends or a server fails (its error
// returned), reloading the catalog on each reload signal.
func waitForStop(ctx context.Context, cfg serveConfig, cs *catalogServer, errc <-chan error) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			return err
		case <-cfg.reloadSignal:
			rep, err := cs.reload(ctx)
			if cfg.reloaded != nil {
				cfg.reloaded(rep, err)
			}
		}
	}
}

// startHTTP serves the HTTP API and dashboard on addr (with TLS when
// tlsCfg is set); a failure of the running server is sent to errc.
func startHTTP(out io.Writer, addr string, api *server.Server, tlsCfg *tls.Config, errc chan<- error) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("--http %s: %w", addr, err)
	}
	srv := api.HTTPServer(addr)
	scheme := "http"
	if tlsCfg != nil {
		srv.TLSConfig = tlsCfg.Clone()
		ln = tls.NewListener(ln, srv.TLSConfig)
		scheme = "https"
	}
	bound := ln.Addr().String()
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("HTTP server: %w", err)
		}
	}()
	fmt.Fprintf(out, "dpstat serve: HTTP API and dashboard on %s://%s/\n", scheme, bound)
	return srv, bound, nil
}

// startMetrics serves the metrics and health endpoints on addr; a
// failure of the running server is sent to errc.
func startMetrics(out io.Writer, addr string, m *metrics.Metrics, health *server.Health, api *server.Server, pgSrv *pgwire.Server, logger *log.Logger, errc chan<- error) (*http.Server, error) {
	m.WatchServer(api)
	if pgSrv != nil {
		m.WatchPG(pgSrv)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics %s: %w", addr, err)
	}
	srv := &http.Server{Handler: m.Mux(health), ReadHeaderTimeout: 5 * time.Second, ErrorLog: logger}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("metrics server: %w", err)
		}
	}()
	fmt.Fprintf(out, "dpstat serve: metrics on http://%s/metrics, health on /healthz and /readyz\n", ln.Addr())
	return srv, nil
}

// shutdown drains the servers: load balancers see the server as not
// ready, requests in flight finish within the timeout, then the servers
// close.
func shutdown(out io.Writer, timeout time.Duration, health *server.Health, httpSrv *http.Server, pgSrv *pgwire.Server, metricsSrv *http.Server) {
	// Load balancers see the server as not ready while it drains.
	health.Stopping()
	fmt.Fprintln(out, "dpstat serve: shutting down: finishing requests in flight")
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if httpSrv != nil {
		if err := httpSrv.Shutdown(sctx); err != nil {
			httpSrv.Close()
		}
	}
	if pgSrv != nil {
		pgSrv.Shutdown(sctx)
	}
	if metricsSrv != nil {
		metricsSrv.Close()
	}
}

// validate checks the flags that need no file or network: each says what
// is accepted.
func (cfg serveConfig) validate() error {
	if cfg.catalog == "" {
		return errors.New("--catalog is required: the catalog file declaring the tables")
	}
	if cfg.httpAddr == "" && cfg.pgAddr == "" {
		return errors.New("--http and --pg are both empty: give at least one address to listen on")
	}
	if (cfg.tlsCert == "") != (cfg.tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together: give both or neither")
	}
	for _, f := range []struct {
		flag string
		v    int64
		min  int64
	}{
		{"max-conns", int64(cfg.maxConns), 1},
		{"max-pending", int64(cfg.maxPending), 0},
		{"max-concurrent", int64(cfg.maxConcurrent), 1},
		{"max-sql", int64(cfg.maxSQL), 1},
		{"threads", int64(cfg.threads), 0},
		{"max-sessions-per-analyst", int64(cfg.maxSessions), 0},
	} {
		if f.v < f.min {
			return fmt.Errorf("--%s %d: want a whole number >= %d", f.flag, f.v, f.min)
		}
	}
	for _, f := range []struct {
		flag string
		v    time.Duration
	}{{"query-timeout", cfg.queryTimeout}, {"shutdown-timeout", cfg.shutdownTimeout}} {
		if f.v <= 0 {
			return fmt.Errorf("--%s %v: want a positive duration such as 30s", f.flag, f.v)
		}
	}
	if math.IsNaN(cfg.rate) || math.IsInf(cfg.rate, 0) || cfg.rate < 0 {
		return fmt.Errorf("--rate %v: want a finite number of requests per second >= 0 (0: unlimited)", cfg.rate)
	}
	return nil
}

// tls loads the TLS certificate and key, or returns nil without them.
func (cfg serveConfig) tls() (*tls.Config, error) {
	if cfg.tlsCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(cfg.tlsCert, cfg.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("loading --tls-cert/--tls-key: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// printSummary says what the server serves and warns when no admin can
// use the admin API.
func printSummary(out io.Writer, tables int, reg *analyst.Registry, ledgerPath string) {
	admins := 0
	for _, a := range reg.List() {
		if a.IsAdmin() && !a.Revoked {
			admins++
		}
	}
	fmt.Fprintf(out, "dpstat serve: %d tables, %d analysts (%d admins), ledger %s\n", tables, len(reg.List()), admins, ledgerPath)
	if admins == 0 {
		fmt.Fprintln(out, "dpstat serve: no admin analyst: the admin API is unusable until one is added (stop the server, then dpstat analyst add NAME --admin)")
	}
}

// loopback reports whether addr (host:port, as bound) is reachable only
// from this machine: a loopback IP or "localhost". An empty or unspecified
// host listens on every interface.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
