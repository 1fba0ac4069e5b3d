package ledger

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/dpstat/dpstat/accounting"
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
	// file lock; zero means DefaultTimeout. Negative is an error.
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

// Ledger is an open ledger file. Its methods are safe for concurrent use.
//
// bbolt holds an exclusive lock on the file for as long as a writable
// Ledger is open, so only one process at a time can have it open for
// writing; other processes wait in Open (up to Options.Timeout). Programs
// that share a ledger should therefore open it for the duration of one
// piece of work (the dpstat command line opens it once per command) rather
// than keep it open.
type Ledger struct {
	db       *bolt.DB
	path     string
	readOnly bool
	key      []byte

	reqs      chan *chargeReq
	done      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Path is the file the ledger was opened from.
func (l *Ledger) Path() string { return l.path }

// Open opens the ledger at path, creating the file (and its parent
// directories) if it does not exist. An existing file is first opened
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
		return nil, fmt.Errorf("ledger %s: key of %d bytes: want at least %d (e.g. 32 random bytes): %w", path, len(opts.Key), MinKeyLen, ErrKey)
	}
	if opts.Seal && opts.Key == nil {
		return nil, fmt.Errorf("ledger %s: sealing needs a key: %w", path, ErrKey)
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
		l := newLedger(db, path, true)
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
	l := newLedger(db, path, false)
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
		err := l.view(func(tx *bolt.Tx) error {
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
			err = l.update(func(tx *bolt.Tx) error {
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

func newLedger(db *bolt.DB, path string, ro bool) *Ledger {
	return &Ledger{db: db, path: path, readOnly: ro, reqs: make(chan *chargeReq), done: make(chan struct{})}
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
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			return fmt.Errorf("ledger %s is a bbolt database but not a dpstat ledger (no %q bucket); it was left unchanged: %w", path, bucketMeta, ErrNotLedger)
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
	})
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
		meta, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		if err := meta.Put(keyMagic, []byte(Magic)); err != nil {
			return err
		}
		if err := meta.Put(keyVersion, []byte(strconv.Itoa(FormatVersion))); err != nil {
			return err
		}
		for _, b := range [][]byte{bucketBudgets, bucketReleases, bucketRequests, bucketAnswers, bucketGrants, bucketTotals} {
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ledger %s: initializing: %w", path, err)
	}
	return checkFormat(db, path)
}

// Close waits for charges in flight and closes the file. It is safe to
// call more than once.
func (l *Ledger) Close() error {
	l.closeOnce.Do(func() {
		close(l.done)
		l.wg.Wait()
		l.closeErr = l.db.Close()
	})
	return l.closeErr
}

// Key names a budget: one per (dataset, analyst).
type Key struct {
	Dataset string `json:"dataset"`
	Analyst string `json:"analyst"`
}

// String formats the key for messages.
func (k Key) String() string {
	return fmt.Sprintf("analyst %q on %q", k.Analyst, k.Dataset)
}

func validName(what, s string, allowEmpty bool) error {
	if s == "" {
		if allowEmpty {
			return nil
		}
		return fmt.Errorf("%s is empty: want a name", what)
	}
	if len(s) > MaxNameLen {
		return fmt.Errorf("%s is %d bytes long: want at most %d", what, len(s), MaxNameLen)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s %q is not valid UTF-8", what, s)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%s %q contains a control character: want printable text", what, s)
		}
	}
	return nil
}

// Validate reports whether k names one budget: dataset and analyst must be
// non-empty printable UTF-8 text of at most MaxNameLen bytes.
func (k Key) Validate() error {
	if err := validName("dataset", k.Dataset, false); err != nil {
		return err
	}
	return validName("analyst", k.Analyst, false)
}

// bytes encodes the key: dataset, NUL, analyst (names hold no control
// characters), so that keys sort by dataset, then analyst.
func (k Key) bytes() []byte {
	b := make([]byte, 0, len(k.Dataset)+1+len(k.Analyst))
	b = append(b, k.Dataset...)
	b = append(b, 0)
	return append(b, k.Analyst...)
}

// matches reports whether k is selected by filter f (empty fields match
// everything).
func (f Key) matches(k Key) bool {
	return (f.Dataset == "" || f.Dataset == k.Dataset) && (f.Analyst == "" || f.Analyst == k.Analyst)
}

// Status is the state of one budget.
type Status struct {
	Key       Key                 `json:"key"`
	Rule      accounting.Rule     `json:"rule"`
	Limit     accounting.EpsDelta `json:"limit"`
	Spent     accounting.EpsDelta `json:"spent"`
	Remaining accounting.EpsDelta `json:"remaining"`
	Releases  int                 `json:"releases"`
	// Totals are the sums of the charged costs' ε, δ, ρ and
	// approximate-zCDP δ, rounded up (see accounting.Budget.Totals).
	Totals accounting.Cost `json:"totals"`
	// Total is the dataset's total budget (every analyst's releases
	// together), or nil when the dataset has none.
	Total *TotalStatus `json:"total,omitempty"`
}

func statusOf(k Key, b *accounting.Budget) Status {
	return Status{Key: k, Rule: b.Rule(), Limit: b.Limit(), Spent: b.Spent(), Remaining: b.Remaining(), Releases: b.Releases(), Totals: b.Totals()}
}

// budgetRecord is the stored form of a budget.
type budgetRecord struct {
	Key    Key                `json:"key"`
	Budget *accounting.Budget `json:"budget"`
}

func loadBudget(tx *bolt.Tx, k Key) (*accounting.Budget, error) {
	v := tx.Bucket(bucketBudgets).Get(k.bytes())
	if v == nil {
		return nil, fmt.Errorf("%v: %w", k, ErrNoBudget)
	}
	rec := budgetRecord{Budget: new(accounting.Budget)}
	if err := json.Unmarshal(v, &rec); err != nil {
		return nil, fmt.Errorf("stored budget for %v is damaged: %w", k, err)
	}
	return rec.Budget, nil
}

func storeBudget(tx *bolt.Tx, k Key, b *accounting.Budget) error {
	v, err := json.Marshal(budgetRecord{Key: k, Budget: b})
	if err != nil {
		return err
	}
	return tx.Bucket(bucketBudgets).Put(k.bytes(), v)
}

func (l *Ledger) writable() error {
	if l.readOnly {
		return fmt.Errorf("ledger %s: %w", l.path, ErrReadOnly)
	}
	select {
	case <-l.done:
		return fmt.Errorf("ledger %s: %w", l.path, ErrClosed)
	default:
	}
	return nil
}

// Grant sets the budget of k to limit under rule, creating it if needed.
// A limit may be raised, or lowered down to what is already spent but not
// below it; the rule of a budget with releases cannot change.
func (l *Ledger) Grant(k Key, limit accounting.EpsDelta, rule accounting.Rule) (Status, error) {
	if err := k.Validate(); err != nil {
		return Status{}, err
	}
	if err := accounting.ValidateLimit(limit, rule); err != nil {
		return Status{}, err
	}
	if err := l.writable(); err != nil {
		return Status{}, err
	}
	var st Status
	err := l.update(func(tx *bolt.Tx) error {
		b, err := loadBudget(tx, k)
		switch {
		case errors.Is(err, ErrNoBudget):
			if b, err = accounting.NewBudget(limit, rule); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			if err := b.SetLimit(limit, rule); err != nil {
				return fmt.Errorf("%v: %w", k, err)
			}
		}
		if err := l.recordGrant(tx, k, b); err != nil {
			return err
		}
		st = statusOf(k, b)
		return withTotal(tx, &st)
	})
	return st, err
}

// withTotal adds the dataset's total budget, if any, to st.
func withTotal(tx *bolt.Tx, st *Status) error {
	t, err := loadTotal(tx, st.Key.Dataset)
	if err != nil || t == nil {
		return err
	}
	ts := totalStatusOf(st.Key.Dataset, t)
	st.Total = &ts
	return nil
}

// EnsureBudget returns the budget of k, creating it with limit def under
// rule if it does not exist. An existing budget is returned unchanged
// (whatever its limit and rule).
func (l *Ledger) EnsureBudget(k Key, def accounting.EpsDelta, rule accounting.Rule) (Status, error) {
	if err := k.Validate(); err != nil {
		return Status{}, err
	}
	if err := accounting.ValidateLimit(def, rule); err != nil {
		return Status{}, err
	}
	if st, err := l.Status(k); err == nil || !errors.Is(err, ErrNoBudget) {
		return st, err
	}
	if err := l.writable(); err != nil {
		return Status{}, err
	}
	var st Status
	err := l.update(func(tx *bolt.Tx) error {
		b, err := loadBudget(tx, k)
		if errors.Is(err, ErrNoBudget) {
			if b, err = accounting.NewBudget(def, rule); err != nil {
				return err
			}
			if err := l.recordGrant(tx, k, b); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		st = statusOf(k, b)
		return withTotal(tx, &st)
	})
	return st, err
}

// Status returns the budget of k, or an error wrapping ErrNoBudget.
func (l *Ledger) Status(k Key) (Status, error) {
	if err := k.Validate(); err != nil {
		return Status{}, err
	}
	var st Status
	err := l.view(func(tx *bolt.Tx) error {
		b, err := loadBudget(tx, k)
		if err != nil {
			return err
		}
		st = statusOf(k, b)
		return withTotal(tx, &st)
	})
	return st, err
}

// Check reports whether cost c would fit in the budget of k now, without
// charging it: nil, an error wrapping ErrNoBudget, a validation error, or
// an *accounting.ExceededError. Another charge may take the budget first:
// only Charge decides.
func (l *Ledger) Check(k Key, c accounting.Cost) error {
	if err := k.Validate(); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("charge to %v: %w", k, err)
	}
	return l.view(func(tx *bolt.Tx) error {
		b, err := loadBudget(tx, k)
		if err != nil {
			return err
		}
		if err := b.Check(c); err != nil {
			return fmt.Errorf("the budget of %v: %w", k, err)
		}
		t, err := loadTotal(tx, k.Dataset)
		if err != nil {
			return err
		}
		if t != nil {
			if err := t.Check(c); err != nil {
				return totalRefusal(k, err)
			}
		}
		return nil
	})
}

// Budgets returns every budget, sorted by dataset and then analyst.
func (l *Ledger) Budgets() ([]Status, error) {
	var out []Status
	err := l.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketBudgets).ForEach(func(key, v []byte) error {
			rec := budgetRecord{Budget: new(accounting.Budget)}
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("stored budget %q is damaged: %w", key, err)
			}
			st := statusOf(rec.Key, rec.Budget)
			if err := withTotal(tx, &st); err != nil {
				return err
			}
			out = append(out, st)
			return nil
		})
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key.Dataset != out[j].Key.Dataset {
			return out[i].Key.Dataset < out[j].Key.Dataset
		}
		return out[i].Key.Analyst < out[j].Key.Analyst
	})
	return out, err
}

func (l *Ledger) view(fn func(*bolt.Tx) error) (err error) {
	select {
	case <-l.done:
		return fmt.Errorf("ledger %s: %w", l.path, ErrClosed)
	default:
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(l.path, &err)
	return l.db.View(fn)
}

// Charge is one release to be charged.
type Charge struct {
	// RequestID makes the charge idempotent: a second Charge with the
	// same RequestID returns the first one's Receipt (Replayed = true) and
	// charges nothing. Empty means a fresh random ID (no idempotency).
	RequestID string
	// Key is the budget charged.
	Key Key
	// Description says what was released (e.g. the query), for History.
	Description string
	// Cost is what the release costs.
	Cost accounting.Cost
	// AnswerKey and Answer, when AnswerKey is set, store Answer durably in
	// the same transaction as the charge; Answer(Key, AnswerKey) returns
	// it. If an answer is already stored under AnswerKey the charge is
	// refused with ErrAnswerExists and nothing is charged.
	AnswerKey string
	Answer    []byte
}

// Receipt confirms a committed charge.
type Receipt struct {
	ReleaseID uint64              `json:"release_id"`
	RequestID string              `json:"request_id"`
	Time      time.Time           `json:"time"`
	Key       Key                 `json:"key"`
	Cost      accounting.Cost     `json:"cost"`
	Rule      accounting.Rule     `json:"rule"`
	Spent     accounting.EpsDelta `json:"spent"`
	Remaining accounting.EpsDelta `json:"remaining"`
	// Replayed is true when the RequestID had already been charged: this
	// is the original receipt and nothing was charged again.
	Replayed bool `json:"replayed"`
	// Total is the dataset's total budget after the charge, or nil when
	// the dataset has none.
	Total *TotalStatus `json:"total,omitempty"`
}

// Release is one charged release, as History returns it.
type Release struct {
	ID          uint64          `json:"id"`
	RequestID   string          `json:"request_id"`
	Time        time.Time       `json:"time"`
	Key         Key             `json:"key"`
	Description string          `json:"description"`
	Cost        accounting.Cost `json:"cost"`
	Rule        accounting.Rule `json:"rule"`
	AnswerKey   string          `json:"answer_key,omitempty"`
}

func (c *Charge) validate() error {
	if err := c.Key.Validate(); err != nil {
		return err
	}
	if len(c.RequestID) > MaxRequestIDLen {
		return fmt.Errorf("request ID is %d bytes long: want at most %d", len(c.RequestID), MaxRequestIDLen)
	}
	if len(c.Description) > MaxDescriptionLen {
		return fmt.Errorf("description is %d bytes long: want at most %d", len(c.Description), MaxDescriptionLen)
	}
	if len(c.AnswerKey) > MaxAnswerKeyLen {
		return fmt.Errorf("answer key is %d bytes long: want at most %d", len(c.AnswerKey), MaxAnswerKeyLen)
	}
	if c.AnswerKey == "" && len(c.Answer) > 0 {
		return errors.New("an answer was given without an answer key: set Charge.AnswerKey")
	}
	if len(c.Answer) > MaxAnswerLen {
		return fmt.Errorf("answer is %d bytes long: want at most %d", len(c.Answer), MaxAnswerLen)
	}
	if err := c.Cost.Validate(); err != nil {
		return fmt.Errorf("charge to %v: %w", c.Key, err)
	}
	return nil
}

func answerBytes(k Key, answerKey string) []byte {
	b := k.bytes()
	b = append(b, 0)
	return append(b, answerKey...)
}

func idBytes(id uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], id)
	return b[:]
}

// requestRecord is stored under the RequestID.
type requestRecord struct {
	Receipt   Receipt `json:"receipt"`
	AnswerKey string  `json:"answer_key,omitempty"`
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Charge charges c to its budget. In one transaction it validates the cost,
// checks it against the budget with the budget's rule, appends the release
// record (and the answer, if any) and updates the amount spent; the
// transaction is committed and synced to disk before Charge returns, so a
// returned Receipt is durable. A cost that does not fit returns an error
// that errors.As matches to *accounting.ExceededError, and nothing is
// written.
//
// Concurrent charges are committed together (group commit): each one still
// sees the budget as left by the ones before it. ctx is checked before the
// charge is queued; once queued, Charge waits for the commit's outcome,
// since a charge cannot be withdrawn from a transaction in flight.
func (l *Ledger) Charge(ctx context.Context, c Charge) (Receipt, error) {
	if err := c.validate(); err != nil {
		return Receipt{}, err
	}
	if err := l.writable(); err != nil {
		return Receipt{}, err
	}
	if c.RequestID == "" {
		c.RequestID = newRequestID()
	}
	if c.Answer != nil {
		c.Answer = bytes.Clone(c.Answer)
	}
	if err := ctx.Err(); err != nil {
		return Receipt{}, err
	}
	r := &chargeReq{c: c, ready: make(chan struct{})}
	select {
	case <-ctx.Done():
		return Receipt{}, ctx.Err()
	case <-l.done:
		return Receipt{}, fmt.Errorf("ledger %s: %w", l.path, ErrClosed)
	case l.reqs <- r:
	}
	<-r.ready
	return r.receipt, r.err
}

// chargeReq is a charge waiting for the committer.
type chargeReq struct {
	c       Charge
	receipt Receipt
	err     error
	ready   chan struct{}
}

// maxGroup caps the number of charges in one transaction.
const maxGroup = 512

// committer runs charges in groups: it takes every charge waiting, applies
// them in order in one read-write transaction and commits (one fsync for
// all). If the transaction fails, each charge is retried alone so that one
// charge's storage error cannot fail the others.
func (l *Ledger) committer() {
	defer l.wg.Done()
	group := make([]*chargeReq, 0, maxGroup)
	for {
		select {
		case <-l.done:
			return
		case r := <-l.reqs:
			group = append(group[:0], r)
		}
	drain:
		for len(group) < maxGroup {
			select {
			case r := <-l.reqs:
				group = append(group, r)
			default:
				break drain
			}
		}
		err := l.update(func(tx *bolt.Tx) error {
			for _, r := range group {
				if err := l.apply(r, tx); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil && len(group) > 1 {
			for _, r := range group {
				if err := l.update(func(tx *bolt.Tx) error { return l.apply(r, tx) }); err != nil {
					r.receipt, r.err = Receipt{}, fmt.Errorf("ledger %s: charge not recorded: %w", l.path, err)
				}
			}
		} else if err != nil {
			group[0].receipt, group[0].err = Receipt{}, fmt.Errorf("ledger %s: charge not recorded: %w", l.path, err)
		}
		for _, r := range group {
			close(r.ready)
		}
	}
}

// update runs fn in a read-write transaction, turning a panic into an error.
func (l *Ledger) update(fn func(*bolt.Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(l.path, &err)
	return l.db.Update(fn)
}

// apply performs the charge inside tx. Outcomes that write nothing (a
// refusal, a replay) are recorded in r and apply returns nil; a non-nil
// return is a storage failure and aborts the transaction. apply resets r
// first, so it can be run again after an aborted transaction.
func (l *Ledger) apply(r *chargeReq, tx *bolt.Tx) error {
	r.receipt, r.err = Receipt{}, nil
	c := &r.c
	reqs := tx.Bucket(bucketRequests)
	if v := reqs.Get([]byte(c.RequestID)); v != nil {
		var rec requestRecord
		if err := json.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("stored request %q is damaged: %w", c.RequestID, err)
		}
		if rec.Receipt.Key != c.Key || rec.Receipt.Cost != c.Cost || rec.AnswerKey != c.AnswerKey {
			r.err = fmt.Errorf("request ID %q was charged as release %d (%v, cost %v); this charge is for %v, cost %v: %w",
				c.RequestID, rec.Receipt.ReleaseID, rec.Receipt.Key, rec.Receipt.Cost, c.Key, c.Cost, ErrRequestConflict)
			return nil
		}
		r.receipt = rec.Receipt
		r.receipt.Replayed = true
		return nil
	}
	b, err := loadBudget(tx, c.Key)
	if errors.Is(err, ErrNoBudget) {
		r.err = fmt.Errorf("charge refused: %w (grant one first: dpstat budget grant)", err)
		return nil
	} else if err != nil {
		return err
	}
	if c.AnswerKey != "" && tx.Bucket(bucketAnswers).Get(answerBytes(c.Key, c.AnswerKey)) != nil {
		r.err = fmt.Errorf("%v answer key %q: %w", c.Key, c.AnswerKey, ErrAnswerExists)
		return nil
	}
	total, err := loadTotal(tx, c.Key.Dataset)
	if err != nil {
		return err
	}
	// Both budgets are spent in memory first; nothing is stored unless
	// both admit the cost.
	if err := b.Spend(c.Cost); err != nil {
		r.err = fmt.Errorf("the budget of %v: %w", c.Key, err)
		return nil
	}
	if total != nil {
		if err := total.Spend(c.Cost); err != nil {
			r.err = totalRefusal(c.Key, err)
			return nil
		}
	}
	rel := tx.Bucket(bucketReleases)
	id, err := rel.NextSequence()
	if err != nil {
		return err
	}
	now := time.Now().UTC().Round(0)
	release := Release{ID: id, RequestID: c.RequestID, Time: now, Key: c.Key, Description: c.Description, Cost: c.Cost, Rule: b.Rule(), AnswerKey: c.AnswerKey}
	if err := l.appendEvent(tx, func(seq uint64, prev string) ([]byte, error) {
		return json.Marshal(releaseRecord{Release: release, Seq: seq, Prev: prev})
	}, func(raw []byte) error { return rel.Put(idBytes(id), raw) }); err != nil {
		return err
	}
	if err := storeBudget(tx, c.Key, b); err != nil {
		return err
	}
	receipt := Receipt{ReleaseID: id, RequestID: c.RequestID, Time: now, Key: c.Key, Cost: c.Cost, Rule: b.Rule(), Spent: b.Spent(), Remaining: b.Remaining()}
	// The stored receipt (returned again on a retry) leaves out the
	// total's figures, which would add a few hundred bytes per release.
	qv, err := json.Marshal(requestRecord{Receipt: receipt, AnswerKey: c.AnswerKey})
	if err != nil {
		return err
	}
	if err := reqs.Put([]byte(c.RequestID), qv); err != nil {
		return err
	}
	if total != nil {
		if err := storeTotal(tx, c.Key.Dataset, total); err != nil {
			return err
		}
		ts := totalStatusOf(c.Key.Dataset, total)
		receipt.Total = &ts
	}
	if c.AnswerKey != "" {
		ans := c.Answer
		if ans == nil {
			ans = []byte{}
		}
		if err := tx.Bucket(bucketAnswers).Put(answerBytes(c.Key, c.AnswerKey), ans); err != nil {
			return err
		}
	}
	r.receipt = receipt
	return nil
}

// History returns charged releases, newest first, at most limit of them
// (limit <= 0: all). Empty fields of filter match every dataset or analyst.
func (l *Ledger) History(filter Key, limit int) ([]Release, error) {
	if err := validName("dataset", filter.Dataset, true); err != nil {
		return nil, err
	}
	if err := validName("analyst", filter.Analyst, true); err != nil {
		return nil, err
	}
	var out []Release
	err := l.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketReleases).Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			var r Release
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("stored release %x is damaged: %w", k, err)
			}
			if !filter.matches(r.Key) {
				continue
			}
			out = append(out, r)
			if limit > 0 && len(out) >= limit {
				break
			}
		}
		return nil
	})
	return out, err
}

// Answer returns the answer stored with a charge under answerKey for k, and
// whether there was one.
func (l *Ledger) Answer(k Key, answerKey string) ([]byte, bool, error) {
	if err := k.Validate(); err != nil {
		return nil, false, err
	}
	var out []byte
	var found bool
	err := l.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketAnswers).Get(answerBytes(k, answerKey))
		if v != nil {
			out, found = bytes.Clone(v), true
		}
		return nil
	})
	return out, found, err
}

// ErrNoPendingAnswer: StoreAnswer found no charge waiting for its answer
// under the key (none was charged with it, or its answer is stored already).
var ErrNoPendingAnswer = errors.New("no charge is waiting for an answer under this answer key")

// StoreAnswer stores the answer of a release that was charged with
// Charge.AnswerKey and no Answer: the charge reserved the key (a second
// charge with it is refused with ErrAnswerExists) and the answer, computed
// after the charge, is written here. An answer is stored once: a key that
// holds one already, or that no charge reserved, returns an error wrapping
// ErrNoPendingAnswer and changes nothing. The write is synced before
// StoreAnswer returns.
func (l *Ledger) StoreAnswer(k Key, answerKey string, answer []byte) error {
	if err := k.Validate(); err != nil {
		return err
	}
	if answerKey == "" || len(answerKey) > MaxAnswerKeyLen {
		return fmt.Errorf("answer key is %d bytes long: want 1 to %d", len(answerKey), MaxAnswerKeyLen)
	}
	if len(answer) == 0 || len(answer) > MaxAnswerLen {
		return fmt.Errorf("answer is %d bytes long: want 1 to %d", len(answer), MaxAnswerLen)
	}
	if err := l.writable(); err != nil {
		return err
	}
	return l.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAnswers)
		key := answerBytes(k, answerKey)
		if v := b.Get(key); v == nil || len(v) > 0 {
			return fmt.Errorf("%v answer key %q: %w", k, answerKey, ErrNoPendingAnswer)
		}
		return b.Put(key, bytes.Clone(answer))
	})
}
