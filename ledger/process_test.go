package ledger

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dpstat/dpstat/accounting"
)

// The helper process is this test binary re-executed with
// DPSTAT_LEDGER_HELPER set to a mode and DPSTAT_LEDGER_HELPER_PATH to the
// ledger file.
const (
	helperModeEnv = "DPSTAT_LEDGER_HELPER"
	helperPathEnv = "DPSTAT_LEDGER_HELPER_PATH"
)

var helperKey = Key{Dataset: "census", Analyst: "shared"}

// TestHelperProcess is not a test: it is the body of the child processes
// started by TestProcessesShareALedger and TestCrashKeepsEveryCommittedCharge.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperModeEnv)
	if mode == "" {
		t.Skip("helper process for the multi-process tests")
	}
	path := os.Getenv(helperPathEnv)
	switch mode {
	case "charge-per-open":
		os.Exit(helperChargePerOpen(path))
	case "charge-forever":
		os.Exit(helperChargeForever(path))
	case "replica":
		os.Exit(helperReplica(path))
	case "create":
		l, err := Open(path, Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if _, err := l.Grant(helperKey, accounting.EpsDelta{Epsilon: 1}, accounting.Basic); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
	os.Exit(2)
}

// helperChargePerOpen opens the ledger for each charge, as the command line
// does, until the budget refuses; it prints "ok N" with its number of
// successful charges.
func helperChargePerOpen(path string) int {
	n := 0
	for {
		l, err := Open(path, Options{Timeout: time.Minute})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		_, err = l.Charge(bg, Charge{Key: helperKey, Cost: accounting.Pure(0.125), Description: "helper"})
		if cerr := l.Close(); cerr != nil {
			fmt.Fprintln(os.Stderr, cerr)
			return 1
		}
		var ee *accounting.ExceededError
		if errors.As(err, &ee) {
			fmt.Printf("ok %d\n", n)
			return 0
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		n++
	}
}

// helperReplica opens the ledger once, as a server replica does, and
// charges from 16 goroutines until the budget refuses; it prints "ok N"
// with its number of successful charges.
func helperReplica(path string) int {
	l, err := Open(path, Options{Timeout: time.Minute})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer l.Close()
	var n atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				_, err := l.Charge(bg, Charge{Key: helperKey, Cost: accounting.Pure(0.125), Description: "helper"})
				var ee *accounting.ExceededError
				if errors.As(err, &ee) {
					return
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					failed.Store(true)
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if failed.Load() {
		return 1
	}
	fmt.Printf("ok %d\n", n.Load())
	return 0
}

// helperChargeForever charges from four goroutines until killed, printing
// "answer <releaseID>" after each charge has committed.
func helperChargeForever(path string) int {
	l, err := Open(path, Options{Timeout: time.Minute})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				r, err := l.Charge(bg, Charge{RequestID: fmt.Sprintf("%d-%d-%d", os.Getpid(), g, i), Key: helperKey, Cost: accounting.Pure(0x1p-10), AnswerKey: fmt.Sprintf("%d-%d-%d", os.Getpid(), g, i), Answer: []byte("42")})
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				mu.Lock()
				fmt.Fprintf(out, "answer %d\n", r.ReleaseID)
				_ = out.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return 0
}

func helperCmd(t *testing.T, mode, path string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperModeEnv+"="+mode, helperPathEnv+"="+path)
	return cmd
}

// TestProcessesShareALedger: 8 processes charge the same ledger file, each
// opening it per charge, and two processes with 16 clients each charge one
// PostgreSQL ledger, as two server replicas; the budget holds exactly 40
// charges and exactly 40 succeed in total.
func TestProcessesShareALedger(t *testing.T) {
	t.Run("file, opened per charge", func(t *testing.T) { processesShare(t, tempPath(t), "charge-per-open", 8) })
	t.Run("postgres, two replicas of 16 clients", func(t *testing.T) { processesShare(t, pgLocation(t), "replica", 2) })
}

func processesShare(t *testing.T, path, mode string, procs int) {
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustGrant(t, l, helperKey, accounting.EpsDelta{Epsilon: 5}, accounting.Basic)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	outs := make([]strings.Builder, procs)
	cmds := make([]*exec.Cmd, procs)
	for i := range cmds {
		cmds[i] = helperCmd(t, mode, path)
		cmds[i].Stdout = &outs[i]
		cmds[i].Stderr = os.Stderr
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v", i, err)
		}
		var n int
		if _, err := fmt.Sscanf(outs[i].String(), "ok %d", &n); err != nil {
			t.Fatalf("process %d printed %q", i, outs[i].String())
		}
		total += n
	}
	if total != 40 {
		t.Fatalf("%d charges succeeded across %d processes, want 40", total, procs)
	}
	l = mustOpen(t, path, Options{ReadOnly: true})
	st, err := l.Status(helperKey)
	if err != nil || st.Releases != 40 || st.Spent.Epsilon != 5 {
		t.Fatalf("Status = %+v, %v", st, err)
	}
}

// TestCrashKeepsEveryCommittedCharge kills a charging process with SIGKILL
// at random moments, many times over. After every kill the ledger must
// reopen cleanly, every release the child reported as committed must be in
// it, the release IDs must run 1..n without gaps, and the amount spent must
// equal the sum of the recorded releases. DPSTAT_LONG=1 runs 2,000 kills
// instead of 200.
func TestCrashKeepsEveryCommittedCharge(t *testing.T) {
	if testing.Short() {
		t.Skip("starts hundreds of processes")
	}
	kills := 200
	if os.Getenv("DPSTAT_LONG") == "1" {
		kills = 2000
	}
	crashTest(t, tempPath(t), kills, 40*time.Millisecond)
}

// TestCrashKeepsEveryCommittedChargePostgres is the same on a PostgreSQL
// ledger, with 20 kills (200 with DPSTAT_LONG=1): a process killed in the
// middle of a transaction leaves the ledger as its last commit left it.
func TestCrashKeepsEveryCommittedChargePostgres(t *testing.T) {
	kills := 20
	if os.Getenv("DPSTAT_LONG") == "1" {
		kills = 200
	}
	crashTest(t, pgLocation(t), kills, 150*time.Millisecond)
}

// crashTest kills a charging child kills times, each at a random moment
// within window of its start.
func crashTest(t *testing.T, path string, kills int, window time.Duration) {
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustGrant(t, l, helperKey, accounting.EpsDelta{Epsilon: 1e6}, accounting.Basic)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	reported := map[uint64]bool{}
	for kill := range kills {
		cmd := helperCmd(t, "charge-forever", path)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan []string, 1)
		go func() {
			b, _ := io.ReadAll(stdout)
			lines <- strings.Split(string(b), "\n")
		}()
		// Kill at a random moment: sometimes before the child has opened
		// the ledger, mostly while it charges.
		time.Sleep(time.Duration(rng.Int64N(int64(window))))
		_ = cmd.Process.Signal(syscall.SIGKILL)
		out := <-lines
		werr := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("kill %d: child ended on its own (%v): %s", kill, werr, stderr.String())
		}
		// Every complete line is a committed charge (the last line may be
		// cut short by the kill).
		for i, line := range out {
			if i == len(out)-1 {
				break
			}
			id, err := strconv.ParseUint(strings.TrimPrefix(line, "answer "), 10, 64)
			if err != nil {
				t.Fatalf("kill %d: child printed %q", kill, line)
			}
			reported[id] = true
		}
		checkLedgerAfterCrash(t, path, reported, kill)
		if kill%100 == 99 {
			t.Logf("%d kills, %d committed charges reported", kill+1, len(reported))
		}
	}
	t.Logf("%d kills, %d committed charges reported", kills, len(reported))
}

func checkLedgerAfterCrash(t *testing.T, path string, reported map[uint64]bool, kill int) {
	t.Helper()
	l, err := Open(path, Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("kill %d: reopen: %v", kill, err)
	}
	defer l.Close()
	st, err := l.Status(helperKey)
	if err != nil {
		t.Fatalf("kill %d: %v", kill, err)
	}
	h, err := l.History(helperKey, 0)
	if err != nil {
		t.Fatalf("kill %d: %v", kill, err)
	}
	n := len(h)
	if st.Releases != n {
		t.Fatalf("kill %d: budget counts %d releases, history has %d", kill, st.Releases, n)
	}
	// ε = 2^-10 per charge: the sums are exact.
	if want := float64(n) * 0x1p-10; st.Spent.Epsilon != want {
		t.Fatalf("kill %d: spent ε = %v, the %d recorded releases sum to %v", kill, st.Spent.Epsilon, n, want)
	}
	for i, r := range h {
		if r.ID != uint64(n-i) {
			t.Fatalf("kill %d: release IDs are not 1..%d without gaps: position %d has %d", kill, n, i, r.ID)
		}
	}
	for id := range reported {
		if id == 0 || id > uint64(n) {
			t.Fatalf("kill %d: release %d was reported committed but the ledger has only %d", kill, id, n)
		}
	}
}

// TestCrashWhileCreatingLeavesNoHalfLedger kills a process that is creating
// a new ledger at random moments: afterwards the path either does not exist
// or holds a complete ledger that opens cleanly (creation is atomic).
func TestCrashWhileCreatingLeavesNoHalfLedger(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a hundred processes")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var absent, present int
	for kill := range 100 {
		path := filepath.Join(t.TempDir(), "new", "ledger.db")
		cmd := helperCmd(t, "create", path)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.IntN(25_000)) * time.Microsecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		if err := cmd.Wait(); err != nil && stderr.Len() > 0 {
			t.Fatalf("kill %d: child failed: %s", kill, stderr.String())
		}
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			absent++
			continue
		}
		present++
		l, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("kill %d: the ledger left behind does not open: %v", kill, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("100 kills: ledger absent %d times, complete %d times", absent, present)
}
