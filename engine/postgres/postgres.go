// Package postgres runs dpstat's generated SQL on a PostgreSQL server
// (version 12 or later), over tables and views that stay where they are.
//
// dpstat never writes to the server: every session it opens sets
// default_transaction_read_only, so each statement runs in a read-only
// transaction, and the role it connects as needs nothing beyond SELECT on
// the catalog's tables (docs/engines.md). Connections come from a pool
// shared by concurrent queries; each session has a statement timeout, and
// a query whose context ends is cancelled on the server.
//
// A catalog table is bound (BindTable) to a relation of the server with a
// projection that exposes only the declared columns, each cast to its
// declared type, with NaN in float columns read as NULL; the projection is
// inlined into every statement as a common table expression named after
// the catalog table, so nothing is created on the server.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dpstat/dpstat/engine"
)

// Options configures a connection to a PostgreSQL server (engine.ServerOptions;
// docs/engines.md gives the form of its DSN).
type Options = engine.ServerOptions

// Engine is a pool of read-only sessions on one PostgreSQL database. It is
// safe for concurrent use.
type Engine struct {
	pool *pgxpool.Pool
	user string
	db   string

	mu    sync.RWMutex
	bound map[string]string // catalog name → projection over the relation
}

var (
	_ engine.Engine = (*Engine)(nil)
	_ engine.Binder = (*Engine)(nil)
	_ engine.Pinger = (*Engine)(nil)
)

// init registers PostgreSQL as the engine kind "postgres".
func init() {
	engine.RegisterServer("postgres", "PostgreSQL", Dialect, Open)
}

// Open connects to the server, checks that it answers and that sessions
// are read-only, and returns the engine.
func Open(ctx context.Context, opts Options) (*Engine, error) {
	timeout, conns, err := opts.Limits("postgres", 1<<20)
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(opts.DSN)
	if err != nil {
		return nil, fmt.Errorf("postgres: dsn %q: %w; want a URL such as postgres://user@host:5432/db or key=value pairs such as host=h dbname=db user=u", opts.DSN, err)
	}
	if opts.Password != "" {
		cfg.ConnConfig.Password = opts.Password
	}
	rp := cfg.ConnConfig.RuntimeParams
	// Every transaction of the session is read-only: dpstat never writes.
	rp["default_transaction_read_only"] = "on"
	rp["statement_timeout"] = strconv.FormatInt(max(timeout.Milliseconds(), 1), 10)
	if rp["application_name"] == "" {
		rp["application_name"] = "dpstat"
	}
	cfg.MaxConns = int32(conns)
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	// Each statement is described once and its rows sent in binary (exact
	// doubles and numerics); generated statements are not cached, as
	// almost every one is new.
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeDescribeExec
	// When a query's context ends, ask the server to cancel the statement
	// at once, and give up on the connection if it does not stop soon.
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 3 * time.Second}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	e := &Engine{pool: pool, user: cfg.ConnConfig.User, db: cfg.ConnConfig.Database, bound: map[string]string{}}
	var readOnly string
	if err := pool.QueryRow(ctx, "SHOW transaction_read_only").Scan(&readOnly); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: cannot reach database %q as user %q: %w", e.db, e.user, err)
	}
	if readOnly != "on" {
		pool.Close()
		return nil, fmt.Errorf("postgres: sessions are not read-only (transaction_read_only = %q); dpstat needs default_transaction_read_only to take effect", readOnly)
	}
	return e, nil
}

// Pool exposes the connection pool, for tests and benchmarks that run
// plain SQL beside dpstat's (still read-only).
func (e *Engine) Pool() *pgxpool.Pool { return e.pool }

// Dialect returns PostgreSQL's dialect.
func (e *Engine) Dialect() engine.Dialect { return Dialect }

// Close closes every connection of the pool.
func (e *Engine) Close() error {
	e.pool.Close()
	return nil
}

// Ping checks that the server answers, with a fresh connection if the
// pooled ones were lost (the pool reconnects by itself).
func (e *Engine) Ping(ctx context.Context) error {
	err := e.pool.Ping(ctx)
	if err != nil && ctx.Err() == nil {
		// The pooled connections may have been lost with a restart of the
		// server: drop them all and try once on a fresh one.
		e.pool.Reset()
		err = e.pool.Ping(ctx)
	}
	if err != nil {
		return fmt.Errorf("postgres: database %q as user %q: %w", e.db, e.user, err)
	}
	return nil
}

// Query runs one statement in a read-only transaction and reads all of its
// rows. The catalog tables it names are read through their bindings.
// Values are int64 (integers of every width), float64, string, bool,
// *big.Int (numerics, which dpstat's statements use only for exact sums)
// or nil.
func (e *Engine) Query(ctx context.Context, sql string, args ...any) (*engine.Rows, error) {
	rows, err := e.pool.Query(ctx, e.withBindings(sql), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	fields := rows.FieldDescriptions()
	out := &engine.Rows{Columns: make([]string, len(fields))}
	for i, f := range fields {
		out.Columns[i] = f.Name
	}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		for i, v := range vals {
			if vals[i], err = convert(v); err != nil {
				return nil, fmt.Errorf("postgres: column %s: %w", out.Columns[i], err)
			}
		}
		out.Rows = append(out.Rows, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// withBindings prefixes the statement with the projection of every bound
// table it names, as common table expressions that PostgreSQL inlines
// (NOT MATERIALIZED): the statement then reads the catalog's columns under
// the catalog's names, whatever the relation is called on the server.
func (e *Engine) withBindings(sql string) string {
	e.mu.RLock()
	var names []string
	for name := range e.bound {
		if strings.Contains(sql, Dialect.QuoteIdent(name)) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	ctes := make([]string, len(names))
	for i, name := range names {
		ctes[i] = Dialect.QuoteIdent(name) + " AS NOT MATERIALIZED (" + e.bound[name] + ")"
	}
	e.mu.RUnlock()
	if len(ctes) == 0 {
		return sql
	}
	return "WITH " + strings.Join(ctes, ",\n") + "\nSELECT * FROM (" + sql + ") AS dpstat_statement"
}

// convert turns a value decoded by pgx into one of the engine-neutral Go
// types.
func convert(v any) (any, error) {
	switch x := v.(type) {
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case float32:
		return float64(x), nil
	case pgtype.Numeric:
		return numericInt(x)
	}
	return v, nil
}

// numericInt converts a numeric to the integer it holds, exactly.
func numericInt(n pgtype.Numeric) (any, error) {
	switch {
	case !n.Valid:
		return nil, nil
	case n.NaN || n.InfinityModifier != pgtype.Finite || n.Int == nil:
		return nil, fmt.Errorf("the numeric is not a finite number; dpstat's statements return numerics only as exact integer sums")
	}
	v := new(big.Int).Set(n.Int)
	if n.Exp >= 0 {
		return v.Mul(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n.Exp)), nil)), nil
	}
	div := new(big.Int).Exp(big.NewInt(10), big.NewInt(-int64(n.Exp)), nil)
	q, r := new(big.Int).QuoRem(v, div, new(big.Int))
	if r.Sign() != 0 {
		return nil, fmt.Errorf("the numeric %se%d is not an integer; dpstat's statements return numerics only as exact integer sums", n.Int, n.Exp)
	}
	return q, nil
}

// BindTable binds the catalog table name to relation, a table or view of
// the server (schema-qualified or found on the search path), after checking
// that the user may read it and that every declared column exists with a
// type that converts to the declared one without error for every value.
// Nothing is created on the server.
func (e *Engine) BindTable(ctx context.Context, name, relation string, columns []engine.Column) error {
	if len(columns) == 0 {
		return fmt.Errorf("postgres: table %s declares no columns", name)
	}
	var (
		oid       uint32
		qualified string
		kind      string
		canSelect bool
	)
	err := e.pool.QueryRow(ctx, `SELECT c.oid, quote_ident(n.nspname) || '.' || quote_ident(c.relname), c.relkind::text,
		has_any_column_privilege(c.oid, 'SELECT')
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = to_regclass($1)`, relation).Scan(&oid, &qualified, &kind, &canSelect)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("postgres: table %s: source %q: no table or view of that name is visible to user %q in database %q; give a schema-qualified name such as public.visits", name, relation, e.user, e.db)
	}
	if err != nil {
		return fmt.Errorf("postgres: table %s: source %q: %w; want a table or view name such as public.visits", name, relation, err)
	}
	switch kind {
	case "r", "v", "m", "p", "f":
	default:
		return fmt.Errorf("postgres: table %s: source %q (%s) is a %s; want a table, view, materialized view, partitioned or foreign table", name, relation, qualified, relkindName(kind))
	}
	if !canSelect {
		return fmt.Errorf("postgres: table %s: user %q may not read %s; the data owner grants it with: GRANT SELECT ON %s TO %s", name, e.user, qualified, qualified, Dialect.QuoteIdent(e.user))
	}
	rows, err := e.pool.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod), b.typname,
		has_column_privilege(a.attrelid, a.attnum, 'SELECT')
		FROM pg_attribute a
		JOIN pg_type t ON t.oid = a.atttypid
		JOIN pg_type b ON b.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY a.attnum`, oid)
	if err != nil {
		return fmt.Errorf("postgres: table %s: reading the columns of %s: %w", name, qualified, err)
	}
	type remoteColumn struct {
		name, typ, base string
		canSelect       bool
	}
	var remote []remoteColumn
	for rows.Next() {
		var c remoteColumn
		if err := rows.Scan(&c.name, &c.typ, &c.base, &c.canSelect); err != nil {
			rows.Close()
			return fmt.Errorf("postgres: table %s: reading the columns of %s: %w", name, qualified, err)
		}
		remote = append(remote, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres: table %s: reading the columns of %s: %w", name, qualified, err)
	}
	names := make([]string, len(remote))
	for i, r := range remote {
		names[i] = r.name
	}
	var errs []error
	sel := make([]string, len(columns))
	for i, c := range columns {
		j, err := engine.ServerColumn(names, c.SourceName(), "postgres: table "+name, qualified)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r := remote[j]
		if !r.canSelect {
			errs = append(errs, fmt.Errorf("postgres: table %s: user %q may not read column %s of %s; the data owner grants it with: GRANT SELECT (%s) ON %s TO %s",
				name, e.user, r.name, qualified, Dialect.QuoteIdent(r.name), qualified, Dialect.QuoteIdent(e.user)))
			continue
		}
		expr, err := project(Dialect.QuoteIdent(r.name), r.base, c)
		if err != nil {
			errs = append(errs, fmt.Errorf("postgres: table %s: column %s of %s is %s: %w", name, c.Name, qualified, r.typ, err))
			continue
		}
		sel[i] = expr + " AS " + Dialect.QuoteIdent(c.Name)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	e.mu.Lock()
	e.bound[name] = "SELECT " + strings.Join(sel, ", ") + " FROM " + qualified
	e.mu.Unlock()
	return nil
}

// project spells the read of a server column (quoted as col, of base type
// base) as the declared engine-neutral type. Only conversions that succeed
// for every value are accepted, so no row can make a later statement fail:
// integers of any width widen to bigint or double precision, real widens
// to double precision, character types read as text in byte order. A NaN in a double
// reads as NULL (unless the column keeps NaN): PostgreSQL compares NaN
// equal to NaN, so nullif(x, 'NaN') is NULL exactly for NaN.
func project(col, base string, c engine.Column) (string, error) {
	accept := func(ok bool, want string) error {
		if ok {
			return nil
		}
		return fmt.Errorf("declared %s: want %s (or a view that converts it)", c.Type.Schema(), want)
	}
	switch c.Type {
	case engine.Integer:
		if err := accept(base == "int2" || base == "int4" || base == "int8", "smallint, integer or bigint"); err != nil {
			return "", err
		}
		return "CAST(" + col + " AS bigint)", nil
	case engine.Double:
		if err := accept(base == "float4" || base == "float8" || base == "int2" || base == "int4" || base == "int8",
			"double precision, real, smallint, integer or bigint"); err != nil {
			return "", err
		}
		expr := "CAST(" + col + " AS double precision)"
		if !c.KeepNaN && (base == "float4" || base == "float8") {
			expr = "nullif(" + expr + ", CAST('NaN' AS double precision))"
		}
		return expr, nil
	case engine.Boolean:
		if err := accept(base == "bool", "boolean"); err != nil {
			return "", err
		}
		return col, nil
	case engine.Date:
		if err := accept(base == "date", "date"); err != nil {
			return "", err
		}
		// date − date is an integer; ±infinity reads as NULL.
		return "CASE WHEN isfinite(" + col + ") THEN CAST(" + col + " - DATE '1970-01-01' AS bigint) END", nil
	case engine.Timestamp:
		if err := accept(base == "timestamp", "timestamp without time zone"); err != nil {
			return "", err
		}
		// extract(epoch …) is an exact numeric; it is clamped to ±2^62
		// before the cast, so that no timestamp can overflow a bigint.
		return "CASE WHEN isfinite(" + col + ") THEN CAST(least(greatest(extract(epoch FROM " + col + ") * 1000000, -4611686018427387904), 4611686018427387904) AS bigint) END", nil
	case engine.Text:
		if err := accept(base == "text" || base == "varchar" || base == "bpchar" || base == "name",
			"text, character varying or character"); err != nil {
			return "", err
		}
		// The "C" collation compares bytes, as DuckDB does, whatever the
		// database's default collation.
		return "CAST(" + col + " AS text) COLLATE \"C\"", nil
	}
	return "", fmt.Errorf("declared type %d is not one a catalog declares", c.Type)
}

// relkindName names a pg_class.relkind.
func relkindName(k string) string {
	switch k {
	case "i", "I":
		return "index"
	case "S":
		return "sequence"
	case "t":
		return "TOAST table"
	case "c":
		return "composite type"
	}
	return "relation of kind " + strconv.Quote(k)
}

// Dialect is PostgreSQL's SQL dialect.
var Dialect engine.Dialect = dialect{}

type dialect struct{ engine.ANSI }

func (dialect) Name() string { return "postgres" }

// NullSafeEqual is IS NOT DISTINCT FROM: the bounded histogram statement
// joins the kept rows with the kept (person, group) pairs on the person
// (a hash join) and the keys, a NULL key matching a NULL key.
func (dialect) NullSafeEqual(a, b string) string { return a + " IS NOT DISTINCT FROM " + b }

func (dialect) TypeName(t engine.Type) string {
	switch t {
	case engine.Integer:
		return "bigint"
	case engine.Double:
		return "double precision"
	case engine.Boolean:
		return "boolean"
	case engine.Integer32:
		return "integer"
	default:
		return "text"
	}
}

// QuoteString renders a string literal. With standard_conforming_strings
// (the default since PostgreSQL 9.1, and required by dpstat) a backslash is
// an ordinary character; the E” form is never used.
func (dialect) QuoteString(s string) string { return engine.ANSI{}.QuoteString(s) }

// ExactSum sums into numeric: PostgreSQL's sum of bigint is a numeric,
// which no number of rows can overflow. The cast makes narrower integer
// inputs take the same path.
func (dialect) ExactSum(expr string) string { return "sum(CAST(" + expr + " AS bigint))" }

// GridSum is PostgreSQL's sum of double precision, which adds in IEEE 754
// doubles (exact on the grid, see engine.Dialect).
func (dialect) GridSum(expr string) string { return "sum(" + expr + ")" }

// RoundToGrid adds and subtracts 1.5·2^(52+exp) in double precision.
// PostgreSQL evaluates float8 arithmetic in IEEE 754 doubles, left to
// right, and does not simplify the two constants away (TestDialect checks
// the rounding on the server, ties included).
func (dialect) RoundToGrid(expr string, exp int) string {
	c := strconv.FormatFloat(math.Ldexp(1.5, 52+exp), 'g', -1, 64)
	return "(" + expr + " + CAST(" + c + " AS double precision) - CAST(" + c + " AS double precision))"
}

// Random is PostgreSQL's random(), uniform in [0, 1), drawn per row.
func (dialect) Random() string { return "random()" }

// SupportsQualify is false: PostgreSQL has no QUALIFY, so rows are
// numbered in a subquery and filtered outside it.
func (dialect) SupportsQualify() bool { return false }

// StrictUnderflow marks PostgreSQL's float8 multiplication and division,
// which fail with "value out of range: underflow" where IEEE 754 would round
// a nonzero result to zero; engine.Scale, engine.Divide and engine.Square
// then flush such results to 0 first (engine.StrictUnderflow).
func (dialect) StrictUnderflow() {}

var _ engine.StrictUnderflow = dialect{}

// HalfEvenRound marks PostgreSQL's round(double precision), which ties to
// even (rint); engine.Round then spells ROUND with halves away from zero.
func (dialect) HalfEvenRound() {}

var _ engine.HalfEvenRound = dialect{}
