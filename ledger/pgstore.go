package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A ledger in PostgreSQL. The ledger's buckets live in three tables of a
// schema of their own (DefaultSchema unless the connection string says
// ?schema=NAME):
//
//	buckets(name bytea PRIMARY KEY, seq bigint)       -- a bucket and its sequence
//	kv(bucket bytea, key bytea, value bytea)           -- the entries, keyed by (bucket, key)
//	writer(id int PRIMARY KEY)                         -- one row: the writers' lock
//
// bytea compares byte by byte, so keys sort as in the bbolt file. Every
// read-write transaction first locks the writer row (SELECT … FOR UPDATE)
// and then runs at READ COMMITTED: writers, in this process or any other
// sharing the database, take turns, and each one reads what the one before
// committed. A charge thus sees the budget as the last charge left it in
// whichever replica made it, and two replicas can never spend the same ε.
// Reads run in REPEATABLE READ, READ ONLY transactions: one consistent
// state. A transaction that fails because the server went away, restarted
// or reported a serialization failure is run again (its work is
// idempotent: a charge is keyed by its request ID) for up to
// Options.Timeout; then the error is returned, and no answer is released
// without its charge.

// DefaultSchema is the PostgreSQL schema that holds a ledger when the
// connection string names none.
const DefaultSchema = "dpstat_ledger"

// pgPageSize is how many entries a cursor reads per query.
const pgPageSize = 500

// pgMaxConns is how many connections a PostgreSQL ledger opens at most,
// unless its URL says pool_max_conns=N.
const pgMaxConns = 16

// pgTxTimeout bounds one transaction of a PostgreSQL ledger.
const pgTxTimeout = 60 * time.Second

// IsPostgres reports whether location names a PostgreSQL ledger: a URL
// postgres://… or postgresql://….
func IsPostgres(location string) bool {
	l := strings.ToLower(location)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// Redact returns location fit for messages and logs: a PostgreSQL
// connection string without its password (in the user part or as a
// password= parameter); a file path unchanged.
func Redact(location string) string {
	if !IsPostgres(location) {
		return location
	}
	u, err := url.Parse(location)
	if err != nil {
		return "postgres://(a connection string that cannot be parsed)"
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, "password") {
			q.Set(k, "xxxxx")
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// pgStore is a ledger's schema in a PostgreSQL database.
type pgStore struct {
	pool     *pgxpool.Pool
	where    string   // the redacted connection string, for messages
	secrets  []string // what must never appear in an error (the password)
	retryFor time.Duration

	tKV, tBuckets, tWriter string // quoted table names

	mu    sync.Mutex
	known map[string]bool // buckets known to exist (buckets are never removed)
}

// openPostgres opens (creating its schema when needed) the ledger of the
// connection string loc.
func openPostgres(loc string, opts Options) (*Ledger, error) {
	where := Redact(loc)
	u, err := url.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("ledger %s: the connection string is not a valid URL: want postgres://USER:PASSWORD@HOST:PORT/DATABASE[?schema=NAME]", where)
	}
	var secrets []string
	if u.User != nil {
		if p, has := u.User.Password(); has && p != "" {
			secrets = append(secrets, p, url.QueryEscape(p), url.PathEscape(p))
		}
	}
	q := u.Query()
	schema := DefaultSchema
	for k, vs := range q {
		switch strings.ToLower(k) {
		case "schema":
			schema = vs[len(vs)-1]
			q.Del(k)
		case "password":
			for _, p := range vs {
				if p != "" {
					secrets = append(secrets, p, url.QueryEscape(p))
				}
			}
		}
	}
	if err := validName("ledger schema", schema, false); err != nil {
		return nil, fmt.Errorf("ledger %s: %w", where, err)
	}
	u.RawQuery = q.Encode()
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		msg := "the connection string cannot be read"
		var pe *pgconn.ParseConfigError
		if errors.As(err, &pe) {
			msg = scrub(pe.Error(), secrets)
		}
		return nil, fmt.Errorf("ledger %s: %s: want postgres://USER:PASSWORD@HOST:PORT/DATABASE[?schema=NAME]", where, msg)
	}
	if _, set := q["pool_max_conns"]; !set {
		// Reads (a budget's check before each query) run beside the
		// writer's transaction: more than the driver's default of 4.
		cfg.MaxConns = pgMaxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = opts.Timeout
	}
	if opts.ReadOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "dpstat ledger"
	// A charge is durable before its answer leaves, whatever the
	// server's default.
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	// A process that stops in the middle of a transaction (hung, or cut
	// off without the connection closing) must not hold the writer lock
	// for long: the server ends such a session.
	cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = "15s"
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout+pgTxTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("ledger %s: %s", where, scrub(err.Error(), secrets))
	}
	s := &pgStore{pool: pool, where: where, secrets: secrets, retryFor: opts.Timeout, known: map[string]bool{},
		tKV:      pgx.Identifier{schema, "kv"}.Sanitize(),
		tBuckets: pgx.Identifier{schema, "buckets"}.Sanitize(),
		tWriter:  pgx.Identifier{schema, "writer"}.Sanitize(),
	}
	if err := s.init(ctx, schema, opts.ReadOnly); err != nil {
		pool.Close()
		return nil, err
	}
	l := newLedger(s, where, opts.ReadOnly)
	l.key = opts.Key
	if err := l.checkOnOpen(opts); err != nil {
		pool.Close()
		return nil, err
	}
	if !opts.ReadOnly {
		l.wg.Add(1)
		go l.committer()
	}
	return l, nil
}

// scrub removes every secret from msg.
func scrub(msg string, secrets []string) string {
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "xxxxx")
		}
	}
	return msg
}

// fail wraps a store error for the caller, without any secret.
func (s *pgStore) fail(err error) error {
	if err == nil {
		return nil
	}
	return &pgError{msg: scrub(err.Error(), s.secrets), err: err}
}

// pgError is an error of the PostgreSQL store with its secrets removed from
// the text; errors.Is and errors.As still see the cause.
type pgError struct {
	msg string
	err error
}

func (e *pgError) Error() string { return e.msg }
func (e *pgError) Unwrap() error { return e.err }

// init creates the schema and the tables when they are missing (not when
// read-only) and checks or initializes the ledger in them.
func (s *pgStore) init(ctx context.Context, schema string, readOnly bool) error {
	var exists bool
	err := s.retry(func() error {
		return s.pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", s.tWriter).Scan(&exists)
	})
	if err != nil {
		return fmt.Errorf("ledger %s: cannot reach the database: %w", s.where, s.fail(err))
	}
	if readOnly {
		if !exists {
			return fmt.Errorf("ledger %s does not exist (no schema %q with a ledger; nothing has been granted or charged yet): %w", s.where, schema, os.ErrNotExist)
		}
		return s.view(func(tx kvTx) error { return checkFormatTx(tx, s.where, "a PostgreSQL schema but ") })
	}
	if !exists {
		if err := s.createTables(ctx, schema); err != nil {
			return fmt.Errorf("ledger %s: creating the ledger's tables in schema %q: %w (the role needs to own the schema, or CREATE on the database to create it)", s.where, schema, s.fail(err))
		}
	}
	return s.update(func(tx kvTx) error {
		if tx.Bucket(bucketMeta) != nil {
			return checkFormatTx(tx, s.where, "a PostgreSQL schema but ")
		}
		t := tx.(*pgTx)
		var n int
		if err := t.tx.QueryRow(t.ctx, "SELECT count(*) FROM "+s.tBuckets).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("ledger %s: schema %q holds buckets but no ledger: %w", s.where, schema, ErrNotLedger)
		}
		return initBuckets(tx)
	})
}

// createTables creates the schema (unless it exists) and the tables, under
// an advisory lock so that replicas starting together do not collide.
func (s *pgStore) createTables(ctx context.Context, schema string) error {
	return s.retry(func() error {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", "dpstat ledger "+schema); err != nil {
			return err
		}
		var has bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&has); err != nil {
			return err
		}
		stmts := []string{
			"CREATE TABLE IF NOT EXISTS " + s.tBuckets + " (name bytea PRIMARY KEY, seq bigint NOT NULL DEFAULT 0)",
			"CREATE TABLE IF NOT EXISTS " + s.tKV + " (bucket bytea NOT NULL, key bytea NOT NULL, value bytea NOT NULL, PRIMARY KEY (bucket, key))",
			"CREATE TABLE IF NOT EXISTS " + s.tWriter + " (id int PRIMARY KEY)",
			"INSERT INTO " + s.tWriter + " VALUES (1) ON CONFLICT DO NOTHING",
		}
		if !has {
			stmts = append([]string{"CREATE SCHEMA " + pgx.Identifier{schema}.Sanitize()}, stmts...)
		}
		for _, q := range stmts {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		return tx.Commit(ctx)
	})
}

// initBuckets writes the magic and version and creates the buckets of a
// new ledger.
func initBuckets(tx kvTx) error {
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	if err := meta.Put(keyMagic, []byte(Magic)); err != nil {
		return err
	}
	if err := meta.Put(keyVersion, []byte(fmt.Sprint(FormatVersion))); err != nil {
		return err
	}
	for _, b := range [][]byte{bucketBudgets, bucketReleases, bucketRequests, bucketAnswers, bucketGrants, bucketTotals} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	return nil
}

// transient reports whether err is a failure of the server or the
// connection, after which the whole transaction may be run again.
func transient(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), strings.HasPrefix(pe.Code, "40"), strings.HasPrefix(pe.Code, "57P"), pe.Code == "53300":
			// Connection exceptions, serialization failures and
			// deadlocks, shutdowns, too many connections.
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

func (s *pgStore) unavailable(err error) bool { return transient(err) }

// retry runs fn until it succeeds, fails for good, or s.retryFor passed.
func (s *pgStore) retry(fn func() error) error {
	deadline := time.Now().Add(s.retryFor)
	wait := 20 * time.Millisecond
	for {
		err := fn()
		if err == nil || !transient(err) || time.Now().Add(wait).After(deadline) {
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, 500*time.Millisecond)
	}
}

func (s *pgStore) view(fn func(kvTx) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), pgTxTimeout)
	defer cancel()
	// Only the start is tried again: fn may collect what it reads.
	var tx pgx.Tx
	err := s.retry(func() (err error) {
		tx, err = s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		return err
	})
	if err != nil {
		return s.fail(err)
	}
	defer tx.Rollback(ctx)
	t := &pgTx{s: s, ctx: ctx, tx: tx}
	ferr := fn(t)
	if t.err != nil {
		// A read failed: what fn made of it does not count.
		return s.fail(t.err)
	}
	if ferr == nil {
		s.learn(t)
	}
	return ferr
}

func (s *pgStore) update(fn func(kvTx) error) error {
	return s.fail(s.retry(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), pgTxTimeout)
		defer cancel()
		tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, "SELECT 1 FROM "+s.tWriter+" WHERE id = 1 FOR UPDATE"); err != nil {
			return err
		}
		t := &pgTx{s: s, ctx: ctx, tx: tx}
		ferr := fn(t)
		if t.err != nil {
			return t.err
		}
		if ferr != nil {
			return ferr
		}
		if err := t.flush(); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		s.learn(t)
		return nil
	}))
}

func (s *pgStore) ping(ctx context.Context) error {
	var one int
	return s.fail(s.pool.QueryRow(ctx, "SELECT 1 FROM "+s.tWriter+" WHERE id = 1").Scan(&one))
}

func (s *pgStore) close() error {
	s.pool.Close()
	return nil
}

// learn remembers the buckets a finished transaction saw.
func (s *pgStore) learn(t *pgTx) {
	if len(t.seen) == 0 {
		return
	}
	s.mu.Lock()
	for b := range t.seen {
		s.known[b] = true
	}
	s.mu.Unlock()
}

func (s *pgStore) isKnown(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.known[name]
}

// pgTx is one transaction. Writes are kept in memory and sent in one batch
// before the commit (reads see them first); the first failure of the
// server is kept in err, every later call does nothing, and the
// transaction fails with it.
type pgTx struct {
	s    *pgStore
	ctx  context.Context
	tx   pgx.Tx
	err  error
	seen map[string]bool
	// pending writes: bucket -> key -> value, and the order of buckets.
	pending  map[string]map[string][]byte
	npending int
}

func (t *pgTx) setErr(err error) {
	if t.err == nil {
		t.err = err
	}
}

func (t *pgTx) Bucket(name []byte) kvBucket {
	n := string(name)
	if t.seen[n] || t.s.isKnown(n) {
		return &pgBucket{t: t, name: bytes.Clone(name)}
	}
	if t.err != nil {
		return nil
	}
	var ok bool
	if err := t.tx.QueryRow(t.ctx, "SELECT EXISTS (SELECT 1 FROM "+t.s.tBuckets+" WHERE name = $1)", name).Scan(&ok); err != nil {
		t.setErr(err)
		return nil
	}
	if !ok {
		return nil
	}
	t.see(n)
	return &pgBucket{t: t, name: bytes.Clone(name)}
}

func (t *pgTx) see(name string) {
	if t.seen == nil {
		t.seen = map[string]bool{}
	}
	t.seen[name] = true
}

func (t *pgTx) CreateBucketIfNotExists(name []byte) (kvBucket, error) {
	if t.err != nil {
		return nil, t.err
	}
	if _, err := t.tx.Exec(t.ctx, "INSERT INTO "+t.s.tBuckets+" (name) VALUES ($1) ON CONFLICT DO NOTHING", name); err != nil {
		t.setErr(err)
		return nil, err
	}
	t.see(string(name))
	return &pgBucket{t: t, name: bytes.Clone(name)}, nil
}

func (t *pgTx) ForEachBucket(fn func(name []byte) error) error {
	if t.err != nil {
		return t.err
	}
	rows, err := t.tx.Query(t.ctx, "SELECT name FROM "+t.s.tBuckets+" ORDER BY name")
	if err != nil {
		t.setErr(err)
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		t.setErr(err)
		return err
	}
	for _, n := range names {
		if err := fn(n); err != nil {
			return err
		}
	}
	return nil
}

// pgFlushAt is how many pending writes a transaction keeps in memory
// before it sends them (a copy of a large ledger).
const pgFlushAt = 1000

// flush sends the pending writes in one batch.
func (t *pgTx) flush() error {
	if t.err != nil || len(t.pending) == 0 {
		return t.err
	}
	b := &pgx.Batch{}
	q := "INSERT INTO " + t.s.tKV + " (bucket, key, value) VALUES ($1, $2, $3) ON CONFLICT (bucket, key) DO UPDATE SET value = EXCLUDED.value"
	for bucket, kv := range t.pending {
		for k, v := range kv {
			b.Queue(q, []byte(bucket), []byte(k), v)
		}
	}
	t.pending, t.npending = nil, 0
	if err := t.tx.SendBatch(t.ctx, b).Close(); err != nil {
		t.setErr(err)
	}
	return t.err
}

type pgBucket struct {
	t    *pgTx
	name []byte
}

func (b *pgBucket) Get(key []byte) []byte {
	t := b.t
	if v, ok := t.pending[string(b.name)][string(key)]; ok {
		return v
	}
	if t.err != nil {
		return nil
	}
	var v []byte
	err := t.tx.QueryRow(t.ctx, "SELECT value FROM "+t.s.tKV+" WHERE bucket = $1 AND key = $2", b.name, key).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		t.setErr(err)
		return nil
	case v == nil:
		v = []byte{}
	}
	return v
}

func (b *pgBucket) Put(key, value []byte) error {
	t := b.t
	if t.err != nil {
		return t.err
	}
	if t.pending == nil {
		t.pending = map[string]map[string][]byte{}
	}
	m := t.pending[string(b.name)]
	if m == nil {
		m = map[string][]byte{}
		t.pending[string(b.name)] = m
	}
	if value == nil {
		value = []byte{}
	}
	m[string(key)] = bytes.Clone(value)
	if t.npending++; t.npending >= pgFlushAt {
		return t.flush()
	}
	return nil
}

func (b *pgBucket) ForEach(fn func(k, v []byte) error) error {
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return b.t.err
}

func (b *pgBucket) NextSequence() (uint64, error) {
	t := b.t
	if t.err != nil {
		return 0, t.err
	}
	var n int64
	if err := t.tx.QueryRow(t.ctx, "UPDATE "+t.s.tBuckets+" SET seq = seq + 1 WHERE name = $1 RETURNING seq", b.name).Scan(&n); err != nil {
		t.setErr(err)
		return 0, err
	}
	return uint64(n), nil
}

func (b *pgBucket) Sequence() uint64 {
	t := b.t
	if t.err != nil {
		return 0
	}
	var n int64
	if err := t.tx.QueryRow(t.ctx, "SELECT seq FROM "+t.s.tBuckets+" WHERE name = $1", b.name).Scan(&n); err != nil {
		t.setErr(err)
		return 0
	}
	return uint64(n)
}

func (b *pgBucket) SetSequence(n uint64) error {
	t := b.t
	if t.err != nil {
		return t.err
	}
	if n > math.MaxInt64 {
		return fmt.Errorf("sequence %d: want at most %d", n, int64(math.MaxInt64))
	}
	if _, err := t.tx.Exec(t.ctx, "UPDATE "+t.s.tBuckets+" SET seq = $2 WHERE name = $1", b.name, int64(n)); err != nil {
		t.setErr(err)
		return err
	}
	return nil
}

func (b *pgBucket) Cursor() kvCursor {
	// Iteration reads the table: the pending writes go first.
	_ = b.t.flush()
	return &pgCursor{b: b}
}

// pgCursor reads a bucket a page at a time, in either direction.
type pgCursor struct {
	b    *pgBucket
	page [][2][]byte
	i    int
	desc bool
	more bool   // the query that filled page may have more rows
	at   []byte // the current key; nil before the start or past the end
}

func (c *pgCursor) load(desc bool, from []byte) ([]byte, []byte) {
	return c.loadFrom(desc, from, false)
}

// loadFrom fills the page with the keys after from (before it when desc;
// from itself too when inclusive), or from the start without from.
func (c *pgCursor) loadFrom(desc bool, from []byte, inclusive bool) ([]byte, []byte) {
	t := c.b.t
	c.page, c.i, c.desc, c.more, c.at = nil, 0, desc, false, nil
	if t.err != nil {
		return nil, nil
	}
	q := "SELECT key, value FROM " + t.s.tKV + " WHERE bucket = $1"
	args := []any{c.b.name}
	switch {
	case from != nil && desc:
		q += " AND key < $2"
		args = append(args, from)
	case from != nil && inclusive:
		q += " AND key >= $2"
		args = append(args, from)
	case from != nil:
		q += " AND key > $2"
		args = append(args, from)
	}
	if desc {
		q += " ORDER BY key DESC"
	} else {
		q += " ORDER BY key"
	}
	q += fmt.Sprintf(" LIMIT %d", pgPageSize)
	rows, err := t.tx.Query(t.ctx, q, args...)
	if err != nil {
		t.setErr(err)
		return nil, nil
	}
	for rows.Next() {
		var k, v []byte
		if err := rows.Scan(&k, &v); err != nil {
			rows.Close()
			t.setErr(err)
			return nil, nil
		}
		if v == nil {
			v = []byte{}
		}
		c.page = append(c.page, [2][]byte{k, v})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.setErr(err)
		return nil, nil
	}
	c.more = len(c.page) == pgPageSize
	return c.cur()
}

func (c *pgCursor) cur() ([]byte, []byte) {
	if c.i >= len(c.page) {
		c.at = nil
		return nil, nil
	}
	e := c.page[c.i]
	c.at = e[0]
	return e[0], e[1]
}

func (c *pgCursor) First() ([]byte, []byte) { return c.load(false, nil) }
func (c *pgCursor) Last() ([]byte, []byte)  { return c.load(true, nil) }
func (c *pgCursor) Seek(k []byte) ([]byte, []byte) {
	return c.loadFrom(false, k, true)
}

func (c *pgCursor) step(desc bool) ([]byte, []byte) {
	if c.at == nil {
		return nil, nil
	}
	if c.desc == desc {
		c.i++
		if c.i < len(c.page) {
			return c.cur()
		}
		if !c.more {
			c.at = nil
			return nil, nil
		}
	}
	return c.load(desc, c.at)
}

func (c *pgCursor) Next() ([]byte, []byte) { return c.step(false) }
func (c *pgCursor) Prev() ([]byte, []byte) { return c.step(true) }
