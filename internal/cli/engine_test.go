package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query/enginetest"
)

// TestPostgresCatalogCLI runs `dpstat catalog check` and `dpstat query`
// over a catalog whose engine is a PostgreSQL server started for the test:
// a catalog that matches the server is checked and answered; one that
// does not is refused with every mismatch named.
func TestPostgresCatalogCLI(t *testing.T) {
	pg, err := enginetest.StartPostgres()
	if err != nil {
		enginetest.Unavailable(t, "PostgreSQL test server: %v", err)
	}
	t.Cleanup(pg.Stop)
	people := enginetest.Tables[0]
	if err := enginetest.LoadTable(context.Background(), pg, "people_t", people); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	head := fmt.Sprintf("budget: {epsilon: 1e30}\nengine: {kind: postgres, dsn: %q}\ntables:\n  people:\n    source: public.people_t\n", pg.ReaderDSN())
	good := write("good.yaml", head+people.Declaration)
	bad := write("bad.yaml", head+`    columns:
      age:  {type: bool}
      town: {type: text}
`)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{"check a matching catalog", []string{"catalog", "check", good}, 0,
			[]string{"ok", "engine: postgres at postgres://dpstat_reader@127.0.0.1", "table people: public.people_t (relation on postgres)"}},
		{"check names every mismatch", []string{"catalog", "check", bad}, 1,
			[]string{"column age of public.people_t is bigint: declared bool: want boolean", "column town does not exist in public.people_t; it has: id, age, score, city, flag"}},
		{"query", []string{"query", "--catalog", good, "--ledger", filepath.Join(dir, "l.db"), "--epsilon", "1e20", "--format", "csv",
			"SELECT city, COUNT(*) FROM people GROUP BY city"}, 0,
			[]string{"A,3,", "B,1,", "D,0,"}},
		{"dry run needs no server", []string{"query", "--catalog", good, "--dry-run", "SELECT COUNT(*) FROM people"}, 0,
			[]string{"engine SQL:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runQueryCLI(tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d: %s%s", code, tt.wantCode, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("output lacks %q:\n%s%s", w, out, errOut)
				}
			}
		})
	}
}

// TestServePostgres runs dpstat serve over a PostgreSQL catalog: concurrent
// analysts' queries share the pool; with the database down a query is
// refused at no cost and the server keeps serving; once the database is
// back, queries are answered again.
func TestServePostgres(t *testing.T) {
	pg, err := enginetest.StartPostgres()
	if err != nil {
		enginetest.Unavailable(t, "PostgreSQL test server: %v", err)
	}
	t.Cleanup(pg.Stop)
	people := enginetest.Tables[0]
	if err := enginetest.LoadTable(context.Background(), pg, "people", people); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cat := filepath.Join(dir, "catalog.yaml")
	body := fmt.Sprintf("budget: {epsilon: 100}\nengine: {kind: postgres, dsn: %q, max_connections: 2}\ntables:\n  people:\n    source: people\n%s", pg.ReaderDSN(), people.Declaration)
	if err := os.WriteFile(cat, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	l := filepath.Join(dir, "ledger.db")
	out, _, code := runServeCLI(t, "analyst", "add", "alice", "--table", "people", "--epsilon", "100", "--ledger", l)
	if code != 0 {
		t.Fatal(out)
	}
	tok := lastOutputLine(out)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs := make(chan string, 1)
	done := make(chan error, 1)
	var log bytes.Buffer
	go func() {
		done <- runServe(ctx, serveConfig{catalog: cat, ledger: l, httpAddr: "127.0.0.1:0", maxConns: 4, maxConcurrent: 8,
			maxSQL: 4096, queryTimeout: 10 * time.Second, shutdownTimeout: 5 * time.Second, loadTables: true},
			&log, func(h, _ string) { addrs <- h })
	}()
	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("serve stopped: %v\n%s", err, log.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start")
	}
	ask := func(sql string) (int, string) {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/query", strings.NewReader(fmt.Sprintf(`{"sql":%q,"epsilon":0.5}`, sql)))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	errs := make(chan string, 8)
	for i := range 8 {
		go func() {
			code, body := ask(fmt.Sprintf("SELECT COUNT(*) FROM people WHERE age > %d", i))
			if code != 200 {
				errs <- fmt.Sprintf("%d %s", code, body)
				return
			}
			errs <- ""
		}()
	}
	for range 8 {
		if e := <-errs; e != "" {
			t.Errorf("concurrent query: %s", e)
		}
	}
	if err := pg.Halt(); err != nil {
		t.Fatal(err)
	}
	if code, body := ask("SELECT COUNT(*) FROM people"); code != 503 || !strings.Contains(body, `"unavailable"`) || !strings.Contains(body, "nothing was charged") {
		t.Errorf("with the database down: %d %s", code, body)
	}
	if err := pg.Resume(); err != nil {
		t.Fatal(err)
	}
	if code, body := ask("SELECT COUNT(*) FROM people WHERE age > 99"); code != 200 {
		t.Errorf("after the database came back: %d %s", code, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not shut down")
	}
	led, err := ledger.Open(l, ledger.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	st, err := led.Status(ledger.Key{Dataset: "people", Analyst: "alice"})
	if err != nil || st.Spent.Epsilon != 4.5 {
		t.Errorf("spent %+v (%v), want ε = 4.5: nine answered queries of 0.5, the refused one free", st.Spent, err)
	}
}
