package pgwire_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dpstat/dpstat/pgwire"
)

// TestStartupSettings checks that dpstat settings given when connecting
// (libpq's options='-c name=value', and startup parameters named like a
// setting) are in force for the session's queries and SHOW, and that a
// misspelt or invalid one ends the connection with an error naming it.
func TestStartupSettings(t *testing.T) {
	e := newEnv(t, pgwire.Options{})
	ctx := context.Background()
	tests := []struct {
		name    string
		params  map[string]string
		show    map[string]string
		spent   string // in the query's notice
		errCode string
		errHas  []string
	}{
		{name: "no settings: SHOW says the ε the next query spends", show: map[string]string{"dpstat.epsilon": "1", "dpstat.confidence": "0.95"}, spent: "epsilon=1"},
		{name: "options -c", params: map[string]string{"options": "-c dpstat.epsilon=0.05"}, show: map[string]string{"dpstat.epsilon": "0.05"}, spent: "epsilon=0.05"},
		{name: "options -cname and --name", params: map[string]string{"options": "-cdpstat.epsilon=0.2 --dpstat.confidence=0.9"}, show: map[string]string{"dpstat.epsilon": "0.2", "dpstat.confidence": "0.9"}, spent: "epsilon=0.2"},
		{name: "escaped space and other settings kept", params: map[string]string{"options": `-c search_path=a,\ b -c dpstat.delta=1e-6`}, show: map[string]string{"dpstat.delta": "1e-06", "search_path": "a, b"}},
		{name: "a startup parameter", params: map[string]string{"dpstat.epsilon": "0.3"}, show: map[string]string{"dpstat.epsilon": "0.3"}, spent: "epsilon=0.3"},
		{name: "options override a startup parameter", params: map[string]string{"dpstat.epsilon": "0.3", "options": "-c dpstat.epsilon=0.4"}, show: map[string]string{"dpstat.epsilon": "0.4"}},
		{name: "misspelt", params: map[string]string{"options": "-c dpstat.epsilom=0.05"}, errCode: "42704", errHas: []string{"dpstat.epsilom", "dpstat.epsilon"}},
		{name: "misspelt startup parameter", params: map[string]string{"dpstat.eps": "0.05"}, errCode: "42704", errHas: []string{"dpstat.eps", "dpstat.epsilon"}},
		{name: "invalid value", params: map[string]string{"options": "-c dpstat.epsilon=-1"}, errCode: "22023", errHas: []string{"dpstat.epsilon", "-1", "> 0"}},
		{name: "epsilon and accuracy both", params: map[string]string{"options": "-c dpstat.epsilon=0.1 -c dpstat.accuracy=20"}, errCode: "22023", errHas: []string{"keep one"}},
		{name: "dangling -c", params: map[string]string{"options": "-c"}, errCode: "22023", errHas: []string{"-c name=value"}},
		{name: "not an option", params: map[string]string{"options": "dpstat.epsilon=1"}, errCode: "22023", errHas: []string{"dpstat.epsilon=1", "-c name=value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := pgx.ParseConfig(e.dsn("alice", e.alice))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.params {
				cfg.RuntimeParams[k] = v
			}
			var notices []string
			cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Message) }
			c, err := pgx.ConnectConfig(ctx, cfg)
			if tc.errCode != "" {
				if err == nil {
					c.Close(ctx)
					t.Fatal("connected; want the connection refused")
				}
				if code := sqlState(err); code != tc.errCode {
					t.Fatalf("code %q (%v), want %s", code, err, tc.errCode)
				}
				for _, s := range tc.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			for name, want := range tc.show {
				var got string
				if err := c.QueryRow(ctx, "SHOW "+name).Scan(&got); err != nil || got != want {
					t.Errorf("SHOW %s = %q (%v), want %q", name, got, err, want)
				}
			}
			if tc.spent == "" {
				return
			}
			rows, err := c.Query(ctx, "SELECT COUNT(*) FROM adult")
			if err != nil {
				t.Fatal(err)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(notices, "\n"), tc.spent+" ") && !strings.Contains(strings.Join(notices, "\n"), tc.spent+",") {
				t.Errorf("notices %q do not say %s", notices, tc.spent)
			}
		})
	}
}
