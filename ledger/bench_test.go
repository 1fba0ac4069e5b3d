package ledger

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/epoch"
)

// benchLedger opens a ledger in DPSTAT_BENCH_DIR (to measure a chosen
// disk), else in a temporary directory, with a budget no benchmark can
// exhaust.
func benchLedger(b *testing.B) (*Ledger, Key) {
	return benchLedgerRule(b, accounting.Basic)
}

func benchLedgerRule(b *testing.B, rule accounting.Rule) (*Ledger, Key) {
	b.Helper()
	dir := os.Getenv("DPSTAT_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	} else {
		var err error
		if dir, err = os.MkdirTemp(dir, "ledger-bench-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = os.RemoveAll(dir) })
	}
	l, err := Open(filepath.Join(dir, "ledger.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	k := Key{Dataset: "bench", Analyst: "analyst"}
	if _, err := l.Grant(k, accounting.EpsDelta{Epsilon: 1e15, Delta: 1e-5}, rule); err != nil {
		b.Fatal(err)
	}
	return l, k
}

var benchSeq atomic.Uint64

func benchCharge(k Key) Charge {
	id := benchSeq.Add(1)
	return Charge{
		RequestID:   fmt.Sprintf("bench-%d", id),
		Key:         k,
		Cost:        accounting.Pure(0x1p-10),
		Description: "SELECT count(*) FROM people WHERE age > 30",
	}
}

// BenchmarkCharge is one client charging in a loop: every charge is its
// own fsync'd commit.
func BenchmarkCharge(b *testing.B) {
	l, k := benchLedger(b)
	for b.Loop() {
		if _, err := l.Charge(bg, benchCharge(k)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChargeParallel is 32 concurrent clients (parallelism 32 /
// GOMAXPROCS per processor); group commit shares each fsync among the
// charges waiting for it.
func BenchmarkChargeParallel(b *testing.B) {
	l, k := benchLedger(b)
	procs := max(1, runtimeProcs())
	b.SetParallelism(max(1, 32/procs))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := l.Charge(bg, benchCharge(k)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkChargeClients runs b.N charges from a fixed number of
// concurrent clients, on a basic or a zCDP budget, and reports throughput (charges/s) and the 50th and
// 99th percentile latency of one Charge call.
func BenchmarkChargeClients(b *testing.B) {
	for _, bc := range []struct {
		rule    accounting.Rule
		clients int
	}{{accounting.Basic, 1}, {accounting.Basic, 32}, {accounting.ZCDP, 32}} {
		clients := bc.clients
		b.Run(fmt.Sprintf("rule=%s/clients=%d", bc.rule, clients), func(b *testing.B) {
			l, k := benchLedgerRule(b, bc.rule)
			lat := make([]time.Duration, b.N)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						t0 := time.Now()
						if _, err := l.Charge(bg, benchCharge(k)); err != nil {
							b.Error(err)
							return
						}
						lat[i] = time.Since(t0)
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "charges/s")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds()), "p99-µs")
		})
	}
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// BenchmarkOpenChargeClose is what one command-line invocation does to the
// ledger: open (with the format check), charge once, close.
func BenchmarkOpenChargeClose(b *testing.B) {
	l, k := benchLedger(b)
	path := l.Path()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		l, err := Open(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := l.Charge(bg, benchCharge(k)); err != nil {
			b.Fatal(err)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGrowth measures how much the ledger file grows per release,
// charging 2,000 releases one commit each (as a lone client does), with
// and without a stored answer of 1 KB (repeat-safe queries store theirs),
// and with a total budget on the dataset. The figure is the metric
// B/release, the growth of the pages in use; the time per operation is
// not the point.
func BenchmarkGrowth(b *testing.B) {
	const n = 2000
	answer := make([]byte, 1024)
	for i := range answer {
		answer[i] = 'a' + byte(i%26)
	}
	for _, tc := range []struct {
		name   string
		answer bool
		total  bool
	}{{"plain", false, false}, {"answer=1KB", true, false}, {"total", false, true}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				l, k := benchLedger(b)
				if tc.total {
					if _, err := l.GrantTotal(k.Dataset, accounting.EpsDelta{Epsilon: 1e15, Delta: 1e-5}, accounting.Basic); err != nil {
						b.Fatal(err)
					}
				}
				before := usedBytes(b, l)
				for i := range n {
					c := benchCharge(k)
					if tc.answer {
						c.AnswerKey, c.Answer = fmt.Sprintf("%064x", i), answer
					}
					if _, err := l.Charge(bg, c); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(usedBytes(b, l)-before)/n, "B/release")
			}
		})
	}
}

// usedBytes is the size of the ledger's pages up to the highest one in
// use (bbolt grows the file itself in doubling steps, which would hide the
// growth per release).
func usedBytes(b *testing.B, l *Ledger) int64 {
	b.Helper()
	var n int64
	if err := l.st.(boltStore).db.View(func(tx *bolt.Tx) error { n = tx.Size(); return nil }); err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkVerify is the check Open runs on a ledger of 20,000 releases
// (two analysts and a total): the whole chain is read and every budget
// rebuilt from its releases.
func BenchmarkVerify(b *testing.B) {
	l, k := benchLedger(b)
	if _, err := l.GrantTotal(k.Dataset, accounting.EpsDelta{Epsilon: 1e15, Delta: 1e-5}, accounting.Basic); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20000 / 64 {
				if _, err := l.Charge(bg, benchCharge(k)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for b.Loop() {
		rep, err := l.Verify()
		if err != nil || rep.Releases != 20000/64*64 {
			b.Fatalf("Verify = %+v, %v", rep, err)
		}
	}
}

// BenchmarkChargeAndStoreAnswer is 16 concurrent clients doing what a
// served query does: a charge that reserves its answer's key, then the
// answer stored under it (docs/benchmarks.md, "Where the CPU goes, per
// query"); both share the group commit.
//
//	go test -run '^$' -bench ChargeAndStoreAnswer -benchtime 4000x -count 5 ./ledger/
func BenchmarkChargeAndStoreAnswer(b *testing.B) {
	l, k := benchLedger(b)
	answer := make([]byte, 300)
	for i := range answer {
		answer[i] = 'a' + byte(i%26)
	}
	b.SetParallelism(max(1, 16/runtimeProcs()))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c := benchCharge(k)
			c.AnswerKey = "answer-" + c.RequestID
			if _, err := l.Charge(bg, c); err != nil {
				b.Error(err)
				return
			}
			if err := l.StoreAnswer(k, c.AnswerKey, answer); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkChargeEpochs365 charges one release in each of 365 daily
// epochs (a year of days), with a total per epoch: 730 budgets spent and
// stored in one fsync'd commit. It reports the bytes each release
// adds (its release and request records, which hold the range, not the
// days).
func BenchmarkChargeEpochs365(b *testing.B) {
	l, k := benchLedger(b)
	if _, err := l.GrantTotal(k.Dataset, accounting.EpsDelta{Epsilon: 1e15, Delta: 1e-5}, accounting.Basic); err != nil {
		b.Fatal(err)
	}
	r := &epoch.Range{Every: epoch.Day, From: 19723, To: 19723 + 364} // 2024-01-01 .. 2024-12-30
	c := benchCharge(k)
	c.Epochs = r
	if _, err := l.Charge(bg, c); err != nil { // the epochs' budgets exist from here on
		b.Fatal(err)
	}
	for b.Loop() {
		c := benchCharge(k)
		c.Epochs = r
		if _, err := l.Charge(bg, c); err != nil {
			b.Fatal(err)
		}
	}
	var size, reqSize int
	_ = l.view(func(tx kvTx) error {
		_, v := tx.Bucket(bucketReleases).Cursor().Last()
		size = len(v)
		reqSize = len(tx.Bucket(bucketRequests).Get([]byte(c.RequestID)))
		return nil
	})
	b.ReportMetric(float64(size+reqSize), "record-bytes/release")
}

// BenchmarkChargeEpochs365Fragmented is the worst case of the runs: every
// other day was charged alone first, so the year is 365 runs of unequal
// budgets and each charge spends and stores every one of them.
func BenchmarkChargeEpochs365Fragmented(b *testing.B) {
	l, k := benchLedger(b)
	if _, err := l.GrantTotal(k.Dataset, accounting.EpsDelta{Epsilon: 1e15, Delta: 1e-5}, accounting.Basic); err != nil {
		b.Fatal(err)
	}
	const first = 19723
	for d := int64(first); d < first+365; d += 2 {
		c := benchCharge(k)
		c.Epochs = &epoch.Range{Every: epoch.Day, From: d, To: d}
		if _, err := l.Charge(bg, c); err != nil {
			b.Fatal(err)
		}
	}
	r := &epoch.Range{Every: epoch.Day, From: first, To: first + 364}
	for b.Loop() {
		c := benchCharge(k)
		c.Epochs = r
		if _, err := l.Charge(bg, c); err != nil {
			b.Fatal(err)
		}
	}
}
