package queryanswer_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/analyst"
	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/answer/queryanswer"
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/pgwire"
	"github.com/dpstat/dpstat/query"
	"github.com/dpstat/dpstat/server"
)

// Known answers on examples/adult.csv.
const (
	females     = 10771
	males       = 21790
	femaleHours = 392176
)

type stack struct {
	ledger *ledger.Ledger
	path   string
	reg    *analyst.Registry
	http   *httptest.Server
	pgAddr string
	alice  string
	ans    answer.Answerer
}

// start runs the HTTP and PostgreSQL front ends over the real query path on
// the example catalog.
func start(t testing.TB, path string) *stack {
	t.Helper()
	cat, err := catalog.Load(filepath.Join("..", "..", "examples", "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	threads := 0
	if v := os.Getenv("DPSTAT_LOAD_THREADS"); v != "" {
		threads, _ = strconv.Atoi(v)
	}
	eng, err := duckdb.Open(duckdb.Options{Threads: threads})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	l, err := ledger.Open(path, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	reg, err := analyst.NewRegistry(l)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := query.NewService(context.Background(), cat, eng, l)
	if err != nil {
		t.Fatal(err)
	}
	if err := queryanswer.LoadTables(context.Background(), eng); err != nil {
		t.Fatal(err)
	}
	ans, err := queryanswer.New(svc, cat, l)
	if err != nil {
		t.Fatal(err)
	}
	return frontEnds(t, l, path, reg, ans)
}

// frontEnds serves ans over HTTP and the PostgreSQL protocol on loopback,
// with the analysts of reg and budgets in l; both stop when the test ends.
func frontEnds(t testing.TB, l *ledger.Ledger, path string, reg *analyst.Registry, ans answer.Answerer) *stack {
	t.Helper()
	api, err := server.New(server.Options{Answerer: ans, Ledger: l, Analysts: reg})
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{ledger: l, path: path, reg: reg, http: httptest.NewServer(api.Handler()), ans: ans}
	t.Cleanup(s.http.Close)
	pg, err := pgwire.New(pgwire.Options{Answerer: ans, Analysts: reg})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.pgAddr = ln.Addr().String()
	go pg.Serve(ln)
	t.Cleanup(func() { pg.Close() })
	return s
}

func (s *stack) post(t *testing.T, token, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.http.URL+"/v1/query", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, m
}

func (s *stack) releases(t *testing.T) int {
	t.Helper()
	r, err := s.ledger.History(ledger.Key{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(r)
}

// TestEndToEndExact answers real DP SQL on the example catalog over HTTP and
// over the PostgreSQL protocol with ε = 1e20, where the noise vanishes, and
// checks the true answers, the charges and the refusals.
func TestEndToEndExact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := start(t, path)
	_, tok, err := s.reg.Add("alice", analyst.RoleAnalyst)
	if err != nil {
		t.Fatal(err)
	}
	// The example catalog's total budget (ε = 30 for every analyst
	// together) is raised too.
	if _, err := s.ledger.GrantTotal("adult", accounting.EpsDelta{Epsilon: 1e21, Delta: 1e-5}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ledger.Grant(ledger.Key{Dataset: "adult", Analyst: "alice"}, accounting.EpsDelta{Epsilon: 1e21, Delta: 1e-6}, accounting.Basic); err != nil {
		t.Fatal(err)
	}

	// HTTP.
	code, m := s.post(t, tok, `{"sql":"SELECT sex, COUNT(*) AS n, SUM(hours_per_week) AS h FROM adult GROUP BY sex ORDER BY sex","epsilon":1e20}`)
	if code != 200 {
		t.Fatalf("HTTP query: %d %v", code, m)
	}
	rows, _ := json.Marshal(m["rows"])
	want := `[["Female",10771,392176],["Male",21790,`
	if !strings.HasPrefix(string(rows), want) {
		t.Fatalf("rows %s, want prefix %s", rows, want)
	}
	for _, k := range []string{"columns", "ci", "cost", "budget"} {
		if m[k] == nil {
			t.Errorf("response lacks %q", k)
		}
	}
	if n := s.releases(t); n != 1 {
		t.Fatalf("%d releases after one query", n)
	}
	// Dry run and refusals charge nothing.
	for _, tc := range []struct {
		name, body, code string
		status           int
	}{
		{"dry run", `{"sql":"SELECT COUNT(*) FROM adult","dry_run":true}`, "", 200},
		{"not granted", `{"sql":"SELECT COUNT(*) FROM visits"}`, "not_granted", 403},
		{"unknown table", `{"sql":"SELECT COUNT(*) FROM secrets"}`, "unknown_table", 400},
		{"unknown column", `{"sql":"SELECT SUM(salary) FROM adult"}`, "unknown_column", 400},
		{"syntax", `{"sql":"SELEC 1"}`, "syntax_error", 400},
		{"select star", `{"sql":"SELECT * FROM adult"}`, "refused", 400},
		{"file path in FROM", `{"sql":"SELECT COUNT(*) FROM read_csv('/etc/passwd')"}`, "refused", 400},
		{"second statement", `{"sql":"SELECT COUNT(*) FROM adult; DROP TABLE adult"}`, "refused", 400},
		{"injection through a quoted identifier", `{"sql":"SELECT COUNT(*) FROM \"adult\"\"; DROP TABLE adult; --\""}`, "unknown_table", 400},
		{"injection through a column identifier", `{"sql":"SELECT SUM(\"age) FROM adult; --\") FROM adult"}`, "unknown_column", 400},
		{"injection through a string literal stays one literal", `{"sql":"SELECT COUNT(*) FROM adult WHERE sex = 'x'' OR ''1''=''1'","dry_run":true}`, "", 200},
		{"over budget", `{"sql":"SELECT COUNT(*) FROM adult","epsilon":1e21}`, "budget_exceeded", 409},
		{"condition nested too deeply", `{"sql":"SELECT COUNT(*) FROM adult WHERE ` + strings.Repeat("NOT ", 1000) + `age > 30"}`, "refused", 400},
		{"width_bucket that could overflow", `{"sql":"SELECT width_bucket(age, -1.7e308, 1.7e308, 4) AS w, COUNT(*) FROM adult GROUP BY w"}`, "refused", 400},
		{"bins that cannot be counted, dry run", `{"sql":"SELECT floor(age / 5e-324) * 5e-324 AS b, COUNT(*) FROM adult GROUP BY b","dry_run":true}`, "refused", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, m := s.post(t, tok, tc.body)
			e, _ := m["error"].(map[string]any)
			if code != tc.status || (tc.code != "" && e["code"] != tc.code) {
				t.Fatalf("got %d %v, want %d %s", code, m, tc.status, tc.code)
			}
			if n := s.releases(t); n != 1 {
				t.Fatalf("charged: %d releases", n)
			}
		})
	}

	// The same query again returns the stored answer at no cost.
	code, m = s.post(t, tok, `{"sql":"SELECT sex, COUNT(*) AS n, SUM(hours_per_week) AS h FROM adult GROUP BY sex ORDER BY sex","epsilon":1e20}`)
	again, _ := json.Marshal(m["rows"])
	if code != 200 || m["repeated"] != true || string(again) != string(rows) {
		t.Fatalf("repeated query: %d %v", code, m)
	}
	if n := s.releases(t); n != 1 {
		t.Fatalf("the repeated query was charged: %d releases", n)
	}

	// PostgreSQL protocol, extended with a parameter.
	host, port, _ := net.SplitHostPort(s.pgAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, "host="+host+" port="+port+" user=alice password="+tok+" sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "SET dpstat.epsilon = 1e20"); err != nil {
		t.Fatal(err)
	}
	// Fresh answers, each charged (the first one could be derived from
	// the HTTP query's release at no cost).
	if _, err := c.Exec(ctx, "SET dpstat.fresh = on"); err != nil {
		t.Fatal(err)
	}
	var n float64
	if err := c.QueryRow(ctx, "SELECT COUNT(*) FROM adult WHERE sex = $1", "Female").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != females {
		t.Fatalf("COUNT over pgx = %v, want %d", n, females)
	}
	var sex string
	var cnt float64
	if err := c.QueryRow(ctx, "SELECT sex, COUNT(*) FROM adult WHERE age >= $1 GROUP BY sex ORDER BY sex DESC LIMIT 1", 17).Scan(&sex, &cnt); err != nil {
		t.Fatal(err)
	}
	if sex != "Male" || cnt != males {
		t.Fatalf("got %s %v, want Male %d", sex, cnt, males)
	}
	// A parameter cannot inject: it stays one string literal.
	if err := c.QueryRow(ctx, "SELECT COUNT(*) FROM adult WHERE sex = $1", "Female' OR '1'='1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("injected parameter matched %v rows, want 0", n)
	}
	_, err = c.Exec(ctx, "SELECT COUNT(*) FROM visits")
	var pe *pgconn.PgError
	if !errorsAs(err, &pe) || pe.Code != "42501" {
		t.Fatalf("not granted over pg: %v", err)
	}
	if n := s.releases(t); n != 4 {
		t.Fatalf("%d releases, want 4", n)
	}
}

func errorsAs(err error, pe **pgconn.PgError) bool {
	if err == nil {
		return false
	}
	e, ok := err.(*pgconn.PgError)
	if ok {
		*pe = e
	}
	return ok
}

// TestRestartKeepsEverything checks that analysts, revocations, budgets and
// releases survive a restart.
func TestRestartKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := start(t, path)
	_, tok, _ := s.reg.Add("alice", analyst.RoleAnalyst)
	_, bobTok, _ := s.reg.Add("bob", analyst.RoleAnalyst)
	s.ledger.Grant(ledger.Key{Dataset: "adult", Analyst: "alice"}, accounting.EpsDelta{Epsilon: 2}, accounting.Basic)
	if code, m := s.post(t, tok, `{"sql":"SELECT COUNT(*) FROM adult","epsilon":0.5}`); code != 200 {
		t.Fatalf("%d %v", code, m)
	}
	s.reg.Revoke("bob")
	s.http.Close()
	s.ledger.Close()

	s2 := start(t, path)
	// A different query asked fresh: an identical one would return the
	// stored answer at no cost, and this one could be derived from it.
	code, m := s2.post(t, tok, `{"sql":"SELECT COUNT(*) AS n FROM adult","epsilon":0.5,"fresh":true}`)
	if code != 200 {
		t.Fatalf("after restart: %d %v", code, m)
	}
	b, _ := json.Marshal(m["budget"])
	if !strings.Contains(string(b), `"spent":{"delta":0,"epsilon":1}`) {
		t.Fatalf("budget after restart: %s", b)
	}
	if code, _ := s2.post(t, bobTok, `{"sql":"SELECT COUNT(*) FROM adult"}`); code != 401 {
		t.Fatalf("revoked token after restart: %d", code)
	}
}

// TestDryRunExplainsKeySelection checks that the preview of a query whose
// groups are chosen by DP key selection says so (no group can be listed
// before the run), and that it charges nothing.
func TestDryRunExplainsKeySelection(t *testing.T) {
	s := start(t, filepath.Join(t.TempDir(), "ledger.db"))
	_, tok, err := s.reg.Add("alice", analyst.RoleAnalyst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ledger.Grant(ledger.Key{Dataset: "adult", Analyst: "alice"}, accounting.EpsDelta{Epsilon: 1, Delta: 1e-6}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	code, m := s.post(t, tok, `{"sql":"SELECT education, COUNT(*) FROM adult GROUP BY education","epsilon":0.5,"delta":1e-7,"dry_run":true}`)
	if code != 200 {
		t.Fatalf("dry run: %d %v", code, m)
	}
	notes, _ := json.Marshal(m["notes"])
	if !strings.Contains(string(notes), "groups: ") || !strings.Contains(strings.ToLower(string(notes)), "key selection") {
		t.Errorf("dry-run notes do not explain the key selection: %s", notes)
	}
	if n := s.releases(t); n != 0 {
		t.Errorf("a dry run charged: %d releases", n)
	}
}

// TestDryRunNamesDataDependentWidths checks that a preview says which
// columns' half-widths are only the widest the bounds allow (averages,
// quantiles) and which are what the answer will have (counts, sums).
func TestDryRunNamesDataDependentWidths(t *testing.T) {
	s := start(t, filepath.Join(t.TempDir(), "ledger.db"))
	_, tok, err := s.reg.Add("alice", analyst.RoleAnalyst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ledger.Grant(ledger.Key{Dataset: "adult", Analyst: "alice"}, accounting.EpsDelta{Epsilon: 1}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		sql, want string
	}{
		{"SELECT sex, COUNT(*) AS n, SUM(age) AS s FROM adult GROUP BY sex", "null"},
		{"SELECT sex, COUNT(*) AS n, AVG(age) AS a, MEDIAN(age) AS m FROM adult GROUP BY sex", `["a","m"]`},
	}
	for _, tc := range tests {
		t.Run(tc.sql, func(t *testing.T) {
			code, m := s.post(t, tok, `{"sql":"`+tc.sql+`","epsilon":0.5,"dry_run":true}`)
			if code != 200 {
				t.Fatalf("dry run: %d %v", code, m)
			}
			got, _ := json.Marshal(m["data_dependent"])
			notes, _ := json.Marshal(m["notes"])
			if string(got) != tc.want {
				t.Fatalf("data_dependent = %s, want %s (notes %s)", got, tc.want, notes)
			}
			if tc.want != "null" && !strings.Contains(string(notes), "the widest the declared bounds allow") {
				t.Fatalf("notes do not say so: %s", notes)
			}
		})
	}
}

// TestDerivedOverHTTP: an answer derived from an earlier release says so
// ("derived", the notes) and costs nothing; "fresh": true pays.
func TestDerivedOverHTTP(t *testing.T) {
	s := start(t, filepath.Join(t.TempDir(), "ledger.db"))
	_, tok, _ := s.reg.Add("alice", analyst.RoleAnalyst)
	s.ledger.Grant(ledger.Key{Dataset: "adult", Analyst: "alice"}, accounting.EpsDelta{Epsilon: 2}, accounting.Basic)
	if code, m := s.post(t, tok, `{"sql":"SELECT sex, race, COUNT(*) AS n FROM adult GROUP BY sex, race","accuracy":40}`); code != 200 {
		t.Fatalf("%d %v", code, m)
	}
	code, m := s.post(t, tok, `{"sql":"SELECT race, COUNT(*) AS n FROM adult WHERE sex = 'Female' GROUP BY race","accuracy":40}`)
	d, _ := json.Marshal(m["derived"])
	notes, _ := json.Marshal(m["notes"])
	cost, _ := json.Marshal(m["cost"])
	if code != 200 || !strings.HasPrefix(string(d), `{"releases":[1]`) || !strings.Contains(string(notes), "derived from releases 1, cost 0") || string(cost) != `{"delta":0,"epsilon":0}` {
		t.Fatalf("derived answer: %d derived %s notes %s cost %s", code, d, notes, cost)
	}
	if n := s.releases(t); n != 1 {
		t.Fatalf("%d releases, want 1", n)
	}
	if code, m := s.post(t, tok, `{"sql":"SELECT race, COUNT(*) AS n FROM adult WHERE sex = 'Female' GROUP BY race","accuracy":40,"fresh":true}`); code != 200 || m["derived"] != nil {
		t.Fatalf("fresh answer: %d %v", code, m)
	}
	if n := s.releases(t); n != 2 {
		t.Fatalf("%d releases, want 2", n)
	}
}

// TestDryRunSaysWouldRefuse checks that a preview of a query the budget
// left cannot pay for is still a 200 preview, with would_refuse giving the
// kind and the reason the run is then refused with (409), that a preview
// the budget pays for has none, and that a repeated query (free) has none.
func TestDryRunSaysWouldRefuse(t *testing.T) {
	s := start(t, filepath.Join(t.TempDir(), "ledger.db"))
	_, tok, err := s.reg.Add("alice", analyst.RoleAnalyst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ledger.Grant(ledger.Key{Dataset: "adult", Analyst: "alice"}, accounting.EpsDelta{Epsilon: 1}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	const sql = `"sql":"SELECT sex, COUNT(*) FROM adult GROUP BY sex"`
	tests := []struct {
		name, body string
		refuse     bool
	}{
		{"fits", `{` + sql + `,"epsilon":0.6,"dry_run":true}`, false},
		{"spend it", `{` + sql + `,"epsilon":0.6}`, false},
		{"repeat is free", `{` + sql + `,"epsilon":0.6,"dry_run":true}`, false},
		{"repeat is free, fresh or not", `{` + sql + `,"epsilon":0.6,"dry_run":true,"fresh":true}`, false},
		{"derived is free", `{` + sql + `,"epsilon":0.5,"dry_run":true}`, false},
		{"over budget", `{` + sql + `,"epsilon":0.5,"dry_run":true,"fresh":true}`, true},
	}
	for _, tc := range tests {
		code, m := s.post(t, tok, tc.body)
		wr, has := m["would_refuse"].(map[string]any)
		if code != 200 || has != tc.refuse {
			t.Fatalf("%s: %d %v", tc.name, code, m)
		}
		// A dry run's cost is what the run would charge: nothing for a
		// repeat or a derived answer.
		if cost, _ := json.Marshal(m["cost"]); strings.HasSuffix(tc.name, "free") || strings.Contains(tc.name, "free,") {
			if string(cost) != `{"delta":0,"epsilon":0}` {
				t.Fatalf("%s: cost %s, want nothing", tc.name, cost)
			}
		}
		if !tc.refuse {
			continue
		}
		code, run := s.post(t, tok, `{`+sql+`,"epsilon":0.5,"fresh":true}`)
		e, _ := run["error"].(map[string]any)
		if code != 409 || wr["kind"] != "budget_exceeded" || e == nil || !strings.HasSuffix(e["message"].(string), wr["reason"].(string)) {
			t.Fatalf("%s: would_refuse %v, the run: %d %v", tc.name, wr, code, run)
		}
	}
	if n := s.releases(t); n != 1 {
		t.Errorf("%d releases, want the one run", n)
	}
}

// TestDryRunWithHiddenCells: a preview of a GROUP BY whose shown groups
// fit the preview but whose cells with the hidden ones for the rows
// outside the value lists do not (672 shown, 1,512 measured) still gives
// every group its half-width.
func TestDryRunWithHiddenCells(t *testing.T) {
	s := start(t, filepath.Join(t.TempDir(), "ledger.db"))
	_, tok, err := s.reg.Add("alice", analyst.RoleAnalyst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ledger.Grant(ledger.Key{Dataset: "adult", Analyst: "alice"}, accounting.EpsDelta{Epsilon: 1}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	sql := "SELECT workclass, marital_status, relationship, sex, COUNT(*) AS n FROM adult GROUP BY workclass, marital_status, relationship, sex"
	code, m := s.post(t, tok, `{"sql":"`+sql+`","epsilon":0.5,"dry_run":true}`)
	if code != 200 {
		t.Fatalf("dry run: %d %v", code, m)
	}
	rows, _ := m["rows"].([]any)
	ci, _ := m["ci"].([]any)
	if len(rows) != 672 || len(ci) != 672 {
		t.Fatalf("%d rows, %d intervals; want 672", len(rows), len(ci))
	}
	iv, _ := json.Marshal(ci[0])
	if !strings.Contains(string(iv), "-") || strings.Contains(string(iv), "[0,0]") || strings.Contains(string(iv), "[-0,0]") {
		t.Errorf("the first group's interval is %s, want the count's half-width around 0", iv)
	}
}
