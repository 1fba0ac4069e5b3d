package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpstat/dpstat/collector"
)

func TestLdpSimulate(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"oue zipf", []string{"--mechanism", "oue", "--epsilon", "1", "--domain", "100", "--n", "20000", "--distribution", "zipf"}, []string{"mechanism oue", "q = 0.2689414213699958", "mean absolute error over 100 values", "theoretical standard error"}},
		{"krr uniform", []string{"--mechanism", "krr", "--domain", "5", "--n", "10000", "--distribution", "uniform", "--top", "5"}, []string{"mechanism krr", "95% interval"}},
		{"olh", []string{"--mechanism", "olh", "--epsilon", "2", "--domain", "50", "--n", "5000"}, []string{"mechanism olh", "g = 8"}},
		{"sue", []string{"--mechanism", "sue", "--domain", "20", "--n", "5000"}, []string{"mechanism sue"}},
		{"rr", []string{"--mechanism", "rr", "--domain", "2", "--n", "5000"}, []string{"mechanism rr"}},
		{"hr", []string{"--mechanism", "hr", "--domain", "100", "--n", "5000"}, []string{"mechanism hr (Hadamard randomized response)", "128 Hadamard rows"}},
		{"auto small domain", []string{"--mechanism", "auto", "--epsilon", "4", "--domain", "10", "--n", "5000"}, []string{"mechanism krr"}},
		{"auto large domain", []string{"--epsilon", "1", "--domain", "1024", "--n", "5000"}, []string{"mechanism oue"}},
		// Probabilities are decimals a person reads (the shortest that
		// round-trip to the exact float64), not hex floats.
		{"decimal probabilities", []string{"--mechanism", "oue", "--epsilon", "1", "--domain", "10", "--n", "100"}, []string{"exact probabilities: p = 0.5, q = 0.2689414213699958"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCLI(append([]string{"ldp", "simulate", "--insecure-seed", "1"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "0x") {
				t.Errorf("output has a hex float:\n%s", out)
			}
		})
	}
}

// TestLdpSimulateExactAtHugeEpsilon: at ε = 1e20 k-ary randomized response
// reports the truth, so the mean absolute error is 0.
func TestLdpSimulateExactAtHugeEpsilon(t *testing.T) {
	out, errOut, code := runCLI("ldp", "simulate", "--mechanism", "krr", "--epsilon", "1e20", "--domain", "7", "--n", "1000")
	if code != 0 {
		t.Fatal(errOut)
	}
	if !strings.Contains(out, "mean absolute error over 7 values: 0.000000") {
		t.Fatalf("not exact:\n%s", out)
	}
}

func TestLdpRefusals(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"zero epsilon", []string{"simulate", "--mechanism", "oue", "--epsilon", "0"}, "epsilon = 0"},
		{"NaN epsilon", []string{"simulate", "--mechanism", "krr", "--epsilon", "NaN"}, "epsilon = NaN"},
		{"domain 1", []string{"simulate", "--mechanism", "krr", "--domain", "1"}, "domain = 1"},
		{"unknown mechanism", []string{"simulate", "--mechanism", "laplace"}, `--mechanism "laplace"`},
		{"hadamard with too few values", []string{"simulate", "--mechanism", "hr", "--domain", "1"}, "domain = 1"},
		{"rr with 3 values", []string{"simulate", "--mechanism", "rr", "--domain", "3"}, "exactly 2 values"},
		{"n zero", []string{"simulate", "--n", "0"}, "--n = 0"},
		{"bad distribution", []string{"simulate", "--distribution", "pareto"}, `--distribution "pareto"`},
		{"bad confidence", []string{"simulate", "--confidence", "1"}, "--confidence = 1"},
		{"compare small n", []string{"compare", "--n", "10"}, "--n = 10"},
		{"compare bad epsilon", []string{"compare", "--epsilon", "-1"}, "epsilon = -1"},
		{"compare bad fraction", []string{"compare", "--fraction", "2"}, "--fraction = 2"},
		{"estimate without store", []string{"estimate", "--survey", "x"}, "--store is required"},
		{"estimate without survey", []string{"estimate", "--store", "x"}, "--survey is required"},
		{"estimate missing store", []string{"estimate", "--store", "/nonexistent/dir/x.db", "--survey", "x"}, "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runCLI(append([]string{"ldp"}, tc.args...)...)
			if code == 0 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q, want an error containing %q", code, errOut, tc.want)
			}
		})
	}
}

func TestLdpCompare(t *testing.T) {
	out, errOut, code := runCLI("ldp", "compare", "--epsilon", "1", "--n", "10000", "--trials", "5", "--insecure-seed", "2")
	if code != 0 {
		t.Fatal(errOut)
	}
	for _, w := range []string{"local RR theory", "central Laplace theory", "10000", "1000", "100 ", "96.0", "1.36"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestLdpEstimateFromStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	st, err := collector.Open(path, collector.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateSurvey(collector.SurveySpec{ID: "pets", Question: "Cat or dog?", Domain: collector.Domain{Values: []string{"cat", "dog"}}, Mechanism: "krr", Epsilon: 1e20}); err != nil {
		t.Fatal(err)
	}
	one, zero := int64(1), int64(0)
	if _, err := st.Ingest("pets", []collector.Report{{ID: "a", Value: &one}, {ID: "b", Value: &zero}, {ID: "c", Value: &one}, {ID: "d", Value: &one}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	out, errOut, code := runCLI("ldp", "estimate", "--store", path, "--survey", "pets")
	if code != 0 {
		t.Fatal(errOut)
	}
	for _, w := range []string{"Cat or dog?", "4 reports"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if !hasRow(out, "cat", "0.25000") || !hasRow(out, "dog", "0.75000") {
		t.Errorf("estimates are not exact:\n%s", out)
	}
	if _, errOut, code := runCLI("ldp", "estimate", "--store", path, "--survey", "nope"); code == 0 || !strings.Contains(errOut, "survey not found") {
		t.Fatalf("unknown survey: exit %d %q", code, errOut)
	}
}

// hasRow reports whether a table row starts with the label and value.
func hasRow(out, label, value string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == label && f[1] == value {
			return true
		}
	}
	return false
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestCollectServesAndStopsCleanly runs the collector on a loopback port,
// creates a survey with the token from --admin-token-file, posts a report,
// stops the collector and reads the store with dpstat ldp estimate.
func TestCollectServesAndStopsCleanly(t *testing.T) {
	dir := t.TempDir()
	store, tokFile := filepath.Join(dir, "c.db"), filepath.Join(dir, "token")
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- runCollect(ctx, &stdout, &stderr, collectOptions{store: store, addr: addr, tokenFile: tokFile, maxBody: 1 << 20, maxBatch: 100})
	}()
	var tok []byte
	var err error
	for i := 0; i < 500; i++ {
		if tok, err = os.ReadFile(tokFile); err == nil && len(tok) > 0 {
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	base := "http://" + addr
	req, _ := http.NewRequest("POST", base+"/api/surveys", strings.NewReader(`{"id":"s","question":"Yes or no?","domain":{"values":["no","yes"]},"mechanism":"rr","epsilon":1e20}`))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 201 {
		t.Fatalf("create: %d %s", res.StatusCode, b)
	}
	res, err = http.Post(base+"/api/surveys/s/reports", "application/json", strings.NewReader(`{"reports":[{"id":"x1","value":1},{"id":"x2","value":1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("post: %d %s", res.StatusCode, b)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("collector stopped with %v", err)
	}
	if !strings.Contains(stderr.String(), "new curator token written to") {
		t.Errorf("stderr: %q", stderr.String())
	}
	out, errOut, code := runCLI("ldp", "estimate", "--store", store, "--survey", "s")
	if code != 0 || !hasRow(out, "yes", "1.00000") {
		t.Fatalf("estimate: exit %d\n%s%s", code, out, errOut)
	}
	// A second start reads the token file.
	ctx2, cancel2 := context.WithCancel(context.Background())
	stderr.Reset()
	go func() {
		done <- runCollect(ctx2, io.Discard, &stderr, collectOptions{store: store, addr: freeAddr(t), tokenFile: tokFile, maxBody: 1 << 20, maxBatch: 100})
	}()
	time.Sleep(50 * time.Millisecond)
	cancel2()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "curator token read from") {
		t.Errorf("second start stderr: %q", stderr.String())
	}
	if _, errOut, code := runCLI("collect"); code == 0 || !strings.Contains(errOut, "--store is required") {
		t.Errorf("collect without --store: %d %q", code, errOut)
	}
}

// TestCollectDemoAndDefaultTokenFile checks that without --admin-token-file
// the curator's token is kept in a file beside the store (readable by its
// owner only), and that --demo creates the demo survey the page offers.
func TestCollectDemoAndDefaultTokenFile(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "c.db")
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- runCollect(ctx, io.Discard, &stderr, collectOptions{store: store, addr: addr, maxBody: 1 << 20, maxBatch: 100, demo: true})
	}()
	var body []byte
	for i := 0; i < 500; i++ {
		if res, err := http.Get("http://" + addr + "/api/surveys"); err == nil {
			body, _ = io.ReadAll(res.Body)
			res.Body.Close()
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"commute"`) {
		t.Fatalf("surveys: %s", body)
	}
	st, err := os.Stat(store + ".token")
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", err, st)
	}
	tok, _ := os.ReadFile(store + ".token")
	if !strings.Contains(stderr.String(), "new curator token written to "+store+".token") || len(tok) < 32 || strings.Contains(stderr.String(), strings.TrimSpace(string(tok))) {
		t.Fatalf("stderr: %q", stderr.String())
	}
}
