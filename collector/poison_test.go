package collector

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// doFrom is do with the request's client address set.
func doFrom(t *testing.T, h http.Handler, remote, method, path, auth, body string) int {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.RemoteAddr = remote
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

func batchOf(prefix string, n int) string {
	var b strings.Builder
	b.WriteString(`{"reports":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":"%s-%d","value":1}`, prefix, i)
	}
	b.WriteString("]}")
	return b.String()
}

// TestEnrolment: an enrolment survey counts one report per enrolled
// device; fresh ids do not help an unenrolled client, nor a device that
// posts again.
func TestEnrolment(t *testing.T) {
	st, _ := openTest(t)
	defer st.Close()
	h := Handler(st, ServerOptions{})
	if code, _ := do(t, h, "POST", "/api/surveys", testToken, `{"id":"s","question":"q","domain":{"values":["no","yes"]},"mechanism":"rr","epsilon":1,"enrolment":true}`); code != 201 {
		t.Fatalf("create: %d", code)
	}
	if code, _ := do(t, h, "POST", "/api/surveys", testToken, `{"id":"open","question":"q","domain":{"values":["no","yes"]},"mechanism":"rr","epsilon":1}`); code != 201 {
		t.Fatalf("create: %d", code)
	}
	code, out := do(t, h, "POST", "/api/surveys/s/devices", testToken, `{"count":3}`)
	toks, _ := out["tokens"].([]any)
	if code != 201 || len(toks) != 3 {
		t.Fatalf("enrol: %d %v", code, out)
	}
	tok := func(i int) string { return toks[i].(string) }
	steps := []struct {
		name, path, auth, body string
		code                   int
		errCode                string
	}{
		{"enrol without the curator's token", "/api/surveys/s/devices", tok(0), `{"count":1}`, 401, "unauthorized"},
		{"enrol too many", "/api/surveys/s/devices", testToken, `{"count":10001}`, 400, "invalid_enrolment"},
		{"enrol in an open survey", "/api/surveys/open/devices", testToken, `{"count":1}`, 400, "invalid_enrolment"},
		{"no device token", "/api/surveys/s/reports", "", `{"id":"a","value":1}`, 401, "device_token_required"},
		{"an unenrolled token", "/api/surveys/s/reports", "dpd_" + strings.Repeat("0", 64), `{"id":"a","value":1}`, 401, "device_not_enrolled"},
		{"the curator's token is not a device", "/api/surveys/s/reports", testToken, `{"id":"a","value":1}`, 401, "device_not_enrolled"},
		{"a batch from one device", "/api/surveys/s/reports", tok(0), batchOf("x", 2), 400, "one_report_per_device"},
		{"device 0 reports", "/api/surveys/s/reports", tok(0), `{"id":"a","value":1}`, 200, ""},
		{"device 0 again with a fresh id", "/api/surveys/s/reports", tok(0), `{"id":"b","value":1}`, 200, ""},
		{"device 1 reports in batch form", "/api/surveys/s/reports", tok(1), `{"reports":[{"id":"c","value":0}]}`, 200, ""},
	}
	for _, s := range steps {
		code, out := do(t, h, "POST", s.path, s.auth, s.body)
		if code != s.code || (s.errCode != "" && errorCode(out) != s.errCode) {
			t.Fatalf("%s: %d %v, want %d %s", s.name, code, out, s.code, s.errCode)
		}
	}
	res, err := st.Estimates("s", 0.95)
	if err != nil || res.N != 2 {
		t.Fatalf("estimates: n = %d, %v; want 2 (two devices)", res.N, err)
	}
	// Enrolments are durable.
	if _, err := st.DeviceReportID("s", tok(2)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DeviceReportID("open", tok(2)); !errors.Is(err, ErrNotEnrolled) {
		t.Fatalf("a token of another survey: %v", err)
	}
}

// TestQuotaPerAddress: one address cannot post past the quota with fresh
// ids (the attack that moved an estimate above 1); another address can;
// duplicates and refused batches are refunded; the window resets.
func TestQuotaPerAddress(t *testing.T) {
	st, _ := openTest(t)
	defer st.Close()
	hh := Handler(st, ServerOptions{MaxReportsPerAddr: 100, MaxTrackedAddrs: 3})
	if code, _ := do(t, hh, "POST", "/api/surveys", testToken, `{"id":"s","question":"q","domain":{"values":["no","yes"]},"mechanism":"rr","epsilon":1}`); code != 201 {
		t.Fatal("create")
	}
	steps := []struct {
		name, remote, body string
		code               int
	}{
		{"60 from A", "10.0.0.1:1000", batchOf("a", 60), 200},
		{"30 of them again (duplicates, refunded)", "10.0.0.1:1001", batchOf("a", 30), 200},
		{"40 more from A fill the quota", "10.0.0.1:1002", batchOf("b", 40), 200},
		{"one more from A", "10.0.0.1:1003", batchOf("c", 1), 429},
		{"a refused batch from B is refunded", "10.0.0.2:1000", `{"reports":[{"id":"z","value":1},{"id":"y","value":7}]}`, 422},
		{"100 from B", "10.0.0.2:1000", batchOf("d", 100), 200},
		{"one IPv6 /64", "[2001:db8::1]:1000", batchOf("e", 60), 200},
		{"same /64, another host", "[2001:db8::2]:1000", batchOf("f", 60), 429},
		{"a fourth address past the tracked maximum", "10.0.0.4:1000", batchOf("g", 1), 429},
	}
	for _, s := range steps {
		if code := doFrom(t, hh, s.remote, "POST", "/api/surveys/s/reports", "", s.body); code != s.code {
			t.Fatalf("%s: %d, want %d", s.name, code, s.code)
		}
	}
	res, _ := st.Estimates("s", 0.95)
	if res.N != 260 {
		t.Fatalf("n = %d, want 260", res.N)
	}
}

func TestQuotaWindow(t *testing.T) {
	q := newQuota(10, 100, time.Hour)
	now := time.Unix(0, 0)
	q.now = func() time.Time { return now }
	if ok, _ := q.reserve("s", "1.2.3.4:5", 10); !ok {
		t.Fatal("the first 10")
	}
	if ok, used := q.reserve("s", "1.2.3.4:6", 1); ok || used != 10 {
		t.Fatalf("the 11th: %v %d", ok, used)
	}
	if ok, _ := q.reserve("t", "1.2.3.4:6", 10); !ok {
		t.Fatal("another survey has its own quota")
	}
	now = now.Add(time.Hour)
	if ok, _ := q.reserve("s", "1.2.3.4:6", 10); !ok {
		t.Fatal("a new window")
	}
}

// TestMaxIDs: the ids held in memory are bounded; past the bound a batch
// is refused whole with a clear error, also after a reopen.
func TestMaxIDs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	st, err := Open(path, StoreOptions{MaxIDs: 50})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetAdminToken(testToken); err != nil {
		t.Fatal(err)
	}
	h := Handler(st, ServerOptions{})
	if code, _ := do(t, h, "POST", "/api/surveys", testToken, `{"id":"s","question":"q","domain":{"values":["no","yes"]},"mechanism":"rr","epsilon":1}`); code != 201 {
		t.Fatal("create")
	}
	for _, s := range []struct {
		body    string
		code    int
		errCode string
	}{
		{batchOf("a", 40), 200, ""},
		{batchOf("b", 20), 503, "collector_full"},
		{batchOf("a", 40), 200, ""}, // duplicates take no room
		{batchOf("c", 10), 200, ""},
		{batchOf("d", 1), 503, "collector_full"},
	} {
		if code, out := do(t, h, "POST", "/api/surveys/s/reports", "", s.body); code != s.code || (s.errCode != "" && errorCode(out) != s.errCode) {
			t.Fatalf("%d reports: %d %v", strings.Count(s.body, `"id"`), code, out)
		}
	}
	st.Close()
	if st, err = Open(path, StoreOptions{MaxIDs: 50}); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Ingest("s", []Report{{ID: "new", Value: i64(1)}}); !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "MaxIDs") {
		t.Fatalf("after reopen: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "x.db"), StoreOptions{MaxIDs: -1}); err == nil || !strings.Contains(err.Error(), "MaxIDs = -1") {
		t.Fatalf("negative MaxIDs: %v", err)
	}
}

// errorCode reads the code of an error answer, {"error": {"code": …}}.
func errorCode(out map[string]any) any {
	e, _ := out["error"].(map[string]any)
	return e["code"]
}
