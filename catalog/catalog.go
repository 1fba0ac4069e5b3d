// Package catalog reads and checks the data owner's declaration of the
// tables dpstat may answer questions about: where each table's data lives,
// which column identifies a person, how many groups and rows one person may
// contribute, and each column's type, public bounds and public value list.
//
// Everything in a catalog is a declaration. dpstat never reads a bound or a
// value list from the data: a bound that the data exceeds clamps the data,
// and a group key that is not in the public list is left out.
package catalog

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/dpstat/dpstat/schema"
)

// MaxGroupsPerUnit is the largest max_groups_per_unit a table may declare.
const MaxGroupsPerUnit = 1 << 20

// Catalog is a checked catalog: every table has a source, every bound is
// finite and ordered, every value list matches its column's type.
type Catalog struct {
	// Path is the file the catalog was read from, if any.
	Path string
	// Budget is the privacy budget each analyst gets on each table unless
	// granted otherwise.
	Budget Budget
	// TotalBudget caps everything released from each table, whoever
	// asked, unless a table declares its own; nil declares no cap across
	// analysts.
	TotalBudget *Budget
	// Tables lists the tables in the order the catalog declares them.
	Tables []*Table
	// Engine is the engine that holds the tables: embedded DuckDB over
	// files unless the catalog's `engine:` section names a server.
	Engine Engine
}

// DefaultEngine is the engine kind of a catalog without an `engine:`
// section: embedded DuckDB reading CSV and Parquet files.
const DefaultEngine = "duckdb"

// Relation is the Format of a table whose source is a table or view of a
// database engine (a catalog whose engine is not DuckDB), bound where it
// lives rather than read from a file.
const Relation = "relation"

// Engine is the catalog's `engine:` section.
type Engine struct {
	// Kind names the engine: "duckdb" (the default) or a server engine
	// such as "postgres".
	Kind string
	// DSN locates the server's database, e.g.
	// postgres://dpstat_reader@db.internal:5432/clinic?sslmode=require.
	// The catalog refuses a DSN holding a password.
	DSN string
	// PasswordEnv names the environment variable holding the password.
	PasswordEnv string
	// StatementTimeout stops a statement that runs longer; zero means the
	// engine's default.
	StatementTimeout time.Duration
	// MaxConnections caps the connection pool; zero means the engine's
	// default.
	MaxConnections int
}

// Remote reports whether the catalog's tables live in a database server
// (their sources are relations, not files).
func (c *Catalog) Remote() bool { return c.Engine.Kind != DefaultEngine }

// Budget is a per-analyst, per-table privacy budget.
type Budget struct {
	Epsilon float64
	Delta   float64
}

// Table is one declared table.
type Table struct {
	// Name is the table's name in queries.
	Name string
	// Source is the data file, resolved against the catalog's directory,
	// or, when the catalog's engine is a server, the table or view of that
	// engine (e.g. public.visits) as the catalog spells it.
	Source string
	// Format is "csv" or "parquet", from the source's extension, or
	// Relation for a table or view of a server engine.
	Format string
	// Database names, for a Relation source, the engine and database that
	// hold it ("postgres postgres://user@host/db"), so that tables of two
	// databases are never mistaken for one another (stored answers are
	// keyed by the whole declaration). Empty for files.
	Database string `json:",omitempty"`
	// PrivacyUnit names the column that identifies a person; empty means
	// that every row is a different person.
	PrivacyUnit string
	// MaxGroupsPerUnit (L0) is how many groups one person may contribute
	// to. It is 1 when PrivacyUnit is empty.
	MaxGroupsPerUnit int64
	// MaxRowsPerGroup (L∞) is how many rows one person may contribute to
	// one group. It is 1 when PrivacyUnit is empty.
	MaxRowsPerGroup int64
	// GroupSize is the number of people protected together (e.g. a
	// household): every sensitivity is multiplied by it. 1 protects each
	// person.
	GroupSize int64
	// Columns lists the declared columns in declaration order.
	Columns []*Column
	// IDSpace names the people the privacy unit identifies: tables of one
	// id space share their budgets (each analyst's, and the total). Empty
	// means the table is its own id space.
	IDSpace string
	// Public marks a table about no one (a calendar, a list of regions):
	// it has no privacy unit and no budget, its values may be read from
	// the data, and queries join it to a private table.
	Public bool
	// NaNFree records the owner's declaration that the table's float
	// columns hold no NaN (nan_free: true). It lets exact sums read those
	// columns without a per-value NaN test (dpplan.FastForm); a NaN found
	// there anyway is clamped to a bound and counted as a value. Without
	// the declaration every query reads a NaN as NULL. The choice of form
	// never depends on the data.
	NaNFree bool `json:",omitempty"`
	// ReuseReleases says whose releases of the table an analyst's answers
	// may be derived from at no cost (package query/reuse): ReuseOwn (the
	// default, stored as "") or ReuseShared (every analyst's).
	ReuseReleases string `json:",omitempty"`
	// ClusteredByUnit records the owner's declaration that the table's rows
	// are stored clustered by the privacy unit (clustered_by_unit: true):
	// sorted by it, or at least each stretch of the file holding a narrow
	// range of units. The privacy unit is then an int column with declared
	// bounds, and the embedded engine reads a bounded query in ranges of
	// the unit cut from those bounds (sqlgen.UnitRanges), which skips the
	// other ranges' row groups and keeps its memory independent of the
	// row count. The answers are the same either way; only time and memory
	// depend on whether the declaration is true, never the choice of form.
	ClusteredByUnit bool `json:",omitempty"`
	// Budget is each analyst's default budget on the table: the table's
	// own declaration, else the catalog's.
	Budget Budget
	// TotalBudget caps everything released from the table (from its id
	// space), whoever asked: the table's own declaration, else the
	// catalog's; nil means no cap across analysts.
	TotalBudget *Budget
	// Epoch, when declared, divides the table's rows into periods by a
	// date or timestamp column: the privacy unit becomes (person, epoch),
	// each epoch has budgets of its own, and a query is charged in each
	// epoch it reads. Nil means the whole table is one unit per person.
	Epoch *Epoch `json:",omitempty"`
}

// The values of Table.ReuseReleases (reuse_releases in the catalog file).
const (
	// ReuseOwn: an analyst's answers are derived only from releases that
	// analyst was charged for.
	ReuseOwn = "own"
	// ReuseShared: an analyst's answers may be derived from any analyst's
	// releases of the table.
	ReuseShared = "shared"
)

// BudgetDataset is the name the table's budgets are kept under in the
// ledger: its id space, or its own name when it has none.
func (t *Table) BudgetDataset() string {
	if t.IDSpace != "" {
		return t.IDSpace
	}
	return t.Name
}

// Column is one declared column.
type Column struct {
	Name string
	Type schema.Type
	// Lower and Upper are the declared bounds, or nil when none are
	// declared. Aggregates other than COUNT need both. A date column's
	// bounds are days since 1970-01-01, a timestamp column's microseconds.
	Lower, Upper *float64
	// Values is the public list of values: int64, float64, string or bool
	// according to Type (int64 days or microseconds for a date or
	// timestamp column). Nil when none is declared.
	Values []any
	// Nullable records that the owner declared the column may be missing.
	// dpstat treats missing values the same either way (they are excluded
	// from the aggregates that read the column); the flag documents the
	// data.
	Nullable bool
	// From is the column's name in the source file (e.g. a CSV header
	// "Hours per week"); empty means Name.
	From string
}

// Bounded reports whether the column declares both bounds.
func (c *Column) Bounded() bool { return c.Lower != nil && c.Upper != nil }

// Table returns the table with the given name, compared case-insensitively
// as SQL does for unquoted names, or nil.
func (c *Catalog) Table(name string) *Table {
	return schema.Named(c.Tables, func(t *Table) string { return t.Name }, name)
}

// Column returns the column with the given name (exact match first, then
// case-insensitive), or nil.
func (t *Table) Column(name string) *Column {
	return schema.Named(t.Columns, func(c *Column) string { return c.Name }, name)
}

// HasPrivacyUnit reports whether one person may own several rows.
func (t *Table) HasPrivacyUnit() bool { return t.PrivacyUnit != "" }

// checkEngine checks the `engine:` section; a catalog without one uses
// embedded DuckDB. Which kinds exist is the engine registry's business
// (dpstat catalog check opens the engine); the catalog checks the shape.
func checkEngine(re *rawEngine, errs []error) (Engine, []error) {
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("engine: "+format, args...))
	}
	e := Engine{Kind: DefaultEngine}
	if re == nil {
		return e, errs
	}
	if re.Kind != "" {
		e.Kind = strings.ToLower(re.Kind)
	}
	if !validName(e.Kind) {
		add("kind %q: want an engine name such as duckdb or postgres", re.Kind)
	}
	e.DSN, e.PasswordEnv = re.DSN, re.PasswordEnv
	if e.Kind == DefaultEngine {
		if re.DSN != "" || re.PasswordEnv != "" || re.MaxConnections != nil {
			add("kind duckdb reads the tables' files and takes no dsn, password_env or max_connections; for a database server set kind, e.g. `kind: postgres`")
		}
	} else if e.DSN == "" {
		add("dsn: missing; kind %s needs the database's address, e.g. postgres://dpstat_reader@db.internal:5432/clinic?sslmode=require", e.Kind)
	} else if dsnHasPassword(e.DSN) {
		add("dsn holds a password: remove it from the catalog and name an environment variable that holds it in password_env, e.g. `password_env: DPSTAT_ENGINE_PASSWORD`")
	}
	if re.PasswordEnv != "" && !validName(re.PasswordEnv) {
		add("password_env %q: want the name of an environment variable (letters, digits and underscores)", re.PasswordEnv)
	}
	if re.StatementTimeout != "" {
		d, err := time.ParseDuration(re.StatementTimeout)
		if err != nil || d <= 0 {
			add("statement_timeout %q: want a positive duration such as 30s or 5m", re.StatementTimeout)
		} else {
			e.StatementTimeout = d
		}
	}
	if re.MaxConnections != nil {
		if n := *re.MaxConnections; n < 1 || n > 1000 {
			add("max_connections = %d: want a whole number from 1 to 1000", n)
		} else {
			e.MaxConnections = n
		}
	}
	return e, errs
}

// dsnHasPassword reports whether a URL or key=value DSN carries a
// password.
func dsnHasPassword(dsn string) bool {
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return strings.Contains(strings.ToLower(dsn), "password=")
		}
		if _, ok := u.User.Password(); ok {
			return true
		}
		return u.Query().Has("password")
	}
	return strings.Contains(strings.ToLower(dsn), "password=")
}
