package ledger

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dpstat/dpstat/accounting"
)

// BenchmarkChargeStores compares the stores under concurrent clients: the
// file ledger, one Ledger on PostgreSQL, and two Ledgers on one PostgreSQL
// schema (two replicas in one process, the clients split between them).
// It reports charges/s and the 50th and 99th percentile latency of a
// Charge. The PostgreSQL test server runs with fsync off (the file
// ledger's commits are fsync'd): see docs/scaling.md.
func BenchmarkChargeStores(b *testing.B) {
	for _, bc := range []struct {
		store             string
		replicas, clients int
	}{
		{"file", 1, 16}, {"file", 1, 64},
		{"postgres", 1, 16}, {"postgres", 1, 64},
		{"postgres", 2, 16}, {"postgres", 2, 64},
	} {
		b.Run(fmt.Sprintf("store=%s/replicas=%d/clients=%d", bc.store, bc.replicas, bc.clients), func(b *testing.B) {
			loc := b.TempDir() + "/ledger.db"
			if bc.store == "postgres" {
				loc = pgLocation(b)
			}
			k := Key{Dataset: "bench", Analyst: "analyst"}
			var ls []*Ledger
			for range bc.replicas {
				l, err := Open(loc, Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = l.Close() })
				ls = append(ls, l)
			}
			if _, err := ls[0].Grant(k, accounting.EpsDelta{Epsilon: 1e15, Delta: 1e-5}, accounting.Basic); err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, b.N)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for c := range bc.clients {
				l := ls[c%len(ls)]
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
