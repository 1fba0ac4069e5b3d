package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/dpstat/dpstat/server"
)

// syncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// writeCatalog writes a catalog declaring the example tables named.
func writeCatalog(t *testing.T, path string, tables ...string) {
	t.Helper()
	ex, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	decl := map[string]string{
		"adult": `  adult:
    source: ` + filepath.Join(ex, "adult.csv") + `
    columns:
      age: {type: int, lower: 17, upper: 90}
      sex: {type: text, values: [Female, Male]}
`,
		"visits": `  visits:
    source: ` + filepath.Join(ex, "restaurant_visits.csv") + `
    privacy_unit: visitor_id
    max_groups_per_unit: 3
    max_rows_per_group: 1
    columns:
      visitor_id: {type: int}
      day: {type: int, values: [1, 2, 3, 4, 5, 6, 7]}
`,
		"broken": "  broken:\n    source: nowhere.csv\n    columns:\n      x: {type: intt}\n",
	}
	text := "budget: {epsilon: 10, delta: 1e-5}\ntables:\n"
	for _, name := range tables {
		text += decl[name]
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestServeReloadMetricsLogs runs the whole server in process: a reload
// (by signal and by the admin endpoint) adds a table, removes one, and a
// broken catalog is refused while queries keep working and a PostgreSQL
// session stays connected throughout; metrics are scraped and parsed,
// health answers on both addresses, and the JSON log ties each request id
// to its release id.
func TestServeReloadMetricsLogs(t *testing.T) {
	dir := t.TempDir()
	l := filepath.Join(dir, "ledger.db")
	catPath := filepath.Join(dir, "catalog.yaml")
	writeCatalog(t, catPath, "adult")
	out, _, code := runServeCLI(t, "analyst", "add", "alice", "--table", "adult", "--epsilon", "5", "--ledger", l)
	if code != 0 {
		t.Fatal(out)
	}
	tok := lastOutputLine(out)
	if out, _, code = runServeCLI(t, "analyst", "grant", "alice", "--table", "visits", "--epsilon", "5", "--ledger", l); code != 0 {
		t.Fatal(out)
	}
	out, _, code = runServeCLI(t, "analyst", "add", "root", "--admin", "--ledger", l)
	if code != 0 {
		t.Fatal(out)
	}
	admin := lastOutputLine(out)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hup := make(chan os.Signal, 1)
	reloaded := make(chan error, 4)
	var stdout, logs syncBuffer
	addrs := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, serveConfig{
			catalog: catPath, ledger: l, httpAddr: "127.0.0.1:0", pgAddr: "127.0.0.1:0", metricsAddr: "127.0.0.1:0",
			logFormat: "json", logTo: &logs, maxConns: 8, maxConcurrent: 8, maxSQL: 4096,
			queryTimeout: 10 * time.Second, shutdownTimeout: 5 * time.Second, loadTables: true, threads: 1,
			reloadSignal: hup, reloaded: func(_ server.ReloadReport, err error) { reloaded <- err },
		}, &stdout, func(h, p string) { addrs <- [2]string{h, p} })
	}()
	var a [2]string
	select {
	case a = <-addrs:
	case err := <-done:
		t.Fatalf("serve stopped: %v\n%s", err, logs.String())
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not start")
	}
	mm := regexp.MustCompile(`metrics on http://(\S+)/metrics`).FindStringSubmatch(stdout.String())
	if mm == nil {
		t.Fatalf("no metrics address in %q", stdout.String())
	}
	metricsAddr := mm[1]

	type answer struct {
		status int
		id     string
		body   map[string]any
	}
	query := func(sql string) answer {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+a[0]+"/v1/query", strings.NewReader(`{"sql":`+jsonString(sql)+`,"epsilon":0.1}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		return answer{resp.StatusCode, resp.Header.Get(server.RequestIDHeader), body}
	}
	reloadByAPI := func() (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+a[0]+"/v1/admin/reload", nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	reloadBySignal := func() error {
		t.Helper()
		hup <- os.Interrupt // any value: the test's channel stands for SIGHUP
		select {
		case err := <-reloaded:
			return err
		case <-time.After(60 * time.Second):
			t.Fatal("no reload")
		}
		return nil
	}
	const adultQ, visitsQ = "SELECT COUNT(*) FROM adult", "SELECT day, COUNT(*) FROM visits GROUP BY day"

	// A PostgreSQL session that lives through every reload.
	host, port, _ := strings.Cut(a[1], ":")
	pg, err := pgx.Connect(ctx, "host="+host+" port="+port+" user=alice password="+tok+" dbname=dpstat sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(context.Background())
	pgQuery := func(sql string) error {
		rows, err := pg.Query(ctx, sql)
		if err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	}

	first := query(adultQ)
	if first.status != 200 || first.id == "" {
		t.Fatalf("adult before reload: %+v", first)
	}
	if r := query(visitsQ); r.status != 400 || !strings.Contains(r.body["error"].(map[string]any)["code"].(string), "unknown_table") {
		t.Fatalf("visits before it is declared: %+v", r)
	}

	// SIGHUP with visits added.
	writeCatalog(t, catPath, "adult", "visits")
	if err := reloadBySignal(); err != nil {
		t.Fatalf("reload adding visits: %v", err)
	}
	if r := query(visitsQ); r.status != 200 {
		t.Fatalf("visits after it was added: %+v", r)
	}
	if err := pgQuery(visitsQ); err != nil {
		t.Fatalf("the pg session after the reload: %v", err)
	}

	// The admin endpoint with adult removed.
	writeCatalog(t, catPath, "visits")
	if status, body := reloadByAPI(); status != 200 || !strings.Contains(body, `"removed":["adult"]`) {
		t.Fatalf("reload removing adult: %d %s", status, body)
	}
	if r := query(adultQ); r.status != 400 {
		t.Fatalf("adult after it was removed: %+v", r)
	}
	if err := pgQuery(adultQ); err == nil || !strings.Contains(err.Error(), "adult") {
		t.Fatalf("adult over pg after it was removed: %v", err)
	}

	// A broken catalog is refused, by either way; visits keeps answering.
	writeCatalog(t, catPath, "visits", "broken")
	if err := reloadBySignal(); err == nil || !strings.Contains(err.Error(), "intt") {
		t.Fatalf("broken catalog by signal: %v", err)
	}
	if status, body := reloadByAPI(); status != 422 || !strings.Contains(body, "catalog_refused") || !strings.Contains(body, "intt") {
		t.Fatalf("broken catalog by the API: %d %s", status, body)
	}
	last := query(visitsQ)
	if last.status != 200 {
		t.Fatalf("visits after a refused reload: %+v", last)
	}
	if err := pgQuery(visitsQ); err != nil {
		t.Fatalf("the pg session after a refused reload: %v", err)
	}

	// Health on both addresses, without a token.
	for _, u := range []string{"http://" + a[0] + "/healthz", "http://" + a[0] + "/readyz", "http://" + metricsAddr + "/healthz", "http://" + metricsAddr + "/readyz"} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d", u, resp.StatusCode)
		}
	}

	// Metrics, parsed with the Prometheus text parser.
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	sample := func(name string, labels map[string]string) float64 {
		t.Helper()
		for _, m := range fams[name].GetMetric() {
			ok := len(m.GetLabel()) == len(labels)
			for _, l := range m.GetLabel() {
				ok = ok && labels[l.GetName()] == l.GetValue()
			}
			if ok {
				switch {
				case m.Counter != nil:
					return m.GetCounter().GetValue()
				case m.Gauge != nil:
					return m.GetGauge().GetValue()
				case m.Histogram != nil:
					return float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
		t.Fatalf("no %s%v in the scrape", name, labels)
		return 0
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		// The second identical query of visits returns the stored answer
		// (repeated); pg queries at the session's ε = 1 are others.
		{"dpstat_queries_total", map[string]string{"frontend": "http", "outcome": "answered"}, 2},
		{"dpstat_queries_total", map[string]string{"frontend": "http", "outcome": "repeated"}, 1},
		{"dpstat_queries_total", map[string]string{"frontend": "http", "outcome": "refused"}, 2},
		{"dpstat_queries_total", map[string]string{"frontend": "pg", "outcome": "answered"}, 1},
		{"dpstat_queries_total", map[string]string{"frontend": "pg", "outcome": "repeated"}, 1},
		{"dpstat_queries_total", map[string]string{"frontend": "pg", "outcome": "refused"}, 1},
		{"dpstat_refusals_total", map[string]string{"kind": "unknown_table"}, 3},
		{"dpstat_catalog_reloads_total", map[string]string{"outcome": "ok"}, 2},
		{"dpstat_catalog_reloads_total", map[string]string{"outcome": "refused"}, 2},
		{"dpstat_catalog_tables", nil, 1},
		{"dpstat_pg_sessions", nil, 1},
		{"dpstat_pg_pending_connections", nil, 0},
		{"dpstat_ledger_duration_seconds", map[string]string{"op": "charge"}, 3},
		{"dpstat_engine_duration_seconds", map[string]string{"outcome": "ok"}, 3},
	} {
		if got := sample(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := sample("dpstat_epsilon_spent_total", map[string]string{"table": "visits"}); got < 1.09 || got > 1.11 {
		t.Errorf("ε spent on visits: %v, want 0.1 (HTTP) + 1 (pg)", got)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not shut down")
	}

	// The JSON log: every line parses; a query's line carries its request
	// id and the release id the response gave.
	var found, refusedLogged bool
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line is not JSON: %q", sc.Text())
		}
		if line["msg"] == "query" && line["request_id"] == first.id {
			found = line["release_id"] == first.body["release_id"] && line["outcome"] == "answered" && line["frontend"] == "http"
		}
		if line["msg"] == "catalog reload refused; the old catalog keeps serving" {
			refusedLogged = true
		}
	}
	if !found {
		t.Errorf("no log line ties request %s to release %v:\n%s", first.id, first.body["release_id"], logs.String())
	}
	if !refusedLogged {
		t.Errorf("the refused reload was not logged:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "SELECT") {
		t.Errorf("the log holds SQL text")
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestRedact: connection strings and passwords never reach the log.
func TestRedact(t *testing.T) {
	var buf bytes.Buffer
	log, err := newServeLogger(&buf, "json", "db.internal:5432/sales", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	log.Error("engine error: dial postgres://dpstat:pw@db.internal:5432/sales failed", "error", errors.New("password=hunter2 host=x: auth failed; password s3cret"),
		"dsn", "clickhouse://u:p@ch:9000/default", "nested", map[string]string{"a": "b"})
	got := buf.String()
	for _, secret := range []string{"db.internal", "pw@", "hunter2", "s3cret", "u:p@", "ch:9000"} {
		if strings.Contains(got, secret) {
			t.Errorf("log holds %q: %s", secret, got)
		}
	}
	if !strings.Contains(got, "postgres://[redacted]") || !strings.Contains(got, "password=[redacted]") {
		t.Errorf("redaction markers missing: %s", got)
	}
	if _, err := newServeLogger(&buf, "xml"); err == nil || !strings.Contains(err.Error(), "text or json") {
		t.Errorf("--log-format xml: %v", err)
	}
}
