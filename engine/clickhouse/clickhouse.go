// Package clickhouse runs dpstat's generated SQL on a ClickHouse server or
// cluster (tested on 18.16; the SQL it is given runs on current versions
// too), over tables that stay where they are, through ClickHouse's native
// protocol.
//
// dpstat never writes to the server: every statement runs with the
// setting readonly = 2 (reads and settings only), or under a user whose
// profile already sets it, and the user needs nothing beyond reading the
// catalog's tables (docs/engines.md). Each statement has a time limit on
// the server (max_execution_time) and is cancelled when its context ends.
//
// A catalog table is bound (BindTable) to a table of the server with a
// projection that exposes only the declared columns, each converted to its
// declared type without error for any value, with NaN in float columns
// read as NULL; the projection is written into every statement as the
// subquery the statement reads, so nothing is created on the server. A
// Distributed table is read as a whole: its shards send the projected
// rows, and the statement's bounding and aggregation run on the server
// that dpstat is connected to (docs/scaling.md), except on a Distributed
// table sharded by the privacy unit (ShardedByUnit), where each shard
// bounds the contributions of the persons it holds.
package clickhouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/shopspring/decimal"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/schema"
)

// Options configures a connection to a ClickHouse server (engine.ServerOptions;
// docs/engines.md gives the form of its DSN).
type Options = engine.ServerOptions

// Table describes how a catalog table is bound to the server.
type Table struct {
	// Relation is the server's table, quoted: "db"."name".
	Relation string
	// Engine is the table's engine, e.g. MergeTree or Distributed.
	Engine string
	// EngineFull is the engine with its parameters, as system.tables
	// says.
	EngineFull string
	// Cluster, RemoteTable and ShardingKey describe a Distributed table:
	// its cluster, its local tables (db.name on each shard) and its
	// sharding key expression ("" when it has none).
	Cluster, RemoteTable, ShardingKey string
	// Shards is the number of shards of Cluster (0 when not
	// Distributed).
	Shards     int
	projection string
	// columns maps each catalog column to its read of the server's
	// column; nil when a server column's name could be taken for one of
	// the generator's aliases (then the projection is always a subquery).
	columns map[string]string
}

// Engine is a pool of read-only connections to one ClickHouse server. It
// is safe for concurrent use.
type Engine struct {
	conn     driver.Conn
	user, db string
	settings ch.Settings
	timeout  time.Duration

	mu    sync.RWMutex
	bound map[string]*Table
}

var (
	_ engine.Engine = (*Engine)(nil)
	_ engine.Binder = (*Engine)(nil)
	_ engine.Pinger = (*Engine)(nil)

	_ engine.UnitSharder  = (*Engine)(nil)
	_ engine.ShardBounder = dialect{}
)

// init registers ClickHouse as the engine kind "clickhouse".
func init() {
	engine.RegisterServer("clickhouse", "ClickHouse", Dialect, Open)
}

// Open connects to the server, checks that it answers and that dpstat's
// statements run read-only, and returns the engine.
func Open(ctx context.Context, opts Options) (*Engine, error) {
	timeout, conns, err := opts.Limits("clickhouse", 1<<16)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(opts.DSN, "clickhouse://") && !strings.HasPrefix(opts.DSN, "tcp://") {
		return nil, fmt.Errorf("clickhouse: dsn %q: want a URL of the native protocol such as clickhouse://dpstat_reader@host:9000/db", opts.DSN)
	}
	cfg, err := ch.ParseDSN(opts.DSN)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: dsn %q: %w; want a URL such as clickhouse://dpstat_reader@host:9000/db", opts.DSN, err)
	}
	if cfg.Auth.Password != "" {
		return nil, fmt.Errorf("clickhouse: dsn %q holds a password; a catalog is shared and reviewed: put the password in an environment variable and name it with password_env", redact(opts.DSN))
	}
	if cfg.Protocol != ch.Native {
		return nil, fmt.Errorf("clickhouse: dsn %q: dpstat speaks ClickHouse's native protocol only; want clickhouse://host:9000/db", opts.DSN)
	}
	if opts.Password != "" {
		cfg.Auth.Password = opts.Password
	}
	if cfg.Auth.Username == "" {
		cfg.Auth.Username = "default"
	}
	if cfg.Auth.Database == "" {
		cfg.Auth.Database = "default"
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	cfg.MaxOpenConns = conns
	cfg.MaxIdleConns = min(cfg.MaxOpenConns, 5)
	cfg.ClientInfo.Products = append(cfg.ClientInfo.Products, struct{ Name, Version string }{"dpstat", "1"})
	conn, err := ch.Open(cfg)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: %w", err)
	}
	e := &Engine{conn: conn, user: cfg.Auth.Username, db: cfg.Auth.Database, timeout: timeout, bound: map[string]*Table{}}
	if err := conn.Ping(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("clickhouse: cannot reach database %q as user %q: %w", e.db, e.user, err)
	}
	// Read-only: a profile with readonly = 0 gets readonly = 2 for each
	// statement (reads, and settings for that statement); readonly = 1
	// forbids the settings dpstat needs.
	ro, err := e.setting(ctx, nil, "readonly")
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("clickhouse: reading the setting readonly of user %q: %w", e.user, err)
	}
	e.settings = ch.Settings{
		"max_execution_time": max(int(math.Ceil(timeout.Seconds())), 1),
		"join_use_nulls":     1, // an unmatched LEFT JOIN row reads NULL, as in SQL
		// The planner refuses longer statements before the charge.
		"max_query_size": engine.MaxStatementBytes + 1<<16,
		// Every element of a statement's syntax tree takes at least a
		// byte of its text, so a statement the planner accepts never has
		// more elements than this (the per-shard rewrite and alias
		// expansion multiply them at most a few times).
		"max_ast_elements":          engine.MaxStatementBytes,
		"max_expanded_ast_elements": 4 * engine.MaxStatementBytes,
	}
	switch ro {
	case "0":
		e.settings["readonly"] = 2
	case "2":
	default:
		conn.Close()
		return nil, fmt.Errorf("clickhouse: user %q has readonly = %s, which also forbids the per-statement settings dpstat sets (max_execution_time, join_use_nulls); give the user a profile with readonly = 2", e.user, ro)
	}
	if ro, err = e.setting(ctx, e.settings, "readonly"); err != nil || ro != "2" {
		conn.Close()
		return nil, fmt.Errorf("clickhouse: statements are not read-only for user %q (readonly = %q, %v); dpstat needs readonly = 2 to take effect", e.user, ro, err)
	}
	return e, nil
}

// redact hides the password of a URL.
func redact(dsn string) string {
	return regexp.MustCompile(`(://[^:/@]*):[^@]*@`).ReplaceAllString(dsn, "$1:***@")
}

// setting reads a setting's value as the server applies it to a statement
// with the given settings.
func (e *Engine) setting(ctx context.Context, s ch.Settings, name string) (string, error) {
	if s != nil {
		ctx = ch.Context(ctx, ch.WithSettings(s))
	}
	row := e.conn.QueryRow(ctx, "SELECT value FROM system.settings WHERE name = "+Dialect.QuoteString(name))
	var v string
	if err := row.Scan(&v); err != nil {
		return "", err
	}
	return v, nil
}

// Conn exposes the connection pool, for tests and benchmarks that run
// plain SQL beside dpstat's (with Settings, still read-only).
func (e *Engine) Conn() driver.Conn { return e.conn }

// Settings returns the settings every statement of dpstat runs with.
func (e *Engine) Settings() ch.Settings {
	out := ch.Settings{}
	for k, v := range e.settings {
		out[k] = v
	}
	return out
}

// Dialect returns ClickHouse's dialect.
func (e *Engine) Dialect() engine.Dialect { return Dialect }

// Close closes every connection of the pool.
func (e *Engine) Close() error { return e.conn.Close() }

// Ping checks that the server answers, on a fresh connection when the
// pooled ones were lost (the pool dials a new one by itself).
func (e *Engine) Ping(ctx context.Context) error {
	err := e.conn.Ping(ctx)
	if err != nil && ctx.Err() == nil {
		err = e.conn.Ping(ctx)
	}
	if err != nil {
		return fmt.Errorf("clickhouse: database %q as user %q: %w", e.db, e.user, err)
	}
	return nil
}

// Bound returns how catalog table name is bound, or nil.
func (e *Engine) Bound(name string) *Table {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if t := e.bound[name]; t != nil {
		c := *t
		return &c
	}
	return nil
}

// Query runs one statement read-only, with the engine's time limit, and
// reads all of its rows; the statement is cancelled on the server when ctx
// ends. The catalog tables it reads (FROM "name", JOIN "name") are read
// through their bindings. Values are int64 (integers of every width that
// fit), *big.Int (wider integers and the exact sums in Decimal), float64,
// string, bool (UInt8, which dpstat's statements use only for booleans)
// or nil.
func (e *Engine) Query(ctx context.Context, text string, args ...any) (*engine.Rows, error) {
	ctx = ch.Context(ctx, ch.WithSettings(e.settings))
	rows, err := e.conn.Query(ctx, e.withBindings(text), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	types := rows.ColumnTypes()
	out := &engine.Rows{Columns: rows.Columns()}
	dest := make([]any, len(types))
	for i, t := range types {
		dest[i] = reflect.New(t.ScanType()).Interface()
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		vals := make([]any, len(dest))
		for i, d := range dest {
			if vals[i], err = convert(reflect.ValueOf(d).Elem().Interface()); err != nil {
				return nil, fmt.Errorf("clickhouse: column %s (%s): %w", out.Columns[i], types[i].DatabaseTypeName(), err)
			}
		}
		out.Rows = append(out.Rows, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// withBindings replaces each read of a bound catalog table, FROM "name"
// or JOIN "name" (with or without an alias), by its projection. String
// literals never hold a double quote in this dialect (QuoteString writes
// it as \x22), so every such pattern is a table reference.
func (e *Engine) withBindings(sql string) string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if out, ok := e.inlined(sql); ok {
		return out
	}
	names := make([]string, 0, len(e.bound))
	for name := range e.bound {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		q := Dialect.QuoteIdent(name)
		proj := "(" + e.bound[name].projection + ")"
		for _, kw := range []string{"FROM ", "JOIN "} {
			pat := kw + q
			var b strings.Builder
			rest := sql
			for {
				i := strings.Index(rest, pat)
				if i < 0 {
					b.WriteString(rest)
					break
				}
				after := rest[i+len(pat):]
				if strings.HasPrefix(after, `"`) { // a longer quoted name
					b.WriteString(rest[:i+len(pat)])
					rest = after
					continue
				}
				b.WriteString(rest[:i] + kw + proj)
				if !strings.HasPrefix(after, " AS ") {
					b.WriteString(" AS " + q)
				}
				rest = after
			}
			sql = b.String()
		}
	}
	return sql
}

// generatorAlias reports whether a column name begins as the names
// dpstat's statements give their own columns and stages do
// (schema.ReservedPrefix: _dp_u, _dp_k0, _dp_s0, _dp_r, …). The catalog
// refuses such a declared name, but a declared column may read a server
// column of such a name (from:): written into the statement's own
// SELECT, where a generated alias of that name is seen by every
// expression, it would be read as the alias, so such a table is always
// read through its projection, a subquery.
func generatorAlias(name string) bool { return schema.Reserved(name) }

// inlined writes the projection of the one bound table a statement reads
// (FROM "name", no JOIN) into the statement itself: FROM "name" becomes
// FROM the server's table, and each of its columns "col" becomes the
// expression that reads it. The SELECT that reads the table then reads it
// directly, so a Distributed table's shards run that SELECT, aggregation
// included, and send only its result (partial aggregates per group for a
// statement without a privacy unit). ok is false when the statement joins,
// or reads no bound table or several, or the table's columns cannot be
// inlined.
func (e *Engine) inlined(sql string) (string, bool) {
	if strings.Contains(sql, "JOIN ") {
		return "", false
	}
	var t *Table
	var name string
	for n, b := range e.bound {
		if strings.Contains(sql, "FROM "+Dialect.QuoteIdent(n)) {
			if t != nil {
				return "", false
			}
			t, name = b, n
		}
	}
	if t == nil || t.columns == nil {
		return "", false
	}
	// Only the SELECTs that read the table are rewritten (a stage read
	// twice is written twice): the stages around them read their own
	// columns, which may share a name with the table's.
	from := "FROM " + Dialect.QuoteIdent(name)
	type span struct{ start, end int }
	var spans []span
	for off := 0; ; {
		i := strings.Index(sql[off:], from)
		if i < 0 {
			break
		}
		start, end := selectSpan(sql, off+i)
		if len(spans) > 0 && start < spans[len(spans)-1].end {
			return "", false // one inside the other
		}
		spans = append(spans, span{start, end})
		off += i + len(from)
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		b.WriteString(sql[last:sp.start])
		if !t.inline(&b, sql[sp.start:sp.end], name) {
			return "", false
		}
		last = sp.end
	}
	b.WriteString(sql[last:])
	return b.String(), true
}

// inline writes sel, a SELECT that reads the table under the catalog name
// name, to b with the server's table in its FROM and each column replaced
// by the expression that reads it (not where it is an alias, after AS, or
// qualified); false when sel is not as dpstat writes it.
func (t *Table) inline(b *strings.Builder, sel, name string) bool {
	begin := b.Len()
	for i := 0; i < len(sel); {
		if sel[i] != '"' {
			b.WriteByte(sel[i])
			i++
			continue
		}
		// A quoted identifier (string literals hold no double quote).
		j, ident := i+1, strings.Builder{}
		for j < len(sel) && sel[j] != '"' {
			if sel[j] == '\\' && j+1 < len(sel) {
				j++
			}
			ident.WriteByte(sel[j])
			j++
		}
		if j >= len(sel) {
			return false
		}
		id := ident.String()
		expr, isCol := t.columns[id]
		done := b.String()[begin:]
		switch {
		case id == name && strings.HasSuffix(done, "FROM "):
			b.WriteString(t.Relation)
		case isCol && !strings.HasSuffix(done, ".") && !strings.HasSuffix(done, "AS "):
			b.WriteString("(" + expr + ")")
		default:
			b.WriteString(sel[i : j+1])
		}
		i = j + 1
	}
	return true
}

// selectSpan returns the bounds of the innermost parenthesized part of
// sql that holds position at (the whole of sql when none does), skipping
// string literals, whose parentheses are text.
func selectSpan(sql string, at int) (start, end int) {
	var opens []int
	inString := false
	for i := 0; i < len(sql); i++ {
		c := sql[i]
		switch {
		case inString && c == '\\':
			i++
		case inString:
			inString = c != '\''
		case c == '\'':
			inString = true
		case c == '(':
			opens = append(opens, i)
		case c == ')' && len(opens) > 0:
			if i > at && opens[len(opens)-1] < at {
				return opens[len(opens)-1] + 1, i
			}
			opens = opens[:len(opens)-1]
		}
	}
	if len(opens) > 0 && opens[len(opens)-1] < at {
		return opens[len(opens)-1] + 1, len(sql)
	}
	return 0, len(sql)
}

// convert turns a value scanned by the driver into one of the
// engine-neutral Go types.
func convert(v any) (any, error) {
	rv := reflect.ValueOf(v)
	for rv.IsValid() && rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil, nil
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return nil, nil
	}
	switch x := rv.Interface().(type) {
	case int64, float64, string, bool:
		return x, nil
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case uint8:
		return x != 0, nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), nil
		}
		return new(big.Int).SetUint64(x), nil
	case float32:
		return float64(x), nil
	case big.Int:
		return new(big.Int).Set(&x), nil
	case decimal.Decimal:
		return decimalInt(x)
	}
	return nil, fmt.Errorf("a value of Go type %s, which dpstat's statements do not produce", rv.Type())
}

// decimalInt converts a Decimal to the integer it holds, exactly.
func decimalInt(d decimal.Decimal) (any, error) {
	v := new(big.Int).Set(d.Coefficient())
	exp := d.Exponent()
	if exp >= 0 {
		return v.Mul(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(exp)), nil)), nil
	}
	div := new(big.Int).Exp(big.NewInt(10), big.NewInt(-int64(exp)), nil)
	q, r := new(big.Int).QuoRem(v, div, new(big.Int))
	if r.Sign() != 0 {
		return nil, fmt.Errorf("the decimal %s is not an integer; dpstat's statements return decimals only as exact integer sums", d)
	}
	return q, nil
}

// BindTable binds the catalog table name to relation, a table of the
// server ("db.table", or "table" in the DSN's database), after checking
// that it exists, that every declared column exists with a type that
// converts to the declared one without error for every value, and that the
// user may read it. Nothing is created on the server.
func (e *Engine) BindTable(ctx context.Context, name, relation string, columns []engine.Column) error {
	if len(columns) == 0 {
		return fmt.Errorf("clickhouse: table %s declares no columns", name)
	}
	db, tbl, err := splitRelation(relation, e.db)
	if err != nil {
		return fmt.Errorf("clickhouse: table %s: source %q: %w", name, relation, err)
	}
	qualified := Dialect.QuoteIdent(db) + "." + Dialect.QuoteIdent(tbl)
	ctx = ch.Context(ctx, ch.WithSettings(e.settings))
	t := &Table{Relation: qualified}
	row := e.conn.QueryRow(ctx, "SELECT engine, engine_full FROM system.tables WHERE database = "+Dialect.QuoteString(db)+" AND name = "+Dialect.QuoteString(tbl))
	if err := row.Scan(&t.Engine, &t.EngineFull); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("clickhouse: table %s: source %q: no table of that name in database %s is visible to user %q; give a name such as db.visits", name, relation, db, e.user)
		}
		return fmt.Errorf("clickhouse: table %s: source %q: %w", name, relation, err)
	}
	if t.Engine == "Distributed" {
		if err := e.describeDistributed(ctx, t); err != nil {
			return fmt.Errorf("clickhouse: table %s: source %s: %w", name, qualified, err)
		}
	}
	rows, err := e.conn.Query(ctx, "SELECT name, type FROM system.columns WHERE database = "+Dialect.QuoteString(db)+" AND table = "+Dialect.QuoteString(tbl))
	if err != nil {
		return fmt.Errorf("clickhouse: table %s: reading the columns of %s: %w", name, qualified, err)
	}
	type remoteColumn struct{ name, typ string }
	var remote []remoteColumn
	for rows.Next() {
		var c remoteColumn
		if err := rows.Scan(&c.name, &c.typ); err != nil {
			rows.Close()
			return fmt.Errorf("clickhouse: table %s: reading the columns of %s: %w", name, qualified, err)
		}
		remote = append(remote, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("clickhouse: table %s: reading the columns of %s: %w", name, qualified, err)
	}
	names := make([]string, len(remote))
	for i, r := range remote {
		names[i] = r.name
	}
	var errs []error
	sel := make([]string, len(columns))
	inline := map[string]string{}
	for i, c := range columns {
		j, err := engine.ServerColumn(names, c.SourceName(), "clickhouse: table "+name, qualified)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r := remote[j]
		expr, err := project(Dialect.QuoteIdent(r.name), r.typ, c)
		if err != nil {
			errs = append(errs, fmt.Errorf("clickhouse: table %s: column %s of %s is %s: %w", name, c.Name, qualified, r.typ, err))
			continue
		}
		sel[i] = expr + " AS " + Dialect.QuoteIdent(c.Name)
		if inline != nil {
			inline[c.Name] = expr
		}
		if generatorAlias(r.name) || generatorAlias(c.Name) {
			inline = nil
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	t.projection = "SELECT " + strings.Join(sel, ", ") + " FROM " + qualified
	if inline != nil && len(inline) == len(columns) {
		t.columns = inline
	}
	// The projection must compile and the user must be allowed to read
	// the table; LIMIT 0 reads no row.
	if err := e.conn.Exec(ctx, t.projection+" LIMIT 0"); err != nil {
		return fmt.Errorf("clickhouse: table %s: user %q cannot read %s: %w; the data owner allows the user to read the database (users.xml allow_databases, or GRANT SELECT ON %s TO %s)", name, e.user, qualified, err, qualified, e.user)
	}
	e.mu.Lock()
	e.bound[name] = t
	e.mu.Unlock()
	return nil
}

// splitRelation splits "db.table" (either part may be quoted with double
// quotes or backquotes) into its parts; a bare name is in database def.
func splitRelation(rel, def string) (db, table string, err error) {
	var parts []string
	cur, quote := "", rune(0)
	for _, r := range rel {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur += string(r)
		case r == '"' || r == '`':
			quote = r
		case r == '.':
			parts = append(parts, cur)
			cur = ""
		default:
			cur += string(r)
		}
	}
	parts = append(parts, cur)
	if quote != 0 {
		return "", "", fmt.Errorf("an unclosed quote; want db.table")
	}
	for _, p := range parts {
		if p == "" {
			return "", "", fmt.Errorf("an empty name; want db.table or table")
		}
	}
	switch len(parts) {
	case 1:
		return def, parts[0], nil
	case 2:
		return parts[0], parts[1], nil
	}
	return "", "", fmt.Errorf("%d dotted parts; want db.table or table", len(parts))
}

// distributedRE parses Distributed(cluster, db, table[, sharding key[,
// policy]]).
var distributedRE = regexp.MustCompile(`^Distributed\(\s*'?([^,']+)'?\s*,\s*'?([^,']+)'?\s*,\s*'?([^,']+)'?\s*(?:,\s*(.*))?\)`)

// describeDistributed reads the cluster, local table and sharding key of
// a Distributed table, and its number of shards.
func (e *Engine) describeDistributed(ctx context.Context, t *Table) error {
	m := distributedRE.FindStringSubmatch(t.EngineFull)
	if m == nil {
		return fmt.Errorf("cannot read the Distributed engine's parameters from %q", t.EngineFull)
	}
	t.Cluster, t.RemoteTable = m[1], m[2]+"."+m[3]
	if k := m[4]; k != "" {
		// A storage policy may follow the key (current versions).
		if i := strings.LastIndex(k, ", '"); i > 0 {
			k = k[:i]
		}
		t.ShardingKey = strings.TrimSpace(k)
	}
	row := e.conn.QueryRow(ctx, "SELECT toUInt64(uniqExact(shard_num)) FROM system.clusters WHERE cluster = "+Dialect.QuoteString(t.Cluster))
	var n uint64
	if err := row.Scan(&n); err != nil {
		return fmt.Errorf("reading the shards of cluster %s: %w", t.Cluster, err)
	}
	t.Shards = int(n)
	return nil
}

// ShardedBy reports whether a Distributed table's sharding key is a
// function of column col alone (col itself, or a hash of it), so that all
// rows with one value of col are on one shard.
func (t *Table) ShardedBy(col string) bool {
	if t.ShardingKey == "" {
		return false
	}
	k := strings.ReplaceAll(t.ShardingKey, " ", "")
	for _, form := range []string{col, "`" + col + "`", `"` + col + `"`} {
		if k == form {
			return true
		}
		for _, h := range []string{"cityHash64", "sipHash64", "intHash64", "intHash32", "xxHash64", "murmurHash3_64", "farmHash64"} {
			if k == h+"("+form+")" {
				return true
			}
		}
	}
	return false
}

// ShardedByUnit reports whether catalog table name is bound to a
// Distributed table whose sharding key is privacyUnit or a hash of it
// (ShardedBy): each person's rows are then on one shard, and dpstat bounds
// each person's contribution on the shards.
func (e *Engine) ShardedByUnit(name, privacyUnit string) bool {
	t := e.Bound(name)
	return t != nil && privacyUnit != "" && t.Engine == "Distributed" && t.ShardedBy(privacyUnit)
}

// Describe says how the catalog table name is read, for EXPLAIN: whether it
// is Distributed, how it is sharded, and where the bounding runs.
func (e *Engine) Describe(name, privacyUnit string) []string {
	t := e.Bound(name)
	if t == nil {
		return nil
	}
	if t.Engine != "Distributed" {
		return []string{fmt.Sprintf("engine: ClickHouse table %s (%s), read on one server", t.Relation, t.Engine)}
	}
	line := fmt.Sprintf("engine: ClickHouse Distributed table %s over %s on cluster %s (%d shards), sharding key %s", t.Relation, t.RemoteTable, t.Cluster, t.Shards, orNone(t.ShardingKey))
	out := []string{line}
	switch {
	case privacyUnit == "":
		out = append(out, "engine: no privacy unit: each shard filters and projects its rows, the server dpstat connects to aggregates them")
	case t.ShardedBy(privacyUnit):
		out = append(out, fmt.Sprintf("engine: sharded by the privacy unit %s, so each person's rows are on one shard; each shard filters its rows and bounds each person's contribution (at most L∞ rows per group, at most L0 groups), then sums them per group, and only each shard's per-group partial sums cross the network, which the server dpstat connects to adds (a query that joins another table or pre-aggregates per person bounds on that server instead)", privacyUnit))
	default:
		out = append(out, fmt.Sprintf("engine: not sharded by the privacy unit %s, so a person's rows may be on several shards; the answer is still exact: each shard filters and projects its rows and the server dpstat connects to bounds each person over all of them (the projected rows of the query cross the network once)", privacyUnit))
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
