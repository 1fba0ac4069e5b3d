package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/auditlog"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/server"
)

// TestHealth: /healthz and /readyz need no token; /readyz names what is
// down (never why: causes may name hosts) and turns 503 while stopping.
func TestHealth(t *testing.T) {
	var logBuf bytes.Buffer
	engineDown := false
	h := server.NewHealth(log.New(&logBuf, "", 0), server.Check{Name: "engine", Probe: func(context.Context) error {
		if engineDown {
			return errors.New("dial tcp db.internal:5432: connection refused")
		}
		return nil
	}})
	e := newEnv(t, server.Options{Health: h}, nil)
	for _, c := range []struct {
		name, path string
		before     func()
		status     int
		down       string
	}{
		{"alive", "/healthz", nil, 200, ""},
		{"ready", "/readyz", nil, 200, ""},
		{"engine down", "/readyz", func() { engineDown = true }, 503, "engine"},
		{"still alive", "/healthz", nil, 200, ""},
		{"stopping", "/readyz", func() { engineDown = false; h.Stopping() }, 503, "server"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.before != nil {
				c.before()
			}
			r := e.do(t, "GET", c.path, "", "")
			if r.status != c.status {
				t.Fatalf("status %d: %s", r.status, r.raw)
			}
			down, _ := r.body["down"].(map[string]any)
			if c.down != "" && down[c.down] == nil {
				t.Fatalf("%s not named down: %s", c.down, r.raw)
			}
			if strings.Contains(r.raw, "db.internal") {
				t.Fatalf("the cause leaked: %s", r.raw)
			}
		})
	}
	if !strings.Contains(logBuf.String(), "db.internal") {
		t.Errorf("the cause was not logged: %q", logBuf.String())
	}
	// The default checks the ledger.
	d := newEnv(t, server.Options{}, nil)
	if r := d.do(t, "GET", "/readyz", "", ""); r.status != 200 {
		t.Fatalf("default readyz: %d %s", r.status, r.raw)
	}
	d.ledger.Close()
	if r := d.do(t, "GET", "/readyz", "", ""); r.status != 503 || !strings.Contains(r.raw, "ledger") {
		t.Fatalf("readyz with the ledger closed: %d %s", r.status, r.raw)
	}
}

// TestReloadEndpoint: POST /v1/admin/reload needs the admin role, reports
// what changed, refuses a bad catalog with its error (422) and is audited
// with its request id.
func TestReloadEndpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	audit, err := auditlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer audit.Close()
	broken := false
	reload := func(context.Context) (server.ReloadReport, error) {
		if broken {
			return server.ReloadReport{}, errors.New(`catalog.yaml: table "visits": column "age": unknown type "intt"`)
		}
		return server.ReloadReport{Tables: []string{"adult", "trips"}, Added: []string{"trips"}, Removed: []string{"visits"}}, nil
	}
	e := newEnv(t, server.Options{Reload: reload, Audit: audit}, nil)
	if r := e.do(t, "POST", "/v1/admin/reload", e.alice, ""); r.status != 403 {
		t.Fatalf("analyst: %d %s", r.status, r.raw)
	}
	r := e.do(t, "POST", "/v1/admin/reload", e.admin, "")
	if r.status != 200 || !strings.Contains(r.raw, `"added":["trips"]`) || !strings.Contains(r.raw, `"removed":["visits"]`) {
		t.Fatalf("reload: %d %s", r.status, r.raw)
	}
	broken = true
	r = e.do(t, "POST", "/v1/admin/reload", e.admin, "")
	if r.status != 422 || errCode(r) != "catalog_refused" || !strings.Contains(r.raw, `unknown type \"intt\"`) || !strings.Contains(r.raw, "old one keeps serving") {
		t.Fatalf("broken catalog: %d %s", r.status, r.raw)
	}
	got := readAudit(t, path)
	if len(got) != 2 || got[0].Action != "reload" || got[0].Detail != "" || got[1].Detail == "" || got[0].RequestID == "" || got[0].Actor != "root" {
		t.Fatalf("audit: %+v", got)
	}
	// A server started without a reload function says so.
	n := newEnv(t, server.Options{}, nil)
	if r := n.do(t, "POST", "/v1/admin/reload", n.admin, ""); r.status != 501 {
		t.Fatalf("no reload: %d %s", r.status, r.raw)
	}
}

// recorder is an Observer that keeps the events.
type recorder struct {
	mu sync.Mutex
	ev []answer.QueryEvent
}

func (r *recorder) ObserveQuery(ev answer.QueryEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ev = append(r.ev, ev)
}

// TestRequestID: every API response carries X-Request-Id; a query's
// observer event (its log line) carries the same id with the release id
// the ledger holds, and a refusal over budget's audit line carries its id.
func TestRequestID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	audit, err := auditlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer audit.Close()
	rec := &recorder{}
	var logBuf bytes.Buffer
	obs := answer.Observers{rec, answer.QueryLog{Log: slog.New(slog.NewJSONHandler(&logBuf, nil))}}
	e := newEnv(t, server.Options{Audit: audit, Observer: obs}, nil)
	post := func(body string) (*http.Response, map[string]any) {
		req, _ := http.NewRequest("POST", e.ts.URL+"/v1/query", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.alice)
		resp, err := e.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp, m
	}
	resp, body := post(`{"sql":"SELECT sex, COUNT(*) FROM adult GROUP BY sex","epsilon":1}`)
	id := resp.Header.Get(server.RequestIDHeader)
	if resp.StatusCode != 200 || len(id) != 24 {
		t.Fatalf("status %d, request id %q", resp.StatusCode, id)
	}
	release := uint64(body["release_id"].(float64))
	rels, err := e.ledger.History(ledger.Key{}, 0)
	if err != nil || len(rels) != 1 || rels[0].ID != release {
		t.Fatalf("ledger releases %+v (%v), response release %d", rels, err, release)
	}
	resp2, _ := post(`{"sql":"SELECT COUNT(*) FROM adult","epsilon":5}`)
	id2 := resp2.Header.Get(server.RequestIDHeader)
	if resp2.StatusCode != 409 || id2 == "" || id2 == id {
		t.Fatalf("over budget: %d, id %q", resp2.StatusCode, id2)
	}
	rec.mu.Lock()
	evs := append([]answer.QueryEvent(nil), rec.ev...)
	rec.mu.Unlock()
	if len(evs) != 2 {
		t.Fatalf("events %+v", evs)
	}
	if evs[0].RequestID != id || evs[0].ReleaseID != release || evs[0].Outcome != answer.OutcomeAnswered || evs[0].Table != "adult" || evs[0].Frontend != "http" || evs[0].Cost.Epsilon != 1 {
		t.Errorf("answered event %+v", evs[0])
	}
	if evs[1].RequestID != id2 || evs[1].Outcome != answer.OutcomeBudgetExceeded || evs[1].ReleaseID != 0 {
		t.Errorf("refused event %+v", evs[1])
	}
	lines := readAudit(t, path)
	if len(lines) != 1 || lines[0].Event != auditlog.EventRefusedBudget || lines[0].RequestID != id2 {
		t.Fatalf("audit %+v, want the refusal with request id %s", lines, id2)
	}
	// The JSON log: one line per query, with the ids, never the SQL.
	logs := strings.Split(strings.TrimSpace(logBuf.String()), "\n")
	if len(logs) != 2 {
		t.Fatalf("log lines %q", logs)
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(logs[0]), &first); err != nil {
		t.Fatal(err)
	}
	if first["request_id"] != id || first["release_id"] != float64(release) || first["outcome"] != "answered" {
		t.Errorf("log line %s", logs[0])
	}
	if strings.Contains(logBuf.String(), "SELECT") {
		t.Errorf("the log holds SQL text: %s", logBuf.String())
	}
}

// gen is a test answerer that counts its requests and knows whether its
// generation was closed under it.
type gen struct {
	name    string
	block   chan struct{}
	started chan struct{}
	mu      sync.Mutex
	closed  bool
}

func (g *gen) Answer(ctx context.Context, req answer.Request) (*answer.Response, error) {
	if g.block != nil {
		close(g.started)
		<-g.block
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, errors.New("answered on a closed generation")
	}
	return &answer.Response{Table: g.name}, nil
}

func (g *gen) Tables(string) []answer.TableInfo { return []answer.TableInfo{{Name: g.name}} }

// TestSwitchAnswerer: a swap takes effect for the next request at once; a
// request in flight finishes on its generation, which is closed only
// after it.
func TestSwitchAnswerer(t *testing.T) {
	old := &gen{name: "old", block: make(chan struct{}), started: make(chan struct{})}
	sw := server.NewSwitchAnswerer(&server.Generation{Answerer: old, Close: func() {
		old.mu.Lock()
		old.closed = true
		old.mu.Unlock()
	}})
	inflight := make(chan error, 1)
	go func() {
		resp, err := sw.Answer(context.Background(), answer.Request{})
		if err == nil && resp.Table != "old" {
			err = errors.New("answered by " + resp.Table)
		}
		inflight <- err
	}()
	<-old.started
	done := sw.Swap(&server.Generation{Answerer: &gen{name: "new"}})
	if resp, err := sw.Answer(context.Background(), answer.Request{}); err != nil || resp.Table != "new" {
		t.Fatalf("after the swap: %+v %v", resp, err)
	}
	if ts := sw.Tables(""); ts[0].Name != "new" {
		t.Fatalf("tables after the swap: %+v", ts)
	}
	select {
	case <-done:
		t.Fatal("the old generation was closed with a request in flight")
	case <-time.After(50 * time.Millisecond):
	}
	close(old.block)
	if err := <-inflight; err != nil {
		t.Fatalf("the request in flight: %v", err)
	}
	<-done
	old.mu.Lock()
	defer old.mu.Unlock()
	if !old.closed {
		t.Fatal("the old generation was not closed")
	}
}
