package queryanswer_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/analyst"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/server"
)

// TestPlanningRefusalsOverHTTP: what planning refuses (a query whose
// merged size or select list passes its limit, a text longer than the
// ledger records, a NUL byte, planning past the query timeout) is answered
// over HTTP with the refusal's status (400, "refused"), never a 500, and
// charges nothing, with the real ledger.
func TestPlanningRefusalsOverHTTP(t *testing.T) {
	s := start(t, filepath.Join(t.TempDir(), "ledger.db"))
	_, tok, err := s.reg.Add("alice", analyst.RoleAnalyst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ledger.Grant(ledger.Key{Dataset: "adult", Analyst: "alice"}, accounting.EpsDelta{Epsilon: 10, Delta: 1e-6}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	copies := func(term, sep string, n int) string { return strings.TrimSuffix(strings.Repeat(term+sep, n), sep) }
	var values, conds []string
	for i := 0; i < 3000; i++ {
		values = append(values, fmt.Sprint(i))
	}
	for i := 0; i < 100; i++ {
		conds = append(conds, fmt.Sprintf("x > %d", i))
	}
	ys := copies("y", "+", 300)
	cases := []struct{ name, sql, want string }{
		{"IN list of 3,000 values", "SELECT COUNT(*) FROM adult WHERE age IN (" + strings.Join(values, ",") + ")", "want at most 16384"},
		{"merged query over 16 KiB", "WITH s AS (SELECT age" + strings.Repeat(" + 1", 50) + " AS x FROM adult) SELECT COUNT(*) FROM s WHERE " + strings.Join(conds, " AND "), "want at most 16384"},
		{"doubling chain", "WITH c0 AS (SELECT age AS y FROM adult), c1 AS (SELECT " + ys + " AS y FROM c0), c2 AS (SELECT " + ys + " AS y FROM c1) SELECT SUM(y) FROM c2", "syntax nodes"},
		{"1,500 sums", "SELECT " + copies("SUM(age)", ", ", 1500) + " FROM adult", "1500 items"},
		{"NUL byte", "SELECT COUNT(*) FROM adult\x00 WHERE age > 30", "NUL byte at byte 27"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"sql": c.sql, "epsilon": 1})
			code, m := s.post(t, tok, string(body))
			e, _ := m["error"].(map[string]any)
			if code != 400 || e["code"] != "refused" || !strings.Contains(fmt.Sprint(e["message"]), c.want) {
				t.Errorf("got %d %v, want 400 refused saying %q", code, m, c.want)
			}
		})
	}
	// A query timeout covers planning: with a timeout that has passed
	// before planning starts, the query is refused, free.
	api, err := server.New(server.Options{Answerer: s.ans, Ledger: s.ledger, Analysts: s.reg, QueryTimeout: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(api.Handler())
	defer hs.Close()
	code, m := (&stack{http: hs}).post(t, tok, `{"sql":"SELECT COUNT(*) FROM adult","epsilon":1}`)
	if e, _ := m["error"].(map[string]any); code != 400 || e["code"] != "refused" || !strings.Contains(fmt.Sprint(e["message"]), "time limit") {
		t.Errorf("planning past the query timeout: got %d %v, want 400 refused naming the time limit", code, m)
	}
	if n := s.releases(t); n != 0 {
		t.Errorf("refused queries charged: %d releases", n)
	}
}
