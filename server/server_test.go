package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/analyst"
	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/answer/answertest"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/server"
)

type env struct {
	ledger                     *ledger.Ledger
	reg                        *analyst.Registry
	srv                        *server.Server
	ts                         *httptest.Server
	alice, bob, admin, revoked string
}

func newEnv(t *testing.T, opts server.Options, wrap func(answer.Answerer) answer.Answerer) *env {
	t.Helper()
	l, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	reg, err := analyst.NewRegistry(l)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{ledger: l, reg: reg}
	add := func(name string, role analyst.Role, table string) string {
		_, tok, err := reg.Add(name, role)
		if err != nil {
			t.Fatal(err)
		}
		if table != "" {
			if _, err := l.Grant(ledger.Key{Dataset: table, Analyst: name}, accounting.EpsDelta{Epsilon: 3, Delta: 1e-6}, accounting.Basic); err != nil {
				t.Fatal(err)
			}
		}
		return tok
	}
	e.alice = add("alice", analyst.RoleAnalyst, "adult")
	e.bob = add("bob", analyst.RoleAnalyst, "visits")
	e.admin = add("root", analyst.RoleAdmin, "")
	e.revoked = add("mallory", analyst.RoleAnalyst, "adult")
	if _, err := reg.Revoke("mallory"); err != nil {
		t.Fatal(err)
	}
	var ans answer.Answerer = &answertest.Answerer{Ledger: l}
	if wrap != nil {
		ans = wrap(ans)
	}
	opts.Answerer, opts.Ledger, opts.Analysts = ans, l, reg
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = 4096
	}
	if opts.MaxSQLLen == 0 {
		opts.MaxSQLLen = 1024
	}
	e.srv, err = server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.ts = httptest.NewServer(e.srv.Handler())
	t.Cleanup(e.ts.Close)
	return e
}

type result struct {
	status int
	body   map[string]any
	raw    string
}

func (e *env) do(t *testing.T, method, path, token, body string) result {
	t.Helper()
	req, err := http.NewRequest(method, e.ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := result{status: resp.StatusCode, raw: string(raw)}
	json.Unmarshal(raw, &r.body)
	return r
}

func errCode(r result) string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (e *env) releases(t *testing.T) int {
	t.Helper()
	rels, err := e.ledger.History(ledger.Key{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(rels)
}

func TestQueryAnswersAndCharges(t *testing.T) {
	e := newEnv(t, server.Options{}, nil)
	r := e.do(t, "POST", "/v1/query", e.alice, `{"sql":"SELECT sex, COUNT(*) FROM adult GROUP BY sex","epsilon":0.5}`)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.raw)
	}
	for _, k := range []string{"columns", "rows", "ci", "cost", "budget"} {
		if _, ok := r.body[k]; !ok {
			t.Errorf("response lacks %q: %s", k, r.raw)
		}
	}
	st, err := e.ledger.Status(ledger.Key{Dataset: "adult", Analyst: "alice"})
	if err != nil || st.Spent.Epsilon != 0.5 || st.Releases != 1 {
		t.Fatalf("after one query: %+v %v", st, err)
	}
	// Dry run: a preview with the cost, nothing charged.
	r = e.do(t, "POST", "/v1/query", e.alice, `{"sql":"SELECT sex, COUNT(*) FROM adult GROUP BY sex","epsilon":1,"dry_run":true}`)
	if r.status != 200 || r.body["dry_run"] != true {
		t.Fatalf("dry run: %d %s", r.status, r.raw)
	}
	if n := e.releases(t); n != 1 {
		t.Fatalf("dry run charged: %d releases", n)
	}
	// Budget: own only.
	r = e.do(t, "GET", "/v1/budget", e.alice, "")
	if r.status != 200 || !strings.Contains(r.raw, `"remaining":{"epsilon":2.5`) || strings.Contains(r.raw, "bob") {
		t.Fatalf("budget: %d %s", r.status, r.raw)
	}
	// History: own releases only.
	e.do(t, "POST", "/v1/query", e.bob, `{"sql":"SELECT COUNT(*) FROM visits"}`)
	r = e.do(t, "GET", "/v1/history", e.alice, "")
	if r.status != 200 || strings.Count(r.raw, `"id"`) != 1 || strings.Contains(r.raw, "visits") {
		t.Fatalf("alice's history: %s", r.raw)
	}
	r = e.do(t, "GET", "/v1/admin/releases", e.admin, "")
	if r.status != 200 || strings.Count(r.raw, `"id"`) != 2 {
		t.Fatalf("admin releases: %s", r.raw)
	}
	// Tables: only granted ones, declared bounds but no data.
	r = e.do(t, "GET", "/v1/tables", e.alice, "")
	if r.status != 200 || !strings.Contains(r.raw, `"adult"`) || strings.Contains(r.raw, `"visits"`) || !strings.Contains(r.raw, `"upper":90`) {
		t.Fatalf("tables: %s", r.raw)
	}
	// Budget exhaustion: 409, and the failed attempt is not charged.
	r = e.do(t, "POST", "/v1/query", e.alice, `{"sql":"SELECT COUNT(*) FROM adult","epsilon":2.6}`)
	if r.status != 409 || errCode(r) != "budget_exceeded" {
		t.Fatalf("over budget: %d %s", r.status, r.raw)
	}
	if n := e.releases(t); n != 2 {
		t.Fatalf("refused query charged: %d releases", n)
	}
}

func TestAttacksAreRefusedAndNeverCharged(t *testing.T) {
	e := newEnv(t, server.Options{}, nil)
	q := func(sql string) string {
		b, _ := json.Marshal(map[string]any{"sql": sql})
		return string(b)
	}
	tests := []struct {
		name, method, path, token, body string
		status                          int
		code                            string
	}{
		{"no token", "POST", "/v1/query", "", q("SELECT COUNT(*) FROM adult"), 401, "unauthorized"},
		{"wrong token", "POST", "/v1/query", "dps_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", q("SELECT COUNT(*) FROM adult"), 401, "unauthorized"},
		{"garbage token", "POST", "/v1/query", "x' OR '1'='1", q("SELECT COUNT(*) FROM adult"), 401, "unauthorized"},
		{"revoked token", "POST", "/v1/query", e.revoked, q("SELECT COUNT(*) FROM adult"), 401, "token_revoked"},
		{"another analyst's table", "POST", "/v1/query", e.bob, q("SELECT COUNT(*) FROM adult"), 403, "not_granted"},
		{"unknown table", "POST", "/v1/query", e.alice, q("SELECT COUNT(*) FROM secrets"), 400, "unknown_table"},
		{"analyst on admin endpoint", "GET", "/v1/admin/analysts", e.alice, "", 403, "forbidden"},
		{"analyst revokes", "POST", "/v1/admin/analysts/bob/revoke", e.alice, "", 403, "forbidden"},
		{"analyst grants self", "POST", "/v1/admin/grants", e.alice, `{"analyst":"alice","table":"adult","epsilon":100}`, 403, "forbidden"},
		{"oversize body", "POST", "/v1/query", e.alice, q("SELECT COUNT(*) FROM adult /*" + strings.Repeat("x", 5000) + "*/"), 413, "too_large"},
		{"very long SQL", "POST", "/v1/query", e.alice, q("SELECT COUNT(*) FROM adult /*" + strings.Repeat("x", 1500) + "*/"), 413, "too_large"},
		{"malformed JSON", "POST", "/v1/query", e.alice, `{"sql": "SELECT`, 400, "bad_request"},
		{"not an object", "POST", "/v1/query", e.alice, `["SELECT 1"]`, 400, "bad_request"},
		{"unknown field", "POST", "/v1/query", e.alice, `{"sql":"SELECT COUNT(*) FROM adult","analyst":"bob"}`, 400, "bad_request"},
		{"two objects", "POST", "/v1/query", e.alice, `{"sql":"SELECT COUNT(*) FROM adult"}{"sql":"x"}`, 400, "bad_request"},
		{"empty body", "POST", "/v1/query", e.alice, ``, 400, "bad_request"},
		{"empty SQL", "POST", "/v1/query", e.alice, `{"sql":"  "}`, 400, "bad_request"},
		{"negative epsilon", "POST", "/v1/query", e.alice, `{"sql":"SELECT COUNT(*) FROM adult","epsilon":-1}`, 400, "bad_request"},
		{"zero epsilon", "POST", "/v1/query", e.alice, `{"sql":"SELECT COUNT(*) FROM adult","epsilon":0}`, 400, "bad_request"},
		{"epsilon as string", "POST", "/v1/query", e.alice, `{"sql":"SELECT COUNT(*) FROM adult","epsilon":"1; DROP TABLE x"}`, 400, "bad_request"},
		{"huge epsilon number", "POST", "/v1/query", e.alice, `{"sql":"SELECT COUNT(*) FROM adult","epsilon":1e400}`, 400, "bad_request"},
		{"delta one", "POST", "/v1/query", e.alice, `{"sql":"SELECT COUNT(*) FROM adult","delta":1}`, 400, "bad_request"},
		{"confidence above one", "POST", "/v1/query", e.alice, `{"sql":"SELECT COUNT(*) FROM adult","confidence":1.5}`, 400, "bad_request"},
		{"injection: second statement", "POST", "/v1/query", e.alice, q("SELECT COUNT(*) FROM adult; DROP TABLE adult"), 400, "refused"},
		{"injection: DROP", "POST", "/v1/query", e.alice, q("DROP TABLE adult"), 400, "refused"},
		{"SELECT star", "POST", "/v1/query", e.alice, q("SELECT * FROM adult"), 400, "refused"},
		{"syntax error", "POST", "/v1/query", e.alice, q("SELEKT COUNT(*) FROM adult"), 400, "syntax_error"},
		{"form body", "POST", "/v1/query", e.alice, "sql=x", 400, "bad_request"},
		{"bad history limit", "GET", "/v1/history?limit=-1", e.alice, "", 400, "bad_request"},
		{"unknown endpoint", "GET", "/v1/rows", e.alice, "", 404, "not_found"},
		{"path traversal in name", "POST", "/v1/admin/analysts/..%2f..%2fetc/revoke", e.admin, "", 404, "not_found"},
		{"admin bad name", "POST", "/v1/admin/analysts", e.admin, `{"name":"x'; DROP TABLE analysts;--"}`, 400, "bad_request"},
		{"admin grant unknown table", "POST", "/v1/admin/grants", e.admin, `{"analyst":"alice","table":"secrets","epsilon":1}`, 400, "bad_request"},
		{"admin grant on a public table", "POST", "/v1/admin/grants", e.admin, `{"analyst":"alice","table":"weekdays","epsilon":1}`, 400, "bad_request"},
		{"admin grant NaN-like", "POST", "/v1/admin/grants", e.admin, `{"analyst":"alice","table":"adult","epsilon":-5}`, 400, "bad_request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, e.ts.URL+tc.path, strings.NewReader(tc.body))
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			if tc.code == "unsupported_media_type" {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			} else if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := e.ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var body map[string]any
			if err := json.Unmarshal(raw, &body); err != nil {
				t.Fatalf("status %d, body is not JSON: %q", resp.StatusCode, raw)
			}
			r := result{status: resp.StatusCode, body: body, raw: string(raw)}
			if r.status != tc.status || errCode(r) != tc.code {
				t.Fatalf("got %d %q, want %d %q: %s", r.status, errCode(r), tc.status, tc.code, raw)
			}
			if msg, _ := body["error"].(map[string]any)["message"].(string); msg == "" {
				t.Fatalf("error without a message: %s", raw)
			}
			if n := e.releases(t); n != 0 {
				t.Fatalf("charged %d releases", n)
			}
		})
	}
}

func TestAdminLifecycle(t *testing.T) {
	e := newEnv(t, server.Options{}, nil)
	r := e.do(t, "POST", "/v1/admin/analysts", e.admin, `{"name":"carol","grants":[{"table":"adult","epsilon":1,"delta":1e-6}]}`)
	if r.status != 201 {
		t.Fatalf("add: %d %s", r.status, r.raw)
	}
	tok, _ := r.body["token"].(string)
	if !strings.HasPrefix(tok, analyst.TokenPrefix) {
		t.Fatalf("no token in %s", r.raw)
	}
	if r := e.do(t, "POST", "/v1/admin/analysts", e.admin, `{"name":"carol"}`); r.status != 409 {
		t.Fatalf("second add: %d %s", r.status, r.raw)
	}
	if r := e.do(t, "POST", "/v1/query", tok, `{"sql":"SELECT COUNT(*) FROM adult","epsilon":0.25}`); r.status != 200 {
		t.Fatalf("carol's query: %d %s", r.status, r.raw)
	}
	if r := e.do(t, "POST", "/v1/admin/grants", e.admin, `{"analyst":"carol","table":"adult","epsilon":2,"delta":1e-6}`); r.status != 200 || !strings.Contains(r.raw, `"remaining":{"epsilon":1.75`) {
		t.Fatalf("grant: %d %s", r.status, r.raw)
	}
	r = e.do(t, "GET", "/v1/admin/analysts", e.admin, "")
	if r.status != 200 || !strings.Contains(r.raw, `"carol"`) || strings.Contains(r.raw, "token_sha256") || strings.Contains(r.raw, tok) {
		t.Fatalf("list: %s", r.raw)
	}
	if r := e.do(t, "POST", "/v1/admin/analysts/carol/revoke", e.admin, ""); r.status != 200 {
		t.Fatalf("revoke: %d %s", r.status, r.raw)
	}
	// Revocation takes effect at once, without a restart.
	before := e.releases(t)
	if r := e.do(t, "POST", "/v1/query", tok, `{"sql":"SELECT COUNT(*) FROM adult"}`); r.status != 401 || errCode(r) != "token_revoked" {
		t.Fatalf("revoked query: %d %s", r.status, r.raw)
	}
	if e.releases(t) != before {
		t.Fatal("revoked token was charged")
	}
	if r := e.do(t, "POST", "/v1/admin/analysts/nobody/revoke", e.admin, ""); r.status != 404 {
		t.Fatalf("revoke unknown: %d %s", r.status, r.raw)
	}
	r = e.do(t, "POST", "/v1/admin/analysts/carol/rotate", e.admin, "")
	newTok, _ := r.body["token"].(string)
	if r.status != 200 || newTok == "" {
		t.Fatalf("rotate: %d %s", r.status, r.raw)
	}
	if r := e.do(t, "GET", "/v1/budget", newTok, ""); r.status != 200 {
		t.Fatalf("rotated token: %d %s", r.status, r.raw)
	}
}

// blocking holds every Answer until release is closed.
type blocking struct {
	answer.Answerer
	entered chan struct{}
	release chan struct{}
}

func (b *blocking) Answer(ctx context.Context, req answer.Request) (*answer.Response, error) {
	b.entered <- struct{}{}
	<-b.release
	return b.Answerer.Answer(ctx, req)
}

func TestTooManyConcurrentRequests(t *testing.T) {
	b := &blocking{entered: make(chan struct{}, 1), release: make(chan struct{})}
	e := newEnv(t, server.Options{MaxConcurrent: 1}, func(a answer.Answerer) answer.Answerer { b.Answerer = a; return b })
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		e.do(t, "POST", "/v1/query", e.alice, `{"sql":"SELECT COUNT(*) FROM adult"}`)
	}()
	<-b.entered
	r := e.do(t, "POST", "/v1/query", e.alice, `{"sql":"SELECT COUNT(*) FROM adult"}`)
	if r.status != 429 || errCode(r) != "overloaded" {
		t.Fatalf("second request: %d %s", r.status, r.raw)
	}
	close(b.release)
	wg.Wait()
	if n := e.releases(t); n != 1 {
		t.Fatalf("%d releases, want 1", n)
	}
}

func TestRateLimit(t *testing.T) {
	e := newEnv(t, server.Options{RatePerAnalyst: 0.001, Burst: 2}, nil)
	for i := 0; i < 2; i++ {
		if r := e.do(t, "GET", "/v1/budget", e.alice, ""); r.status != 200 {
			t.Fatalf("request %d: %d", i, r.status)
		}
	}
	if r := e.do(t, "GET", "/v1/budget", e.alice, ""); r.status != 429 || errCode(r) != "rate_limited" {
		t.Fatalf("third request: %d %s", r.status, r.raw)
	}
	if r := e.do(t, "GET", "/v1/budget", e.bob, ""); r.status != 200 {
		t.Fatalf("another analyst is limited too: %d", r.status)
	}
}

// panicking fails in a way that must not leak.
type panicking struct{ answer.Answerer }

func (panicking) Answer(context.Context, answer.Request) (*answer.Response, error) {
	panic("secret internal detail /var/lib/x")
}

func TestInternalErrorsHideDetails(t *testing.T) {
	e := newEnv(t, server.Options{}, func(a answer.Answerer) answer.Answerer { return panicking{a} })
	r := e.do(t, "POST", "/v1/query", e.alice, `{"sql":"SELECT COUNT(*) FROM adult"}`)
	if r.status != 500 || strings.Contains(r.raw, "secret") || errCode(r) != "internal" {
		t.Fatalf("got %d %s", r.status, r.raw)
	}
}

func TestSlowClientTimesOut(t *testing.T) {
	e := newEnv(t, server.Options{}, nil)
	hs := e.srv.HTTPServer("127.0.0.1:0")
	hs.ReadHeaderTimeout = 200 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	defer hs.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Send half a request line, then stall: the server must hang up.
	c.Write([]byte("POST /v1/query HTTP/1.1\r\nHost: x\r\n"))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf, _ := io.ReadAll(c)
	if len(buf) > 0 && !bytes.Contains(buf, []byte("408")) && !bytes.Contains(buf, []byte("400")) {
		t.Fatalf("unexpected reply %q", buf)
	}
	if n := e.releases(t); n != 0 {
		t.Fatalf("charged %d", n)
	}
}

func TestOpenAPIAndDashboard(t *testing.T) {
	e := newEnv(t, server.Options{}, nil)
	resp, err := http.Get(e.ts.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.") {
		t.Fatalf("openapi version %v", doc["openapi"])
	}
	paths, _ := doc["paths"].(map[string]any)
	for _, p := range []string{"/v1/query", "/v1/tables", "/v1/budget", "/v1/history", "/v1/admin/analysts", "/v1/admin/analysts/{name}/revoke", "/v1/admin/grants", "/v1/admin/releases"} {
		if _, ok := paths[p]; !ok {
			t.Errorf("OpenAPI document lacks %s", p)
		}
	}
	for _, p := range []string{"/", "/app.js", "/style.css"} {
		resp, err := http.Get(e.ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(body) == 0 || resp.Header.Get("Content-Security-Policy") == "" {
			t.Fatalf("%s: %d, %d bytes, CSP %q", p, resp.StatusCode, len(body), resp.Header.Get("Content-Security-Policy"))
		}
		// The SVG namespace name is an identifier, not an address that is fetched.
		body = bytes.ReplaceAll(body, []byte("http://www.w3.org/2000/svg"), nil)
		if bytes.Contains(body, []byte("http://")) || bytes.Contains(body, []byte("https://")) || bytes.Contains(body, []byte("//cdn")) {
			t.Errorf("%s refers to an outside address", p)
		}
	}
}

// TestConcurrentQueriesNeverOverspend sends many queries at once from
// several analysts: each budget allows exactly 12 answers of ε = 0.25, and
// exactly that many succeed; the rest get 409 and are not charged.
func TestConcurrentQueriesNeverOverspend(t *testing.T) {
	e := newEnv(t, server.Options{}, nil)
	tokens := []string{e.alice, e.alice, e.bob, e.bob}
	tables := []string{"adult", "adult", "visits", "visits"}
	var wg sync.WaitGroup
	var mu sync.Mutex
	status := map[string]map[int]int{"adult": {}, "visits": {}}
	for i := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := i % len(tokens)
			r := e.do(t, "POST", "/v1/query", tokens[k], `{"sql":"SELECT COUNT(*) FROM `+tables[k]+`","epsilon":0.25}`)
			mu.Lock()
			status[tables[k]][r.status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, tbl := range []string{"adult", "visits"} {
		if status[tbl][200] != 12 || status[tbl][409] != 18 {
			t.Errorf("%s: statuses %v, want 12 × 200 and 18 × 409", tbl, status[tbl])
		}
	}
	for _, k := range []ledger.Key{{Dataset: "adult", Analyst: "alice"}, {Dataset: "visits", Analyst: "bob"}} {
		st, err := e.ledger.Status(k)
		if err != nil || st.Spent.Epsilon != 3 || st.Releases != 12 {
			t.Errorf("%v: %+v %v", k, st, err)
		}
	}
}

// TestBadRequestMessages checks that a malformed request body is explained
// in the request's own terms: the field, what was sent, what is accepted.
func TestBadRequestMessages(t *testing.T) {
	e := newEnv(t, server.Options{}, nil)
	tests := []struct {
		name, body, want string
	}{
		{"epsilon as a string", `{"sql":"SELECT COUNT(*) FROM adult","epsilon":"abc"}`, `"epsilon": got a JSON string, want a number such as 0.5`},
		{"dry_run as a string", `{"sql":"SELECT COUNT(*) FROM adult","dry_run":"yes"}`, `"dry_run": got a JSON string, want true or false`},
		{"unknown field", `{"sql":"SELECT COUNT(*) FROM adult","epsilom":1}`, `unknown field "epsilom"; accepted: sql, epsilon, delta, confidence`},
		{"not an object", `["SELECT 1"]`, `the body is a JSON array: want a JSON object such as {"sql"`},
		{"broken JSON", `{"sql" "x"}`, `malformed JSON at byte 8`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, "POST", "/v1/query", e.alice, tc.body)
			msg, _ := r.body["error"].(map[string]any)["message"].(string)
			if r.status != 400 || !strings.Contains(msg, tc.want) || strings.Contains(msg, "Go struct") {
				t.Fatalf("got %d %s\nwant 400 with %q", r.status, r.raw, tc.want)
			}
		})
	}
}
