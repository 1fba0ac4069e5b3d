package server_test

import (
	"strings"
	"testing"

	"github.com/dpstat/dpstat/server"
)

// TestTotalBudgetOverHTTP: an administrator grants a table's total budget;
// /v1/budget and the answers show it beside the analyst's share; a query
// that fits the analyst's budget but not the total is refused saying so.
func TestTotalBudgetOverHTTP(t *testing.T) {
	e := newEnv(t, server.Options{}, nil)
	steps := []struct {
		name, method, path, token, body string
		status                          int
		contains                        []string
	}{
		{"analyst cannot grant a total", "POST", "/v1/admin/grants", e.alice, `{"table":"adult","total":true,"epsilon":100}`, 403, nil},
		{"total with an analyst", "POST", "/v1/admin/grants", e.admin, `{"analyst":"alice","table":"adult","total":true,"epsilon":1}`, 400, []string{`leave \"analyst\" out`}},
		{"total of an unknown table", "POST", "/v1/admin/grants", e.admin, `{"table":"secrets","total":true,"epsilon":1}`, 400, []string{`table \"secrets\" is not in the catalog`}},
		{"negative total", "POST", "/v1/admin/grants", e.admin, `{"table":"adult","total":true,"epsilon":-1}`, 400, []string{"epsilon = -1"}},
		{"grant the total", "POST", "/v1/admin/grants", e.admin, `{"table":"adult","total":true,"epsilon":1}`, 200, []string{`"table":"adult"`, `"limit":{"epsilon":1,"delta":0}`, `"releases":0`}},
		{"budget shows it", "GET", "/v1/budget", e.alice, "", 200, []string{`"total":{"table":"adult","rule":"basic","limit":{"epsilon":1`}},
		{"a query within both", "POST", "/v1/query", e.alice, `{"sql":"SELECT sex, COUNT(*) FROM adult GROUP BY sex","epsilon":0.75}`, 200, []string{`"total":{"table":"adult"`, `"spent":{"epsilon":0.75`}},
		{"within alice's, over the total", "POST", "/v1/query", e.alice, `{"sql":"SELECT sex, COUNT(*) FROM adult GROUP BY sex","epsilon":0.5}`, 409, []string{"total budget (every analyst together)"}},
		{"a total below its spending", "POST", "/v1/admin/grants", e.admin, `{"table":"adult","total":true,"epsilon":0.5}`, 400, []string{"below what is already spent"}},
		{"the total raised", "POST", "/v1/admin/grants", e.admin, `{"table":"adult","total":true,"epsilon":2}`, 200, []string{`"remaining":{"epsilon":1.25`}},
		{"now it fits", "POST", "/v1/query", e.alice, `{"sql":"SELECT sex, COUNT(*) FROM adult GROUP BY sex","epsilon":0.5}`, 200, nil},
		{"admin list shows it", "GET", "/v1/admin/analysts", e.admin, "", 200, []string{`"total":{"table":"adult","rule":"basic","limit":{"epsilon":2`}},
	}
	for _, s := range steps {
		r := e.do(t, s.method, s.path, s.token, s.body)
		if r.status != s.status {
			t.Fatalf("%s: status %d, want %d: %s", s.name, r.status, s.status, r.raw)
		}
		for _, c := range s.contains {
			if !strings.Contains(r.raw, c) {
				t.Fatalf("%s: %s does not contain %s", s.name, r.raw, c)
			}
		}
	}
}

// TestAddAnalystWithABadGrantCreatesNothing: a request whose second grant
// is bad creates no analyst and no budget, and can be retried.
func TestAddAnalystWithABadGrantCreatesNothing(t *testing.T) {
	e := newEnv(t, server.Options{}, nil)
	bad := []string{
		`{"name":"carol","grants":[{"table":"adult","epsilon":1},{"table":"secrets","epsilon":1}]}`,
		`{"name":"carol","grants":[{"table":"adult","epsilon":1},{"table":"visits","epsilon":-1}]}`,
		`{"name":"carol","grants":[{"table":"adult","epsilon":1},{"table":"visits","epsilon":1,"rule":"fancy"}]}`,
		`{"name":"carol","grants":[{"table":"adult","epsilon":1,"total":true}]}`,
	}
	for _, body := range bad {
		if r := e.do(t, "POST", "/v1/admin/analysts", e.admin, body); r.status != 400 || !strings.Contains(r.raw, "grants[") {
			t.Fatalf("%s: %d %s", body, r.status, r.raw)
		}
		if _, ok := e.reg.Get("carol"); ok {
			t.Fatalf("%s: the analyst was created", body)
		}
		if all, _ := e.ledger.Budgets(); len(all) != 3 {
			t.Fatalf("%s: %d budgets, want the 3 of the fixture", body, len(all))
		}
	}
	if r := e.do(t, "POST", "/v1/admin/analysts", e.admin, `{"name":"carol","grants":[{"table":"adult","epsilon":1}]}`); r.status != 201 {
		t.Fatalf("the retry: %d %s", r.status, r.raw)
	}
}

// TestVerifyEndpoint: an admin checks the ledger the server holds (the
// tampering cases are ledger tests); an analyst may not.
func TestVerifyEndpoint(t *testing.T) {
	e := newEnv(t, server.Options{}, nil)
	if r := e.do(t, "GET", "/v1/admin/verify", e.alice, ""); r.status != 403 {
		t.Fatalf("analyst: %d %s", r.status, r.raw)
	}
	if r := e.do(t, "POST", "/v1/query", e.alice, `{"sql":"SELECT COUNT(*) FROM adult","epsilon":0.5}`); r.status != 200 {
		t.Fatalf("query: %d %s", r.status, r.raw)
	}
	r := e.do(t, "GET", "/v1/admin/verify", e.admin, "")
	if r.status != 200 || !strings.Contains(r.raw, `"releases":1`) || !strings.Contains(r.raw, `"chained":true`) {
		t.Fatalf("verify: %d %s", r.status, r.raw)
	}
}
