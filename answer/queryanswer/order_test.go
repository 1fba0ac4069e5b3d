package queryanswer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/analyst"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query/ir"
)

// TestOrderByOnHTTPAndPG checks that rows come in the order the query's
// ORDER BY asks, over HTTP and over the PostgreSQL protocol: a top-k query
// (report-noisy-max chooses its keys in its own order) sorted by its noisy
// counts at an ε small enough for the two orders to differ, ascending and
// descending orders of all groups, and the keys alone in the order chosen
// at ε = 1e20 (then the true order). The order of the released rows is a
// property of every answer, so the test has no false failures.
func TestOrderByOnHTTPAndPG(t *testing.T) {
	s := start(t, filepath.Join(t.TempDir(), "ledger.db"))
	_, tok, err := s.reg.Add("alice", analyst.RoleAnalyst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ledger.GrantTotal("adult", accounting.EpsDelta{Epsilon: 1e21, Delta: 1e-5}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ledger.Grant(ledger.Key{Dataset: "adult", Analyst: "alice"}, accounting.EpsDelta{Epsilon: 1e21}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(s.pgAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, "host="+host+" port="+port+" user=alice password="+tok+" sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	tests := []struct {
		sql   string
		col   int  // the column ORDER BY sorts on
		desc  bool // its direction
		eps   float64
		exact []string // the keys at ε = 1e20, when checked
	}{
		{"SELECT race, COUNT(*) AS n FROM adult GROUP BY race ORDER BY n DESC LIMIT 4", 1, true, 0.02, nil},
		{"SELECT race, COUNT(*) AS n FROM adult GROUP BY race ORDER BY n LIMIT 4", 1, false, 0.02, nil},
		{"SELECT race, COUNT(*) AS n FROM adult GROUP BY race ORDER BY race DESC", 0, true, 0.02, nil},
		{"SELECT race FROM adult GROUP BY race ORDER BY COUNT(*) DESC LIMIT 3", -1, true, 1e20, []string{"White", "Black", "Asian-Pac-Islander"}},
	}
	for i, tc := range tests {
		for run := 0; run < 3; run++ {
			// A new ε each run, so that no answer is a stored repeat.
			eps := tc.eps * (1 + float64(run)/100)
			code, m := s.post(t, tok, fmt.Sprintf(`{"sql":%q,"epsilon":%g}`, tc.sql, eps))
			if code != 200 {
				t.Fatalf("HTTP %s: %d %v", tc.sql, code, m)
			}
			var httpRows [][]any
			for _, r := range m["rows"].([]any) {
				httpRows = append(httpRows, r.([]any))
			}
			checkOrder(t, "HTTP", tc.sql, httpRows, tc.col, tc.desc, tc.exact)
			if _, err := c.Exec(ctx, fmt.Sprintf("SET dpstat.epsilon = %g", eps*(1+float64(i+1)/1000))); err != nil {
				t.Fatal(err)
			}
			rs, err := c.Query(ctx, tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			pgRows, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
			if err != nil {
				t.Fatalf("pg %s: %v", tc.sql, err)
			}
			checkOrder(t, "pg", tc.sql, pgRows, tc.col, tc.desc, tc.exact)
		}
	}
}

// checkOrder fails unless rows are sorted on column col (desc or not), and
// their first cells are exact when given.
func checkOrder(t *testing.T, front, sql string, rows [][]any, col int, desc bool, exact []string) {
	t.Helper()
	if len(rows) == 0 {
		t.Fatalf("%s %s: no rows", front, sql)
	}
	if exact != nil {
		for i, r := range rows {
			if i >= len(exact) || r[0] != exact[i] {
				t.Fatalf("%s %s: rows %v, want keys %v", front, sql, rows, exact)
			}
		}
	}
	if col < 0 {
		return
	}
	for i := 1; i < len(rows); i++ {
		c := ir.CompareValues(number(rows[i-1][col]), number(rows[i][col]))
		if (desc && c < 0) || (!desc && c > 0) {
			t.Fatalf("%s %s: rows %v are not in the order asked", front, sql, rows)
		}
	}
}

// number reads JSON's and pgx's numbers as float64 and leaves text as is.
func number(v any) any {
	if x, ok := ir.Number(v); ok {
		return x
	}
	return v
}

// TestNumbersForPeopleOnHTTPAndPG checks that notes (HTTP) and notices (the
// PostgreSQL protocol) spell figures without float artefacts: an ε split
// in three (0.4/3) and a top-k round's ε (rounded down from 1/3); and that
// they say when an interval says nothing (a quantile's declared range).
func TestNumbersForPeopleOnHTTPAndPG(t *testing.T) {
	s := start(t, filepath.Join(t.TempDir(), "ledger.db"))
	_, tok, err := s.reg.Add("alice", analyst.RoleAnalyst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ledger.Grant(ledger.Key{Dataset: "adult", Analyst: "alice"}, accounting.EpsDelta{Epsilon: 10}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(s.pgAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg, err := pgx.ParseConfig("host=" + host + " port=" + port + " user=alice password=" + tok + " sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	var notices []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Message) }
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	// The same questions over the wire protocol are asked afresh, not
	// derived from the HTTP releases, so that their notes are the same.
	if _, err := c.Exec(ctx, "SET dpstat.fresh = on"); err != nil {
		t.Fatal(err)
	}
	artefact := regexp.MustCompile(`\d\.\d*(0{6}|3{6}|6{6}|9{6})\d`)
	for i, tc := range []struct {
		sql, want string
		eps       float64
	}{
		{"SELECT COUNT(*) AS n, SUM(age) AS s, AVG(hours_per_week) AS a FROM adult", "n ε=0.1333", 0.4},
		{"SELECT race FROM adult GROUP BY race ORDER BY COUNT(*) DESC LIMIT 3", "ε=0.3333 each", 1},
		// A quantile's interval is the declared range, and the notes say
		// that it is uninformative.
		{"SELECT sex, MEDIAN(age) AS m FROM adult GROUP BY sex", "m (PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY age)): its interval is the declared range", 1},
	} {
		code, m := s.post(t, tok, fmt.Sprintf(`{"sql":%q,"epsilon":%g}`, tc.sql, tc.eps))
		notes, _ := json.Marshal(m["notes"])
		if code != 200 || !strings.Contains(string(notes), tc.want) || artefact.Match(notes) {
			t.Errorf("HTTP %s: %d, notes %s", tc.sql, code, notes)
		}
		notices = nil
		if _, err := c.Exec(ctx, fmt.Sprintf("SET dpstat.epsilon = %g", tc.eps*(1+float64(i+1)/1e6))); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, tc.sql); err != nil {
			t.Fatalf("pg %s: %v", tc.sql, err)
		}
		all := strings.Join(notices, "\n")
		if !strings.Contains(all, tc.want) || artefact.MatchString(all) {
			t.Errorf("pg %s: notices\n%s", tc.sql, all)
		}
	}
}
