package clickhouse_test

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/clickhouse"
	"github.com/dpstat/dpstat/engine/engines"
	"github.com/dpstat/dpstat/query"
	"github.com/dpstat/dpstat/query/enginetest"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/query/sqlgen"
)

func TestMain(m *testing.M) {
	code := m.Run()
	enginetest.StopShared()
	os.Exit(code)
}

// TestOpenSaysWhy: each way of failing to open names what is wrong and
// what would be accepted, without connecting where the DSN alone decides.
func TestOpenSaysWhy(t *testing.T) {
	for _, c := range []struct {
		name string
		spec engine.Spec
		want string
	}{
		{"http is refused", engine.Spec{Kind: "clickhouse", DSN: "http://h:8123/db"}, "want a URL of the native protocol"},
		{"password in the dsn", engine.Spec{Kind: "clickhouse", DSN: "clickhouse://u:secret@h:9000/db"}, "holds a password"},
		{"password variable unset", engine.Spec{Kind: "clickhouse", DSN: "clickhouse://u@h:9000/db", PasswordEnv: "DPSTAT_TEST_UNSET_PASSWORD"}, "DPSTAT_TEST_UNSET_PASSWORD"},
		{"closed port", engine.Spec{Kind: "clickhouse", DSN: "clickhouse://nobody@127.0.0.1:1/db?dial_timeout=2s"}, `cannot reach database "db" as user "nobody"`},
		{"embedded settings", engine.Spec{Kind: "clickhouse", DSN: "clickhouse://u@h:9000/db", Threads: 2}, "apply only to the embedded engine"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := engine.Open(context.Background(), c.spec)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, c.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

func open(t *testing.T, c *enginetest.ClickHouse, timeout time.Duration) *clickhouse.Engine {
	t.Helper()
	e, err := clickhouse.Open(context.Background(), clickhouse.Options{DSN: c.ReaderDSN(), StatementTimeout: timeout, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestBindTable: every declared column is checked against the server's
// type, and every mismatch is reported with what would be accepted.
func TestBindTable(t *testing.T) {
	c := enginetest.SharedClickHouse(t)
	ctx := context.Background()
	if err := c.Exec(ctx, "CREATE TABLE IF NOT EXISTS bind_types (i32 Int32, u64 UInt64, f32 Float32, dec Decimal(10, 2), s String, fs FixedString(3), "+
		"b UInt8, ni Nullable(Int64), e Enum8('a' = 1, 'b' = 2)) ENGINE = MergeTree ORDER BY i32"); err != nil {
		t.Fatal(err)
	}
	e := open(t, c, 0)
	for _, tc := range []struct {
		col  string
		typ  engine.Type
		want string // "" when accepted
	}{
		{"i32", engine.Integer, ""},
		{"ni", engine.Integer, ""},
		{"u64", engine.Integer, "a UInt64 can exceed Int64"},
		{"u64", engine.Double, ""},
		{"f32", engine.Double, ""},
		{"f32", engine.Integer, "want Int8, Int16, Int32, Int64"},
		{"dec", engine.Double, ""},
		{"s", engine.Text, ""},
		{"e", engine.Text, ""},
		{"fs", engine.Text, "FixedString pads"},
		{"b", engine.Boolean, ""},
		{"s", engine.Boolean, "want UInt8"},
		{"s", engine.Date, "want Date or Date32"},
		{"i32", engine.Timestamp, "want DateTime"},
		{"nosuch", engine.Integer, "does not exist in \"default\".\"bind_types\"; it has: i32, u64"},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.col, tc.typ), func(t *testing.T) {
			err := e.BindTable(ctx, "t_"+tc.col, "default.bind_types", []engine.Column{{Name: tc.col, Type: tc.typ}})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
	err := e.BindTable(ctx, "gone", "default.no_such_table", []engine.Column{{Name: "a", Type: engine.Integer}})
	if err == nil || !strings.Contains(err.Error(), "no table of that name in database default") {
		t.Errorf("missing table: %v", err)
	}
}

// TestBindDates: a Date reads as its days since 1970-01-01 and a DateTime
// (whatever its time zone) as the microseconds of the UTC time it
// denotes.
func TestBindDates(t *testing.T) {
	c := enginetest.SharedClickHouse(t)
	ctx := context.Background()
	if err := c.Exec(ctx, "CREATE TABLE IF NOT EXISTS bind_dates (id Int64, d Date, dt DateTime('Europe/Paris'), nd Nullable(Date)) ENGINE = MergeTree ORDER BY id",
		"INSERT INTO bind_dates SELECT 1, toDate('2024-03-01'), toDateTime(1709294400), NULL"); err != nil {
		t.Fatal(err)
	}
	e := open(t, c, 0)
	cols := []engine.Column{{Name: "d", Type: engine.Date}, {Name: "dt", Type: engine.Timestamp}, {Name: "nd", Type: engine.Date}}
	if err := e.BindTable(ctx, "dates", "default.bind_dates", cols); err != nil {
		t.Fatal(err)
	}
	rows, err := e.Query(ctx, `SELECT "d", "dt", "nd" FROM "dates"`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(rows.Rows), "[[19783 1709294400000000 <nil>]]"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestReadOnlyAndValues: statements run read-only; values come back as
// the engine-neutral Go types (wide sums as *big.Int, UInt8 as bool).
func TestReadOnlyAndValues(t *testing.T) {
	c := enginetest.SharedClickHouse(t)
	e := open(t, c, 0)
	ctx := context.Background()
	if _, err := e.Query(ctx, "CREATE TABLE dpstat_should_not_exist (a Int8) ENGINE = Memory"); err == nil || !strings.Contains(strings.ToLower(err.Error()), "readonly") {
		t.Errorf("CREATE TABLE ran or failed otherwise: %v", err)
	}
	rows, err := e.Query(ctx, "SELECT sum(toDecimal128(x, 0)) AS s, toUInt8(1) AS b, toInt32(-3) AS i, CAST(NULL AS Nullable(Float64)) AS n, 'x' AS t "+
		"FROM (SELECT toInt64(9223372036854775807) AS x UNION ALL SELECT toInt64(9223372036854775807))")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := new(big.Int).SetString("18446744073709551614", 10)
	r := rows.Rows[0]
	if s, ok := r[0].(*big.Int); !ok || s.Cmp(want) != 0 {
		t.Errorf("exact sum %v (%T), want %v", r[0], r[0], want)
	}
	if r[1] != true || r[2] != int64(-3) || r[3] != nil || r[4] != "x" {
		t.Errorf("values %#v", r[1:])
	}
}

// TestTimeoutAndCancel: a statement stops at the engine's time limit, and
// at once when its context ends.
func TestTimeoutAndCancel(t *testing.T) {
	c := enginetest.SharedClickHouse(t)
	long := "SELECT count() FROM (SELECT number FROM system.numbers LIMIT 100000000000)"
	e := open(t, c, time.Second)
	start := time.Now()
	if _, err := e.Query(context.Background(), long); err == nil || time.Since(start) > 20*time.Second {
		t.Errorf("time limit: %v after %v", err, time.Since(start))
	}
	e2 := open(t, c, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := e2.Query(ctx, long); err == nil || time.Since(start) > 10*time.Second {
		t.Errorf("cancellation: %v after %v", err, time.Since(start))
	}
	if _, err := e2.Query(context.Background(), "SELECT 1"); err != nil {
		t.Errorf("the pool does not answer after a cancellation: %v", err)
	}
}

// TestExplainSaysHowTheTableIsSharded: EXPLAIN names the Distributed
// table, its sharding key and whether it is the privacy unit.
func TestExplainSaysHowTheTableIsSharded(t *testing.T) {
	c := enginetest.SharedClickHouse(t)
	svc, _ := enginetest.Service(t, c.Backend())
	for _, tc := range []struct{ sql, want string }{
		{"EXPLAIN SELECT g, COUNT(*) FROM visits GROUP BY g", "sharded by the privacy unit pid"},
		{"EXPLAIN SELECT COUNT(*) FROM people", "sharding key rand()"},
	} {
		p, err := svc.Prepare(tc.sql, query.Options{Epsilon: 1, Confidence: 0.95, Analyst: "a"})
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(p.Explain().Lines(), "\n")
		if !strings.Contains(text, "Distributed table") || !strings.Contains(text, tc.want) {
			t.Errorf("%s:\n%s\nwant a line mentioning %q", tc.sql, text, tc.want)
		}
	}
}

// TestBoundsOnTheShards: a bounded query over a Distributed table sharded
// by the privacy unit runs its per-person stages on each shard (the
// statement asks each shard to run its SELECT over the table to its end,
// and that SELECT groups by person and keeps L0 groups per person), EXPLAIN
// says so, and the generator writes the whole-cluster statement otherwise.
func TestBoundsOnTheShards(t *testing.T) {
	c := enginetest.SharedClickHouse(t)
	svc, eng := enginetest.Service(t, c.Backend())
	const sql = "SELECT g, COUNT(*), SUM(x) FROM visits GROUP BY g"
	p, err := svc.Prepare("EXPLAIN "+sql, query.Options{Epsilon: 1, Confidence: 0.95, Analyst: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if text := strings.Join(p.Explain().Lines(), "\n"); !strings.Contains(text, "each shard filters its rows and bounds each person's contribution") {
		t.Errorf("EXPLAIN does not say each shard bounds:\n%s", text)
	}
	if !p.Plan.PerShard || !strings.HasSuffix(p.SQL, " SETTINGS distributed_group_by_no_merge = 1, distributed_product_mode = 'local'") || !strings.Contains(p.SQL, "GROUP BY _dp_u, _dp_k0 ORDER BY") || !strings.Contains(p.SQL, " BY _dp_u)") {
		t.Errorf("the statement does not bound on the shards:\n%s", p.SQL)
	}
	if s, ok := eng.(engine.UnitSharder); !ok || !s.ShardedByUnit("visits", "pid") || s.ShardedByUnit("people", "pid") || s.ShardedByUnit("visits", "g") {
		t.Errorf("ShardedByUnit does not tell the tables sharded by their unit")
	}
	p.Plan.PerShard = false
	whole, err := sqlgen.SQL(p.Plan, eng.Dialect())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(whole, "SETTINGS") {
		t.Errorf("the whole-cluster statement asks the shards to run to the end:\n%s", whole)
	}
}

// TestUnreachableCostsNothing: a server that went away refuses the query
// before the charge, and the engine answers again once it is back.
func TestUnreachableCostsNothing(t *testing.T) {
	c, err := enginetest.StartClickHouse(1)
	if err != nil {
		enginetest.Unavailable(t, "ClickHouse test server: %v", err)
	}
	defer c.Stop()
	cat := enginetest.Catalog(t, c.Backend())
	eng, err := engine.Open(context.Background(), engines.Spec(cat))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	led := &enginetest.Ledger{}
	svc, err := query.NewService(context.Background(), cat, eng, led)
	if err != nil {
		t.Fatal(err)
	}
	opts := query.Options{Epsilon: 1, Confidence: 0.95, Analyst: "a"}
	if _, err := svc.Answer(context.Background(), "SELECT COUNT(*) FROM people", opts); err != nil {
		t.Fatal(err)
	}
	before := led.Charges()
	if err := c.Halt(0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := svc.Answer(ctx, "SELECT COUNT(*) FROM people", opts); err == nil || !strings.Contains(err.Error(), "nothing charged") {
		t.Errorf("with the server down: %v", err)
	}
	if led.Charges() != before {
		t.Errorf("charged %d times with the server down", led.Charges()-before)
	}
	if err := c.Resume(0); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Answer(context.Background(), "SELECT COUNT(*) FROM people", opts); err != nil {
		t.Errorf("after the server came back: %v", err)
	}
}

// TestRefusedBeforeTheCharge: what ClickHouse cannot run (two joins in a
// SELECT) is refused when the query is planned, before any charge.
func TestRefusedBeforeTheCharge(t *testing.T) {
	c := enginetest.SharedClickHouse(t)
	svc, _ := enginetest.Service(t, c.Backend())
	_, err := svc.Prepare("SELECT r.zone, COUNT(*) FROM visits v JOIN regions r ON v.region = r.region JOIN regions s ON v.region = s.region GROUP BY r.zone",
		query.Options{Epsilon: 1, Confidence: 0.95, Analyst: "a"})
	var refused *ir.RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "joins one table per SELECT") {
		t.Fatalf("got %v, want a refusal saying ClickHouse joins one table per SELECT", err)
	}
}
