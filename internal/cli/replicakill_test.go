package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dpstat/dpstat/engine/postgres/pgtest"
	"github.com/dpstat/dpstat/ledger"
)

// helperServeEnv holds the arguments (separated by US, 0x1f) with which
// TestHelperServe runs dpstat in a child process.
const helperServeEnv = "DPSTAT_CLI_HELPER_ARGS"

// TestHelperServe is not a test: it is the body of the child processes of
// TestReplicaKilledUnderLoad, a dpstat command run in a process of its own.
func TestHelperServe(t *testing.T) {
	args := os.Getenv(helperServeEnv)
	if args == "" {
		t.Skip("helper process of TestReplicaKilledUnderLoad")
	}
	os.Exit(Execute(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
}

// TestReplicaKilledUnderLoad: two servers share a PostgreSQL ledger; one
// runs in this process and answers throughout, the other is a child
// process killed with SIGKILL at a random moment under load, 10 times
// over (a new child each time). Every answer a client received is in the
// ledger, charged exactly once (release ids are unique and each is
// recorded), the replica in this process never fails a request, and
// dpstat budget verify passes at the end.
func TestReplicaKilledUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 10 server processes")
	}
	pg, err := pgtest.Start()
	if err != nil {
		pgtest.Unavailable(t, "PostgreSQL test server: %v", err)
	}
	t.Cleanup(pg.Stop)
	dsn := pg.AdminDSN() + "&schema=ledger"
	dir := t.TempDir()
	catPath := filepath.Join(dir, "catalog.yaml")
	writeCatalog(t, catPath, "adult")
	out, errOut, code := runServeCLI(t, "analyst", "add", "alice", "--table", "adult", "--epsilon", "1000000", "--ledger", dsn)
	if code != 0 {
		t.Fatal(out, errOut)
	}
	tok := lastOutputLine(out)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	addrs := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, serveConfig{
			catalog: catPath, ledger: dsn, httpAddr: "127.0.0.1:0", logTo: &logs, maxConns: 8, maxConcurrent: 64, maxSQL: 4096,
			queryTimeout: 20 * time.Second, shutdownTimeout: 5 * time.Second, loadTables: true, threads: 1,
		}, &logs, func(h, p string) { addrs <- [2]string{h, p} })
	}()
	var stay string
	select {
	case a := <-addrs:
		stay = a[0]
	case err := <-done:
		t.Fatalf("serve stopped: %v\n%s", err, logs.String())
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not start")
	}

	var mu sync.Mutex
	answered := map[uint64]int{}
	var seq, stayFailed atomic.Int64
	ask := func(addr string) (uint64, error) {
		sql := fmt.Sprintf("SELECT COUNT(*) FROM adult WHERE age > %d AND age < %d", seq.Add(1)%50, 1000+seq.Load())
		return askRelease(addr, tok, sql)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	addrRE := regexp.MustCompile(`HTTP API and dashboard on http://(\S+)/`)
	for kill := range 10 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperServe$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperServeEnv+"="+strings.Join([]string{"serve", "--catalog", catPath, "--ledger", dsn,
			"--http", "127.0.0.1:0", "--pg", "", "--threads", "1"}, "\x1f"))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		child := ""
		sc := bufio.NewScanner(stdout)
		for child == "" && sc.Scan() {
			if m := addrRE.FindStringSubmatch(sc.Text()); m != nil {
				child = m[1]
			}
		}
		go io.Copy(io.Discard, stdout)
		if child == "" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("kill %d: the child server did not start: %s", kill, stderr.String())
		}
		// 8 clients, half on each replica, until the kill and a little
		// after it.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for c := range 8 {
			addr := child
			if c%2 == 0 {
				addr = stay
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					id, err := ask(addr)
					if err != nil {
						if addr == stay {
							stayFailed.Add(1)
							t.Errorf("kill %d: the replica that stays failed: %v", kill, err)
							return
						}
						if strings.Contains(err.Error(), "connection refused") {
							return
						}
						continue
					}
					mu.Lock()
					answered[id]++
					mu.Unlock()
				}
			}()
		}
		time.Sleep(time.Duration(50+rng.IntN(250)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		werr := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("kill %d: the child ended on its own (%v): %s", kill, werr, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
		close(stop)
		wg.Wait()
		if stayFailed.Load() > 0 {
			break
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(dsn, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	hist, err := l.History(ledger.Key{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	in := map[uint64]bool{}
	for _, r := range hist {
		in[r.ID] = true
	}
	for id, n := range answered {
		if n != 1 || !in[id] {
			t.Fatalf("release %d was answered %d times; in the ledger: %v", id, n, in[id])
		}
	}
	out, errOut, code = runServeCLI(t, "budget", "verify", "--ledger", dsn)
	if code != 0 {
		t.Fatalf("budget verify: %s%s", out, errOut)
	}
	t.Logf("%d answers received, %d releases in the ledger", len(answered), len(hist))
}

// askRelease asks sql at ε = 0.001 over HTTP and returns the release id of
// the answer, or an error for anything but an answer.
func askRelease(addr, tok, sql string) (uint64, error) {
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/query", strings.NewReader(`{"sql":`+jsonString(sql)+`,"epsilon":0.001}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body struct {
		ReleaseID uint64 `json:"release_id"`
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &body) != nil || body.ReleaseID == 0 {
		return 0, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return body.ReleaseID, nil
}

// TestServerSurvivesLedgerRestart: the PostgreSQL server of a replica's
// ledger stops abruptly under load and starts again. While it is down
// queries fail and /readyz says the ledger is down; no answer comes back
// without its release in the ledger; afterwards the same replica answers
// again and is ready, without a restart.
func TestServerSurvivesLedgerRestart(t *testing.T) {
	pg, err := pgtest.Start()
	if err != nil {
		pgtest.Unavailable(t, "PostgreSQL test server: %v", err)
	}
	t.Cleanup(pg.Stop)
	dsn := pg.AdminDSN() + "&schema=ledger"
	dir := t.TempDir()
	catPath := filepath.Join(dir, "catalog.yaml")
	writeCatalog(t, catPath, "adult")
	out, errOut, code := runServeCLI(t, "analyst", "add", "alice", "--table", "adult", "--epsilon", "1000000", "--ledger", dsn)
	if code != 0 {
		t.Fatal(out, errOut)
	}
	tok := lastOutputLine(out)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	addrs := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, serveConfig{
			catalog: catPath, ledger: dsn, httpAddr: "127.0.0.1:0", logTo: &logs, maxConns: 8, maxConcurrent: 64, maxSQL: 4096,
			queryTimeout: 20 * time.Second, shutdownTimeout: 5 * time.Second, loadTables: true, threads: 1,
		}, &logs, func(h, p string) { addrs <- [2]string{h, p} })
	}()
	var addr string
	select {
	case a := <-addrs:
		addr = a[0]
	case err := <-done:
		t.Fatalf("serve stopped: %v\n%s", err, logs.String())
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not start")
	}
	ready := func() int {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	var mu sync.Mutex
	answered := map[uint64]bool{}
	var seq, failed, after atomic.Int64
	var phase atomic.Int32 // 2 once the server is back
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				p := phase.Load()
				id, err := askRelease(addr, tok, fmt.Sprintf("SELECT COUNT(*) FROM adult WHERE age < %d", 100+seq.Add(1)))
				if err != nil {
					failed.Add(1)
					time.Sleep(20 * time.Millisecond)
					continue
				}
				mu.Lock()
				answered[id] = true
				mu.Unlock()
				if p == 2 {
					after.Add(1)
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	if err := pg.Halt(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if c := ready(); c != http.StatusServiceUnavailable {
		t.Errorf("/readyz while the ledger's server is down: %d, want 503", c)
	}
	if err := pg.Resume(); err != nil {
		t.Fatal(err)
	}
	phase.Store(2)
	deadline := time.Now().Add(30 * time.Second)
	for after.Load() < 20 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if after.Load() < 20 {
		t.Fatalf("%d answers after the restart", after.Load())
	}
	if c := ready(); c != http.StatusOK {
		t.Errorf("/readyz after the restart: %d", c)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(dsn, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	hist, err := l.History(ledger.Key{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	in := map[uint64]bool{}
	for _, r := range hist {
		in[r.ID] = true
	}
	for id := range answered {
		if !in[id] {
			t.Fatalf("release %d was answered but is not in the ledger", id)
		}
	}
	t.Logf("%d answers (%d after the restart), %d failed requests, %d releases", len(answered), after.Load(), failed.Load(), len(hist))
}
