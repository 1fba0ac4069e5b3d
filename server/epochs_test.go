package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/epoch"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/server"
)

// TestBudgetEpochs: GET /v1/budget lists, under a budget of a table with
// epochs, the runs of charged epochs the dashboard draws as a strip.
func TestBudgetEpochs(t *testing.T) {
	e := newEnv(t, server.Options{}, nil)
	if r := e.do(t, "POST", "/v1/query", e.alice, `{"sql":"SELECT COUNT(*) FROM adult","epsilon":0.5}`); r.status != 200 {
		t.Fatalf("query: %d %s", r.status, r.raw)
	}
	k := ledger.Key{Dataset: "adult", Analyst: "alice"}
	r := &epoch.Range{Every: epoch.Month, From: 2024 * 12, To: 2024*12 + 2}
	if _, err := e.ledger.Charge(context.Background(), ledger.Charge{Key: k, Cost: accounting.Pure(0.25), Epochs: r}); err != nil {
		t.Fatal(err)
	}
	res := e.do(t, "GET", "/v1/budget", e.alice, "")
	if res.status != 200 || !strings.Contains(res.raw, `"epochs":[{"epochs":"2024-01..2024-03","spent":{"epsilon":0.25`) {
		t.Fatalf("budget: %d %s", res.status, res.raw)
	}
}
