package queryanswer_test

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/internal/cli"
	"github.com/dpstat/dpstat/ledger"
)

// frontEndShapes is the battery every front end runs: query shapes with
// their exact answer at ε = 1e20 (want, when known by hand; every front end
// must anyway agree with the contract's answer), or the kind of refusal
// and the SQLSTATE psql sees for it.
var frontEndShapes = []struct {
	name, sql string
	want      string
	kind      answer.Kind
	sqlState  string
	// sampled: contribution bounding keeps a random sample of each
	// person's rows, so a fresh release (the command line's own ledger)
	// agrees on the keys only; the server's front ends return the stored
	// release.
	sampled bool
}{
	{name: "count with a condition", sql: "SELECT COUNT(*) AS n FROM adult WHERE sex = 'Female'", want: "10771"},
	{name: "grouped count and sum", sql: "SELECT sex, COUNT(*) AS n, SUM(hours_per_week) AS h FROM adult GROUP BY sex ORDER BY sex",
		want: fmt.Sprintf("Female %d %d;Male %d", females, femaleHours, males)},
	{name: "average and computed column", sql: "SELECT income, AVG(age) AS a, COUNT(*) * 2 AS twice FROM adult GROUP BY income ORDER BY income"},
	{name: "key selection", sql: "SELECT education, COUNT(*) AS n FROM adult GROUP BY education HAVING COUNT(*) > 1000 ORDER BY n DESC LIMIT 3"},
	{name: "privacy unit and bounded sum", sql: "SELECT day, COUNT(*) AS n, SUM(euros_spent) AS s FROM visits GROUP BY day ORDER BY day LIMIT 2", sampled: true},
	{name: "syntax error", sql: "SELEC 1", kind: answer.KindSyntax, sqlState: "42601"},
	{name: "select star", sql: "SELECT * FROM adult", kind: answer.KindRefused, sqlState: "0A000"},
	{name: "unknown table", sql: "SELECT COUNT(*) FROM secrets", kind: answer.KindUnknownTable, sqlState: "42P01"},
	{name: "unknown column", sql: "SELECT SUM(salary) FROM adult", kind: answer.KindUnknownColumn, sqlState: "42703"},
}

// cells spells answer rows for comparison: rows joined by ";", cells by
// spaces, numbers with 6 significant digits.
func cells(rows [][]any) string {
	var out []string
	for _, row := range rows {
		var cs []string
		for _, v := range row {
			switch x := v.(type) {
			case nil:
				cs = append(cs, "NULL")
			case float64:
				cs = append(cs, fmt.Sprintf("%.6g", x+0))
			case int64:
				cs = append(cs, fmt.Sprintf("%.6g", float64(x)))
			case int32:
				cs = append(cs, fmt.Sprintf("%.6g", float64(x)))
			case json.Number:
				f, _ := x.Float64()
				cs = append(cs, fmt.Sprintf("%.6g", f))
			default:
				cs = append(cs, fmt.Sprint(x))
			}
		}
		out = append(out, strings.Join(cs, " "))
	}
	return strings.Join(out, ";")
}

// TestFrontEndsAgree runs the battery through the contract itself and its
// three adapters (HTTP, the PostgreSQL protocol, the command line) on the
// example catalog at ε = 1e20: every front end gives the contract's exact
// answer, and the refusal of the contract's kind with its message.
func TestFrontEndsAgree(t *testing.T) {
	dir := t.TempDir()
	s := start(t, filepath.Join(dir, "ledger.db"))
	_, tok, err := s.reg.Add("alice", analyst.RoleAnalyst)
	if err != nil {
		t.Fatal(err)
	}
	grant := func(l *ledger.Ledger) {
		for _, table := range []string{"adult", "visits"} {
			if _, err := l.GrantTotal(table, accounting.EpsDelta{Epsilon: 1e22, Delta: 0.5}, accounting.Basic); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Grant(ledger.Key{Dataset: table, Analyst: "alice"}, accounting.EpsDelta{Epsilon: 1e22, Delta: 0.5}, accounting.Basic); err != nil {
				t.Fatal(err)
			}
		}
	}
	grant(s.ledger)
	// The command line keeps its own ledger file, granted the same.
	cliLedger := filepath.Join(dir, "cli.db")
	l, err := ledger.Open(cliLedger, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	grant(l)
	l.Close()

	host, port, _ := net.SplitHostPort(s.pgAddr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pg, err := pgx.Connect(ctx, "host="+host+" port="+port+" user=alice password="+tok+" sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(ctx)
	for _, set := range []string{"SET dpstat.epsilon = 1e20", "SET dpstat.delta = 1e-6"} {
		if _, err := pg.Exec(ctx, set); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range frontEndShapes {
		t.Run(tc.name, func(t *testing.T) {
			// The contract.
			resp, err := s.ans.Answer(ctx, answer.Request{Analyst: "alice", SQL: tc.sql, Epsilon: 1e20, Delta: 1e-6})
			if tc.kind != "" {
				e := answer.AsError(err)
				if err == nil || e.Kind != tc.kind {
					t.Fatalf("contract: %v, want a refusal of kind %s", err, tc.kind)
				}
				checkRefusals(t, s, pg, tok, tc.sql, cliLedger, e, tc.sqlState)
				return
			}
			if err != nil {
				t.Fatalf("contract: %v", err)
			}
			want := cells(resp.Rows)
			if tc.want != "" && !strings.HasPrefix(want, tc.want) {
				t.Fatalf("contract: %s, want %s", want, tc.want)
			}

			// HTTP.
			body, _ := json.Marshal(map[string]any{"sql": tc.sql, "epsilon": 1e20, "delta": 1e-6})
			code, m := s.post(t, tok, string(body))
			if code != 200 {
				t.Fatalf("HTTP: %d %v", code, m)
			}
			if got := cells(jsonRows(m["rows"])); got != want {
				t.Errorf("HTTP rows %s, want %s", got, want)
			}

			// The PostgreSQL protocol.
			rows, err := pg.Query(ctx, tc.sql)
			if err != nil {
				t.Fatalf("pg: %v", err)
			}
			var got [][]any
			for rows.Next() {
				v, err := rows.Values()
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, v)
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("pg: %v", err)
			}
			if g := cells(got); g != want {
				t.Errorf("pg rows %s, want %s", g, want)
			}

			// The command line.
			out, errOut, code := runCLI(cliLedger, tc.sql)
			if code != 0 {
				t.Fatalf("CLI: exit %d: %s", code, errOut)
			}
			var cm map[string]any
			if err := json.Unmarshal([]byte(out), &cm); err != nil {
				t.Fatalf("CLI output: %v\n%s", err, out)
			}
			if g, w := cells(jsonRows(cm["rows"])), want; tc.sampled {
				if g, w := keys(g), keys(w); g != w {
					t.Errorf("CLI keys %s, want %s", g, w)
				}
			} else if g != w {
				t.Errorf("CLI rows %s, want %s", g, w)
			}
			if fmt.Sprint(cm["columns"]) != fmt.Sprint(resp.Columns) || fmt.Sprint(cm["types"]) != fmt.Sprint(resp.Types) {
				t.Errorf("CLI columns %v %v, want %v %v", cm["columns"], cm["types"], resp.Columns, resp.Types)
			}
		})
	}
}

// keys keeps the first cell of each row that cells spelled.
func keys(rows string) string {
	var out []string
	for _, r := range strings.Split(rows, ";") {
		if f := strings.Fields(r); len(f) > 0 {
			out = append(out, f[0])
		}
	}
	return strings.Join(out, ";")
}

// checkRefusals checks that HTTP, psql and the command line refuse sql as
// the contract did (e), at no cost.
func checkRefusals(t *testing.T, s *stack, pg *pgx.Conn, tok, sql, cliLedger string, e *answer.Error, sqlState string) {
	t.Helper()
	before := s.releases(t)
	body, _ := json.Marshal(map[string]any{"sql": sql, "epsilon": 1e20})
	code, m := s.post(t, tok, string(body))
	he, _ := m["error"].(map[string]any)
	if code < 400 || he["code"] != string(e.Kind) || he["message"] != e.Message {
		t.Errorf("HTTP: %d %v, want %s: %s", code, m, e.Kind, e.Message)
	}
	_, err := pg.Exec(context.Background(), sql)
	var pe *pgconn.PgError
	if !errorsAs(err, &pe) || pe.Code != sqlState || pe.Message != e.Message {
		t.Errorf("pg: %v, want %s: %s", err, sqlState, e.Message)
	}
	_, errOut, exit := runCLI(cliLedger, sql)
	if exit == 0 || !strings.Contains(errOut, e.Message) {
		t.Errorf("CLI: exit %d: %s, want %s", exit, errOut, e.Message)
	}
	if after := s.releases(t); after != before {
		t.Errorf("a refusal was charged: %d releases, then %d", before, after)
	}
}

// runCLI answers sql with dpstat query at ε = 1e20, as JSON.
func runCLI(ledgerPath, sql string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = cli.Execute([]string{"query", "--catalog", filepath.Join("..", "..", "examples", "catalog.yaml"), "--ledger", ledgerPath,
		"--analyst", "alice", "--format", "json", "--epsilon", "1e20", "--delta", "1e-6", sql}, &out, &errb)
	return out.String(), errb.String(), code
}

// jsonRows is the "rows" of a decoded JSON answer.
func jsonRows(v any) [][]any {
	rows, _ := v.([]any)
	out := make([][]any, len(rows))
	for i, r := range rows {
		out[i], _ = r.([]any)
	}
	return out
}
