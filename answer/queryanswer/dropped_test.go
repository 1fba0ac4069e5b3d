package queryanswer_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/analyst"
	"github.com/dpstat/dpstat/ledger"
)

// Known on examples/restaurant_visits.csv with max_groups_per_unit 3 and
// max_rows_per_group 1: the rows the dropped-rows estimate counts kept
// (each visitor's at most 3) and dropped (each visitor's up to 9).
const (
	visitsKept    = 2693
	visitsDropped = 157
)

// TestDroppedOnHTTPAndPG asks for the dropped-rows estimate at ε = 1e20
// over HTTP ("dropped": true) and the PostgreSQL protocol (SET
// dpstat.dropped = on): the response's "dropped" and the notices carry the
// exact counts and share; the split has its share; SHOW reads the setting.
func TestDroppedOnHTTPAndPG(t *testing.T) {
	s := start(t, filepath.Join(t.TempDir(), "ledger.db"))
	_, tok, err := s.reg.Add("alice", analyst.RoleAnalyst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ledger.GrantTotal("visits", accounting.EpsDelta{Epsilon: 1e21}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ledger.Grant(ledger.Key{Dataset: "visits", Analyst: "alice"}, accounting.EpsDelta{Epsilon: 1e21}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	const sql = "SELECT day, COUNT(*) FROM visits GROUP BY day"
	code, m := s.post(t, tok, `{"sql":"`+sql+`","epsilon":1e20,"dropped":true}`)
	d, _ := m["dropped"].(map[string]any)
	if code != 200 || d == nil || d["kept"] != float64(visitsKept) || d["dropped"] != float64(visitsDropped) ||
		d["share"] != float64(visitsDropped)/float64(visitsKept+visitsDropped) || d["cap_per_person"] != float64(9) {
		t.Fatalf("HTTP: %d %v", code, m)
	}
	notes, _ := m["notes"].([]any)
	found := false
	for _, n := range notes {
		found = found || strings.Contains(n.(string), "contribution bounding dropped at least about 5.5% of the rows read")
	}
	if !found {
		t.Errorf("HTTP notes lack the estimate: %v", notes)
	}
	// Its preview costs the same and says so.
	code, m = s.post(t, tok, `{"sql":"`+sql+`","epsilon":1e20,"dropped":true,"dry_run":true}`)
	if pn, _ := m["notes"].([]any); code != 200 || !strings.Contains(fmt.Sprint(pn), "the run also estimates the share of rows contribution bounding drops, at ε=1e+19 of the cost") {
		t.Errorf("preview: %d %v", code, m)
	}
	// Without it, no estimate.
	if _, m := s.post(t, tok, `{"sql":"`+sql+`","epsilon":1e20}`); m["dropped"] != nil {
		t.Errorf("an estimate not asked for: %v", m["dropped"])
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
	for _, set := range []string{"SET dpstat.epsilon = 2e20", "SET dpstat.dropped = on"} {
		if _, err := c.Exec(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	var on string
	if err := c.QueryRow(ctx, "SHOW dpstat.dropped").Scan(&on); err != nil || on != "on" {
		t.Fatalf("SHOW dpstat.dropped = %q, %v", on, err)
	}
	if _, err := c.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(notices, "\n")
	if !strings.Contains(all, "contribution bounding dropped at least about 5.5% of the rows read") || !strings.Contains(all, "(rows dropped by bounding) ε=2e+19") {
		t.Errorf("pg notices lack the estimate:\n%s", all)
	}
	if _, err := c.Exec(ctx, "SET dpstat.dropped = maybe"); err == nil || !strings.Contains(err.Error(), "invalid value for dpstat.dropped: 'maybe'; want on or off") {
		t.Errorf("SET dpstat.dropped = maybe: %v", err)
	}
}
