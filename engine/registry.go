package engine

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// DefaultKind is the engine a catalog gets when it names none: embedded
// DuckDB reading the catalog's files.
const DefaultKind = "duckdb"

// Spec says which engine to open and how: the catalog's `engine:` section
// (Kind, DSN, PasswordEnv, StatementTimeout, MaxConns) and the operator's
// settings for an embedded engine (Threads, MemoryLimit). Each engine reads
// the fields that apply to it.
type Spec struct {
	// Kind names the engine: "duckdb" (the default when empty) or the
	// kind of another registered engine, e.g. "postgres".
	Kind string
	// DSN locates a server engine's database. It never holds a password.
	DSN string
	// PasswordEnv names the environment variable holding the password of
	// a server engine's user; empty means none (or the driver's own
	// sources, such as a password file).
	PasswordEnv string
	// StatementTimeout stops a statement that runs longer; zero means the
	// engine's default.
	StatementTimeout time.Duration
	// MaxConns caps a server engine's connection pool; zero means the
	// engine's default.
	MaxConns int
	// Threads limits an embedded engine's worker threads; zero means one
	// per core.
	Threads int
	// MemoryLimit caps an embedded engine's memory, e.g. "2GB"; empty
	// means the engine's default.
	MemoryLimit string
}

// ServerPassword checks the spec of a server engine (name, e.g.
// "postgres", and product, e.g. "PostgreSQL", for messages): the embedded
// engine's settings are refused, and the password is read from the
// environment variable PasswordEnv names ("" when it names none).
func (s Spec) ServerPassword(name, product string) (string, error) {
	if s.Threads != 0 || s.MemoryLimit != "" {
		return "", fmt.Errorf("%s: threads (%d) and memory limit (%q) apply only to the embedded engine; leave them unset for a %s server, whose own settings govern them", name, s.Threads, s.MemoryLimit, product)
	}
	if s.PasswordEnv == "" {
		return "", nil
	}
	pw, ok := os.LookupEnv(s.PasswordEnv)
	if !ok {
		return "", fmt.Errorf("%s: password_env %s: the environment variable is not set; set it to the password of the catalog's %s user", name, s.PasswordEnv, product)
	}
	return pw, nil
}

// DefaultStatementTimeout is a server engine's statement time limit when
// the catalog sets none.
const DefaultStatementTimeout = 10 * time.Minute

// DefaultMaxConns is a server engine's connection pool size when the
// catalog sets none.
const DefaultMaxConns = 8

// ServerOptions configures a connection to a database server (the
// PostgreSQL and ClickHouse engines).
type ServerOptions struct {
	// DSN locates the server, the database and the user, in the engine's
	// form (docs/engines.md). It never needs to hold a password.
	DSN string
	// Password, when not empty, is the user's password (it overrides any
	// in the DSN).
	Password string
	// StatementTimeout stops a statement that runs longer on the server;
	// zero means DefaultStatementTimeout.
	StatementTimeout time.Duration
	// MaxConns caps the connection pool; zero means DefaultMaxConns.
	MaxConns int
}

// Limits checks the options' statement timeout and pool size, as every
// server engine's Open does, and returns them with the defaults filled in
// (DefaultStatementTimeout, DefaultMaxConns) and the pool capped at
// maxConns. name ("postgres") begins the errors.
func (o ServerOptions) Limits(name string, maxConns int) (time.Duration, int, error) {
	if o.StatementTimeout < 0 {
		return 0, 0, fmt.Errorf("%s: statement timeout %v: want a positive duration (or zero for the default %v)", name, o.StatementTimeout, DefaultStatementTimeout)
	}
	if o.MaxConns < 0 {
		return 0, 0, fmt.Errorf("%s: MaxConns = %d: want a positive number (or zero for the default %d)", name, o.MaxConns, DefaultMaxConns)
	}
	timeout, conns := o.StatementTimeout, DefaultMaxConns
	if timeout == 0 {
		timeout = DefaultStatementTimeout
	}
	if o.MaxConns > 0 {
		conns = min(o.MaxConns, maxConns)
	}
	return timeout, conns, nil
}

// ServerOptions checks the spec for a server engine (see ServerPassword)
// and returns its connection options.
func (s Spec) ServerOptions(name, product string) (ServerOptions, error) {
	pw, err := s.ServerPassword(name, product)
	if err != nil {
		return ServerOptions{}, err
	}
	return ServerOptions{DSN: s.DSN, Password: pw, StatementTimeout: s.StatementTimeout, MaxConns: s.MaxConns}, nil
}

// kind is the spec's engine kind, with the default filled in.
func (s Spec) kind() string {
	if s.Kind == "" {
		return DefaultKind
	}
	return strings.ToLower(s.Kind)
}

// Driver is what an engine package registers: its dialect (enough to plan
// and explain a query without connecting) and how to open it.
type Driver struct {
	// Dialect spells SQL for the engine.
	Dialect Dialect
	// Open starts or connects to the engine. It must fail, saying why,
	// when the engine cannot be reached.
	Open func(ctx context.Context, spec Spec) (Engine, error)
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Driver{}
)

// Register makes an engine kind available to Open. Engine packages call it
// from an init function, so that importing the package (package
// engine/engines imports them all) is what makes the kind usable. It panics
// when the kind is registered twice or the driver is incomplete: both are
// programming errors, never user input.
func Register(kind string, d Driver) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if d.Dialect == nil || d.Open == nil {
		panic("engine: Register " + kind + ": the driver needs a Dialect and an Open function")
	}
	if _, dup := registry[kind]; dup {
		panic("engine: Register called twice for kind " + kind)
	}
	registry[kind] = d
}

// RegisterServer registers the server engine kind (product names it in
// messages, e.g. "PostgreSQL"): a catalog's spec is checked and turned
// into ServerOptions (Spec.ServerOptions) and opened with open.
func RegisterServer[E Engine](kind, product string, d Dialect, open func(context.Context, ServerOptions) (E, error)) {
	Register(kind, Driver{Dialect: d, Open: func(ctx context.Context, s Spec) (Engine, error) {
		opts, err := s.ServerOptions(kind, product)
		if err != nil {
			return nil, err
		}
		e, err := open(ctx, opts)
		if err != nil {
			return nil, err
		}
		return e, nil
	}})
}

// Kinds lists the registered engine kinds, sorted.
func Kinds() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]string, 0, len(registry))
	for k := range registry {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func lookup(kind string) (Driver, error) {
	registryMu.RLock()
	d, ok := registry[kind]
	registryMu.RUnlock()
	if !ok {
		kinds := Kinds()
		if len(kinds) == 0 {
			return Driver{}, fmt.Errorf("engine: kind %q: no engine is registered in this program (import package engine/engines)", kind)
		}
		return Driver{}, fmt.Errorf("engine: kind %q is not known; want one of %s", kind, strings.Join(kinds, ", "))
	}
	return d, nil
}

// DialectFor returns the dialect of the spec's engine kind without opening
// the engine: enough to plan, refuse and explain queries.
func DialectFor(spec Spec) (Dialect, error) {
	d, err := lookup(spec.kind())
	if err != nil {
		return nil, err
	}
	return d.Dialect, nil
}

// Open opens the spec's engine through its registered driver.
func Open(ctx context.Context, spec Spec) (Engine, error) {
	d, err := lookup(spec.kind())
	if err != nil {
		return nil, err
	}
	spec.Kind = spec.kind()
	return d.Open(ctx, spec)
}

// Registered reports whether kind is a registered engine kind.
func Registered(kind string) bool {
	return slices.Contains(Kinds(), kind)
}
