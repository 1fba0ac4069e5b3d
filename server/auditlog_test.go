package server_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/auditlog"
	"github.com/dpstat/dpstat/server"
)

// readAudit reads the audit log's lines.
func readAudit(t *testing.T, path string) []auditlog.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditlog.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e auditlog.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if e.Time.IsZero() {
			t.Fatalf("audit line without a time: %s", sc.Text())
		}
		out = append(out, e)
	}
	return out
}

// TestAuditLog: each event the server audits writes one JSON line with
// who, from where and what.
func TestAuditLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	audit, err := auditlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer audit.Close()
	e := newEnv(t, server.Options{Audit: audit}, nil)
	steps := []struct {
		method, path, token, body string
		status                    int
		want                      auditlog.Event
	}{
		{"GET", "/v1/me", e.alice, "", 200, auditlog.Event{Event: auditlog.EventLogin, Analyst: "alice"}},
		{"GET", "/v1/me", "dps_not-a-token", "", 401, auditlog.Event{Event: auditlog.EventLoginFailed}},
		{"POST", "/v1/admin/analysts", e.admin, `{"name":"carol","grants":[{"table":"adult","epsilon":1}]}`, 201, auditlog.Event{Event: auditlog.EventAdmin, Actor: "root", Action: "add", Analyst: "carol"}},
		{"", "", "", "", 0, auditlog.Event{Event: auditlog.EventGrant, Actor: "root", Analyst: "carol", Table: "adult", Limit: &answer.Pair{Epsilon: 1}}},
		{"POST", "/v1/admin/grants", e.admin, `{"analyst":"alice","table":"adult","epsilon":-1}`, 400, auditlog.Event{}},
		{"POST", "/v1/admin/grants", e.admin, `{"table":"adult","total":true,"epsilon":1}`, 200, auditlog.Event{Event: auditlog.EventGrant, Actor: "root", Table: "adult", Total: true, Limit: &answer.Pair{Epsilon: 1}}},
		{"POST", "/v1/query", e.alice, `{"sql":"SELECT COUNT(*) FROM adult","epsilon":2}`, 409, auditlog.Event{Event: auditlog.EventRefusedBudget, Analyst: "alice"}},
		{"POST", "/v1/admin/analysts/carol/revoke", e.admin, "", 200, auditlog.Event{Event: auditlog.EventAdmin, Actor: "root", Action: "revoke", Analyst: "carol"}},
		{"POST", "/v1/admin/analysts/carol/rotate", e.admin, "", 200, auditlog.Event{Event: auditlog.EventAdmin, Actor: "root", Action: "rotate", Analyst: "carol"}},
	}
	var want []auditlog.Event
	for _, s := range steps {
		if s.method != "" {
			if r := e.do(t, s.method, s.path, s.token, s.body); r.status != s.status {
				t.Fatalf("%s %s: %d %s", s.method, s.path, r.status, r.raw)
			}
		}
		if s.want.Event != "" {
			want = append(want, s.want)
		}
	}
	got := readAudit(t, path)
	if len(got) != len(want) {
		t.Fatalf("%d audit lines, want %d: %+v", len(got), len(want), got)
	}
	for i, g := range got {
		w := want[i]
		if g.Event != w.Event || g.Actor != w.Actor || g.Analyst != w.Analyst || g.Action != w.Action || g.Table != w.Table || g.Total != w.Total ||
			(w.Limit != nil && (g.Limit == nil || *g.Limit != *w.Limit)) || g.Via != "http" || g.Address == "" {
			t.Errorf("line %d: %+v, want %+v from an address", i+1, g, w)
		}
		if (w.Event == auditlog.EventLoginFailed || w.Event == auditlog.EventRefusedBudget) && g.Detail == "" {
			t.Errorf("line %d: %s without a detail", i+1, g.Event)
		}
	}
	if err := audit.Err(); err != nil {
		t.Fatal(err)
	}
}
