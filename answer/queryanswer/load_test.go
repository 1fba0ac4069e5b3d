package queryanswer_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/analyst"
	"github.com/dpstat/dpstat/answer/answertest"
	"github.com/dpstat/dpstat/engine/postgres/pgtest"
	"github.com/dpstat/dpstat/ledger"
)

// TestLoad is the server's load generator: DP queries on the example Adult
// table over HTTP and over the PostgreSQL protocol from 1, 16 and 64
// concurrent clients (each its own analyst), every answer charged durably to
// the ledger. It reports queries per second and p50/p99 latency. It runs
// only with DPSTAT_LOAD=1 and is bounded by DPSTAT_LOAD_QUERIES per run
// (default 2000) and 20 s per run; it listens on loopback only.
// DPSTAT_LOAD_LEDGER=postgres puts the ledger in a PostgreSQL server of its
// own, and DPSTAT_LOAD_REPLICAS=2 runs two servers on it.
//
//	DPSTAT_LOAD=1 go test -run TestLoad -v ./answer/queryanswer/
//	DPSTAT_LOAD=1 DPSTAT_LOAD_LEDGER=postgres DPSTAT_LOAD_REPLICAS=2 go test -run TestLoad -v ./answer/queryanswer/
func TestLoad(t *testing.T) {
	if os.Getenv("DPSTAT_LOAD") != "1" {
		t.Skip("load generator: set DPSTAT_LOAD=1 to run")
	}
	total := 2000
	if v := os.Getenv("DPSTAT_LOAD_QUERIES"); v != "" {
		fmt.Sscan(v, &total)
	}
	const (
		sqlBase  = "SELECT sex, COUNT(*) FROM adult"
		sqlParam = sqlBase + " WHERE age >= $1 AND hours_per_week >= $2 GROUP BY sex"
	)
	// DPSTAT_LOAD_LEDGER=postgres keeps the ledger in a private
	// PostgreSQL test server; DPSTAT_LOAD_REPLICAS=N runs N servers on
	// that one ledger, the clients spread over them.
	loc := filepath.Join(t.TempDir(), "ledger.db")
	if os.Getenv("DPSTAT_LOAD_LEDGER") == "postgres" {
		pg, err := pgtest.Start()
		if err != nil {
			pgtest.Unavailable(t, "PostgreSQL test server: %v", err)
		}
		t.Cleanup(pg.Stop)
		loc = pg.AdminDSN() + "&schema=load"
	}
	replicas := 1
	if v := os.Getenv("DPSTAT_LOAD_REPLICAS"); v != "" {
		fmt.Sscan(v, &replicas)
	}
	stacks := make([]*stack, max(1, replicas))
	for i := range stacks {
		stacks[i] = start(t, loc)
		if os.Getenv("DPSTAT_LOAD_FAKE") == "1" {
			// The front ends and the ledger alone: a stand-in answerer
			// with fixed answers, still charging the ledger durably.
			stacks[i] = startFake(t, loc)
		}
	}
	s := stacks[0]
	tokens := map[string]string{}
	for i := range 64 {
		name := fmt.Sprintf("analyst%02d", i)
		_, tok, err := s.reg.Add(name, analyst.RoleAnalyst)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ledger.Grant(ledger.Key{Dataset: "adult", Analyst: name}, accounting.EpsDelta{Epsilon: 1e9}, accounting.Basic); err != nil {
			t.Fatal(err)
		}
		tokens[name] = tok
	}
	// The example catalog's total budget of the table (ε = 30, every
	// analyst together) would be spent after 3,000 queries at ε = 0.01:
	// the load test measures answers, not refusals, so it grants a total
	// no run can spend first (the catalog's total applies only to a table
	// that has none).
	if _, err := s.ledger.GrantTotal("adult", accounting.EpsDelta{Epsilon: 1e9, Delta: 1e-4}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	for _, r := range stacks[1:] {
		if err := r.reg.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("ledger %s, %d server(s)", ledger.Redact(loc), len(stacks))
	// seqs[c] numbers client c's queries across all runs, so that no query
	// repeats one asked before.
	seqs := make([]int, 64)
	for _, proto := range []string{"http", "pg"} {
		for _, clients := range []int{1, 16, 64} {
			before, _ := s.ledger.History(ledger.Key{}, 0)
			var next atomic.Int64
			lat := make([][]time.Duration, clients)
			var wg sync.WaitGroup
			deadline := time.Now().Add(20 * time.Second)
			startT := time.Now()
			var failures atomic.Int64
			for c := range clients {
				name := fmt.Sprintf("analyst%02d", c)
				tok := tokens[name]
				s := stacks[c%len(stacks)]
				host, port, _ := net.SplitHostPort(s.pgAddr)
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Every query differs (an identical repeat would return the
					// stored answer at no cost): the filter's bounds count up.
					seq := &seqs[c]
					uniqueSQL := func() string {
						i := *seq
						*seq++
						return fmt.Sprintf("%s WHERE age >= %d AND hours_per_week >= %d GROUP BY sex", sqlBase, 17+i%73, 1+(i/73)%99)
					}
					var do func() error
					switch proto {
					case "http":
						cl := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
						do = func() error {
							body := `{"sql":"` + uniqueSQL() + `","epsilon":0.01}`
							req, _ := http.NewRequest("POST", s.http.URL+"/v1/query", strings.NewReader(body))
							req.Header.Set("Authorization", "Bearer "+tok)
							resp, err := cl.Do(req)
							if err != nil {
								return err
							}
							io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
							if resp.StatusCode != 200 {
								return fmt.Errorf("status %d", resp.StatusCode)
							}
							return nil
						}
					case "pg":
						ctx := context.Background()
						conn, err := pgx.Connect(ctx, "host="+host+" port="+port+" user="+name+" password="+tok+" sslmode=disable")
						if err != nil {
							t.Error(err)
							return
						}
						defer conn.Close(ctx)
						if _, err := conn.Exec(ctx, "SET dpstat.epsilon = 0.01"); err != nil {
							t.Error(err)
							return
						}
						do = func() error {
							i := *seq
							*seq++
							rows, err := conn.Query(ctx, sqlParam, 17+i%73, 1+(i/73)%99)
							if err != nil {
								return err
							}
							for rows.Next() {
							}
							rows.Close()
							return rows.Err()
						}
					}
					for next.Add(1) <= int64(total) && time.Now().Before(deadline) {
						t0 := time.Now()
						if err := do(); err != nil {
							if failures.Add(1) == 1 {
								t.Logf("first failure: %v", err)
							}
							continue
						}
						lat[c] = append(lat[c], time.Since(t0))
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(startT)
			var all []time.Duration
			for _, l := range lat {
				all = append(all, l...)
			}
			sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
			after, _ := s.ledger.History(ledger.Key{}, 0)
			if len(all) == 0 {
				t.Fatalf("%s %d clients: no query succeeded (%d failures)", proto, clients, failures.Load())
			}
			if got := len(after) - len(before); got != len(all) {
				t.Errorf("%s %d clients: %d answers but %d charges", proto, clients, len(all), got)
			}
			pct := func(p float64) time.Duration { return all[min(len(all)-1, int(p*float64(len(all))))] }
			t.Logf("%-4s clients=%2d queries=%5d failures=%d  %7.0f queries/s  p50=%6.2fms  p99=%6.2fms",
				proto, clients, len(all), failures.Load(), float64(len(all))/elapsed.Seconds(),
				float64(pct(0.50).Microseconds())/1000, float64(pct(0.99).Microseconds())/1000)
		}
	}
}

// startFake is start with servertest's stand-in answerer in place of the
// query engine.
func startFake(t testing.TB, path string) *stack {
	t.Helper()
	l, err := ledger.Open(path, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	reg, err := analyst.NewRegistry(l)
	if err != nil {
		t.Fatal(err)
	}
	return frontEnds(t, l, path, reg, &answertest.Answerer{Ledger: l})
}
