package js_test

import (
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dpstat/dpstat/collector"
)

// TestNodeClientPostsToCollector runs the JavaScript client in Node against
// a real loopback collector: it fetches the public parameters, randomizes
// answers and posts them, one at a time and in a batch (krr, sue, olh, hr,
// mean). At ε = 1e20 the
// estimates are exact, which shows that the reports were built and decoded
// consistently.
func TestNodeClientPostsToCollector(t *testing.T) {
	// The Makefile sets DPSTAT_TEST_TOOLS to a fingerprint of the optional
	// tools installed; reading it makes go test's cache key depend on it,
	// so installing a tool reruns a test that skipped without it.
	os.Getenv("DPSTAT_TEST_TOOLS")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH: the JavaScript client was not tested against the collector")
	}
	st, err := collector.Open(filepath.Join(t.TempDir(), "c.db"), collector.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, spec := range []collector.SurveySpec{
		{ID: "krr", Question: "q", Domain: collector.Domain{Values: []string{"a", "b", "c"}}, Mechanism: "krr", Epsilon: 1e20},
		{ID: "sue", Question: "q", Domain: collector.Domain{Values: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}}, Mechanism: "sue", Epsilon: 1e20},
		{ID: "olh", Question: "q", Domain: collector.Domain{Values: []string{"a", "b", "c"}}, Mechanism: "olh", Epsilon: 2},
		{ID: "mean", Question: "q", Domain: collector.Domain{Range: []float64{-10, 10}}, Mechanism: "mean", Epsilon: 1e20},
		{ID: "hr", Question: "q", Domain: collector.Domain{Values: []string{"a", "b", "c", "d", "e"}}, Mechanism: "hr", Epsilon: 1},
	} {
		if _, err := st.CreateSurvey(spec); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(collector.Handler(st, collector.ServerOptions{}))
	defer srv.Close()
	mod, err := filepath.Abs("dpstat-ldp.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := `
import { fetchSurvey, answer, randomize, reportId, postReports } from ` + "'file://" + mod + "'" + `;
const base = process.argv[1];
const krr = await fetchSurvey(base, 'krr');
for (const v of [0, 2, 2, 2]) await answer(base, krr, v);
const sue = await fetchSurvey(base, 'sue');
const reps = [];
for (let i = 0; i < 18; i++) reps.push({ id: reportId(), ...randomize(sue.params, i % 9) });
const res = await postReports(base, 'sue', reps);
if (res.accepted !== 18) throw new Error('sue batch: ' + JSON.stringify(res));
const olh = await fetchSurvey(base, 'olh');
for (let i = 0; i < 5; i++) await answer(base, olh, i % 3);
const mean = await fetchSurvey(base, 'mean');
await answer(base, mean, 10);
await answer(base, mean, -10);
const hr = await fetchSurvey(base, 'hr');
for (let i = 0; i < 7; i++) await answer(base, hr, i % 5);
try {
  await postReports(base, 'krr', [{ id: 'x', value: 9 }]);
  throw new Error('out-of-domain report accepted');
} catch (e) {
  if (!/out_of_domain/.test(e.message)) throw e;
}
`
	cmd := exec.Command(node, "--input-type=module", "-e", script, srv.URL)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	want := map[string][]float64{"krr": {0.25, 0, 0.75}, "sue": {1.0 / 9, 1.0 / 9, 1.0 / 9, 1.0 / 9, 1.0 / 9, 1.0 / 9, 1.0 / 9, 1.0 / 9, 1.0 / 9}, "mean": {0}}
	for id, w := range want {
		est, err := st.Estimates(id, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range est.Estimates {
			if math.Abs(e.Estimate-w[i]) > 1e-9 {
				t.Errorf("%s: %s = %v, want %v", id, e.Label, e.Estimate, w[i])
			}
		}
	}
	if est, _ := st.Estimates("olh", 0.95); est.N != 5 {
		t.Errorf("olh: %d reports, want 5", est.N)
	}
	if est, _ := st.Estimates("hr", 0.95); est.N != 7 || len(est.Estimates) != 5 {
		t.Errorf("hr: %d reports and %d estimates, want 7 and 5", est.N, len(est.Estimates))
	}
}
