// Package duckdb runs dpstat's generated SQL on an embedded DuckDB database,
// which reads CSV and Parquet files in place with no set-up.
package duckdb

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	// The DuckDB database/sql driver, registered as "duckdb".
	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/dpstat/dpstat/engine"
)

// Options configures an embedded DuckDB engine. The zero value is an
// in-memory database using every core.
type Options struct {
	// Threads limits DuckDB's worker threads; 0 means DuckDB's default
	// (one per core).
	Threads int
	// MemoryLimit caps DuckDB's memory, e.g. "2GB"; empty means DuckDB's
	// default (80% of the machine's memory).
	MemoryLimit string
	// SpillDir is where DuckDB writes what does not fit under the memory
	// limit (large bounding and grouping stages), so that a large file
	// gives a slower answer rather than an out-of-memory failure. Empty
	// means a new directory under the system's temporary directory,
	// removed when the engine closes.
	SpillDir string
}

// Engine is an embedded, in-memory DuckDB database. It is safe for
// concurrent use.
type Engine struct {
	db *sql.DB
	// spill is the spill directory Open made, removed by Close.
	spill string

	mu      sync.Mutex
	views   []string           // views made by RegisterFile, in order
	sources map[string]*source // views with KeepNaN columns, by name
}

// source is what HasNaN needs of a view: its file and the columns that
// keep NaN.
type source struct {
	path    string
	columns []string
}

var (
	_ engine.Engine    = (*Engine)(nil)
	_ engine.Registrar = (*Engine)(nil)
	_ engine.Loader    = (*Engine)(nil)
	_ engine.Sniffer   = (*Engine)(nil)
)

// init registers DuckDB as the engine kind "duckdb", the default.
func init() {
	engine.Register("duckdb", engine.Driver{
		Dialect: Dialect,
		Open: func(_ context.Context, spec engine.Spec) (engine.Engine, error) {
			if spec.DSN != "" || spec.PasswordEnv != "" {
				return nil, fmt.Errorf("duckdb: the embedded engine reads the catalog's files and takes no dsn or password_env (got dsn %q); for a database server set `kind:` to its engine", spec.DSN)
			}
			return Open(Options{Threads: spec.Threads, MemoryLimit: spec.MemoryLimit})
		},
	})
}

// Open starts an in-memory DuckDB database.
func Open(opts Options) (*Engine, error) {
	if opts.Threads < 0 {
		return nil, fmt.Errorf("duckdb: Threads = %d: want 0 (default) or a positive number", opts.Threads)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, fmt.Errorf("duckdb: open: %w", err)
	}
	e := &Engine{db: db}
	ctx := context.Background()
	if opts.Threads > 0 {
		if _, err := db.ExecContext(ctx, fmt.Sprintf("SET threads = %d", opts.Threads)); err != nil {
			db.Close()
			return nil, fmt.Errorf("duckdb: set threads: %w", err)
		}
	}
	if opts.MemoryLimit != "" {
		if _, err := db.ExecContext(ctx, "SET memory_limit = "+Dialect.QuoteString(opts.MemoryLimit)); err != nil {
			db.Close()
			return nil, fmt.Errorf("duckdb: memory limit %q: %w", opts.MemoryLimit, err)
		}
	}
	// Parquet footers are kept between statements: a ranged or streamed
	// query runs one statement per range of its privacy unit, and each
	// would otherwise decode the footer of every row group again (on a
	// 1-billion-row file, about 0.2 s per statement). DuckDB reads the
	// footer again when the file's last-modified time differs to the
	// second (or is less than 10 s old); a file replaced in place by a
	// copy that keeps its time needs a catalog reload, which opens a new
	// engine (docs/server.md). Local files are cached by the operating
	// system: DuckDB's own cache of file blocks would only grow the
	// process (by tens of megabytes on a large table read in ranges).
	for _, set := range []string{"SET parquet_metadata_cache = true", "SET enable_external_file_cache = false"} {
		if _, err := db.ExecContext(ctx, set); err != nil {
			db.Close()
			return nil, fmt.Errorf("duckdb: %s: %w", set, err)
		}
	}
	dir := opts.SpillDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "dpstat-duckdb-"); err != nil {
			db.Close()
			return nil, fmt.Errorf("duckdb: spill directory: %w", err)
		}
		e.spill = dir
	}
	if _, err := db.ExecContext(ctx, "SET temp_directory = "+Dialect.QuoteString(dir)); err != nil {
		e.Close()
		return nil, fmt.Errorf("duckdb: spill directory %q: %w", dir, err)
	}
	return e, nil
}

// DB exposes the underlying database for benchmarks and tests that need to
// run plain SQL beside dpstat's.
func (e *Engine) DB() *sql.DB { return e.db }

// Dialect returns DuckDB's dialect.
func (e *Engine) Dialect() engine.Dialect { return Dialect }

// Close closes the database and removes the spill directory Open made.
func (e *Engine) Close() error {
	err := e.db.Close()
	if e.spill != "" {
		if rerr := os.RemoveAll(e.spill); err == nil {
			err = rerr
		}
	}
	return err
}

// Query runs one statement and reads all of its rows.
func (e *Engine) Query(ctx context.Context, query string, args ...any) (*engine.Rows, error) {
	rows, err := e.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	out := &engine.Rows{Columns: cols}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out.Rows = append(out.Rows, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// RegisterFile creates (or replaces) a view named name over the file. Only
// the declared columns are exposed, each cast to its type with TRY_CAST so
// that a malformed value becomes NULL; NaN in a float column becomes NULL;
// CSV rows that do not parse are skipped (a column with KeepNaN keeps its
// NaNs). No value in the file can make a later query fail.
func (e *Engine) RegisterFile(ctx context.Context, name, path, format string, columns []engine.Column) error {
	if len(columns) == 0 {
		return fmt.Errorf("duckdb: source for %s declares no columns", name)
	}
	var from string
	switch format {
	case "csv":
		delim := ','
		if strings.HasSuffix(strings.ToLower(path), ".tsv") {
			delim = '\t'
		}
		header, err := csvHeader(path, delim)
		if err != nil {
			return fmt.Errorf("duckdb: cannot read the header of table %s's source %s: %w", name, path, err)
		}
		// The dialect is fixed and nothing is sniffed from the data: every
		// field is read as text, rows with too few fields are padded with
		// NULL, extra fields and stray quotes do not stop the reader.
		spec := make([]string, len(header))
		for i, h := range header {
			spec[i] = Dialect.QuoteString(h) + ": 'VARCHAR'"
		}
		from = fmt.Sprintf("read_csv(%s, header = true, auto_detect = false, columns = {%s}, delim = %s, quote = '\"', escape = '\"', ignore_errors = true, strict_mode = false, null_padding = true)",
			Dialect.QuoteString(path), strings.Join(spec, ", "), Dialect.QuoteString(string(delim)))
	case "parquet":
		from = fmt.Sprintf("read_parquet(%s)", Dialect.QuoteString(path))
	default:
		return fmt.Errorf("duckdb: source format %q: want csv or parquet", format)
	}
	// Columns whose stored type already is the declared one (typed Parquet
	// columns, CSV text) are exposed as they are; others are cast.
	stored, order, err := e.storedTypes(ctx, from)
	if err != nil {
		return fmt.Errorf("duckdb: cannot read the source of table %s (%s): %w", name, path, err)
	}
	if err := missingColumns(name, path, columns, stored, order); err != nil {
		return err
	}
	sel := make([]string, len(columns))
	for i, c := range columns {
		src := c.Source
		if src == "" {
			src = c.Name
		}
		q := Dialect.QuoteIdent(src)
		if c.Type == engine.Date || c.Type == engine.Timestamp {
			sel[i] = temporal(q, stored[src], c.Type) + " AS " + Dialect.QuoteIdent(c.Name)
			continue
		}
		want := Dialect.TypeName(c.Type)
		expr := q
		if stored[src] != want {
			expr = fmt.Sprintf("TRY_CAST(%s AS %s)", q, want)
		}
		if c.Type == engine.Double && !c.KeepNaN {
			// DuckDB compares NaN equal to NaN, so nullif turns NaN into
			// NULL; it is cheaper than a CASE over isnan.
			expr = fmt.Sprintf("nullif(%s, CAST('NaN' AS DOUBLE))", expr)
		}
		sel[i] = expr + " AS " + Dialect.QuoteIdent(c.Name)
	}
	stmt := fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT %s FROM %s",
		Dialect.QuoteIdent(name), strings.Join(sel, ", "), from)
	if _, err := e.db.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("duckdb: cannot read the source of table %s (%s): %w", name, path, err)
	}
	// Resolve the view once so that a missing column or unreadable file is
	// reported now, as a problem with the declaration, and not later.
	if _, err := e.db.ExecContext(ctx, "DESCRIBE "+Dialect.QuoteIdent(name)); err != nil {
		return fmt.Errorf("duckdb: cannot read the source of table %s (%s): %w", name, path, err)
	}
	var keep []string
	for _, c := range columns {
		if c.Type == engine.Double && c.KeepNaN {
			keep = append(keep, c.Name)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sources == nil {
		e.sources = map[string]*source{}
	}
	delete(e.sources, name)
	if len(keep) > 0 {
		e.sources[name] = &source{path: path, columns: keep}
	}
	if !slices.Contains(e.views, name) {
		e.views = append(e.views, name)
	}
	return nil
}

// Load copies every view RegisterFile made into an in-memory table of the
// same name, columns and types, so that a long-running server reads each
// source once instead of on every query. Changes to the files are then
// seen only after a restart.
func (e *Engine) Load(ctx context.Context) error {
	e.mu.Lock()
	views := slices.Clone(e.views)
	e.mu.Unlock()
	q := Dialect.QuoteIdent
	for _, name := range views {
		tmp := "dpstat_loaded_" + name
		for _, stmt := range []string{
			fmt.Sprintf("CREATE OR REPLACE TABLE %s AS SELECT * FROM %s", q(tmp), q(name)),
			fmt.Sprintf("DROP VIEW %s", q(name)),
			fmt.Sprintf("ALTER TABLE %s RENAME TO %s", q(tmp), q(name)),
		} {
			if _, err := e.db.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("duckdb: loading %s into memory: %w", name, err)
			}
		}
	}
	return nil
}

// HasNaN reports whether a KeepNaN column of the view name holds a NaN,
// in one scan. A view without KeepNaN columns has none. It is for the
// data owner's checks and tests: which form of a query runs never depends
// on it (catalog.Table.NaNFree decides).
func (e *Engine) HasNaN(ctx context.Context, name string) (bool, error) {
	e.mu.Lock()
	src := e.sources[name]
	e.mu.Unlock()
	if src == nil {
		return false, nil
	}
	nan, err := e.countNaN(ctx, name, src.columns)
	if err != nil {
		return false, fmt.Errorf("duckdb: cannot read the source of %s (%s): %w", name, src.path, err)
	}
	return nan, nil
}

// countNaN reports whether any of the columns of name holds a NaN.
func (e *Engine) countNaN(ctx context.Context, name string, columns []string) (bool, error) {
	conds := make([]string, len(columns))
	for i, c := range columns {
		conds[i] = "isnan(" + Dialect.QuoteIdent(c) + ")"
	}
	var n int64
	q := "SELECT count(*) FROM " + Dialect.QuoteIdent(name) + " WHERE " + strings.Join(conds, " OR ")
	if err := e.db.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, nil
}

// Sniff returns the column names and the types DuckDB infers for a CSV or
// Parquet file, for writing a catalog skeleton. It reads the data only to
// guess types; it never reports values.
func (e *Engine) Sniff(ctx context.Context, path string) ([]engine.Column, error) {
	reader := "read_csv"
	if strings.HasSuffix(strings.ToLower(path), ".parquet") {
		reader = "read_parquet"
	}
	rows, err := e.db.QueryContext(ctx, "DESCRIBE SELECT * FROM "+reader+"("+Dialect.QuoteString(path)+")")
	if err != nil {
		return nil, fmt.Errorf("duckdb: cannot read %s: %w", path, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []engine.Column
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		name, _ := vals[0].(string)
		typ, _ := vals[1].(string)
		out = append(out, engine.Column{Name: name, Type: neutralType(typ)})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("duckdb: no columns found")
	}
	return out, nil
}

// storedTypes returns the engine's type name of each column of a relation,
// and the columns in the relation's order.
func (e *Engine) storedTypes(ctx context.Context, from string) (map[string]string, []string, error) {
	rows, err := e.Query(ctx, "DESCRIBE SELECT * FROM "+from)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[string]string, len(rows.Rows))
	var order []string
	for _, r := range rows.Rows {
		name, _ := r[0].(string)
		typ, _ := r[1].(string)
		out[name] = strings.ToUpper(typ)
		order = append(order, name)
	}
	return out, order, nil
}

// MissingColumnError reports declared columns that a table's source file
// does not have, with the columns it does have.
type MissingColumnError struct {
	Table, Path string
	// Missing are the declared columns (their source names) not in the
	// file; FileColumns are the file's columns in order.
	Missing, FileColumns []string
}

// Error implements error. It names each missing column, the closest
// column of the file if one looks alike, every column of the file, and how
// to declare a column that reads a header under another name.
func (e *MissingColumnError) Error() string {
	var b strings.Builder
	quoted := make([]string, len(e.FileColumns))
	for i, c := range e.FileColumns {
		quoted[i] = strconv.Quote(c)
	}
	for i, m := range e.Missing {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "table %s: declared column %q is not in %s", e.Table, m, filepath.Base(e.Path))
		if near := closestColumn(m, e.FileColumns); near != "" {
			fmt.Fprintf(&b, " (did you mean %q?)", near)
		}
	}
	fmt.Fprintf(&b, "; the file's columns are %s", strings.Join(quoted, ", "))
	b.WriteString(`; to read a column under another name, declare its header with from:, e.g. hours: {from: "Hours per week", type: int}`)
	return b.String()
}

func missingColumns(table, path string, columns []engine.Column, stored map[string]string, order []string) error {
	var missing []string
	for _, c := range columns {
		src := c.Source
		if src == "" {
			src = c.Name
		}
		if _, ok := stored[src]; !ok {
			missing = append(missing, src)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return &MissingColumnError{Table: table, Path: path, Missing: missing, FileColumns: order}
}

// closestColumn returns the file column that matches name once case and
// everything but letters and digits are ignored, or that contains it so;
// "" if none does.
func closestColumn(name string, columns []string) string {
	norm := func(s string) string {
		var b strings.Builder
		for _, r := range strings.ToLower(s) {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	n := norm(name)
	if n == "" {
		return ""
	}
	for _, c := range columns {
		if norm(c) == n {
			return c
		}
	}
	for _, c := range columns {
		if nc := norm(c); nc != "" && (strings.Contains(nc, n) || strings.Contains(n, nc)) {
			return c
		}
	}
	return ""
}

// csvHeader reads the first record of a CSV file: the column names.
func csvHeader(path string, delim rune) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	r.Comma = delim
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	rec, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("no header line: %w", err)
	}
	if len(rec) > 0 {
		rec[0] = strings.TrimPrefix(rec[0], "\ufeff")
	}
	return rec, nil
}

func neutralType(t string) engine.Type {
	t = strings.ToUpper(t)
	switch {
	case t == "BOOLEAN":
		return engine.Boolean
	case strings.Contains(t, "INT"):
		return engine.Integer
	case t == "DOUBLE" || t == "FLOAT" || t == "REAL" || strings.HasPrefix(t, "DECIMAL"):
		return engine.Double
	case t == "DATE":
		return engine.Date
	case t == "TIMESTAMP" || t == "TIMESTAMP_S" || t == "TIMESTAMP_MS" || t == "TIMESTAMP_NS" || t == "DATETIME":
		// Without a time zone only: a TIMESTAMP WITH TIME ZONE stays text.
		return engine.Timestamp
	default:
		return engine.Text
	}
}

// Dialect is DuckDB's SQL dialect.
var Dialect engine.Dialect = dialect{}

type dialect struct{ engine.ANSI }

func (dialect) Name() string { return "duckdb" }

func (dialect) TypeName(t engine.Type) string {
	switch t {
	case engine.Integer:
		return "BIGINT"
	case engine.Double:
		return "DOUBLE"
	case engine.Boolean:
		return "BOOLEAN"
	case engine.Integer32:
		return "INTEGER"
	default:
		return "VARCHAR"
	}
}

// ExactSum relies on DuckDB summing BIGINT into HUGEINT (128 bits).
func (dialect) ExactSum(expr string) string { return "sum(" + expr + ")" }
func (dialect) Random() string              { return "random()" }

// DuckDB bounds contributions with aggregates (engine.Sampler).
var _ engine.Sampler = dialect{}

// SmallestN is min_by with a count, which skips NULL values.
func (dialect) SmallestN(arg, key string, n int64) string {
	return "min_by(" + arg + ", " + key + ", " + strconv.FormatInt(n, 10) + ")"
}

// DuckDB keeps up to two values per pair in one pass (engine.ExtremeSampler).
var _ engine.ExtremeSampler = dialect{}

// ArgMin is min_by, which skips the rows whose arg is NULL.
func (dialect) ArgMin(arg, key string) string { return "min_by(" + arg + ", " + key + ")" }

// ArgMax is max_by, which skips the rows whose arg is NULL.
func (dialect) ArgMax(arg, key string) string { return "max_by(" + arg + ", " + key + ")" }

// SumOfTwo sums a two-element list with list_sum, the sum aggregate's type
// (128-bit for integers, where a + b would overflow a 32-bit summand).
func (dialect) SumOfTwo(a, b string) string { return "list_sum([" + a + ", " + b + "])" }

// ListSum sums a list with list_sum (the sum aggregate: 128-bit for
// integers).
func (dialect) ListSum(list string) string { return "list_sum(" + list + ")" }

// ListCount counts a list's non-NULL values.
func (dialect) ListCount(list string) string { return "list_count(" + list + ")" }

// Unnest is DuckDB's unnest.
func (dialect) Unnest(list string) string { return "unnest(" + list + ")" }

// NthSmallest keeps the column's n smallest values, in ascending order,
// with min's count form and indexes the list; an index past the end is
// NULL. Its state holds n values, where list(col) would hold every value.
func (dialect) NthSmallest(col string, n int64) string {
	k := strconv.FormatInt(n, 10)
	return "min(" + col + ", " + k + ")[" + k + "]"
}

// Materialized is DuckDB's AS MATERIALIZED.
func (dialect) Materialized() string { return "MATERIALIZED" }

// NullSafeEqual is IS NOT DISTINCT FROM, which DuckDB's hash join takes as
// a join key.
func (dialect) NullSafeEqual(a, b string) string { return a + " IS NOT DISTINCT FROM " + b }

// GridSum is DuckDB's sum of DOUBLE.
func (dialect) GridSum(expr string) string { return "sum(" + expr + ")" }

// RoundToGrid adds and subtracts 1.5·2^(52+exp): the sum lands where
// doubles are spaced exactly 2^exp apart, so the addition rounds expr to
// the grid (ties to even) and the subtraction is exact. DuckDB evaluates
// the two operations as written (TestRoundToGrid checks it).
func (dialect) RoundToGrid(expr string, exp int) string {
	c := strconv.FormatFloat(math.Ldexp(1.5, 52+exp), 'g', -1, 64)
	return "(" + expr + " + CAST(" + c + " AS DOUBLE) - CAST(" + c + " AS DOUBLE))"
}
func (dialect) SupportsQualify() bool { return true }

// temporal spells the read of a date or timestamp column q, stored as the
// DuckDB type stored, as days or microseconds since 1970-01-01 (a BIGINT):
// a value that does not parse, and ±infinity, read as NULL.
func temporal(q, stored string, t engine.Type) string {
	if t == engine.Date {
		if stored != "DATE" {
			q = "TRY_CAST(" + q + " AS DATE)"
		}
		return "CASE WHEN isfinite(" + q + ") THEN CAST(" + q + " - DATE '1970-01-01' AS BIGINT) END"
	}
	if stored != "TIMESTAMP" {
		q = "TRY_CAST(" + q + " AS TIMESTAMP)"
	}
	return "CASE WHEN isfinite(" + q + ") THEN epoch_us(" + q + ") END"
}
