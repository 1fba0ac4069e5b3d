// Package server is dpstat's multi-analyst query service over HTTP: a JSON
// API for DP SQL with bearer tokens, budgets and release history, admin
// endpoints for analysts and grants, an OpenAPI document, and a web
// dashboard whose every asset is embedded in the binary.
//
// The server never answers a question itself: it authenticates the analyst,
// enforces limits (body size, SQL length, concurrency, per-analyst rate) and
// hands the question to an Answerer, which charges the ledger before it
// returns an answer. Errors are JSON objects {"error": {"code", "message"}}
// with a stable code and the matching HTTP status; internal errors are
// reported without details.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/analyst"
	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/auditlog"
	"github.com/dpstat/dpstat/ledger"
)

// Defaults for Options fields left zero.
const (
	DefaultMaxBodyBytes  = 64 << 10
	DefaultMaxSQLLen     = 16 << 10
	DefaultMaxConcurrent = 256
	DefaultQueryTimeout  = 30 * time.Second
	DefaultHistoryLimit  = 100
	MaxHistoryLimit      = 10000
)

// Options configures a Server.
type Options struct {
	// Answerer answers DP SQL (required).
	Answerer answer.Answerer
	// Ledger is read for budgets and history and written for grants
	// (required).
	Ledger *ledger.Ledger
	// Analysts authenticates tokens and is updated by the admin endpoints
	// (required).
	Analysts *analyst.Registry
	// MaxBodyBytes bounds a request body; larger bodies get 413.
	MaxBodyBytes int64
	// MaxSQLLen bounds the SQL text in bytes; longer gets 413.
	MaxSQLLen int
	// MaxConcurrent bounds the API requests served at once; beyond it
	// requests get 429 at once rather than queue.
	MaxConcurrent int
	// RatePerAnalyst, when positive, bounds each analyst's API requests
	// per second (a token bucket of size Burst); beyond it, 429.
	RatePerAnalyst float64
	// Burst is the per-analyst bucket size; zero means max(1, RatePerAnalyst).
	Burst int
	// QueryTimeout bounds the time one query may take.
	QueryTimeout time.Duration
	// Logger receives internal errors; nil means the standard logger.
	Logger *log.Logger
	// Audit, when set, records logins, failed logins, admin actions,
	// grants and refusals over budget.
	Audit *auditlog.Log
	// HSTS sends Strict-Transport-Security with every response: set it
	// when the server is reached over TLS, so that browsers never fall
	// back to plain HTTP.
	HSTS bool
	// Observer, when set, is told of every query (for logs and metrics).
	Observer answer.Observer
	// Health answers GET /healthz and /readyz; nil means one that checks
	// the ledger.
	Health *Health
	// Reload, when set, serves POST /v1/admin/reload: it re-reads the
	// catalog and switches to it.
	Reload ReloadFunc
}

// HSTSHeader is the Strict-Transport-Security value sent with HSTS: one
// year, subdomains included.
const HSTSHeader = "max-age=31536000; includeSubDomains"

// Server is the HTTP front end. Create it with New.
type Server struct {
	opts    Options
	sem     chan struct{}
	limiter *rateLimiter
	mux     *http.ServeMux
	log     *log.Logger
}

// New validates opts and returns a Server.
func New(opts Options) (*Server, error) {
	if opts.Answerer == nil || opts.Ledger == nil || opts.Analysts == nil {
		return nil, errors.New("server: Answerer, Ledger and Analysts are required")
	}
	err := answer.ApplyDefaults("server",
		answer.Default("MaxBodyBytes", &opts.MaxBodyBytes, DefaultMaxBodyBytes),
		answer.Default("MaxSQLLen", &opts.MaxSQLLen, DefaultMaxSQLLen),
		answer.Default("MaxConcurrent", &opts.MaxConcurrent, DefaultMaxConcurrent),
		answer.Default("QueryTimeout", &opts.QueryTimeout, DefaultQueryTimeout),
		answer.Default("Burst", &opts.Burst, 0))
	if err != nil {
		return nil, err
	}
	if math.IsNaN(opts.RatePerAnalyst) || math.IsInf(opts.RatePerAnalyst, 0) || opts.RatePerAnalyst < 0 {
		return nil, fmt.Errorf("server: RatePerAnalyst = %v: want a finite number >= 0", opts.RatePerAnalyst)
	}
	if opts.Logger == nil {
		opts.Logger = log.Default()
	}
	if opts.Health == nil {
		opts.Health = NewHealth(opts.Logger, LedgerCheck(opts.Ledger))
	}
	s := &Server{opts: opts, sem: make(chan struct{}, opts.MaxConcurrent), log: opts.Logger}
	if opts.RatePerAnalyst > 0 {
		burst := opts.Burst
		if burst == 0 {
			burst = int(math.Max(1, opts.RatePerAnalyst))
		}
		s.limiter = newRateLimiter(opts.RatePerAnalyst, burst)
	}
	s.routes()
	return s, nil
}

// MaxSQLLen is the longest SQL text the server accepts, in bytes.
func (s *Server) MaxSQLLen() int { return s.opts.MaxSQLLen }

// InFlight is the number of requests (HTTP API requests and PostgreSQL
// statements) being served now; MaxConcurrent is its limit.
func (s *Server) InFlight() int { return len(s.sem) }

// MaxConcurrent is the most requests served at once.
func (s *Server) MaxConcurrent() int { return s.opts.MaxConcurrent }

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler {
	if !s.opts.HSTS {
		return s.mux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Strict-Transport-Security", HSTSHeader)
		s.mux.ServeHTTP(w, r)
	})
}

// HTTPServer returns an http.Server for addr with the server's handler and
// timeouts against slow clients: 5 s to send the headers, 15 s for the
// whole request, the query timeout plus 15 s for the response, 60 s idle.
func (s *Server) HTTPServer(addr string) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           s.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      s.opts.QueryTimeout + 15*time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          s.log,
	}
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /openapi.json", serveOpenAPI)
	m.Handle("POST /v1/query", s.api(false, s.handleQuery))
	m.Handle("GET /v1/tables", s.api(false, s.handleTables))
	m.Handle("GET /v1/budget", s.api(false, s.handleBudget))
	m.Handle("GET /v1/history", s.api(false, s.handleHistory))
	m.Handle("GET /v1/me", s.api(false, s.handleMe))
	m.Handle("GET /v1/admin/analysts", s.api(true, s.handleListAnalysts))
	m.Handle("POST /v1/admin/analysts", s.api(true, s.handleAddAnalyst))
	m.Handle("POST /v1/admin/analysts/{name}/revoke", s.api(true, s.handleRevoke))
	m.Handle("POST /v1/admin/analysts/{name}/rotate", s.api(true, s.handleRotate))
	m.Handle("POST /v1/admin/grants", s.api(true, s.handleGrant))
	m.Handle("GET /v1/admin/releases", s.api(true, s.handleAllReleases))
	m.Handle("GET /v1/admin/verify", s.api(true, s.handleVerify))
	m.Handle("POST /v1/admin/reload", s.api(true, s.handleReload))
	s.opts.Health.Register(m)
	m.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no endpoint %s %s; see /openapi.json", r.Method, r.URL.Path))
	})
	m.Handle("/", dashboardHandler())
	s.mux = m
}

type ctxKey struct{}

// analystOf returns the authenticated analyst of a request.
func analystOf(r *http.Request) analyst.Analyst {
	a, _ := r.Context().Value(ctxKey{}).(analyst.Analyst)
	return a
}

// Admit applies the API's limits to one request that analyst makes by
// another front end (a PostgreSQL statement), so that both share them:
// the limit of requests served at once and the analyst's rate. It returns
// the function that ends the request, or an *Error of kind KindOverloaded
// or KindRateLimited.
func (s *Server) Admit(name string) (func(), error) {
	select {
	case s.sem <- struct{}{}:
	default:
		return nil, answer.Errorf(answer.KindOverloaded, "the server is serving its maximum of %d requests; retry shortly", s.opts.MaxConcurrent)
	}
	if s.limiter != nil && !s.limiter.allow(name) {
		<-s.sem
		return nil, answer.Errorf(answer.KindRateLimited, "analyst %q is over the limit of %g requests per second; retry shortly", name, s.opts.RatePerAnalyst)
	}
	return func() { <-s.sem }, nil
}

type apiFunc func(w http.ResponseWriter, r *http.Request) error

// api wraps an endpoint: panics become 500, concurrency and rate limits
// give 429, the bearer token is checked (401), admin endpoints need the
// admin role (403), and a returned error is written as JSON.
func (s *Server) api(admin bool, fn apiFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				s.log.Printf("dpstat serve: panic serving %s %s: %v", r.Method, r.URL.Path, p)
				writeError(w, http.StatusInternalServerError, string(answer.KindInternal), "internal error")
			}
		}()
		w.Header().Set("Cache-Control", "no-store")
		id := answer.NewRequestID()
		w.Header().Set(RequestIDHeader, id)
		r = r.WithContext(answer.WithRequestID(r.Context(), id))
		select {
		case s.sem <- struct{}{}:
			defer func() { <-s.sem }()
		default:
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusTooManyRequests, "overloaded", fmt.Sprintf("the server is serving its maximum of %d requests; retry shortly", s.opts.MaxConcurrent))
			s.limited(r, "", answer.KindOverloaded)
			return
		}
		a, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		if s.limiter != nil && !s.limiter.allow(a.Name) {
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusTooManyRequests, "rate_limited", fmt.Sprintf("analyst %q is over the limit of %g requests per second; retry shortly", a.Name, s.opts.RatePerAnalyst))
			s.limited(r, a.Name, answer.KindRateLimited)
			return
		}
		if admin && !a.IsAdmin() {
			writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("analyst %q does not have the admin role", a.Name))
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, a))
		if err := fn(w, r); err != nil {
			s.writeErr(w, err)
		}
	})
}

// limited tells the observer of a query refused by the server's limits.
func (s *Server) limited(r *http.Request, name string, k answer.Kind) {
	if s.opts.Observer != nil && r.URL.Path == "/v1/query" {
		s.opts.Observer.ObserveQuery(answer.QueryEvent{RequestID: answer.RequestIDOf(r.Context()), Frontend: "http", Analyst: name, Outcome: answer.OutcomeLimited, Kind: k})
	}
}

func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (analyst.Analyst, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="dpstat"`)
		writeError(w, http.StatusUnauthorized, "unauthorized", "missing token: send the header Authorization: Bearer TOKEN")
		return analyst.Analyst{}, false
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		w.Header().Set("WWW-Authenticate", `Bearer realm="dpstat"`)
		writeError(w, http.StatusUnauthorized, "unauthorized", "the Authorization header must be: Bearer TOKEN")
		return analyst.Analyst{}, false
	}
	a, err := s.opts.Analysts.Authenticate(strings.TrimSpace(tok))
	if err != nil {
		s.opts.Audit.Record(auditlog.Event{Event: auditlog.EventLoginFailed, Via: "http", Address: r.RemoteAddr, Detail: err.Error(), RequestID: answer.RequestIDOf(r.Context())})
	}
	switch {
	case errors.Is(err, analyst.ErrRevoked):
		w.Header().Set("WWW-Authenticate", `Bearer realm="dpstat", error="invalid_token"`)
		writeError(w, http.StatusUnauthorized, "token_revoked", "this token has been revoked; ask an administrator for a new one")
		return analyst.Analyst{}, false
	case err != nil:
		w.Header().Set("WWW-Authenticate", `Bearer realm="dpstat", error="invalid_token"`)
		writeError(w, http.StatusUnauthorized, "unauthorized", "invalid token")
		return analyst.Analyst{}, false
	}
	return a, true
}

// httpError is an error with its own status and code.
type httpError struct {
	status  int
	code    string
	message string
}

// Error implements error.
func (e *httpError) Error() string { return e.message }

func badRequest(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, string(answer.KindBadRequest), fmt.Sprintf(format, args...)}
}

func (s *Server) writeErr(w http.ResponseWriter, err error) {
	var he *httpError
	if errors.As(err, &he) {
		writeError(w, he.status, he.code, he.message)
		return
	}
	e := answer.AsError(err)
	if e.Kind == answer.KindUnavailable {
		s.log.Printf("dpstat serve: %s: %v", e.Message, e.Err)
	}
	if e.Kind == answer.KindInternal {
		s.log.Printf("dpstat serve: internal error: %v", err)
		writeError(w, http.StatusInternalServerError, string(answer.KindInternal), "internal error")
		return
	}
	writeError(w, httpStatus(e.Kind), string(e.Kind), e.Message)
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	var b errorBody
	b.Error.Code, b.Error.Message = code, message
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		data = []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(data, '\n'))
}

// decodeBody reads one JSON object of at most MaxBodyBytes into v,
// refusing unknown fields and trailing data.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("trailing data after the JSON object")
		}
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &httpError{http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("request body is larger than %d bytes", s.opts.MaxBodyBytes)}
		}
		if errors.Is(err, io.EOF) {
			return badRequest("empty request body: want a JSON object")
		}
		return badRequest("%s", jsonProblem(err, v))
	}
	return nil
}

// jsonProblem says what is wrong with a request body in the request's own
// terms: the field, what was sent and what is accepted, or where the JSON
// breaks.
func jsonProblem(err error, v any) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		want := map[string]string{"float64": "a number such as 0.5", "string": "a string", "bool": "true or false",
			"int": "a whole number", "int64": "a whole number", "uint64": "a whole number"}[te.Type.String()]
		if want == "" {
			want = "a " + te.Type.String()
		}
		field := te.Field
		if field == "" {
			return fmt.Sprintf("the body is a JSON %s: want a JSON object such as %s", te.Value, bodyExample(v))
		}
		return fmt.Sprintf("%q: got a JSON %s, want %s", field, te.Value, want)
	case errors.As(err, &se):
		return fmt.Sprintf("malformed JSON at byte %d (%s): want a JSON object such as %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "), bodyExample(v))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Sprintf("unknown field %s; accepted: %s", strings.TrimPrefix(err.Error(), "json: unknown field "), strings.Join(jsonFields(v), ", "))
	}
	return fmt.Sprintf("malformed JSON body: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// jsonFields are the JSON names of the fields of the struct v points to.
func jsonFields(v any) []string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

func bodyExample(v any) string {
	if _, ok := v.(*queryBody); ok {
		return `{"sql": "SELECT COUNT(*) FROM t", "epsilon": 0.5}`
	}
	return "{" + strings.Join(jsonFields(v), ", ") + "}"
}

// queryBody is the body of POST /v1/query.
type queryBody struct {
	SQL        string   `json:"sql"`
	Epsilon    *float64 `json:"epsilon"`
	Delta      *float64 `json:"delta"`
	Confidence *float64 `json:"confidence"`
	DryRun     bool     `json:"dry_run"`
	// Dropped asks for the DP estimate of the rows contribution bounding
	// dropped.
	Dropped bool `json:"dropped"`
	// Accuracy is a number or an object {column: number}.
	Accuracy json.RawMessage `json:"accuracy"`
	// Fresh asks for a fresh answer, never one derived from releases.
	Fresh bool `json:"fresh"`
}

// parseAccuracy reads the body's "accuracy": a half-width > 0, or an
// object giving one per output column, checked as every front end checks
// an accuracy (answer.Accuracy.Check); nil when absent.
func parseAccuracy(raw json.RawMessage) (*answer.Accuracy, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var acc answer.Accuracy
	if err := json.Unmarshal(raw, &acc.All); err != nil {
		if err := json.Unmarshal(raw, &acc.Columns); err != nil || len(acc.Columns) == 0 {
			return nil, badRequest(`accuracy = %s: want a half-width > 0 (e.g. 20) or an object {"column": half-width} (e.g. {"n": 20, "total": 500})`, raw)
		}
	}
	if err := acc.Check(); err != nil {
		return nil, err
	}
	return &acc, nil
}

func (s *Server) handleQuery(w http.ResponseWriter, r *http.Request) error {
	var b queryBody
	if err := s.decodeBody(w, r, &b); err != nil {
		return err
	}
	if strings.TrimSpace(b.SQL) == "" {
		return badRequest(`"sql" is empty: want a DP SQL query such as SELECT COUNT(*) FROM t`)
	}
	if len(b.SQL) > s.opts.MaxSQLLen {
		return &httpError{http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("SQL text is %d bytes long: want at most %d", len(b.SQL), s.opts.MaxSQLLen)}
	}
	req := answer.Request{Analyst: analystOf(r).Name, SQL: b.SQL, DryRun: b.DryRun, Dropped: b.Dropped}
	for _, p := range []struct {
		param answer.Param
		name  string
		v     *float64
		dst   *float64
	}{{answer.ParamEpsilon, "epsilon", b.Epsilon, &req.Epsilon}, {answer.ParamDelta, "delta", b.Delta, &req.Delta}, {answer.ParamConfidence, "confidence", b.Confidence, &req.Confidence}} {
		if p.v != nil {
			if err := answer.CheckParam(p.param, p.name, *p.v); err != nil {
				return err
			}
			*p.dst = *p.v
		}
	}
	acc, err := parseAccuracy(b.Accuracy)
	if err != nil {
		return err
	}
	if acc != nil && b.Epsilon != nil {
		return badRequest(`"accuracy" and "epsilon" were both given: keep one, "accuracy" (the server chooses the smallest ε that meets it) or "epsilon" (the answer reports the half-widths it gives)`)
	}
	req.Accuracy = acc
	req.Fresh = b.Fresh
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.QueryTimeout)
	defer cancel()
	start := time.Now()
	resp, err := s.opts.Answerer.Answer(ctx, req)
	if s.opts.Observer != nil {
		s.opts.Observer.ObserveQuery(answer.NewQueryEvent("http", answer.RequestIDOf(r.Context()), req.Analyst, resp, err, time.Since(start)))
	}
	if err != nil {
		if answer.AsError(err).Kind == answer.KindBudgetExceeded {
			s.opts.Audit.Record(auditlog.Event{Event: auditlog.EventRefusedBudget, Via: "http", Address: r.RemoteAddr, Analyst: req.Analyst, Detail: err.Error(), RequestID: answer.RequestIDOf(r.Context())})
		}
		return err
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func (s *Server) handleTables(w http.ResponseWriter, r *http.Request) error {
	tables := s.opts.Answerer.Tables(analystOf(r).Name)
	if tables == nil {
		tables = []answer.TableInfo{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tables": tables})
	return nil
}

// BudgetInfo is one of an analyst's budgets.
type BudgetInfo struct {
	Table     string          `json:"table"`
	Analyst   string          `json:"analyst"`
	Rule      accounting.Rule `json:"rule"`
	Limit     answer.Pair     `json:"limit"`
	Spent     answer.Pair     `json:"spent"`
	Remaining answer.Pair     `json:"remaining"`
	Releases  int             `json:"releases"`
	// Total is the table's total budget (every analyst together), when it
	// has one: the analyst's share is spent within it.
	Total *answer.TotalInfo `json:"total,omitempty"`
	// Epochs, on a table that declares epochs, are the budgets of the
	// epochs charged, one per run of consecutive epochs with equal
	// budgets; each has the limit above, and an epoch not listed has its
	// whole budget.
	Epochs []EpochInfo `json:"epochs,omitempty"`
}

// EpochInfo is the budget of a run of epochs (e.g. "2024-01..2024-03").
type EpochInfo struct {
	Epochs    string      `json:"epochs"`
	Spent     answer.Pair `json:"spent"`
	Remaining answer.Pair `json:"remaining"`
	Releases  int         `json:"releases"`
}

func budgetInfo(st ledger.Status) BudgetInfo {
	return BudgetInfo{
		Table: st.Key.Dataset, Analyst: st.Key.Analyst, Rule: st.Rule,
		Limit:     answer.Pair{Epsilon: st.Limit.Epsilon, Delta: st.Limit.Delta},
		Spent:     answer.Pair{Epsilon: st.Spent.Epsilon, Delta: st.Spent.Delta},
		Remaining: answer.Pair{Epsilon: st.Remaining.Epsilon, Delta: st.Remaining.Delta},
		Releases:  st.Releases,
		Total:     answer.TotalInfoOf(st.Total),
	}
}

func (s *Server) budgetsOf(name string) ([]BudgetInfo, error) {
	all, err := s.opts.Ledger.Budgets()
	if err != nil {
		return nil, err
	}
	out := []BudgetInfo{}
	for _, st := range all {
		if name == "" || st.Key.Analyst == name {
			bi := budgetInfo(st)
			eb, err := s.opts.Ledger.EpochBudgets(st.Key)
			if err != nil {
				return nil, err
			}
			for _, e := range eb {
				bi.Epochs = append(bi.Epochs, EpochInfo{Epochs: e.Key.Epoch, Spent: answer.Pair{Epsilon: e.Spent.Epsilon, Delta: e.Spent.Delta},
					Remaining: answer.Pair{Epsilon: e.Remaining.Epsilon, Delta: e.Remaining.Delta}, Releases: e.Releases})
			}
			out = append(out, bi)
		}
	}
	return out, nil
}

func (s *Server) handleBudget(w http.ResponseWriter, r *http.Request) error {
	b, err := s.budgetsOf(analystOf(r).Name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"budgets": b})
	return nil
}

// ReleaseInfo is one charged release.
type ReleaseInfo struct {
	ID          uint64      `json:"id"`
	Time        time.Time   `json:"time"`
	Table       string      `json:"table"`
	Analyst     string      `json:"analyst"`
	Description string      `json:"description"`
	Cost        answer.Pair `json:"cost"`
}

func limitParam(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return DefaultHistoryLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxHistoryLimit {
		return 0, badRequest("limit = %q: want a whole number from 1 to %d", v, MaxHistoryLimit)
	}
	return n, nil
}

func (s *Server) history(w http.ResponseWriter, r *http.Request, name string) error {
	n, err := limitParam(r)
	if err != nil {
		return err
	}
	rels, err := s.opts.Ledger.History(ledger.Key{Analyst: name}, n)
	if err != nil {
		return err
	}
	out := make([]ReleaseInfo, 0, len(rels))
	for _, rel := range rels {
		out = append(out, ReleaseInfo{ID: rel.ID, Time: rel.Time, Table: rel.Key.Dataset, Analyst: rel.Key.Analyst,
			Description: rel.Description, Cost: answer.Pair{Epsilon: rel.Cost.Epsilon, Delta: rel.Cost.Delta}})
	}
	writeJSON(w, http.StatusOK, map[string]any{"releases": out})
	return nil
}

func (s *Server) handleHistory(w http.ResponseWriter, r *http.Request) error {
	return s.history(w, r, analystOf(r).Name)
}

func (s *Server) handleAllReleases(w http.ResponseWriter, r *http.Request) error {
	return s.history(w, r, "")
}

// handleVerify checks the ledger against its own records while the server
// holds it (dpstat budget verify cannot open it then). A mismatch is
// reported as 500 with code "ledger_tampered" and the message naming the
// budget.
func (s *Server) handleVerify(w http.ResponseWriter, r *http.Request) error {
	s.opts.Audit.Record(auditlog.Event{Event: auditlog.EventAdmin, Via: "http", Address: r.RemoteAddr, Actor: analystOf(r).Name, Action: "verify", RequestID: answer.RequestIDOf(r.Context())})
	rep, err := s.opts.Ledger.Verify()
	if errors.Is(err, ledger.ErrTampered) || errors.Is(err, ledger.ErrKey) {
		s.log.Printf("dpstat serve: ledger verification failed: %v", err)
		writeError(w, http.StatusInternalServerError, "ledger_tampered", err.Error()+" (restarting the server will refuse this ledger)")
		return nil
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

func (s *Server) handleMe(w http.ResponseWriter, r *http.Request) error {
	s.opts.Audit.Record(auditlog.Event{Event: auditlog.EventLogin, Via: "http", Address: r.RemoteAddr, Analyst: analystOf(r).Name, RequestID: answer.RequestIDOf(r.Context())})
	writeJSON(w, http.StatusOK, analystOf(r))
	return nil
}

// rateLimiter is a token bucket per analyst.
type rateLimiter struct {
	rate  float64
	burst float64
	mu    sync.Mutex
	b     map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newRateLimiter(rate float64, burst int) *rateLimiter {
	return &rateLimiter{rate: rate, burst: float64(burst), b: map[string]*bucket{}}
}

func (l *rateLimiter) allow(name string) bool {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.b[name]
	if !ok {
		b = &bucket{tokens: l.burst, last: now}
		l.b[name] = b
	}
	b.tokens = math.Min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
