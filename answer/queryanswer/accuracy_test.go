package queryanswer_test

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/analyst"
	"github.com/dpstat/dpstat/ledger"
)

// TestAccuracyFrontEnds: an accuracy asked over HTTP ("accuracy", a number
// or an object) and over the PostgreSQL protocol (SET dpstat.accuracy, and
// the connect-time options) is charged the ε the search chose; an accuracy
// with an ε, or one the budget cannot pay for, is refused and charges
// nothing.
func TestAccuracyFrontEnds(t *testing.T) {
	s := start(t, filepath.Join(t.TempDir(), "ledger.db"))
	_, tok, err := s.reg.Add("alice", analyst.RoleAnalyst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ledger.Grant(ledger.Key{Dataset: "adult", Analyst: "alice"}, accounting.EpsDelta{Epsilon: 2, Delta: 1e-6}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	const sql = "SELECT sex, COUNT(*) AS n, SUM(hours_per_week) AS h FROM adult GROUP BY sex"
	// HTTP: the dry run shows the ε, the run charges it.
	for _, tc := range []struct{ name, sql, accuracy, eps string }{
		{"number", "SELECT sex, COUNT(*) AS n FROM adult GROUP BY sex", `20`, "0.1461"},
		{"object", sql, `{"n": 20, "h": 5000}`, "0.2921"},
	} {
		t.Run("http "+tc.name, func(t *testing.T) {
			before := s.releases(t)
			code, m := s.post(t, tok, `{"sql":"`+tc.sql+`","accuracy":`+tc.accuracy+`,"dry_run":true}`)
			notes, _ := json.Marshal(m["notes"])
			if code != 200 || !strings.Contains(string(notes), "ε="+tc.eps+" is the smallest") {
				t.Fatalf("dry run: %d %v", code, m)
			}
			code, m = s.post(t, tok, `{"sql":"`+tc.sql+`","accuracy":`+tc.accuracy+`}`)
			if code != 200 {
				t.Fatalf("query: %d %v", code, m)
			}
			cost, _ := json.Marshal(m["cost"])
			if want := `{"delta":0,"epsilon":` + tc.eps + `}`; string(cost) != want {
				t.Errorf("cost %s, want %s", cost, want)
			}
			if n := s.releases(t); n != before+1 {
				t.Errorf("%d releases, want %d", n, before+1)
			}
		})
	}
	before := s.releases(t)
	for _, tc := range []struct{ name, body, want string }{
		{"with epsilon", `{"sql":"` + sql + `","accuracy":20,"epsilon":0.5}`, `keep one`},
		{"zero", `{"sql":"` + sql + `","accuracy":0}`, `accuracy = 0: want a finite number`},
		{"unknown column", `{"sql":"` + sql + `","accuracy":{"total":5}}`, `the columns that accept an accuracy are n, h`},
		{"over budget", `{"sql":"` + sql + `","accuracy":1}`, `the best the budget left would buy is ε≈`},
	} {
		t.Run("http "+tc.name, func(t *testing.T) {
			code, m := s.post(t, tok, tc.body)
			msg, _ := json.Marshal(m["error"])
			if code < 400 || !strings.Contains(string(msg), tc.want) {
				t.Fatalf("got %d %s, want a refusal containing %q", code, msg, tc.want)
			}
		})
	}
	if n := s.releases(t); n != before {
		t.Fatalf("refusals charged: %d releases, want %d", n, before)
	}

	// PostgreSQL: SET dpstat.accuracy, and the connect-time options.
	host, port, _ := net.SplitHostPort(s.pgAddr)
	ctx := context.Background()
	dsn := "host=" + host + " port=" + port + " user=alice password=" + tok + " sslmode=disable"
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SET dpstat.accuracy = 'n=25'"); err != nil {
		t.Fatal(err)
	}
	var shown string
	if err := conn.QueryRow(ctx, "SHOW dpstat.accuracy").Scan(&shown); err != nil || shown != "n=25" {
		t.Fatalf("SHOW dpstat.accuracy = %q, %v", shown, err)
	}
	if _, err := conn.Exec(ctx, "SET dpstat.accuracy = 'n=25'"); err != nil {
		t.Fatal(err)
	}
	// Asked fresh: it could otherwise be derived from the HTTP releases.
	if _, err := conn.Exec(ctx, "SET dpstat.fresh = on"); err != nil {
		t.Fatal(err)
	}
	before = s.releases(t)
	rows, err := conn.Query(ctx, "SELECT COUNT(*) AS n FROM adult")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	hist, err := s.ledger.History(ledger.Key{Dataset: "adult", Analyst: "alice"}, 0)
	if err != nil || len(hist) != before+1 {
		t.Fatalf("history %v, %v: want one more release", hist, err)
	}
	found := false
	for _, r := range hist {
		if strings.Contains(r.Description, "FROM adult") && !strings.Contains(r.Description, "GROUP BY") {
			found = true
			if r.Cost.Epsilon != 0.1175 {
				t.Errorf("SET dpstat.accuracy = 'n=25' charged ε=%v, want 0.1175", r.Cost.Epsilon)
			}
		}
	}
	if !found {
		t.Errorf("no release of the PostgreSQL query in %v", hist)
	}
	if _, err := conn.Exec(ctx, "SET dpstat.accuracy = -1"); err == nil || !strings.Contains(err.Error(), "want a finite number > 0") {
		t.Errorf("SET dpstat.accuracy = -1: %v", err)
	}
	// Connect-time options: a dry run shows the accuracy's ε.
	conn2, err := pgx.Connect(ctx, dsn+" options='-c dpstat.accuracy=30'")
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close(ctx)
	if err := conn2.QueryRow(ctx, "SHOW dpstat.accuracy").Scan(&shown); err != nil || shown != "30" {
		t.Fatalf("SHOW dpstat.accuracy after options = %q, %v", shown, err)
	}
}
