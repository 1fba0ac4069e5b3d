package enginetest

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/dpstat/dpstat/schema"
	"github.com/jackc/pgx/v5/pgtype"
)

// ClickHouseReader is the user the engine under test connects as: its
// profile is read-only (readonly = 2: reads, and settings for its own
// statements).
const ClickHouseReader = "dpstat_reader"

// ClickHouse is a cluster of ClickHouse servers started for tests, each
// with its own directory in a temporary directory, listening on loopback
// only. Server 0 defines the clusters two_shards (servers 0 and 1) and
// one_shard (server 0 alone); the others know them too.
type ClickHouse struct {
	// Ports are the servers' native-protocol TCP ports on 127.0.0.1.
	Ports []int
	dir   string
	procs []*exec.Cmd
	bin   string
	cred  *syscall.Credential

	mu     sync.Mutex
	loaded map[string]bool
}

// clickHouseServer finds the server program: DPSTAT_CLICKHOUSE_SERVER, or
// clickhouse-server on PATH or in /usr/sbin (Debian's package).
func clickHouseServer() (string, error) {
	if p := os.Getenv("DPSTAT_CLICKHOUSE_SERVER"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("clickhouse-server"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/clickhouse-server"); err == nil {
		return "/usr/sbin/clickhouse-server", nil
	}
	return "", fmt.Errorf("clickhouse-server not found on PATH or in /usr/sbin (install clickhouse-server, or set DPSTAT_CLICKHOUSE_SERVER to the program)")
}

// StartClickHouse starts n servers (n ≥ 1) forming the test clusters. It
// returns an error saying why when the server program is missing or a
// server does not start. The ports are chosen free, but another process
// (another test binary starting its servers) can take one before the
// server binds it: a start that fails that way is tried again, on new
// ports, up to three times.
func StartClickHouse(n int) (*ClickHouse, error) {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var c *ClickHouse
		if c, err = startClickHouse(n); err == nil {
			return c, nil
		}
		if !strings.Contains(err.Error(), addressInUse) {
			return nil, err
		}
	}
	return nil, err
}

// addressInUse is what the server logs when its port was taken.
const addressInUse = "Address already in use"

// startClickHouse is one attempt of StartClickHouse.
func startClickHouse(n int) (*ClickHouse, error) {
	bin, err := clickHouseServer()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "dpstat-ch-")
	if err != nil {
		return nil, err
	}
	c := &ClickHouse{dir: dir, bin: bin, loaded: map[string]bool{}}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		// The server refuses to run with files it does not own; run it
		// as the package's clickhouse user.
		u, err := user.Lookup("clickhouse")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root, the server must run as the user clickhouse, which does not exist: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	for i := 0; i < n; i++ {
		p, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		c.Ports = append(c.Ports, p)
	}
	users := `<yandex><profiles><default><max_memory_usage>4000000000</max_memory_usage></default>
<reader><readonly>2</readonly><max_memory_usage>4000000000</max_memory_usage></reader></profiles>
<users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default>
<` + ClickHouseReader + `><password></password><networks><ip>127.0.0.1</ip></networks><profile>reader</profile><quota>default</quota></` + ClickHouseReader + `></users>
<quotas><default></default></quotas></yandex>`
	var shards strings.Builder
	for _, p := range c.Ports[:min(2, n)] {
		fmt.Fprintf(&shards, "<shard><replica><host>127.0.0.1</host><port>%d</port></replica></shard>", p)
	}
	remote := fmt.Sprintf("<remote_servers><two_shards>%s</two_shards><one_shard><shard><replica><host>127.0.0.1</host><port>%d</port></replica></shard></one_shard></remote_servers>",
		shards.String(), c.Ports[0])
	for i, port := range c.Ports {
		sd := filepath.Join(dir, fmt.Sprintf("s%d", i))
		for _, d := range []string{"data", "tmp", "log"} {
			if err := os.MkdirAll(filepath.Join(sd, d), 0o755); err != nil {
				c.Stop()
				return nil, err
			}
		}
		http, err := freePort()
		if err != nil {
			c.Stop()
			return nil, err
		}
		inter, err := freePort()
		if err != nil {
			c.Stop()
			return nil, err
		}
		cfg := fmt.Sprintf(`<yandex><listen_host>127.0.0.1</listen_host><tcp_port>%d</tcp_port><http_port>%d</http_port>
<interserver_http_port>%d</interserver_http_port><path>%s/data/</path><tmp_path>%s/tmp/</tmp_path>
<users_config>users.xml</users_config><default_profile>default</default_profile><default_database>default</default_database>
<mark_cache_size>268435456</mark_cache_size><max_concurrent_queries>50</max_concurrent_queries>
<logger><level>warning</level><log>%s/log/server.log</log><errorlog>%s/log/err.log</errorlog></logger>%s</yandex>`,
			port, http, inter, sd, sd, sd, sd, remote)
		if err := os.WriteFile(filepath.Join(sd, "config.xml"), []byte(cfg), 0o644); err != nil {
			c.Stop()
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(sd, "users.xml"), []byte(users), 0o644); err != nil {
			c.Stop()
			return nil, err
		}
		if cred != nil {
			filepath.Walk(sd, func(p string, _ os.FileInfo, _ error) error { return os.Chown(p, int(cred.Uid), int(cred.Gid)) })
			os.Chown(dir, int(cred.Uid), int(cred.Gid))
		}
		c.cred = cred
		c.procs = append(c.procs, nil)
		if err := c.start(i); err != nil {
			c.Stop()
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range c.Ports {
		if err := c.waitReady(ctx, i); err != nil {
			log, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("s%d", i), "log", "err.log"))
			out, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("s%d.out", i)))
			c.Stop()
			return nil, fmt.Errorf("ClickHouse server %d did not start: %v: %s %s", i, err, out, log)
		}
	}
	return c, nil
}

// start starts server i.
func (c *ClickHouse) start(i int) error {
	sd := filepath.Join(c.dir, fmt.Sprintf("s%d", i))
	cmd := exec.Command(c.bin, "--config-file="+filepath.Join(sd, "config.xml"))
	cmd.Dir = sd
	out, err := os.OpenFile(filepath.Join(c.dir, fmt.Sprintf("s%d.out", i)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("starting %s: %w", c.bin, err)
	}
	c.procs[i] = cmd
	return nil
}

// Halt stops server i at once (SIGKILL), keeping its data, as a crash
// would; Resume starts it again on the same port.
func (c *ClickHouse) Halt(i int) error {
	p := c.procs[i]
	if p == nil || p.Process == nil {
		return fmt.Errorf("server %d is not running", i)
	}
	p.Process.Kill()
	p.Wait()
	c.procs[i] = nil
	return nil
}

// Resume starts a halted server again and waits until it answers.
func (c *ClickHouse) Resume(i int) error {
	if err := c.start(i); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return c.waitReady(ctx, i)
}

// waitReady waits until server i answers, and gives up at once when the
// server logged that its port was taken.
func (c *ClickHouse) waitReady(ctx context.Context, i int) error {
	errLog := filepath.Join(c.dir, fmt.Sprintf("s%d", i), "log", "err.log")
	for {
		conn, err := c.Admin(i)
		if err == nil {
			err = conn.Ping(ctx)
			conn.Close()
			if err == nil {
				return nil
			}
		}
		if b, _ := os.ReadFile(errLog); strings.Contains(string(b), addressInUse) {
			return fmt.Errorf("server %d: %s", i, addressInUse)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Admin connects to server i as the default (writing) user, for loading
// data.
func (c *ClickHouse) Admin(i int) (driver.Conn, error) {
	return ch.Open(&ch.Options{Addr: []string{"127.0.0.1:" + strconv.Itoa(c.Ports[i])}, Auth: ch.Auth{Database: "default", Username: "default"},
		DialTimeout: 5 * time.Second, MaxOpenConns: 4, ReadTimeout: 2 * time.Minute})
}

// ReaderDSN connects to server 0 as ClickHouseReader.
func (c *ClickHouse) ReaderDSN() string {
	return fmt.Sprintf("clickhouse://%s@127.0.0.1:%d/default", ClickHouseReader, c.Ports[0])
}

// Exec runs statements on every server as the default user.
func (c *ClickHouse) Exec(ctx context.Context, stmts ...string) error {
	for i := range c.Ports {
		conn, err := c.Admin(i)
		if err != nil {
			return err
		}
		for _, s := range stmts {
			if err := conn.Exec(ctx, s); err != nil {
				conn.Close()
				return fmt.Errorf("server %d: %s: %w", i, s, err)
			}
		}
		conn.Close()
	}
	return nil
}

// Stop stops every server and removes the cluster's directory.
func (c *ClickHouse) Stop() {
	for _, p := range c.procs {
		if p != nil && p.Process != nil {
			p.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, p := range c.procs {
		if p == nil {
			continue
		}
		done := make(chan struct{})
		go func() { p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			p.Process.Kill()
			<-done
		}
	}
	os.RemoveAll(c.dir)
}

// sharedCH is one cluster per test binary, started on first use.
var sharedCH struct {
	once sync.Once
	ch   *ClickHouse
	err  error
}

// SharedClickHouse returns the test binary's two-shard ClickHouse cluster,
// starting it on first use; when it cannot start, the test fails in CI and
// is skipped elsewhere, with the reason. StopShared stops it.
func SharedClickHouse(t testing.TB) *ClickHouse {
	t.Helper()
	// The Makefile's fingerprint of the optional tools: installing the
	// server reruns a test that skipped for want of it.
	os.Getenv("DPSTAT_TEST_TOOLS")
	sharedCH.once.Do(func() { sharedCH.ch, sharedCH.err = StartClickHouse(2) })
	if sharedCH.err != nil {
		Unavailable(t, "ClickHouse test cluster: %v", sharedCH.err)
	}
	return sharedCH.ch
}

// privacyUnitRE finds a fixture's privacy unit in its declaration.
var privacyUnitRE = regexp.MustCompile(`privacy_unit:\s*(\w+)`)

// Backend is the suite's backend for this cluster: each table is created
// as a MergeTree table default.dp_<name>_local on every server (ordered by
// the privacy unit) and a Distributed table default.dp_<name> over the
// cluster two_shards, sharded by cityHash64 of the privacy unit (rand()
// without one), filled through the Distributed table; the engine connects
// to server 0 as ClickHouseReader and reads the Distributed tables.
func (c *ClickHouse) Backend() Backend {
	return Backend{
		Name:   "clickhouse",
		Engine: fmt.Sprintf("{kind: clickhouse, dsn: %q, statement_timeout: 60s, max_connections: 4}", c.ReaderDSN()),
		Load: func(t testing.TB, tables []Table) map[string]string {
			t.Helper()
			out := map[string]string{}
			for _, tb := range tables {
				if err := c.LoadTable(context.Background(), "dp_"+tb.Name, tb, "two_shards"); err != nil {
					t.Fatalf("loading %s into ClickHouse: %v", tb.Name, err)
				}
				out[tb.Name] = "default.dp_" + tb.Name
			}
			return out
		},
	}
}

// RandomShardBackend is Backend with every table sharded at random
// (rand()) rather than by its privacy unit, as default.dp_rand_<name>: a
// person's rows may be on both shards, so dpstat bounds each person on the
// server it connects to (the statements never take the per-shard form).
func (c *ClickHouse) RandomShardBackend() Backend {
	b := c.Backend()
	b.Load = func(t testing.TB, tables []Table) map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, tb := range tables {
			unit := ""
			if m := privacyUnitRE.FindStringSubmatch(tb.Declaration); m != nil {
				unit = m[1]
			}
			// The same columns (the unit not Nullable), no unit to shard by.
			tb.Declaration = privacyUnitRE.ReplaceAllString(tb.Declaration, "")
			if unit != "" {
				types := map[string]string{}
				for k, v := range tb.ClickHouse {
					types[k] = v
				}
				if types[unit] == "" {
					for _, col := range tb.Columns {
						if col.Name == unit {
							types[unit] = map[schema.Type]string{schema.Int: "Int64", schema.Text: "String"}[col.Type]
						}
					}
				}
				tb.ClickHouse = types
			}
			if err := c.LoadTable(context.Background(), "dp_rand_"+tb.Name, tb, "two_shards"); err != nil {
				t.Fatalf("loading %s into ClickHouse: %v", tb.Name, err)
			}
			out[tb.Name] = "default.dp_rand_" + tb.Name
		}
		return out
	}
	return b
}

// LoadTable creates name_local (MergeTree) on every server and name
// (Distributed over cluster) on every server, with the fixture's columns
// (int as Int64, float as Float64, text as String, bool as UInt8, date as
// Date, timestamp as DateTime, each Nullable except the privacy unit; or
// the table's ClickHouse type of the column), and
// fills it from the fixture's Rows, or its CSV. ClickHouse 18.16 holds dates and
// timestamps from 1970 to 2105 only, timestamps to the second: a value
// outside that range, or infinity, is stored as NULL (as the other engines
// read infinity), and a timestamp is stored floored to its second (as a
// data owner's DateTime column would hold it).
// It does nothing when the table was loaded before.
func (c *ClickHouse) LoadTable(ctx context.Context, name string, tb Table, cluster string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loaded[name] {
		return nil
	}
	rows := tb.Rows
	if rows == nil {
		body, err := tb.CSV()
		if err != nil {
			return err
		}
		if rows, err = ParseCSV(body, tb.Columns); err != nil {
			return fmt.Errorf("%s: %w", tb.File, err)
		}
	}
	unit := ""
	if m := privacyUnitRE.FindStringSubmatch(tb.Declaration); m != nil {
		unit = m[1]
	}
	defs := make([]string, len(tb.Columns))
	for i, col := range tb.Columns {
		typ := map[schema.Type]string{schema.Int: "Int64", schema.Float: "Float64", schema.Text: "String", schema.Bool: "UInt8",
			schema.Date: "Date", schema.Timestamp: "DateTime"}[col.Type]
		if col.Name != unit {
			typ = "Nullable(" + typ + ")"
		}
		if ct := tb.ClickHouse[col.Name]; ct != "" {
			typ = ct
		}
		defs[i] = "`" + col.Name + "` " + typ
	}
	order, key := "tuple()", "rand()"
	if unit != "" {
		order, key = "`"+unit+"`", "cityHash64(`"+unit+"`)"
	}
	if err := c.Exec(ctx,
		"CREATE TABLE "+name+"_local ("+strings.Join(defs, ", ")+") ENGINE = MergeTree ORDER BY "+order,
		"CREATE TABLE "+name+" AS "+name+"_local ENGINE = Distributed("+cluster+", default, "+name+"_local, "+key+")"); err != nil {
		return err
	}
	if len(rows) > 0 {
		if err := c.Insert(ctx, name, tb.Columns, rows); err != nil {
			return err
		}
	}
	c.loaded[name] = true
	return nil
}

// Insert writes rows into table name on server 0 with insert_distributed_sync,
// so that a Distributed table's rows are on their shards when it returns.
func (c *ClickHouse) Insert(ctx context.Context, name string, cols []Column, rows [][]any) error {
	var b strings.Builder
	for n, r := range rows {
		if n > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(")
		for i, v := range r {
			if i > 0 {
				b.WriteString(", ")
			}
			switch x := v.(type) {
			case nil:
				b.WriteString("NULL")
			case time.Time:
				b.WriteString(temporalValue(x, cols[i].Type))
			case pgtype.Date, pgtype.Timestamp:
				b.WriteString("NULL") // infinity, which ClickHouse cannot hold
			case bool:
				b.WriteString(map[bool]string{true: "1", false: "0"}[x])
			case int64:
				b.WriteString(strconv.FormatInt(x, 10))
			case float64:
				// The exact bits: ClickHouse 18.16 parses the smallest
				// subnormal as 0.
				var le [8]byte
				binary.LittleEndian.PutUint64(le[:], math.Float64bits(x))
				b.WriteString("reinterpretAsFloat64(unhex('" + hex.EncodeToString(le[:]) + "'))")
			case string:
				b.WriteString("'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(x) + "'")
			default:
				return fmt.Errorf("column %s: unexpected %T", cols[i].Name, v)
			}
		}
		b.WriteString(")")
	}
	return c.Client(ctx, 0, strings.NewReader(b.String()), "--insert_distributed_sync=1", "--query", "INSERT INTO "+name+" VALUES")
}

// ClickHouse 18.16's Date and DateTime hold the days and seconds from
// 1970-01-01 to 2105-12-31.
var (
	chFirstDay = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	chLastDay  = time.Date(2105, 12, 31, 23, 59, 59, 0, time.UTC)
)

// temporalValue spells a fixture's date or timestamp (a time in UTC) as a
// value of a Date or DateTime column: NULL outside the range ClickHouse
// holds, a timestamp floored to its second, given as its Unix time so that
// the server's time zone does not matter.
func temporalValue(x time.Time, t schema.Type) string {
	if x.Before(chFirstDay) || x.After(chLastDay) {
		return "NULL"
	}
	if t == schema.Date {
		return "toDate('" + x.Format("2006-01-02") + "')"
	}
	return "toDateTime(" + strconv.FormatInt(x.Unix(), 10) + ")"
}

// Client runs clickhouse-client against server i as the default user,
// with stdin as its input (the data of an INSERT).
func (c *ClickHouse) Client(ctx context.Context, i int, stdin io.Reader, args ...string) error {
	prog := "clickhouse-client"
	if p := os.Getenv("DPSTAT_CLICKHOUSE_CLIENT"); p != "" {
		prog = p
	}
	cmd := exec.CommandContext(ctx, prog, append([]string{"--host", "127.0.0.1", "--port", strconv.Itoa(c.Ports[i])}, args...)...)
	cmd.Stdin = stdin
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("clickhouse-client %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}
