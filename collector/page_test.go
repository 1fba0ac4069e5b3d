package collector

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// chromiumPath is where Debian's chromium package installs the browser;
// DPSTAT_CHROMIUM overrides it.
func chromiumPath() string {
	if p := os.Getenv("DPSTAT_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// TestDemoPageInHeadlessChromium loads the demo page in headless Chromium,
// which answers the survey through the JavaScript client (randomizing in
// the page) and renders the updated estimate; the test reads the final DOM
// with --dump-dom, so no browser driver is needed.
func TestDemoPageInHeadlessChromium(t *testing.T) {
	// The Makefile sets DPSTAT_TEST_TOOLS to a fingerprint of the optional
	// tools installed; reading it makes go test's cache key depend on it,
	// so installing a tool reruns a test that skipped without it.
	os.Getenv("DPSTAT_TEST_TOOLS")
	bin := chromiumPath()
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("headless Chromium not found at %s (install the chromium package, or set DPSTAT_CHROMIUM): the demo page was not tested", bin)
	}
	if testing.Short() {
		t.Skip("starts a browser")
	}
	st, _ := openTest(t)
	defer st.Close()
	// ε = 1e20: the randomized answer is the true one, so the page must
	// show exactly 100% for the answer given.
	if _, err := st.CreateSurvey(SurveySpec{ID: "demo", Question: "Which season do you prefer?", Domain: Domain{Values: []string{"spring", "summer", "autumn", "winter"}}, Mechanism: "krr", Epsilon: 1e20}); err != nil {
		t.Fatal(err)
	}
	// A mean survey: the answer 100 = hi is rounded to hi with
	// probability 1, so at ε = 1e20 the estimate is exactly 100.
	if _, err := st.CreateSurvey(SurveySpec{ID: "age", Question: "How old are you?", Domain: Domain{Range: []float64{0, 100}}, Mechanism: "mean", Epsilon: 1e20}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(st, ServerOptions{}))
	defer srv.Close()
	tests := []struct {
		name, query string
		want        []string
	}{
		{"frequencies", "?survey=demo&answer=2&auto=1", []string{"Which season do you prefer?", "<td>autumn</td><td>100.0%</td>", "<td>summer</td><td>0.0%</td>"}},
		{"mean", "?survey=age&answer=100&auto=1", []string{"How old are you?", "<td>mean</td><td>100.000</td>"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
				"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
				"--user-data-dir="+t.TempDir(), "--virtual-time-budget=15000", "--window-size=1000,900",
				"--dump-dom", srv.URL+"/"+tc.query)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("chromium: %v\n%s", err, out)
			}
			dom := string(out)
			for _, want := range append([]string{`data-answered="true"`, "1 report ("}, tc.want...) {
				if !strings.Contains(dom, want) {
					t.Errorf("the page lacks %q; DOM:\n%s", want, dom)
				}
			}
		})
	}
	for _, id := range []string{"demo", "age"} {
		if est, _ := st.Estimates(id, 0.95); est.N != 1 {
			t.Errorf("survey %s holds %d reports, want the page's 1", id, est.N)
		}
	}
}
