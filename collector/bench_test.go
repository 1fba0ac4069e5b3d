package collector

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dpstat/dpstat/ldp"
	"github.com/dpstat/dpstat/random"
)

// BenchmarkHTTPIngest posts batches of reports to a collector over loopback
// HTTP (each batch committed with fsync before the answer); reports/s is
// the throughput including JSON encoding on the client side being done
// beforehand. Clients post concurrently.
func BenchmarkHTTPIngest(b *testing.B) {
	for _, c := range []struct {
		name    string
		mech    string
		d       int
		batch   int
		clients int
	}{
		{"krr-d100-batch1000-clients1", "krr", 100, 1000, 1},
		{"krr-d100-batch1000-clients4", "krr", 100, 1000, 4},
		{"krr-d100-batch5000-clients4", "krr", 100, 5000, 4},
		{"oue-d1024-batch1000-clients4", "oue", 1024, 1000, 4},
	} {
		b.Run(c.name, func(b *testing.B) {
			st, _ := openTest(b)
			defer st.Close()
			values := make([]string, c.d)
			for i := range values {
				values[i] = fmt.Sprint("v", i)
			}
			if _, err := st.CreateSurvey(SurveySpec{ID: "s", Question: "q", Domain: Domain{Values: values}, Mechanism: c.mech, Epsilon: 1}); err != nil {
				b.Fatal(err)
			}
			p, _ := st.Public("s")
			o, _ := ldp.New(ldp.Options{Mechanism: p.Params.Mechanism, Epsilon: 1, Domain: c.d})
			src := random.NewInsecureSeeded(1)
			bodies := make([][]byte, b.N)
			for i := range bodies {
				reps := make([]Report, c.batch)
				for j := range reps {
					r, _ := o.Randomize(src, j%c.d)
					reps[j] = toWire(fmt.Sprintf("b%d-r%d", i, j), r, p.Params)
				}
				bodies[i], _ = json.Marshal(map[string]any{"reports": reps})
			}
			srv := httptest.NewServer(Handler(st, ServerOptions{MaxBatch: 10000, MaxBody: 64 << 20}))
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c.clients}}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range c.clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						res, err := client.Post(srv.URL+"/api/surveys/s/reports", "application/json", bytes.NewReader(bodies[i]))
						if err != nil {
							b.Error(err)
							return
						}
						io.Copy(io.Discard, res.Body)
						res.Body.Close()
						if res.StatusCode != 200 {
							b.Errorf("status %d", res.StatusCode)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N*c.batch)/b.Elapsed().Seconds(), "reports/s")
			if est, _ := st.Estimates("s", 0.95); est.N != int64(b.N*c.batch) {
				b.Fatalf("n = %d, want %d", est.N, b.N*c.batch)
			}
		})
	}
}
