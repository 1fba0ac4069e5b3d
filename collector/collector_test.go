package collector

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dpstat/dpstat/ldp"
	"github.com/dpstat/dpstat/random"
)

const testToken = "0123456789abcdef0123456789abcdef"

func openTest(t testing.TB) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "collector.db")
	st, err := Open(path, StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetAdminToken(testToken); err != nil {
		t.Fatal(err)
	}
	return st, path
}

func i64(v int64) *int64 { return &v }

func TestCreateSurveyRefusals(t *testing.T) {
	st, _ := openTest(t)
	defer st.Close()
	tests := []struct {
		name string
		spec SurveySpec
		want string
	}{
		{"no question", SurveySpec{Domain: Domain{Values: []string{"a", "b"}}, Mechanism: "krr", Epsilon: 1}, "question"},
		{"one value", SurveySpec{Question: "q", Domain: Domain{Values: []string{"a"}}, Mechanism: "krr", Epsilon: 1}, "1 values"},
		{"duplicate value", SurveySpec{Question: "q", Domain: Domain{Values: []string{"a", "a"}}, Mechanism: "krr", Epsilon: 1}, `"a" appears twice`},
		{"empty domain", SurveySpec{Question: "q", Mechanism: "krr", Epsilon: 1}, "domain is empty"},
		{"both", SurveySpec{Question: "q", Domain: Domain{Values: []string{"a", "b"}, Range: []float64{0, 1}}, Mechanism: "krr", Epsilon: 1}, "both values and range"},
		{"reversed range", SurveySpec{Question: "q", Domain: Domain{Range: []float64{5, 1}}, Mechanism: "mean", Epsilon: 1}, "finite lo < hi"},
		{"fractional range for krr", SurveySpec{Question: "q", Domain: Domain{Range: []float64{0, 1.5}}, Mechanism: "krr", Epsilon: 1}, "integer bounds"},
		{"mean over labels", SurveySpec{Question: "q", Domain: Domain{Values: []string{"a", "b"}}, Mechanism: "mean", Epsilon: 1}, "numeric range"},
		{"bad epsilon", SurveySpec{Question: "q", Domain: Domain{Values: []string{"a", "b"}}, Mechanism: "krr", Epsilon: -1}, "epsilon = -1"},
		{"bad mechanism", SurveySpec{Question: "q", Domain: Domain{Values: []string{"a", "b"}}, Mechanism: "laplace", Epsilon: 1}, `"laplace"`},
		{"bad id", SurveySpec{ID: "a b", Question: "q", Domain: Domain{Values: []string{"a", "b"}}, Mechanism: "krr", Epsilon: 1}, `survey id "a b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := st.CreateSurvey(tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestAutoMechanism(t *testing.T) {
	st, _ := openTest(t)
	defer st.Close()
	tests := []struct {
		name string
		d    Domain
		eps  float64
		want ldp.Kind
	}{
		{"two labels", Domain{Values: []string{"no", "yes"}}, 1, ldp.KindRR},
		{"few labels, high epsilon", Domain{Values: []string{"a", "b", "c"}}, 4, ldp.KindKRR},
		{"numeric range", Domain{Range: []float64{0, 120}}, 1, ldp.KindMean},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sv, err := st.CreateSurvey(SurveySpec{Question: "q", Domain: tc.d, Mechanism: "auto", Epsilon: tc.eps})
			if err != nil || sv.Mechanism != tc.want {
				t.Fatalf("mechanism %q, %v; want %q", sv.Mechanism, err, tc.want)
			}
		})
	}
}

func TestReadOnlyOpenOfALockedStore(t *testing.T) {
	st, path := openTest(t)
	defer st.Close()
	_, err := Open(path, StoreOptions{ReadOnly: true, Timeout: 50 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("error = %v, want a locked-store error", err)
	}
}

func TestIngestCountsOnceAndSurvivesReopen(t *testing.T) {
	st, path := openTest(t)
	sv, err := st.CreateSurvey(SurveySpec{ID: "colour", Question: "Favourite colour?", Domain: Domain{Values: []string{"red", "green", "blue"}}, Mechanism: "krr", Epsilon: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.Ingest(sv.ID, []Report{{ID: "a", Value: i64(0)}, {ID: "b", Value: i64(2)}, {ID: "a", Value: i64(1)}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 2 || res.Duplicates != 1 || res.Total != 2 {
		t.Fatalf("result %+v, want 2 accepted, 1 duplicate", res)
	}
	res, err = st.Ingest(sv.ID, []Report{{ID: "b", Value: i64(1)}, {ID: "c", Value: i64(1)}})
	if err != nil || res.Accepted != 1 || res.Duplicates != 1 || res.Total != 3 {
		t.Fatalf("result %+v, %v", res, err)
	}
	// A refused batch counts nothing, not even its valid reports.
	if _, err := st.Ingest(sv.ID, []Report{{ID: "d", Value: i64(1)}, {ID: "e", Value: i64(3)}}); err == nil {
		t.Fatal("accepted a value out of domain")
	}
	st.Close()
	st, err = Open(path, StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := st.Estimates("colour", 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if r.N != 3 {
		t.Fatalf("after reopening: n = %d, want 3", r.N)
	}
	for _, id := range []string{"a", "b", "c"} {
		if !st.HasReport("colour", id) {
			t.Errorf("report %q lost on reopening", id)
		}
	}
	if st.HasReport("colour", "d") {
		t.Error("report d of a refused batch was recorded")
	}
	if res, err := st.Ingest("colour", []Report{{ID: "a", Value: i64(0)}}); err != nil || res.Accepted != 0 || res.Duplicates != 1 {
		t.Fatalf("re-posting after reopen: %+v, %v", res, err)
	}
}

func TestEstimatesAtHugeEpsilon(t *testing.T) {
	st, _ := openTest(t)
	defer st.Close()
	for _, mech := range []string{"krr", "oue", "olh", "sue", "rr"} {
		values := []string{"yes", "no"}
		if mech != "rr" {
			values = []string{"a", "b", "c", "d"}
		}
		sv, err := st.CreateSurvey(SurveySpec{Question: "q", Domain: Domain{Values: values}, Mechanism: mech, Epsilon: 1e20})
		if err != nil {
			t.Fatalf("%s: %v", mech, err)
		}
		if mech == "oue" || mech == "olh" {
			continue // not exact at any ε (see package ldp)
		}
		p, _ := st.Public(sv.ID)
		o, err := ldp.New(ldp.Options{Mechanism: p.Params.Mechanism, Epsilon: 1e20, Domain: len(values)})
		if err != nil {
			t.Fatal(err)
		}
		src := random.NewInsecureSeeded(3)
		var batch []Report
		for i := range 40 {
			r, _ := o.Randomize(src, i%len(values))
			batch = append(batch, toWire(fmt.Sprint("r", i), r, p.Params))
		}
		if _, err := st.Ingest(sv.ID, batch); err != nil {
			t.Fatalf("%s: %v", mech, err)
		}
		est, err := st.Estimates(sv.ID, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range est.Estimates {
			if math.Abs(e.Estimate-1/float64(len(values))) > 1e-9 {
				t.Errorf("%s: %s estimate %v, want %v", mech, e.Label, e.Estimate, 1/float64(len(values)))
			}
		}
	}
}

func toWire(id string, r ldp.Report, p ldp.Params) Report { return wire(id, r, p) }

func do(t *testing.T, h http.Handler, method, path, auth, body string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var out map[string]any
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s %s: answer is not JSON: %q", method, path, rec.Body.String())
		}
	}
	return rec.Code, out
}

func TestHTTPRefusals(t *testing.T) {
	st, _ := openTest(t)
	defer st.Close()
	h := Handler(st, ServerOptions{MaxBody: 4096, MaxBatch: 10})
	mk := func(id, mech string, values string) {
		body := fmt.Sprintf(`{"id":%q,"question":"q","domain":{"values":[%s]},"mechanism":%q,"epsilon":1}`, id, values, mech)
		if code, out := do(t, h, "POST", "/api/surveys", testToken, body); code != 201 {
			t.Fatalf("create %s: %d %v", id, code, out)
		}
	}
	mk("k", "krr", `"a","b","c"`)
	mk("u", "oue", strings.Repeat(`"x",`, 0)+`"a","b","c","d","e","f","g","h","i","j"`)
	mk("h", "olh", `"a","b","c","d","e","f","g","h","i","j"`)
	mk("w", "hr", `"a","b","c","d","e"`)
	tests := []struct {
		name, method, path, auth, body string
		status                         int
		code                           string
	}{
		{"create without token", "POST", "/api/surveys", "", `{}`, 401, "unauthorized"},
		{"create with wrong token", "POST", "/api/surveys", "nope-nope-nope-nope", `{}`, 401, "unauthorized"},
		{"create malformed", "POST", "/api/surveys", testToken, `{"question":`, 400, "malformed_json"},
		{"create unknown field", "POST", "/api/surveys", testToken, `{"question":"q","person":"x"}`, 400, "malformed_json"},
		{"create duplicate id", "POST", "/api/surveys", testToken, `{"id":"k","question":"q","domain":{"values":["a","b"]},"mechanism":"krr","epsilon":1}`, 409, "survey_exists"},
		{"create invalid", "POST", "/api/surveys", testToken, `{"question":"q","domain":{"values":["a","b"]},"mechanism":"krr","epsilon":0}`, 400, "invalid_survey"},
		{"wrong survey", "POST", "/api/surveys/nope/reports", "", `{"reports":[{"id":"a","value":1}]}`, 404, "survey_not_found"},
		{"malformed json", "POST", "/api/surveys/k/reports", "", `{"reports":[{"id":"a","value":1}`, 400, "malformed_json"},
		{"not an object", "POST", "/api/surveys/k/reports", "", `[1,2]`, 400, "malformed_json"},
		{"unknown field (a person id)", "POST", "/api/surveys/k/reports", "", `{"id":"a","value":1,"user":"bob"}`, 400, "malformed_json"},
		{"empty batch", "POST", "/api/surveys/k/reports", "", `{"reports":[]}`, 400, "empty_batch"},
		{"batch too large", "POST", "/api/surveys/k/reports", "", `{"reports":[` + strings.TrimSuffix(strings.Repeat(`{"id":"a","value":1},`, 11), ",") + `]}`, 413, "batch_too_large"},
		{"body too large", "POST", "/api/surveys/k/reports", "", `{"reports":[` + strings.Repeat(" ", 5000) + `]}`, 413, "body_too_large"},
		{"value out of domain", "POST", "/api/surveys/k/reports", "", `{"reports":[{"id":"a","value":1},{"id":"b","value":3}]}`, 422, "out_of_domain"},
		{"negative value", "POST", "/api/surveys/k/reports", "", `{"id":"a","value":-1}`, 422, "out_of_domain"},
		{"missing value", "POST", "/api/surveys/k/reports", "", `{"id":"a"}`, 422, "wrong_fields"},
		{"bits for krr", "POST", "/api/surveys/k/reports", "", `{"id":"a","bits":"00"}`, 422, "wrong_fields"},
		{"missing report id", "POST", "/api/surveys/k/reports", "", `{"value":1}`, 422, "invalid_report_id"},
		{"bad report id", "POST", "/api/surveys/k/reports", "", `{"id":"a/b","value":1}`, 422, "invalid_report_id"},
		{"oue wrong length", "POST", "/api/surveys/u/reports", "", `{"id":"a","bits":"ff"}`, 422, "wrong_length"},
		{"oue not hex", "POST", "/api/surveys/u/reports", "", `{"id":"a","bits":"zz00"}`, 422, "malformed_bits"},
		{"oue bit beyond the domain", "POST", "/api/surveys/u/reports", "", `{"id":"a","bits":"0004"}`, 422, "out_of_domain"},
		{"oue with a value", "POST", "/api/surveys/u/reports", "", `{"id":"a","value":1}`, 422, "wrong_fields"},
		{"olh without seed", "POST", "/api/surveys/h/reports", "", `{"id":"a","value":1}`, 422, "wrong_fields"},
		{"olh hash out of range", "POST", "/api/surveys/h/reports", "", `{"id":"a","seed":5,"value":99}`, 422, "out_of_domain"},
		{"hr without row", "POST", "/api/surveys/w/reports", "", `{"id":"a","value":1}`, 422, "wrong_fields"},
		{"hr row out of range", "POST", "/api/surveys/w/reports", "", `{"id":"a","row":8,"value":1}`, 422, "out_of_domain"},
		{"hr value not a bit", "POST", "/api/surveys/w/reports", "", `{"id":"a","row":3,"value":2}`, 422, "out_of_domain"},
		{"row for krr", "POST", "/api/surveys/k/reports", "", `{"id":"a","row":0,"value":1}`, 422, "wrong_fields"},
		{"estimates of unknown survey", "GET", "/api/surveys/nope/estimates", "", "", 404, "survey_not_found"},
		{"bad confidence", "GET", "/api/surveys/k/estimates?confidence=2", "", "", 400, "invalid_confidence"},
		{"unknown endpoint", "GET", "/api/nothing", "", "", 404, "not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out := do(t, h, tc.method, tc.path, tc.auth, tc.body)
			e, _ := out["error"].(map[string]any)
			if code != tc.status || e["code"] != tc.code || e["message"] == "" {
				t.Fatalf("got %d %v, want %d with code %q and a message", code, out, tc.status, tc.code)
			}
		})
	}
	// None of the refused reports was counted.
	if _, out := do(t, h, "GET", "/api/surveys/k/estimates", "", ""); out["n"].(float64) != 0 {
		t.Fatalf("refused reports were counted: %v", out)
	}
}

func TestHTTPRoundTrip(t *testing.T) {
	st, _ := openTest(t)
	defer st.Close()
	srv := httptest.NewServer(Handler(st, ServerOptions{}))
	defer srv.Close()
	post := func(path, auth, body string) (int, []byte) {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	code, body := post("/api/surveys", testToken, `{"id":"age","question":"Your age?","domain":{"range":[18,90]},"mechanism":"mean","epsilon":2}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var pub Public
	if err := json.Unmarshal(body, &pub); err != nil || pub.Params.Mechanism != "mean" || pub.Params.P.Hex == "" {
		t.Fatalf("public parameters %s: %v", body, err)
	}
	m, _ := ldp.NewMean(ldp.MeanOptions{Epsilon: 2, Lo: 18, Hi: 90})
	src := random.NewInsecureSeeded(5)
	var reps []Report
	for i := range 2000 {
		r, _ := m.Randomize(src, 40)
		reps = append(reps, Report{ID: fmt.Sprint("dev-", i), Value: i64(int64(r.Value))})
	}
	b, _ := json.Marshal(map[string]any{"reports": reps})
	if code, body := post("/api/surveys/age/reports", "", string(b)); code != 200 || !strings.Contains(string(body), `"accepted":2000`) {
		t.Fatalf("post: %d %s", code, body)
	}
	// The same batch again: all duplicates.
	if code, body := post("/api/surveys/age/reports", "", string(b)); code != 200 || !strings.Contains(string(body), `"duplicates":2000`) {
		t.Fatalf("re-post: %d %s", code, body)
	}
	res, err := http.Get(srv.URL + "/api/surveys/age/estimates?confidence=0.999999")
	if err != nil {
		t.Fatal(err)
	}
	var est EstimateResult
	json.NewDecoder(res.Body).Decode(&est)
	res.Body.Close()
	// The 1 − 1e-6 interval covers the truth 40 except with probability
	// about 1e-6 (normal approximation with 2000 reports).
	if est.N != 2000 || len(est.Estimates) != 1 || est.Estimates[0].Lo > 40 || est.Estimates[0].Hi < 40 {
		t.Fatalf("estimates %+v", est)
	}
	for _, path := range []string{"/", "/dpstat-ldp.mjs", "/api/surveys", "/api/surveys/age"} {
		res, err := http.Get(srv.URL + path)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("GET %s: %v %v", path, res.StatusCode, err)
		}
		res.Body.Close()
	}
}

// TestCrashChild is the collector process killed by TestCrashKeepsAcknowledgedReports.
func TestCrashChild(t *testing.T) {
	path := os.Getenv("DPSTAT_COLLECTOR_CRASH_STORE")
	if path == "" {
		t.Skip("helper process for TestCrashKeepsAcknowledgedReports")
	}
	st, err := Open(path, StoreOptions{})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	fmt.Println("ADDR", ln.Addr().String())
	http.Serve(ln, Handler(st, ServerOptions{}))
}

// TestCrashKeepsAcknowledgedReports posts batches to a collector in a child
// process from two clients, kills the child with SIGKILL while it ingests,
// reopens the store and checks that every acknowledged report is counted
// and that the tally and the id log agree.
func TestCrashKeepsAcknowledgedReports(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "c.db")
	st, err := Open(path, StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateSurvey(SurveySpec{ID: "s", Question: "q", Domain: Domain{Values: []string{"a", "b", "c", "d"}}, Mechanism: "krr", Epsilon: 1}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
	cmd.Env = append(os.Environ(), "DPSTAT_COLLECTOR_CRASH_STORE="+path)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	addr := ""
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
			addr = a
			break
		}
	}
	if addr == "" {
		cmd.Process.Kill()
		t.Fatal("child did not start")
	}
	go io.Copy(io.Discard, out)
	var mu sync.Mutex
	var acked []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 5 * time.Second}
			for b := 0; ; b++ {
				select {
				case <-stop:
					return
				default:
				}
				var reps []Report
				var ids []string
				for i := range 200 {
					id := fmt.Sprintf("c%d-b%d-r%d", c, b, i)
					ids = append(ids, id)
					reps = append(reps, Report{ID: id, Value: i64(int64(i % 4))})
				}
				body, _ := json.Marshal(map[string]any{"reports": reps})
				res, err := client.Post("http://"+addr+"/api/surveys/s/reports", "application/json", bytes.NewReader(body))
				if err != nil {
					return // the child is gone
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode == 200 {
					mu.Lock()
					acked = append(acked, ids...)
					mu.Unlock()
				}
			}
		}()
	}
	// Let some batches through, then kill the child in the middle of the
	// stream (no timing assertion: the test holds whenever the kill lands).
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 4000 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	close(stop)
	wg.Wait()
	st, err = Open(path, StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	est, err := st.Estimates("s", 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if est.N < int64(len(acked)) {
		t.Fatalf("after the crash n = %d, but %d reports were acknowledged", est.N, len(acked))
	}
	for _, id := range acked {
		if !st.HasReport("s", id) {
			t.Fatalf("acknowledged report %s lost in the crash", id)
		}
	}
	if got := int64(len(st.surveys["s"].ids)); got != est.N {
		t.Fatalf("tally n = %d but %d report ids are logged", est.N, got)
	}
	t.Logf("%d reports acknowledged before the kill, %d in the store", len(acked), est.N)
}

// TestGoClient answers every kind of survey through the Go client against a
// real loopback server at ε = 1e20 (exact where the mechanism is exact).
func TestGoClient(t *testing.T) {
	st, _ := openTest(t)
	defer st.Close()
	srv := httptest.NewServer(Handler(st, ServerOptions{}))
	defer srv.Close()
	c, err := NewClient(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, mech := range []string{"rr", "krr", "oue", "sue", "olh", "hr"} {
		values := []string{"a", "b", "c", "d"}
		if mech == "rr" {
			values = values[:2]
		}
		sv, err := st.CreateSurvey(SurveySpec{Question: "q", Domain: Domain{Values: values}, Mechanism: mech, Epsilon: 1e20})
		if err != nil {
			t.Fatal(err)
		}
		d, err := c.Survey(ctx, sv.ID)
		if err != nil {
			t.Fatalf("%s: %v", mech, err)
		}
		var reps []Report
		for i := range 20 {
			r, err := d.Randomize(nil, i%len(values))
			if err != nil {
				t.Fatal(err)
			}
			reps = append(reps, r)
		}
		if res, err := d.Post(ctx, reps); err != nil || res.Accepted != 20 {
			t.Fatalf("%s: %+v %v", mech, res, err)
		}
		est, err := c.Estimates(ctx, sv.ID, 0.9)
		if err != nil || est.N != 20 {
			t.Fatalf("%s: %+v %v", mech, est, err)
		}
		if mech != "oue" && mech != "olh" && mech != "hr" {
			for _, e := range est.Estimates {
				if math.Abs(e.Estimate-1/float64(len(values))) > 1e-9 {
					t.Errorf("%s: %s = %v", mech, e.Label, e.Estimate)
				}
			}
		}
		if _, err := d.RandomizeNumber(nil, 1); err == nil {
			t.Errorf("%s: RandomizeNumber accepted a frequency survey", mech)
		}
	}
	sv, _ := st.CreateSurvey(SurveySpec{Question: "age", Domain: Domain{Range: []float64{0, 100}}, Mechanism: "mean", Epsilon: 1e20})
	d, err := c.Survey(ctx, sv.ID)
	if err != nil {
		t.Fatal(err)
	}
	r, err := d.RandomizeNumber(nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Post(ctx, []Report{r}); err != nil {
		t.Fatal(err)
	}
	if est, _ := c.Estimates(ctx, sv.ID, 0.9); math.Abs(est.Estimates[0].Estimate-100) > 1e-9 {
		t.Errorf("mean estimate %+v, want 100", est)
	}
	if _, err := d.RandomizeNumber(nil, 101); err == nil {
		t.Error("accepted a number out of range")
	}
	if _, err := c.Survey(ctx, "nope"); err == nil || !strings.Contains(err.Error(), "survey_not_found") {
		t.Errorf("unknown survey: %v", err)
	}
	if _, err := NewClient("ftp://x", nil); err == nil {
		t.Error("accepted an ftp address")
	}
}

// TestConcurrentIngestCountsEachIDOnce posts overlapping batches from many
// goroutines (their commits are grouped) and checks that every id is
// accepted exactly once and the tally matches.
func TestConcurrentIngestCountsEachIDOnce(t *testing.T) {
	st, path := openTest(t)
	if _, err := st.CreateSurvey(SurveySpec{ID: "s", Question: "q", Domain: Domain{Values: []string{"a", "b", "c"}}, Mechanism: "krr", Epsilon: 1}); err != nil {
		t.Fatal(err)
	}
	const workers, batches, size, distinct = 8, 20, 50, 3000
	var mu sync.Mutex
	accepted, dups := 0, 0
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				var reps []Report
				for i := range size {
					id := (w*7919 + b*size + i*31) % distinct
					reps = append(reps, Report{ID: fmt.Sprint("id", id), Value: i64(int64(id % 3))})
				}
				res, err := st.Ingest("s", reps)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				accepted += res.Accepted
				dups += res.Duplicates
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if accepted+dups != workers*batches*size {
		t.Fatalf("accepted %d + duplicates %d ≠ %d posted", accepted, dups, workers*batches*size)
	}
	est, _ := st.Estimates("s", 0.95)
	if est.N != int64(accepted) {
		t.Fatalf("n = %d, accepted %d", est.N, accepted)
	}
	st.Close()
	st, err := Open(path, StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := len(st.surveys["s"].ids); got != accepted {
		t.Fatalf("after reopening %d ids, accepted %d", got, accepted)
	}
	if est, _ := st.Estimates("s", 0.95); est.N != int64(accepted) {
		t.Fatalf("after reopening n = %d, accepted %d", est.N, accepted)
	}
}
