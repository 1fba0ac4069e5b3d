package ledger

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"unicode/utf8"

	"github.com/dpstat/dpstat/accounting"
)

// Key names a budget: one per (dataset, analyst), and, on a dataset that
// declares epochs, one per (dataset, analyst, epoch). Epoch is the epoch's
// label (see package epoch); empty for a dataset's budget as a whole,
// which on a dataset with epochs is the template each epoch's budget
// takes its limit and rule from.
type Key struct {
	Dataset string `json:"dataset"`
	Analyst string `json:"analyst"`
	Epoch   string `json:"epoch,omitempty"`
}

// String formats the key for messages.
func (k Key) String() string {
	if k.Epoch != "" {
		return fmt.Sprintf("analyst %q on %q in epoch %s", k.Analyst, k.Dataset, k.Epoch)
	}
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
	if err := validName("epoch", k.Epoch, true); err != nil {
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
	b = append(b, k.Analyst...)
	if k.Epoch != "" {
		b = append(b, 0)
		b = append(b, k.Epoch...)
	}
	return b
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

func loadBudget(tx kvTx, k Key) (*accounting.Budget, error) {
	b, err := analystBook.load(tx, k)
	if err == nil && b == nil {
		return nil, fmt.Errorf("%v: %w", k, ErrNoBudget)
	}
	return b, err
}

func storeBudget(tx kvTx, k Key, b *accounting.Budget) error { return analystBook.store(tx, k, b) }

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

// checkGrant checks what every grant checks before reading the ledger:
// the budget's name (nameErr, its validation's error) and the limit under
// rule.
func checkGrant(nameErr error, limit accounting.EpsDelta, rule accounting.Rule) error {
	if nameErr != nil {
		return nameErr
	}
	return accounting.ValidateLimit(limit, rule)
}

// checkAnalystGrant is checkGrant for an analyst's budget k, which is
// never an epoch's.
func checkAnalystGrant(k Key, limit accounting.EpsDelta, rule accounting.Rule) error {
	if k.Epoch != "" {
		return fmt.Errorf("%v: an epoch's budget takes the limit of the dataset's budget: grant analyst %q on %q instead", k, k.Analyst, k.Dataset)
	}
	return checkGrant(k.Validate(), limit, rule)
}

// Grant sets the budget of k to limit under rule, creating it if needed.
// A limit may be raised, or lowered down to what is already spent but not
// below it; the rule of a budget with releases cannot change.
func (l *Ledger) Grant(k Key, limit accounting.EpsDelta, rule accounting.Rule) (Status, error) {
	if err := checkAnalystGrant(k, limit, rule); err != nil {
		return Status{}, err
	}
	if err := l.writable(); err != nil {
		return Status{}, err
	}
	var st Status
	err := l.update(func(tx kvTx) error {
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
		if err := setEpochLimits(tx, k.Dataset, k.Analyst, limit, rule, k.String()); err != nil {
			return err
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
func withTotal(tx kvTx, st *Status) error {
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
	if err := checkAnalystGrant(k, def, rule); err != nil {
		return Status{}, err
	}
	if st, err := l.Status(k); err == nil || !errors.Is(err, ErrNoBudget) {
		return st, err
	}
	if err := l.writable(); err != nil {
		return Status{}, err
	}
	var st Status
	err := l.update(func(tx kvTx) error {
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
	err := l.view(func(tx kvTx) error {
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
	return l.check(k, c, func(_ kvTx, b, t *accounting.Budget) error {
		if err := b.Check(c); err != nil {
			return fmt.Errorf("the budget of %v: %w", k, err)
		}
		if t != nil {
			if err := t.Check(c); err != nil {
				return totalRefusal(k, err)
			}
		}
		return nil
	})
}

// check validates k and c and calls fn, in a read transaction, with the
// budget of k and its dataset's total budget (nil when it has none).
func (l *Ledger) check(k Key, c accounting.Cost, fn func(tx kvTx, b, total *accounting.Budget) error) error {
	if err := k.Validate(); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("charge to %v: %w", k, err)
	}
	return l.view(func(tx kvTx) error {
		b, err := loadBudget(tx, k)
		if err != nil {
			return err
		}
		t, err := loadTotal(tx, k.Dataset)
		if err != nil {
			return err
		}
		return fn(tx, b, t)
	})
}

// Budgets returns every budget, sorted by dataset and then analyst.
func (l *Ledger) Budgets() ([]Status, error) {
	var out []Status
	err := l.view(func(tx kvTx) error {
		return analystBook.each(tx, analystBook.damaged, func(_ []byte, k Key, b *accounting.Budget) error {
			st := statusOf(k, b)
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
		if out[i].Key.Analyst != out[j].Key.Analyst {
			return out[i].Key.Analyst < out[j].Key.Analyst
		}
		return out[i].Key.Epoch < out[j].Key.Epoch
	})
	return out, err
}

func (l *Ledger) view(fn func(kvTx) error) (err error) {
	select {
	case <-l.done:
		return fmt.Errorf("ledger %s: %w", l.path, ErrClosed)
	default:
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(l.path, &err)
	return l.st.view(fn)
}
