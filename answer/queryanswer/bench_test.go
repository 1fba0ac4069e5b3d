package queryanswer_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/analyst"
	"github.com/dpstat/dpstat/ledger"
)

// BenchmarkServe measures one DP query end to end (engine, durable charge,
// protocol) over HTTP and over the PostgreSQL protocol, with 16 concurrent
// clients on this machine's cores (b.SetParallelism), each its own analyst.
// Every query is new, so none is answered from the stored answers.
//
//	DPSTAT_LOAD_THREADS=1 go test -run '^$' -bench BenchmarkServe ./answer/queryanswer/
func BenchmarkServe(b *testing.B) {
	for _, proto := range []string{"http", "pg"} {
		b.Run(proto, func(b *testing.B) {
			s := start(b, filepath.Join(b.TempDir(), "ledger.db"))
			var next, seq atomic.Int64
			b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				name := fmt.Sprintf("bench%03d", next.Add(1))
				_, tok, err := s.reg.Add(name, analyst.RoleAnalyst)
				if err != nil {
					b.Error(err)
					return
				}
				if _, err := s.ledger.Grant(ledger.Key{Dataset: "adult", Analyst: name}, accounting.EpsDelta{Epsilon: 1e9}, accounting.Basic); err != nil {
					b.Error(err)
					return
				}
				ctx := context.Background()
				var conn *pgx.Conn
				cl := &http.Client{}
				if proto == "pg" {
					host, port, _ := net.SplitHostPort(s.pgAddr)
					if conn, err = pgx.Connect(ctx, "host="+host+" port="+port+" user="+name+" password="+tok+" sslmode=disable"); err != nil {
						b.Error(err)
						return
					}
					defer conn.Close(ctx)
				}
				for pb.Next() {
					i := seq.Add(1)
					a, h := 17+i%73, 1+(i/73)%99
					if proto == "http" {
						body := fmt.Sprintf(`{"sql":"SELECT sex, COUNT(*) FROM adult WHERE age >= %d AND hours_per_week >= %d GROUP BY sex","epsilon":0.01}`, a, h)
						req, _ := http.NewRequest("POST", s.http.URL+"/v1/query", strings.NewReader(body))
						req.Header.Set("Authorization", "Bearer "+tok)
						resp, err := cl.Do(req)
						if err != nil {
							b.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						continue
					}
					rows, err := conn.Query(ctx, "SELECT sex, COUNT(*) FROM adult WHERE age >= $1 AND hours_per_week >= $2 GROUP BY sex", a, h)
					if err != nil {
						b.Error(err)
						return
					}
					rows.Close()
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
		})
	}
}
