package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Magic and FormatVersion identify a ledger file. They are stored in the
// meta bucket when the file is created; Open refuses a file without the
// magic or with a newer version.
const (
	Magic         = "dpstat-ledger"
	FormatVersion = 2
)

// DefaultTimeout is how long Open waits for another process to release the
// ledger file when Options.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// Limits on the sizes of stored strings.
const (
	MaxNameLen        = 256
	MaxRequestIDLen   = 256
	MaxDescriptionLen = 16 << 10
	MaxAnswerKeyLen   = 1024
	MaxAnswerLen      = 8 << 20
)

var (
	bucketMeta     = []byte("meta")
	bucketBudgets  = []byte("budgets")
	bucketReleases = []byte("releases")
	bucketRequests = []byte("requests")
	bucketAnswers  = []byte("answers")
	keyMagic       = []byte("magic")
	keyVersion     = []byte("version")
)

// Errors that callers test with errors.Is.
var (
	// ErrNoBudget: no budget was ever granted for the (dataset, analyst).
	ErrNoBudget = errors.New("no budget granted")
	// ErrInUse: another process holds the ledger file for longer than
	// Options.Timeout.
	ErrInUse = errors.New("ledger is in use by another process")
	// ErrNotLedger: the file is not a dpstat ledger, is corrupt or has a
	// newer format. The file is left untouched.
	ErrNotLedger = errors.New("not a usable dpstat ledger")
	// ErrClosed: the ledger was closed.
	ErrClosed = errors.New("ledger is closed")
	// ErrReadOnly: a write on a ledger opened with Options.ReadOnly.
	ErrReadOnly = errors.New("ledger was opened read-only")
	// ErrRequestConflict: a RequestID was reused for a different charge.
	ErrRequestConflict = errors.New("request ID already used for a different charge")
	// ErrAnswerExists: a charge carried an AnswerKey that already has a
	// stored answer; nothing was charged, and Answer returns the stored one.
	ErrAnswerExists = errors.New("an answer is already stored under this answer key")
)

// DefaultPath is where the ledger lives unless a path is given:
// $DPSTAT_LEDGER if set, else $XDG_DATA_HOME/dpstat/ledger.db, else
// ~/.local/share/dpstat/ledger.db (or ./dpstat-ledger.db when no home
// directory is known).
func DefaultPath() string {
	if p := os.Getenv("DPSTAT_LEDGER"); p != "" {
		return p
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "dpstat", "ledger.db")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".local", "share", "dpstat", "ledger.db")
	}
	return "dpstat-ledger.db"
}

// Options configures Open.
type Options struct {
	// ReadOnly opens the ledger for reading only. Several read-only
	// openers may share the file; a writer waits for them.
	ReadOnly bool
	// Timeout is how long Open waits for another process to release the
	// file lock; zero means DefaultTimeout. Negative is an error. For a
	// PostgreSQL ledger it bounds connecting, and how long a transaction
	// cut off by a failure of the server is tried again.
	Timeout time.Duration
	// Key, when set, seals the ledger: the end of its chain of records
	// carries an HMAC-SHA-256 under Key, so that someone who rewrites the
	// file consistently without the key is detected. Keep the key outside
	// the ledger (see KeyFromEnv). A sealed ledger opens for writing only
	// with its key; a new or empty ledger is sealed when opened with a
	// key; an existing unsealed one only with Seal. At least MinKeyLen
	// bytes.
	Key []byte
	// Seal allows Open to seal an existing ledger that has records but no
	// seal yet with Key, after checking it.
	Seal bool
}

// Ledger is an open ledger (a file, or a schema in PostgreSQL). Its methods
// are safe for concurrent use.
//
// A PostgreSQL ledger may be open for writing in several processes at
// once (server replicas): their charges take turns on a row lock in the
// database, so they share every budget exactly. What follows is about the
// file.
//
// bbolt holds an exclusive lock on the file for as long as a writable
// Ledger is open, so only one process at a time can have it open for
// writing; other processes wait in Open (up to Options.Timeout). Programs
// that share a ledger should therefore open it for the duration of one
// piece of work (the dpstat command line opens it once per command) rather
// than keep it open.
type Ledger struct {
	st       kvStore
	path     string
	readOnly bool
	key      []byte

	reqs      chan *chargeReq
	done      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Path is the file the ledger was opened from, or its PostgreSQL
// connection string without the password (see Redact).
func (l *Ledger) Path() string { return l.path }

// Open opens the ledger at path, creating the file (and its parent
// directories) if it does not exist. A path postgres://… (or
// postgresql://…) opens a ledger in a PostgreSQL database instead, creating
// its schema when needed (see DefaultSchema); several processes may have
// it open for writing at once, and they share every budget. An existing file is first opened
// read-only and checked: a file that is not a bbolt database, is corrupt,
// lacks the ledger's magic or has a newer format version is refused with an
// error wrapping ErrNotLedger, and is never modified.
func Open(path string, opts Options) (*Ledger, error) {
	if path == "" {
		return nil, errors.New("ledger path is empty: give a file path")
	}
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("ledger open timeout = %v: want >= 0", opts.Timeout)
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Key != nil && len(opts.Key) < MinKeyLen {
		return nil, fmt.Errorf("ledger %s: key of %d bytes: want at least %d (e.g. 32 random bytes): %w", Redact(path), len(opts.Key), MinKeyLen, ErrKey)
	}
	if opts.Seal && opts.Key == nil {
		return nil, fmt.Errorf("ledger %s: sealing needs a key: %w", Redact(path), ErrKey)
	}
	if IsPostgres(path) {
		return openPostgres(path, opts)
	}
	info, statErr := os.Stat(path)
	exists := statErr == nil
	if statErr != nil && !errors.Is(statErr, os.ErrNotExist) {
		return nil, fmt.Errorf("ledger %s: %w", path, statErr)
	}
	if exists && info.IsDir() {
		return nil, fmt.Errorf("ledger %s is a directory: %w", path, ErrNotLedger)
	}
	if opts.ReadOnly {
		if !exists {
			return nil, fmt.Errorf("ledger %s does not exist (nothing has been granted or charged yet): %w", path, os.ErrNotExist)
		}
		db, err := openBolt(path, true, opts.Timeout)
		if err != nil {
			return nil, err
		}
		if info.Size() == 0 {
			_ = db.Close()
			return nil, fmt.Errorf("ledger %s is an empty file: %w", path, ErrNotLedger)
		}
		if err := checkFormat(db, path); err != nil {
			_ = db.Close()
			return nil, err
		}
		l := newLedger(boltStore{db}, path, true)
		l.key = opts.Key
		if err := l.checkOnOpen(opts); err != nil {
			_ = db.Close()
			return nil, err
		}
		return l, nil
	}
	deadline := time.Now().Add(opts.Timeout)
	if !exists {
		if err := createFile(path); err != nil {
			return nil, err
		}
		info, statErr = os.Stat(path)
		if statErr != nil && !errors.Is(statErr, os.ErrNotExist) {
			return nil, fmt.Errorf("ledger %s: %w", path, statErr)
		}
	}
	if statErr == nil && info.Size() > 0 {
		// Check before opening for writing: bbolt may write to a file it
		// opens read-write.
		db, err := openBolt(path, true, opts.Timeout)
		if err != nil {
			return nil, err
		}
		err = checkFormat(db, path)
		_ = db.Close()
		if err != nil {
			return nil, err
		}
	}
	// The whole Open waits at most opts.Timeout (bbolt reads a zero
	// timeout as "wait forever", so keep it positive).
	db, err := openBolt(path, false, max(time.Until(deadline), time.Millisecond))
	if err != nil {
		return nil, err
	}
	// initFormat initializes an empty file in place and checks any other.
	if err := initFormat(db, path); err != nil {
		_ = db.Close()
		return nil, err
	}
	l := newLedger(boltStore{db}, path, false)
	l.key = opts.Key
	if err := l.checkOnOpen(opts); err != nil {
		_ = db.Close()
		return nil, err
	}
	l.wg.Add(1)
	go l.committer()
	return l, nil
}

// checkOnOpen upgrades a format-1 ledger opened for writing, seals it when
// that is asked for, and verifies it (see Verify). Nothing is written to a
// ledger that needs no upgrade or seal, nor to one that fails a check.
func (l *Ledger) checkOnOpen(opts Options) error {
	if !l.readOnly {
		var version int
		var sealed bool
		var h chainHead
		err := l.view(func(tx kvTx) error {
			version = formatVersion(tx)
			sealed = tx.Bucket(bucketMeta).Get(keyChainMAC) != nil
			var err error
			h, err = readHead(tx)
			return err
		})
		switch {
		case err != nil:
			return fmt.Errorf("ledger %s: %w", l.path, err)
		case sealed && l.key == nil:
			return fmt.Errorf("ledger %s is sealed with a key: give the key to write to it (DPSTAT_LEDGER_KEY_FILE), or open it read-only: %w", l.path, ErrKey)
		case version < 2:
			// The upgrade checks the sums first and seals the new chain
			// when a key is given.
			err = l.update(l.migrate)
		case !sealed && l.key != nil && (h.seq == 0 || opts.Seal):
			err = l.update(func(tx kvTx) error {
				if _, err := verifyTx(tx, nil); err != nil {
					return err
				}
				return writeHead(tx, h, l.key)
			})
		}
		if err != nil {
			return fmt.Errorf("ledger %s: %w", l.path, err)
		}
	}
	_, err := l.Verify()
	return err
}

func newLedger(st kvStore, path string, ro bool) *Ledger {
	return &Ledger{st: st, path: path, readOnly: ro, reqs: make(chan *chargeReq), done: make(chan struct{})}
}

func openBolt(path string, ro bool, timeout time.Duration) (db *bolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(path, &err)
	db, err = bolt.Open(path, 0o600, &bolt.Options{ReadOnly: ro, Timeout: timeout})
	if err == nil {
		return db, nil
	}
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("ledger %s is in use by another process (waited %v): %w", path, timeout, ErrInUse)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrChecksum):
		return nil, fmt.Errorf("ledger %s is not a dpstat ledger: the file is not a valid bbolt database (%v); it was left unchanged: %w", path, err, ErrNotLedger)
	case errors.Is(err, os.ErrPermission), errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	return nil, fmt.Errorf("ledger %s cannot be opened as a dpstat ledger (%v); it was left unchanged: %w", path, err, ErrNotLedger)
}

// recoverCorrupt turns a panic (bbolt panics on inconsistent pages, and a
// fault on a page past the end of a damaged file becomes a panic under
// debug.SetPanicOnFault) into an error wrapping ErrNotLedger. It must be
// deferred directly.
func recoverCorrupt(path string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("ledger %s is corrupt (%v); the file was left as it was: %w", path, r, ErrNotLedger)
	}
}

// checkFormat verifies the magic and version of an opened file.
func checkFormat(db *bolt.DB, path string) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(path, &err)
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("ledger %s: %w", path, err)
	}
	return db.View(func(tx *bolt.Tx) error {
		// A file shorter than its own page count says is truncated;
		// reading its pages would fault.
		if need := tx.Size(); info.Size() < need {
			return fmt.Errorf("ledger %s is truncated: the file has %d bytes but its pages need %d; it was left unchanged: %w", path, info.Size(), need, ErrNotLedger)
		}
		return checkFormatTx(boltTx{tx}, path, "a bbolt database but ")
	})
}

// checkFormatTx verifies the magic, the version and the buckets of a
// ledger in tx; kind says what the store is when it is not a ledger
// ("a bbolt database but ").
func checkFormatTx(tx kvTx, path, kind string) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return fmt.Errorf("ledger %s is %snot a dpstat ledger (no %q bucket); it was left unchanged: %w", path, kind, bucketMeta, ErrNotLedger)
	}
	magic := meta.Get(keyMagic)
	if string(magic) != Magic {
		return fmt.Errorf("ledger %s is not a dpstat ledger: magic is %q, want %q; it was left unchanged: %w", path, magic, Magic, ErrNotLedger)
	}
	vtext := meta.Get(keyVersion)
	v, perr := strconv.Atoi(string(vtext))
	if perr != nil || v < 1 {
		return fmt.Errorf("ledger %s has an unreadable format version %q; it was left unchanged: %w", path, vtext, ErrNotLedger)
	}
	if v > FormatVersion {
		return fmt.Errorf("ledger %s has format version %d, newer than the version %d this dpstat reads; use a newer dpstat (the file was left unchanged): %w", path, v, FormatVersion, ErrNotLedger)
	}
	need := [][]byte{bucketBudgets, bucketReleases, bucketRequests, bucketAnswers}
	if v >= 2 {
		need = append(need, bucketGrants, bucketTotals)
	}
	for _, b := range need {
		if tx.Bucket(b) == nil {
			return fmt.Errorf("ledger %s is damaged: bucket %q is missing; it was left unchanged: %w", path, b, ErrNotLedger)
		}
	}
	return nil
}

// createFile creates a complete, empty ledger at path, atomically: it is
// built and synced under a temporary name in the same directory, then
// hard-linked to path, which fails harmlessly if another process created
// path meanwhile. A crash never leaves a half-initialized ledger at path
// (at worst a stray temporary file). Where hard links are not supported,
// Open falls back to initializing the file in place.
func createFile(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("ledger %s: creating its directory: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".creating-*")
	if err != nil {
		return fmt.Errorf("ledger %s: creating: %w", path, err)
	}
	tmp := f.Name()
	_ = f.Close()
	defer os.Remove(tmp)
	db, err := openBolt(tmp, false, time.Second)
	if err != nil {
		return err
	}
	if err := initFormat(db, tmp); err != nil {
		_ = db.Close()
		return err
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("ledger %s: creating: %w", path, err)
	}
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, os.ErrExist) {
		// No hard links here: leave path absent, and Open creates the
		// file in place.
		return nil
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// initFormat creates the buckets and writes the magic of a new file.
func initFormat(db *bolt.DB, path string) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(path, &err)
	var fresh bool
	if err := db.View(func(tx *bolt.Tx) error {
		fresh = tx.Bucket(bucketMeta) == nil
		return nil
	}); err != nil {
		return fmt.Errorf("ledger %s: %w", path, err)
	}
	if !fresh {
		return checkFormat(db, path)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		// The file was empty when checked; refuse to write into a file
		// that gained foreign content meanwhile.
		if tx.Bucket(bucketMeta) != nil {
			return nil
		}
		var n int
		if err := tx.ForEach(func([]byte, *bolt.Bucket) error { n++; return nil }); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("ledger %s is a bbolt database but not a dpstat ledger: %w", path, ErrNotLedger)
		}
		return initBuckets(boltTx{tx})
	})
	if err != nil {
		return fmt.Errorf("ledger %s: initializing: %w", path, err)
	}
	return checkFormat(db, path)
}

// Ping checks, within ctx, that the ledger can be read: its file, or its
// database (for readiness probes).
func (l *Ledger) Ping(ctx context.Context) error {
	select {
	case <-l.done:
		return fmt.Errorf("ledger %s: %w", l.path, ErrClosed)
	default:
	}
	if err := l.st.ping(ctx); err != nil {
		return fmt.Errorf("ledger %s: %w", l.path, err)
	}
	return nil
}

// Close waits for charges in flight and closes the file. It is safe to
// call more than once.
func (l *Ledger) Close() error {
	l.closeOnce.Do(func() {
		close(l.done)
		l.wg.Wait()
		l.closeErr = l.st.close()
	})
	return l.closeErr
}
