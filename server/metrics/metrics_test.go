package metrics_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/server"
	"github.com/dpstat/dpstat/server/metrics"
)

// scrape fetches url and parses it with the Prometheus text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("content type %q", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing the scrape: %v", err)
	}
	return fams
}

// value is the value of the sample of family name with exactly labels.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			match = match && labels[l.GetName()] == l.GetValue()
		}
		if !match {
			continue
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	t.Fatalf("no sample of %s with labels %v", name, labels)
	return 0
}

// TestMetricsScrape: the metrics are served in the text format, parse,
// follow the naming conventions and count what was observed; no label
// holds SQL text.
func TestMetricsScrape(t *testing.T) {
	m := metrics.New()
	health := server.NewHealth(nil)
	ts := httptest.NewServer(m.Mux(health))
	defer ts.Close()
	m.SetTables(3)
	m.ObserveQuery(answer.QueryEvent{Frontend: "http", Outcome: answer.OutcomeAnswered, Table: "adult", ReleaseID: 7, Cost: answer.Pair{Epsilon: 0.5, Delta: 1e-6}, Duration: 3 * time.Millisecond})
	m.ObserveQuery(answer.QueryEvent{Frontend: "pg", Outcome: answer.OutcomeAnswered, Table: "adult", ReleaseID: 8, Cost: answer.Pair{Epsilon: 0.25}, Duration: time.Millisecond})
	m.ObserveQuery(answer.QueryEvent{Frontend: "pg", Outcome: answer.OutcomeBudgetExceeded, Kind: answer.KindBudgetExceeded, Duration: time.Millisecond})
	m.ObserveQuery(answer.QueryEvent{Frontend: "http", Outcome: answer.OutcomeRefused, Kind: answer.KindSyntax, Duration: time.Millisecond})
	m.ObserveQuery(answer.QueryEvent{Frontend: "http", Outcome: answer.OutcomeRepeated, Table: "adult", Duration: time.Millisecond})
	m.EngineDone(20*time.Millisecond, nil)
	m.EngineDone(time.Second, errors.New("boom"))
	m.LedgerDone("charge", 2*time.Millisecond)
	m.Reloaded(true, 4)
	m.Reloaded(false, 0)

	fams := scrape(t, ts.URL+"/metrics")
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"dpstat_queries_total", map[string]string{"frontend": "http", "outcome": "answered"}, 1},
		{"dpstat_queries_total", map[string]string{"frontend": "pg", "outcome": "answered"}, 1},
		{"dpstat_queries_total", map[string]string{"frontend": "pg", "outcome": "budget_exceeded"}, 1},
		{"dpstat_queries_total", map[string]string{"frontend": "http", "outcome": "refused"}, 1},
		{"dpstat_queries_total", map[string]string{"frontend": "http", "outcome": "repeated"}, 1},
		{"dpstat_queries_total", map[string]string{"frontend": "pg", "outcome": "error"}, 0},
		{"dpstat_refusals_total", map[string]string{"kind": "budget_exceeded"}, 1},
		{"dpstat_refusals_total", map[string]string{"kind": "syntax_error"}, 1},
		{"dpstat_epsilon_spent_total", map[string]string{"table": "adult"}, 0.75},
		{"dpstat_delta_spent_total", map[string]string{"table": "adult"}, 1e-6},
		{"dpstat_query_duration_seconds", map[string]string{"frontend": "http"}, 3},
		{"dpstat_engine_duration_seconds", map[string]string{"outcome": "ok"}, 1},
		{"dpstat_engine_duration_seconds", map[string]string{"outcome": "error"}, 1},
		{"dpstat_ledger_duration_seconds", map[string]string{"op": "charge"}, 1},
		{"dpstat_catalog_reloads_total", map[string]string{"outcome": "ok"}, 1},
		{"dpstat_catalog_reloads_total", map[string]string{"outcome": "refused"}, 1},
		{"dpstat_catalog_tables", nil, 4},
	} {
		if got := value(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if f := fams["dpstat_build_info"]; f == nil || len(f.GetMetric()) != 1 || f.GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Errorf("build info: %v", f)
	}
	if fams["go_goroutines"] == nil {
		t.Error("no Go runtime metrics")
	}
	// Conventions: the dpstat_ prefix; counters end in _total;
	// histograms of durations in _seconds; no label value holds SQL.
	for name, f := range fams {
		if !strings.HasPrefix(name, "dpstat_") {
			continue
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			if !strings.HasSuffix(name, "_total") {
				t.Errorf("counter %s does not end in _total", name)
			}
		case dto.MetricType_HISTOGRAM:
			if !strings.HasSuffix(name, "_seconds") {
				t.Errorf("histogram %s does not end in _seconds", name)
			}
		}
		if f.GetHelp() == "" {
			t.Errorf("%s has no help", name)
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if strings.ContainsAny(l.GetValue(), " ()*") {
					t.Errorf("%s label %s=%q looks like SQL", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
	// Health on the metrics address.
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
	health.Stopping()
	resp, err := http.Get(ts.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("readyz while stopping: %d", resp.StatusCode)
	}
}
