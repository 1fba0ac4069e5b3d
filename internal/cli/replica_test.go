package cli

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dpstat/dpstat/engine/postgres/pgtest"
)

// TestReplicasOnPostgresLedger: a ledger file with an analyst is copied
// into PostgreSQL with dpstat ledger migrate; two servers run on the
// database, and 16 clients on each (half over HTTP, half over the wire
// protocol) race for the analyst's budget, which holds exactly 8 answers
// at ε = 1/8. Exactly 8 answers come back in all, the ledger holds
// exactly 8 releases and dpstat budget verify passes; the password of the
// connection string appears in no output.
func TestReplicasOnPostgresLedger(t *testing.T) {
	pg, err := pgtest.Start()
	if err != nil {
		pgtest.Unavailable(t, "PostgreSQL test server: %v", err)
	}
	t.Cleanup(pg.Stop)
	const secret = "Pw-d0-not-show"
	if err := pg.Exec(context.Background(), "CREATE ROLE ledger_owner LOGIN PASSWORD '"+secret+"'", "CREATE SCHEMA ledger AUTHORIZATION ledger_owner"); err != nil {
		t.Fatal(err)
	}
	dsn := fmt.Sprintf("postgres://ledger_owner:%s@127.0.0.1:%d/postgres?sslmode=disable&schema=ledger", secret, pg.Port)
	dir := t.TempDir()
	file := filepath.Join(dir, "ledger.db")
	catPath := filepath.Join(dir, "catalog.yaml")
	writeCatalog(t, catPath, "adult")
	var outputs strings.Builder
	run := func(wantCode int, args ...string) string {
		t.Helper()
		out, errOut, code := runServeCLI(t, args...)
		outputs.WriteString(out + errOut)
		if code != wantCode {
			t.Fatalf("dpstat %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, wantCode, out, errOut)
		}
		return out
	}
	tok := lastOutputLine(run(0, "analyst", "add", "alice", "--table", "adult", "--epsilon", "1", "--ledger", file))
	out := run(0, "ledger", "migrate", "--from", file, "--to", dsn)
	if !strings.Contains(out, "the copy verifies") {
		t.Fatalf("migrate said %q", out)
	}
	run(1, "ledger", "migrate", "--from", file, "--to", dsn) // not into a ledger with records

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type replica struct {
		http, pg string
		done     chan error
		logs     syncBuffer
	}
	reps := make([]*replica, 2)
	for i := range reps {
		r := &replica{done: make(chan error, 1)}
		reps[i] = r
		addrs := make(chan [2]string, 1)
		go func() {
			r.done <- runServe(ctx, serveConfig{
				catalog: catPath, ledger: dsn, httpAddr: "127.0.0.1:0", pgAddr: "127.0.0.1:0",
				logTo: &r.logs, maxConns: 32, maxConcurrent: 32, maxSQL: 4096,
				queryTimeout: 20 * time.Second, shutdownTimeout: 5 * time.Second, loadTables: true, threads: 1,
			}, &r.logs, func(h, p string) { addrs <- [2]string{h, p} })
		}()
		select {
		case a := <-addrs:
			r.http, r.pg = a[0], a[1]
		case err := <-r.done:
			t.Fatalf("replica %d stopped: %v\n%s", i, err, r.logs.String())
		case <-time.After(60 * time.Second):
			t.Fatalf("replica %d did not start", i)
		}
	}
	var answered, refused atomic.Int64
	var n atomic.Int64
	var wg sync.WaitGroup
	for i, r := range reps {
		for c := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Every query is new (a repeated one could be answered
				// again from the ledger for free).
				for range 4 {
					sql := fmt.Sprintf("SELECT COUNT(*) FROM adult WHERE age > %d", 17+n.Add(1))
					var ok bool
					var err error
					if c%2 == 0 {
						ok, err = httpQuery(r.http, tok, sql)
					} else {
						ok, err = pgwireQuery(ctx, r.pg, tok, sql)
					}
					if err != nil {
						t.Errorf("replica %d client %d: %v", i, c, err)
						return
					}
					if ok {
						answered.Add(1)
					} else {
						refused.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	cancel()
	for i, r := range reps {
		if err := <-r.done; err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
		outputs.WriteString(r.logs.String())
	}
	if answered.Load() != 8 {
		t.Fatalf("%d answers (and %d refusals) from two replicas on a budget of 8 answers", answered.Load(), refused.Load())
	}
	out = run(0, "budget", "verify", "--ledger", dsn)
	if !strings.Contains(out, "match their 8 release records") {
		t.Fatalf("budget verify said %q", out)
	}
	run(0, "budget", "show", "--ledger", dsn, "--json")
	if strings.Contains(outputs.String(), secret) {
		t.Fatalf("the ledger's password appears in the output:\n%s", outputs.String())
	}
}

// httpQuery asks one query at ε = 1/8 over HTTP: true when answered,
// false when the budget refused it.
func httpQuery(addr, tok, sql string) (bool, error) {
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/query", strings.NewReader(`{"sql":`+jsonString(sql)+`,"epsilon":0.125}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusForbidden, http.StatusTooManyRequests, http.StatusPaymentRequired, http.StatusConflict:
		return false, nil
	}
	return false, fmt.Errorf("HTTP status %d for %s", resp.StatusCode, sql)
}

// pgwireQuery asks one query at ε = 1/8 over the wire protocol.
func pgwireQuery(ctx context.Context, addr, tok, sql string) (bool, error) {
	host, port, _ := strings.Cut(addr, ":")
	conn, err := pgx.Connect(ctx, "host="+host+" port="+port+" user=alice password="+tok+" dbname=dpstat sslmode=disable")
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SET dpstat.epsilon = 0.125"); err != nil {
		return false, err
	}
	rows, err := conn.Query(ctx, sql)
	if err == nil {
		rows.Close()
		err = rows.Err()
	}
	if err == nil {
		return true, nil
	}
	if strings.Contains(err.Error(), "budget") {
		return false, nil
	}
	return false, err
}
