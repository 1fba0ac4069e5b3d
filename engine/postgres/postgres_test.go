package postgres_test

import (
	"context"
	"errors"
	"math"
	"math/big"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/postgres"
	"github.com/dpstat/dpstat/query"
	"github.com/dpstat/dpstat/query/enginetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	enginetest.StopShared()
	os.Exit(code)
}

// open connects to the shared test server as the reader role.
func open(t *testing.T) (*enginetest.Postgres, *postgres.Engine) {
	t.Helper()
	pg := enginetest.SharedPostgres(t)
	eng, err := postgres.Open(context.Background(), postgres.Options{DSN: pg.ReaderDSN(), StatementTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return pg, eng
}

// scalar runs a one-value statement on the engine.
func scalar(t *testing.T, eng engine.Engine, sql string) any {
	t.Helper()
	rows, err := eng.Query(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if len(rows.Rows) != 1 || len(rows.Rows[0]) != 1 {
		t.Fatalf("%s: %d rows", sql, len(rows.Rows))
	}
	return rows.Rows[0][0]
}

// TestRoundToGrid checks on the server that the dialect's grid rounding
// is IEEE 754 rounding to the nearest multiple of 2^exp, ties to even, as
// Go computes it.
func TestRoundToGrid(t *testing.T) {
	_, eng := open(t)
	tests := []struct {
		x   float64
		exp int
	}{
		{0.5, 0}, {1.5, 0}, {2.5, 0}, {-2.5, 0}, {3.25, -1}, {3.75, -1}, {0.1, -10}, {-0.1, -10},
		{123456.789, 3}, {1e15, 0}, {-7.0, 2}, {4.9e-324, -20}, {-0.0, 0},
	}
	for _, tt := range tests {
		lit, err := engine.Literal(postgres.Dialect, tt.x)
		if err != nil {
			t.Fatal(err)
		}
		got := scalar(t, eng, "SELECT "+postgres.Dialect.RoundToGrid(lit, tt.exp))
		grid := math.Ldexp(1, tt.exp)
		want := math.RoundToEven(tt.x/grid) * grid
		if g, ok := got.(float64); !ok || g != want {
			t.Errorf("RoundToGrid(%v, %d) = %v, want %v", tt.x, tt.exp, got, want)
		}
	}
}

// TestTotalArithmetic: PostgreSQL fails on float8 underflow; Scale, Divide
// and Square must give a value for every double whose result is finite
// (the planner clamps values so that results are), subnormals included,
// within 2^-1022 of IEEE 754's.
func TestTotalArithmetic(t *testing.T) {
	_, eng := open(t)
	values := []float64{4.9e-324, -4.9e-324, 1e-310, -1e-200, 1e-160, 0, math.Copysign(0, -1), 1, -3.5, 1e300, math.MaxFloat64}
	type op struct {
		name string
		sql  string
		want float64
	}
	for _, v := range values {
		lit, err := engine.Literal(postgres.Dialect, v)
		if err != nil {
			t.Fatal(err)
		}
		ops := []op{{"square", engine.Square(postgres.Dialect, lit), v * v}}
		for _, c := range []float64{2, 1e300, 0.5, 1e-300} {
			d, err := engine.Divide(postgres.Dialect, lit, c)
			if err != nil {
				t.Fatal(err)
			}
			s, err := engine.Scale(postgres.Dialect, lit, c)
			if err != nil {
				t.Fatal(err)
			}
			cs := strconv.FormatFloat(c, 'g', -1, 64)
			ops = append(ops, op{"divide by " + cs, d, v / c}, op{"scale by " + cs, s, v * c})
		}
		for _, o := range ops {
			if math.IsInf(o.want, 0) {
				continue // an overflow the planner's bounds rule out
			}
			rows, err := eng.Query(context.Background(), "SELECT "+o.sql)
			if err != nil {
				t.Errorf("%s of %v failed: %v", o.name, v, err)
				continue
			}
			if f, ok := rows.Rows[0][0].(float64); !ok || math.Abs(f-o.want) >= 0x1p-1022 {
				t.Errorf("%s of %v = %v, want %v", o.name, v, rows.Rows[0][0], o.want)
			}
		}
	}
}

// TestExactSums: sums are numerics read as exact integers, beyond 64 bits.
func TestExactSums(t *testing.T) {
	_, eng := open(t)
	got := scalar(t, eng, "SELECT "+postgres.Dialect.ExactSum("v")+" FROM (VALUES (9223372036854775807), (9223372036854775807), (5)) AS t(v)")
	want, _ := new(big.Int).SetString("18446744073709551619", 10)
	if b, ok := got.(*big.Int); !ok || b.Cmp(want) != 0 {
		t.Errorf("exact sum = %v (%T), want %v", got, got, want)
	}
	if got := scalar(t, eng, "SELECT CAST(12000 AS numeric(10, 2))"); got.(*big.Int).Int64() != 12000 {
		t.Errorf("numeric 12000.00 = %v", got)
	}
	if _, err := eng.Query(context.Background(), "SELECT CAST(1.5 AS numeric)"); err == nil || !strings.Contains(err.Error(), "not an integer") {
		t.Errorf("a fractional numeric gave %v, want an error saying it is not an integer", err)
	}
	if got := scalar(t, eng, "SELECT CAST(7 AS integer)"); got != int64(7) {
		t.Errorf("integer = %v (%T), want int64 7", got, got)
	}
}

// TestReadOnly: the engine's sessions cannot write, even where the role
// could.
func TestReadOnly(t *testing.T) {
	pg := enginetest.SharedPostgres(t)
	// The superuser may write; through the engine it still may not.
	eng, err := postgres.Open(context.Background(), postgres.Options{DSN: pg.AdminDSN()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	for _, stmt := range []string{"CREATE TABLE dpstat_written (x int)", "SELECT set_config('default_transaction_read_only', 'off', false) FROM pg_class WHERE false; CREATE TABLE w (x int)"} {
		_, err := eng.Query(context.Background(), stmt)
		if err == nil || !strings.Contains(err.Error(), "read-only") && !strings.Contains(err.Error(), "syntax") && !strings.Contains(err.Error(), "multiple commands") {
			t.Errorf("%s: got %v, want a read-only refusal", stmt, err)
		}
	}
}

// TestBindTableSaysWhatDoesNotMatch: every mismatch between the catalog
// and the server is named with what would be accepted.
func TestBindTableSaysWhatDoesNotMatch(t *testing.T) {
	pg, eng := open(t)
	ctx := context.Background()
	if err := pg.Exec(ctx,
		"CREATE TABLE IF NOT EXISTS bind_t (id bigint, amount numeric, score real, label varchar(10), ok boolean, ratio double precision)",
		"GRANT SELECT ON bind_t TO "+enginetest.ReaderRole,
		"CREATE TABLE IF NOT EXISTS secret_t (id bigint)",
		"CREATE TABLE IF NOT EXISTS columns_t (open bigint, closed bigint)",
		"GRANT SELECT (open) ON columns_t TO "+enginetest.ReaderRole,
	); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, relation string
		cols           []engine.Column
		want           []string
	}{
		{"compatible", "public.bind_t", []engine.Column{{Name: "id", Type: engine.Integer}, {Name: "score", Type: engine.Double},
			{Name: "label", Type: engine.Text}, {Name: "ok", Type: engine.Boolean}, {Name: "ID", Type: engine.Double}}, nil},
		{"missing column", "bind_t", []engine.Column{{Name: "age", Type: engine.Integer}},
			[]string{"column age does not exist in public.bind_t", "it has: id, amount, score, label, ok, ratio"}},
		{"numeric is not an int", "public.bind_t", []engine.Column{{Name: "amount", Type: engine.Integer}},
			[]string{"column amount of public.bind_t is numeric", "declared int", "want smallint, integer or bigint"}},
		{"double is not an int", "public.bind_t", []engine.Column{{Name: "ratio", Type: engine.Integer}},
			[]string{"is double precision", "declared int"}},
		{"text is not a bool", "public.bind_t", []engine.Column{{Name: "label", Type: engine.Boolean}},
			[]string{"is character varying(10)", "declared bool", "want boolean"}},
		{"every problem at once", "public.bind_t", []engine.Column{{Name: "amount", Type: engine.Double}, {Name: "nope", Type: engine.Text}},
			[]string{"column amount", "column nope does not exist"}},
		{"no such relation", "public.nosuch", []engine.Column{{Name: "id", Type: engine.Integer}},
			[]string{`source "public.nosuch": no table or view of that name is visible to user "dpstat_reader"`}},
		{"not granted", "public.secret_t", []engine.Column{{Name: "id", Type: engine.Integer}},
			[]string{`user "dpstat_reader" may not read public.secret_t`, "GRANT SELECT ON public.secret_t TO"}},
		{"column grant", "public.columns_t", []engine.Column{{Name: "open", Type: engine.Integer}}, nil},
		{"column not granted", "public.columns_t", []engine.Column{{Name: "open", Type: engine.Integer}, {Name: "closed", Type: engine.Integer}},
			[]string{`user "dpstat_reader" may not read column closed of public.columns_t`, `GRANT SELECT ("closed") ON public.columns_t TO`}},
		{"bad name", "a b c", []engine.Column{{Name: "id", Type: engine.Integer}},
			[]string{`source "a b c"`, "want a table or view name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := eng.BindTable(ctx, "t_"+strings.ReplaceAll(tt.name, " ", "_"), tt.relation, tt.cols)
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("bound; want an error mentioning %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestCancel: a query whose context ends stops on the server too.
func TestCancel(t *testing.T) {
	_, eng := open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := eng.Query(ctx, "SELECT pg_sleep(20)")
	if err == nil {
		t.Fatal("the sleep finished; want it cancelled")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancellation took %v", d)
	}
	// The server no longer runs it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := scalar(t, eng, "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(20)' AND state = 'active'")
		if n == int64(0) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v sessions still run the cancelled statement", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStatementTimeout: the session's statement timeout stops a long
// statement.
func TestStatementTimeout(t *testing.T) {
	pg := enginetest.SharedPostgres(t)
	eng, err := postgres.Open(context.Background(), postgres.Options{DSN: pg.ReaderDSN(), StatementTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	_, err = eng.Query(context.Background(), "SELECT pg_sleep(10)")
	if err == nil || !strings.Contains(err.Error(), "statement timeout") {
		t.Errorf("got %v, want a statement timeout", err)
	}
}

// TestUnreachableCostsNothing: a server that is down refuses the query
// before the charge, and the engine reconnects once it is back.
func TestUnreachableCostsNothing(t *testing.T) {
	pg, err := enginetest.StartPostgres()
	if err != nil {
		enginetest.Unavailable(t, "PostgreSQL test server: %v", err)
	}
	defer pg.Stop()
	ctx := context.Background()
	tb := enginetest.Tables[0] // people
	if err := enginetest.LoadTable(ctx, pg, "people", tb); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Parse([]byte(`budget: {epsilon: 10}
engine: {kind: postgres, dsn: "`+pg.ReaderDSN()+`"}
tables:
  people:
    source: public.people
`+tb.Declaration), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Open(ctx, engine.Spec{Kind: "postgres", DSN: cat.Engine.DSN})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	led := &enginetest.Ledger{}
	svc, err := query.NewService(ctx, cat, eng, led)
	if err != nil {
		t.Fatal(err)
	}
	opts := query.Options{Epsilon: 1, Confidence: 0.95, Analyst: "a"}
	if _, err := svc.Answer(ctx, "SELECT COUNT(*) FROM people", opts); err != nil {
		t.Fatal(err)
	}
	if err := pg.Halt(); err != nil {
		t.Fatal(err)
	}
	_, err = svc.Answer(ctx, "SELECT COUNT(*) FROM people", opts)
	if err == nil || !strings.Contains(err.Error(), "nothing charged") || !strings.Contains(err.Error(), "cannot be reached") {
		t.Errorf("with the server down: %v, want a refusal saying nothing was charged", err)
	}
	if n := led.Charges(); n != 1 {
		t.Errorf("%d charges, want 1 (the query before the server went down)", n)
	}
	if err := pg.Resume(); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Answer(ctx, "SELECT COUNT(*) FROM people", opts); err != nil {
		t.Errorf("after the server came back: %v", err)
	}
}

// TestOpenSaysWhy: a server that does not answer, a DSN that does not
// parse and a missing password variable are named.
func TestOpenSaysWhy(t *testing.T) {
	ctx := context.Background()
	_, err := engine.Open(ctx, engine.Spec{Kind: "postgres", DSN: "postgres://nobody@127.0.0.1:1/db?connect_timeout=2"})
	if err == nil || !strings.Contains(err.Error(), `cannot reach database "db" as user "nobody"`) {
		t.Errorf("closed port: %v", err)
	}
	_, err = engine.Open(ctx, engine.Spec{Kind: "postgres", DSN: "postgres://h:notaport/db"})
	if err == nil || !strings.Contains(err.Error(), "dsn") {
		t.Errorf("bad dsn: %v", err)
	}
	_, err = engine.Open(ctx, engine.Spec{Kind: "postgres", DSN: "postgres://u@h/db", PasswordEnv: "DPSTAT_TEST_UNSET_PASSWORD"})
	if err == nil || !strings.Contains(err.Error(), "DPSTAT_TEST_UNSET_PASSWORD") {
		t.Errorf("unset password variable: %v", err)
	}
	_, err = engine.Open(ctx, engine.Spec{Kind: "oracle"})
	if err == nil || !strings.Contains(err.Error(), `"oracle" is not known; want one of clickhouse, duckdb, postgres`) {
		t.Errorf("unknown kind: %v", err)
	}
}

// TestConcurrentAndServerLoss: concurrent queries share a small pool; a
// server lost in the middle of a statement gives an error at once, and the
// engine answers again once the server is back.
func TestConcurrentAndServerLoss(t *testing.T) {
	pg, err := enginetest.StartPostgres()
	if err != nil {
		enginetest.Unavailable(t, "PostgreSQL test server: %v", err)
	}
	defer pg.Stop()
	ctx := context.Background()
	eng, err := postgres.Open(ctx, postgres.Options{DSN: pg.ReaderDSN(), MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			rows, err := eng.Query(ctx, "SELECT count(*) FROM generate_series(1, "+strconv.Itoa(1000*(i+1))+")")
			if err == nil && rows.Rows[0][0] != int64(1000*(i+1)) {
				err = errors.New("wrong count")
			}
			errs <- err
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent query: %v", err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := eng.Query(ctx, "SELECT pg_sleep(30)")
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	if err := pg.Halt(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the statement survived the server")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the statement did not return after the server went away")
	}
	if err := eng.Ping(ctx); err == nil {
		t.Error("ping succeeded with the server down")
	}
	if err := pg.Resume(); err != nil {
		t.Fatal(err)
	}
	if got := scalar(t, eng, "SELECT 1"); got != int64(1) {
		t.Errorf("after the restart: %v", got)
	}
}
