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
	"strconv"
	"strings"
	"sync"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/shopspring/decimal"

	"github.com/dpstat/dpstat/engine"
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
	engine.Register("clickhouse", engine.Driver{Dialect: Dialect, Open: openSpec})
}

// openSpec opens the engine a catalog's `engine:` section describes.
func openSpec(ctx context.Context, spec engine.Spec) (engine.Engine, error) {
	opts, err := spec.ServerOptions("clickhouse", "ClickHouse")
	if err != nil {
		return nil, err
	}
	return Open(ctx, opts)
}

// Open connects to the server, checks that it answers and that dpstat's
// statements run read-only, and returns the engine.
func Open(ctx context.Context, opts Options) (*Engine, error) {
	if opts.StatementTimeout < 0 {
		return nil, fmt.Errorf("clickhouse: statement timeout %v: want a positive duration (or zero for the default %v)", opts.StatementTimeout, engine.DefaultStatementTimeout)
	}
	if opts.MaxConns < 0 {
		return nil, fmt.Errorf("clickhouse: MaxConns = %d: want a positive number (or zero for the default %d)", opts.MaxConns, engine.DefaultMaxConns)
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
	cfg.MaxOpenConns = engine.DefaultMaxConns
	if opts.MaxConns > 0 {
		cfg.MaxOpenConns = min(opts.MaxConns, 1<<16)
	}
	cfg.MaxIdleConns = min(cfg.MaxOpenConns, 5)
	cfg.ClientInfo.Products = append(cfg.ClientInfo.Products, struct{ Name, Version string }{"dpstat", "1"})
	conn, err := ch.Open(cfg)
	if err != nil {
		return nil, fmt.Errorf("clickhouse: %w", err)
	}
	timeout := opts.StatementTimeout
	if timeout == 0 {
		timeout = engine.DefaultStatementTimeout
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

// generatorAlias matches the names dpstat's statements give their own
// columns and stages (u, k0, v1, s2, rk, h, b, c, bs, r, …): a table
// column of such a name could be mistaken for one when the projection is
// written into the statement's own SELECT, so such a table is always read
// through a subquery.
var generatorAlias = regexp.MustCompile(`^([kvst][0-9]+|k[nv][0-9]+|u|r|rk|rn|h|b|c|bs|one|numbered|kept|thresholds|per_unit\w*|per_group|per_shard|r_bounded|unit_groups\w*)$`)

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
	find := func(col string) (remoteColumn, bool) {
		var folded []remoteColumn
		for _, r := range remote {
			if r.name == col {
				return r, true
			}
			if strings.EqualFold(r.name, col) {
				folded = append(folded, r)
			}
		}
		if len(folded) == 1 {
			return folded[0], true
		}
		return remoteColumn{}, false
	}
	var errs []error
	sel := make([]string, len(columns))
	inline := map[string]string{}
	for i, c := range columns {
		r, ok := find(c.Name)
		if !ok {
			have := make([]string, len(remote))
			for j, r := range remote {
				have[j] = r.name
			}
			errs = append(errs, fmt.Errorf("clickhouse: table %s: column %s does not exist in %s; it has: %s", name, c.Name, qualified, strings.Join(have, ", ")))
			continue
		}
		expr, err := project(Dialect.QuoteIdent(r.name), r.typ, c)
		if err != nil {
			errs = append(errs, fmt.Errorf("clickhouse: table %s: column %s of %s is %s: %w", name, c.Name, qualified, r.typ, err))
			continue
		}
		sel[i] = expr + " AS " + Dialect.QuoteIdent(c.Name)
		if inline != nil {
			inline[c.Name] = expr
		}
		if generatorAlias.MatchString(strings.ToLower(r.name)) || generatorAlias.MatchString(strings.ToLower(c.Name)) {
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

// typeRE strips the wrappers that do not change a column's values.
var typeRE = regexp.MustCompile(`^(?:Nullable|LowCardinality)\((.*)\)$`)

// baseType strips Nullable(...) and LowCardinality(...) from a type.
func baseType(t string) string {
	for {
		m := typeRE.FindStringSubmatch(t)
		if m == nil {
			return t
		}
		t = m[1]
	}
}

// project spells the read of a server column (quoted as col, of type typ)
// as the declared engine-neutral type. Only conversions that succeed for
// every value are accepted, so no row can make a later statement fail.
func project(col, typ string, c engine.Column) (string, error) {
	base := baseType(typ)
	accept := func(ok bool, want string) error {
		if ok {
			return nil
		}
		return fmt.Errorf("declared %s: want %s (or a view that converts it)", c.Type.CatalogName(), want)
	}
	signed := base == "Int8" || base == "Int16" || base == "Int32" || base == "Int64"
	small := base == "UInt8" || base == "UInt16" || base == "UInt32"
	isFloat := base == "Float32" || base == "Float64"
	switch c.Type {
	case engine.Integer, engine.Integer32:
		if err := accept(signed || small, "Int8, Int16, Int32, Int64, UInt8, UInt16 or UInt32 (a UInt64 can exceed Int64)"); err != nil {
			return "", err
		}
		if base == "Int64" {
			return col, nil // no conversion: the server's column as it is
		}
		return "CAST(" + col + " AS Nullable(Int64))", nil
	case engine.Double:
		if err := accept(isFloat || signed || small || base == "UInt64" || strings.HasPrefix(base, "Decimal"),
			"Float64, Float32, an integer type or a Decimal"); err != nil {
			return "", err
		}
		// Adding 0 turns -0 into 0 (IEEE 754), so that they are one group
		// key: ClickHouse groups by the bits of a Float64.
		x := "CAST(" + col + " AS Nullable(Float64))"
		if base == "Float64" {
			x = col // no conversion: isNaN and + 0 read it as it is
		}
		if isFloat && !c.KeepNaN {
			return "if(isNaN(" + x + "), CAST(NULL AS Nullable(Float64)), " + x + " + toFloat64(0))", nil
		}
		return x + " + toFloat64(0)", nil
	case engine.Boolean:
		if err := accept(base == "UInt8" || base == "Bool", "UInt8 (0 false, anything else true) or Bool"); err != nil {
			return "", err
		}
		return "CAST(" + col + " != 0 AS Nullable(UInt8))", nil
	case engine.Text:
		if err := accept(base == "String" || strings.HasPrefix(base, "Enum8(") || strings.HasPrefix(base, "Enum16("),
			"String or an Enum (FixedString pads its values with zero bytes: expose it through a view)"); err != nil {
			return "", err
		}
		if base == "String" {
			return col, nil
		}
		return enumText(col, base)
	case engine.Date:
		// A Date (Date32 on servers that have it) converts to its
		// number of days since 1970-01-01.
		if err := accept(base == "Date" || base == "Date32", "Date or Date32"); err != nil {
			return "", err
		}
		return "CAST(" + col + " AS Nullable(Int64))", nil
	case engine.Timestamp:
		// A DateTime is a Unix time in seconds: it reads as the UTC
		// time it denotes, whatever the column's or the server's time
		// zone, in microseconds.
		if err := accept(base == "DateTime" || strings.HasPrefix(base, "DateTime("), "DateTime (seconds; a DateTime64 through a view that converts it to DateTime)"); err != nil {
			return "", err
		}
		return "(CAST(" + col + " AS Nullable(Int64)) * 1000000)", nil
	}
	return "", fmt.Errorf("declared type %d is not one a catalog declares", c.Type)
}

// enumText spells the read of an Enum8 or Enum16 column (of type typ,
// without Nullable) as text: its number mapped to its name by a CASE of
// constants (multiIf). toString of a Nullable Enum reads the value stored under a
// NULL (0, no name of most enums) and fails, and ClickHouse evaluates
// every function over every row, NULLs included, so the NULL-safe read
// never names an enum value: the number (any value reads) picks the name
// and a NULL matches no WHEN.
func enumText(col, typ string) (string, error) {
	names, nums, err := enumValues(typ)
	if err != nil {
		return "", err
	}
	n := "CAST(" + col + " AS Nullable(Int16))"
	var b strings.Builder
	b.WriteString("multiIf(")
	for i, name := range names {
		b.WriteString(n + " = " + strconv.FormatInt(nums[i], 10) + ", " + Dialect.QuoteString(name) + ", ")
	}
	b.WriteString("CAST(NULL AS Nullable(String)))")
	return b.String(), nil
}

// enumValues reads the names and numbers of an Enum8('a' = 1, …) or
// Enum16 type as the server writes it (names quoted, with backslash
// escapes).
func enumValues(typ string) (names []string, nums []int64, err error) {
	open := strings.IndexByte(typ, '(')
	if open < 0 || !strings.HasSuffix(typ, ")") {
		return nil, nil, fmt.Errorf("cannot read the enum type %s", typ)
	}
	rest := typ[open+1 : len(typ)-1]
	bad := fmt.Errorf("cannot read the enum type %s", typ)
	for len(rest) > 0 {
		if rest[0] != '\'' {
			return nil, nil, bad
		}
		var name strings.Builder
		i := 1
		for ; i < len(rest) && rest[i] != '\''; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
				switch rest[i] {
				case 'n':
					name.WriteByte('\n')
				case 't':
					name.WriteByte('\t')
				case '0':
					name.WriteByte(0)
				default:
					name.WriteByte(rest[i])
				}
				continue
			}
			name.WriteByte(rest[i])
		}
		if i >= len(rest) {
			return nil, nil, bad
		}
		rest = strings.TrimLeft(rest[i+1:], " ")
		if !strings.HasPrefix(rest, "=") {
			return nil, nil, bad
		}
		rest = strings.TrimLeft(rest[1:], " ")
		end := strings.IndexByte(rest, ',')
		if end < 0 {
			end = len(rest)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(rest[:end]), 10, 64)
		if err != nil {
			return nil, nil, bad
		}
		names, nums = append(names, name.String()), append(nums, n)
		rest = strings.TrimLeft(strings.TrimPrefix(rest[end:], ","), " ")
	}
	if len(names) == 0 {
		return nil, nil, bad
	}
	return names, nums, nil
}

// Dialect is ClickHouse's SQL dialect, as versions 18.16 and later run
// it: no WITH subqueries (engine.Nested), LIMIT n BY (engine.LimitBy),
// exact sums in Decimal128, NULL-propagating least and greatest, casts that
// truncate, booleans as UInt8.
var Dialect engine.Dialect = dialect{}

type dialect struct{}

var (
	_ engine.Nested          = dialect{}
	_ engine.LimitBy         = dialect{}
	_ engine.NullPropagating = dialect{}
	_ engine.FloatLiterals   = dialect{}
	_ engine.TruncatingCast  = dialect{}
	_ engine.BoolLiterals    = dialect{}
	_ engine.NoNotBetween    = dialect{}
	_ engine.DateSpeller     = dialect{}
	_ engine.TextSpeller     = dialect{}
)

func (dialect) Name() string { return "clickhouse" }

// QuoteIdent wraps the name in double quotes, escaping backslashes and
// double quotes with a backslash.
func (dialect) QuoteIdent(name string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(name) + `"`
}

// QuoteString renders a string literal: backslashes and quotes are
// escaped, and a double quote is written \x22, so that no literal holds a
// double quote (Engine.Query relies on it).
func (dialect) QuoteString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, `"`, `\x22`).Replace(s) + "'"
}

// TypeName spells every type Nullable: a CAST of NULL to a type that is
// not Nullable fails in ClickHouse, and every arm of a CASE is evaluated
// on every row.
func (dialect) TypeName(t engine.Type) string {
	switch t {
	case engine.Integer:
		return "Nullable(Int64)"
	case engine.Double:
		return "Nullable(Float64)"
	case engine.Boolean:
		return "Nullable(UInt8)"
	case engine.Integer32:
		return "Nullable(Int32)"
	default:
		return "Nullable(String)"
	}
}

// ExactSum sums in Decimal128 with scale 0 (38 digits): ClickHouse's sum
// of Int64 wraps around on overflow; 2^63 · 2^64 rows would be needed to
// overflow this one.
func (dialect) ExactSum(expr string) string { return "sum(toDecimal128(" + expr + ", 0))" }

// GridSum is ClickHouse's sum of Float64, which adds in IEEE 754 doubles
// (exact on the grid in any order, see engine.Dialect).
func (dialect) GridSum(expr string) string { return "sum(" + expr + ")" }

// RoundToGrid adds and subtracts 1.5·2^(52+exp) in Float64; ClickHouse
// evaluates plus and minus as written.
func (dialect) RoundToGrid(expr string, exp int) string {
	c := strconv.FormatFloat(math.Ldexp(1.5, 52+exp), 'g', -1, 64)
	if !strings.ContainsAny(c, ".eE") {
		c += ".0"
	}
	return "(" + expr + " + CAST(" + c + " AS Float64) - CAST(" + c + " AS Float64))"
}

// Random is a uniform number in [0, 1) per row. dpstat's statements for
// ClickHouse choose rows with RowKey instead.
func (dialect) Random() string { return "(rand64() / 18446744073709551616.0)" }

// SupportsQualify is false.
func (dialect) SupportsQualify() bool { return false }

// OneJoin is true: ClickHouse 18.16 runs one JOIN per SELECT.
func (dialect) OneJoin() bool { return true }

// RowKey hashes the salt and each value with cityHash64, a NULL as a
// value of its own (isNull, then the value with NULL read as the type's
// default).
func (dialect) RowKey(salt uint64, exprs []string) string {
	parts := []string{"toUInt64(" + strconv.FormatUint(salt, 10) + ")"}
	for _, e := range exprs {
		parts = append(parts, "isNull("+e+")", "assumeNotNull("+e+")")
	}
	return "cityHash64(" + strings.Join(parts, ", ") + ")"
}

// KeepFirst is ORDER BY key LIMIT n BY partition.
func (dialect) KeepFirst(key string, partition []string, n int64) string {
	return "ORDER BY " + key + " LIMIT " + strconv.FormatInt(n, 10) + " BY " + strings.Join(partition, ", ")
}

// KeptRows sorts the rows' tuples by key and keeps the first n.
func (dialect) KeptRows(key string, exprs []string, n int64) string {
	return "arraySlice(arraySort(t -> t.1, groupArray(tuple(" + key + ", " + strings.Join(exprs, ", ") + "))), 1, " + strconv.FormatInt(n, 10) + ")"
}

// KeptCount counts the non-NULL values of the i-th expression (element
// i+1 of each tuple, after the key).
func (dialect) KeptCount(list string, i int) string {
	return "toUInt64(arrayCount(t -> NOT isNull(t." + strconv.Itoa(i+1) + "), " + list + "))"
}

// KeptExactSum sums the high and low 32 bits of each value apart, in
// 64 bits (at most 2^32 values of at most 2^31 in magnitude cannot
// overflow), and joins them in a Decimal128: arraySum has no Decimal.
// The split is floor division with a non-negative remainder, so that
// hi·2^32 + lo = x for every Int64 x: lo = ((x % 2^32) + 2^32) % 2^32
// (in [0, 2^32)) and hi = (x − lo) / 2^32, exact. ClickHouse's intDiv
// and modulo truncate toward zero, and a divisor typed UInt64 turns a
// negative Int64 into a huge unsigned one, so every constant is an Int64,
// and so is each value (an Int32 summand mixed with Int64 constants in
// these lambdas stops an 18.16 server).
func (dialect) KeptExactSum(list string, i int) string {
	e := "t." + strconv.Itoa(i+1)
	x := "toInt64(assumeNotNull(" + e + "))"
	lo := "modulo(modulo(" + x + ", " + splitBase + ") + " + splitBase + ", " + splitBase + ")"
	hi := "intDiv(" + x + " - " + lo + ", " + splitBase + ")"
	part := func(f string) string {
		return "arraySum(arrayMap(t -> " + f + ", arrayFilter(t -> NOT isNull(" + e + "), " + list + ")))"
	}
	return "if(arrayExists(t -> NOT isNull(" + e + "), " + list + "), toDecimal128(" + part(hi) + ", 0) * toDecimal128(4294967296, 0) + toDecimal128(" + part(lo) + ", 0), NULL)"
}

// splitBase is 2^32 as an Int64, the base KeptExactSum splits values by.
const splitBase = "toInt64(4294967296)"

// KeptGridSum sums the non-NULL i-th elements as doubles.
func (dialect) KeptGridSum(list string, i int) string {
	e := "t." + strconv.Itoa(i+1)
	return "if(arrayExists(t -> NOT isNull(" + e + "), " + list + "), arraySum(arrayMap(t -> assumeNotNull(" + e + "), arrayFilter(t -> NOT isNull(" + e + "), " + list + "))), NULL)"
}

// ShardGroups joins the table's rows on each shard to perGroup, whose
// innermost SELECT reads the same Distributed table: with
// distributed_product_mode = 'local' (PerShard) a shard reads its local
// table there, so perGroup's sums are that shard's. ClickHouse sends a
// Distributed table's shards only the SELECT that reads it, and a join
// subquery of that SELECT goes with it: the join is how the per-group
// level runs on the shards (a subquery in FROM would run on the server
// dpstat connects to). The rows join perGroup's one row per group by
// the keys (encoded as isNull and assumeNotNull, since a NULL key
// matches nothing) and any() takes the group's sums. The rows are read
// once more for this, their keys only: a scan per shard, far cheaper
// than the bounding.
func (dialect) ShardGroups(source, where string, keyExprs, keys, sums []string, perGroup string) string {
	var left, right, using, outKeys, outSums []string
	for i, k := range keys {
		n, v := "kn"+strconv.Itoa(i), "kv"+strconv.Itoa(i)
		left = append(left, "isNull("+keyExprs[i]+") AS "+n, "assumeNotNull("+keyExprs[i]+") AS "+v)
		right = append(right, "isNull("+k+") AS "+n, "assumeNotNull("+k+") AS "+v, k)
		using = append(using, n, v)
		outKeys = append(outKeys, k)
	}
	for _, s := range sums {
		right = append(right, s)
		outSums = append(outSums, "any("+s+") AS "+s)
	}
	if len(keys) == 0 {
		// One row of sums: every row of the shard joins it.
		q := "SELECT " + strings.Join(outSums, ", ") + " FROM " + source + " CROSS JOIN (" + perGroup + ") AS per_group"
		if where != "" {
			q += " WHERE " + where
		}
		return q
	}
	q := "SELECT " + strings.Join(append(append(left, outKeys...), outSums...), ", ") + " FROM " + source +
		" ANY INNER JOIN (SELECT " + strings.Join(right, ", ") + " FROM (" + perGroup + ")) AS per_group USING " + strings.Join(using, ", ")
	if where != "" {
		q += " WHERE " + where
	}
	return q + " GROUP BY " + strings.Join(append(using, outKeys...), ", ")
}

// PerShard sets distributed_group_by_no_merge: each shard runs the
// SELECT over a Distributed table to its end; and
// distributed_product_mode = 'local': a shard reads its local table in
// the join subquery of ShardGroups.
func (dialect) PerShard() string {
	return " SETTINGS distributed_group_by_no_merge = 1, distributed_product_mode = 'local'"
}

// Collect is groupArray, which skips NULLs.
func (dialect) Collect(arg string) string { return "groupArray(" + arg + ")" }

// Unnest is arrayJoin.
func (dialect) Unnest(list string) string { return "arrayJoin(" + list + ")" }

// BoolLiteral is 1 or 0.
func (dialect) BoolLiteral(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// Extremum spells a NULL-skipping least or greatest: ClickHouse's return
// NULL when an argument is NULL, and refuse to compare Int64 with Float64,
// so when a Float64 literal is among the arguments every other argument is
// read as Float64 (as DuckDB converts them; Nullable(Float64) when it is). A literal argument is
// never NULL: f(coalesce(a, lit), lit) skips a NULL a; otherwise
// f(coalesce(a, b), coalesce(b, a)) is b when a is NULL, a when b is, and
// NULL when both are.
func (dialect) Extremum(f string, args []string) string {
	isLit := func(a string) bool { return floatLitRE.MatchString(a) || intLitRE.MatchString(a) }
	anyFloat := false
	for _, a := range args {
		anyFloat = anyFloat || floatLitRE.MatchString(a)
	}
	conv := make([]string, len(args))
	for i, a := range args {
		conv[i] = a
		isFloatExtremum := (strings.HasPrefix(a, "least(") || strings.HasPrefix(a, "greatest(")) && strings.Contains(a, "toFloat64(")
		if anyFloat && !floatLitRE.MatchString(a) && !isFloatExtremum {
			// toFloat64 keeps a column that cannot be NULL out of
			// Nullable, whose arithmetic costs about a third more over
			// a clamped sum; a Nullable argument stays Nullable.
			conv[i] = "toFloat64(" + a + ")"
			if a == "NULL" {
				conv[i] = "CAST(NULL AS Nullable(Float64))"
			}
		}
	}
	out, outLit := conv[0], isLit(args[0])
	for i, b := range conv[1:] {
		switch {
		case outLit && isLit(args[i+1]):
			out = f + "(" + out + ", " + b + ")"
		case isLit(args[i+1]):
			out = f + "(coalesce(" + out + ", " + b + "), " + b + ")"
		case outLit:
			out = f + "(" + out + ", coalesce(" + b + ", " + out + "))"
		default:
			out = f + "(coalesce(" + out + ", " + b + "), coalesce(" + b + ", " + out + "))"
		}
		outLit = false
	}
	return out
}

var (
	floatLitRE = regexp.MustCompile(`^toFloat64\([-+0-9.eE]+\)$`)
	intLitRE   = regexp.MustCompile(`^-?[0-9]+$`)
)

// FloatLiteral is toFloat64(text), a constant that is not Nullable.
func (dialect) FloatLiteral(text string) string { return "toFloat64(" + text + ")" }

// TruncatingCast marks casts of Float64 to integers, which truncate.
func (dialect) TruncatingCast() {}

// NoNotBetween marks the missing NOT BETWEEN of 18.16.
func (dialect) NoNotBetween() {}

// lastDay is 2105-12-31, the last day of ClickHouse 18.16's Date, in days
// since 1970-01-01.
const lastDay = 49672

// dayNumber spells day (days since 1970-01-01, an integer or integral
// Float64, or NULL) as a Nullable(Int64) clamped to the days a Date holds,
// and as that Date. Clamping keeps every date function total (the date
// functions of 18.16 wrap around outside the range): a declared bound
// beyond it is moved into it, and a stored Date after 2105 (the type holds
// days to 2149) reads as 2105-12-31.
func dayNumber(day string) (n, date string) {
	n = "CAST(least(greatest(" + day + ", 0), " + strconv.Itoa(lastDay) + ") AS Nullable(Int64))"
	return n, "toDate(CAST(" + n + " AS Nullable(UInt16)))"
}

// DayRange is the range of a Date, from 1970-01-01 to 2105-12-31 (see
// engine.DayRanger).
func (dialect) DayRange() (int64, int64) { return 0, lastDay }

// TruncDay spells date_trunc with toStartOfYear, toStartOfQuarter and
// toStartOfMonth, and the ISO week's Monday by subtracting the day of the
// week (toMonday would leave the range at 1970-01-01).
func (dialect) TruncDay(unit, day string) string {
	n, date := dayNumber(day)
	switch unit {
	case "year":
		return "CAST(toStartOfYear(" + date + ") AS Nullable(Int64))"
	case "quarter":
		return "CAST(toStartOfQuarter(" + date + ") AS Nullable(Int64))"
	case "month":
		return "CAST(toStartOfMonth(" + date + ") AS Nullable(Int64))"
	case "week":
		return "(" + n + " - (toDayOfWeek(" + date + ") - 1))"
	}
	return n
}

// DatePart spells EXTRACT with toYear, toQuarter, toMonth, toDayOfMonth
// and toDayOfWeek (ISO: 1 for Monday); the day of the year and the ISO
// week are computed from toStartOfYear (of the week's Thursday, for the
// ISO week), by integer arithmetic.
func (dialect) DatePart(field, day string) string {
	n, date := dayNumber(day)
	var x string
	switch field {
	case "year":
		x = "toYear(" + date + ")"
	case "quarter":
		x = "toQuarter(" + date + ")"
	case "month":
		x = "toMonth(" + date + ")"
	case "day":
		x = "toDayOfMonth(" + date + ")"
	case "isodow":
		x = "toDayOfWeek(" + date + ")"
	case "dow":
		x = "(toDayOfWeek(" + date + ") % 7)"
	case "doy":
		x = "(" + n + " - CAST(toStartOfYear(" + date + ") AS Nullable(Int64)) + 1)"
	case "week":
		// The ISO week holds its Thursday; it is the Thursday's week of
		// that Thursday's year.
		thu, thuDate := dayNumber(n + " + 4 - toDayOfWeek(" + date + ")")
		x = "(intDiv(" + thu + " - CAST(toStartOfYear(" + thuDate + ") AS Nullable(Int64)), 7) + 1)"
	default:
		return "CAST(NULL AS Nullable(Int64))"
	}
	return "CAST(" + x + " AS Nullable(Int64))"
}

// TextFunc spells lower and upper with ClickHouse's lower and upper, which
// change the ASCII letters only (as the other engines' translate);
// length with lengthUTF8, substr with substringUTF8 (code points); trims
// with regular expressions that remove spaces only; concat with coalesce
// of each argument to the empty string (ClickHouse's concat is NULL when an argument
// is); starts_with by comparing the prefix's bytes.
func (dialect) TextFunc(name string, args []string) (string, bool) {
	switch {
	case (name == "lower" || name == "upper") && len(args) == 1:
		return name + "(" + args[0] + ")", true
	case name == "length" && len(args) == 1:
		return "CAST(lengthUTF8(" + args[0] + ") AS Nullable(Int64))", true
	case name == "trim" && len(args) == 1:
		return "replaceRegexpOne(replaceRegexpOne(" + args[0] + ", '^ +', ''), ' +$', '')", true
	case name == "ltrim" && len(args) == 1:
		return "replaceRegexpOne(" + args[0] + ", '^ +', '')", true
	case name == "rtrim" && len(args) == 1:
		return "replaceRegexpOne(" + args[0] + ", ' +$', '')", true
	case name == "||" && len(args) == 2:
		return "concat(" + args[0] + ", " + args[1] + ")", true
	case name == "concat" && len(args) > 0:
		parts := make([]string, 0, len(args)+1)
		for _, a := range args {
			parts = append(parts, "coalesce("+a+", '')")
		}
		if len(parts) == 1 {
			parts = append(parts, "''")
		}
		return "concat(" + strings.Join(parts, ", ") + ")", true
	case name == "starts_with" && len(args) == 2:
		return "(substring(" + args[0] + ", 1, length(" + args[1] + ")) = " + args[1] + ")", true
	case name == "substr" && (len(args) == 2 || len(args) == 3):
		return "substringUTF8(" + strings.Join(args, ", ") + ")", true
	}
	return "", false
}
