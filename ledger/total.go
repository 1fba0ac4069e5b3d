package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/epoch"
)

// Total budgets. A dataset (a table, or an id space: tables whose privacy
// units name the same people) may have a total budget besides its
// analysts' budgets: it counts every release charged to the dataset,
// whoever asked, and a charge must fit both the analyst's budget and the
// total, in the same transaction. A dataset without a total budget has no
// cap across analysts.
var bucketTotals = []byte("totals")

// ErrTotalExceeded marks a refusal by a dataset's total budget (every
// analyst's releases together) rather than by the analyst's own budget.
// The error also matches *accounting.ExceededError with the total's
// figures.
var ErrTotalExceeded = errors.New("the total budget (every analyst together) is exhausted")

// TotalStatus is the state of a dataset's total budget.
type TotalStatus struct {
	Dataset string `json:"dataset"`
	// Epoch is the epoch's label for the total of one epoch of a dataset
	// that declares epochs; empty for the dataset's total (the template
	// of its epochs' totals).
	Epoch     string              `json:"epoch,omitempty"`
	Rule      accounting.Rule     `json:"rule"`
	Limit     accounting.EpsDelta `json:"limit"`
	Spent     accounting.EpsDelta `json:"spent"`
	Remaining accounting.EpsDelta `json:"remaining"`
	// Releases counts every release charged to the dataset, by any
	// analyst.
	Releases int             `json:"releases"`
	Totals   accounting.Cost `json:"totals"`
}

func totalStatusOf(ds string, b *accounting.Budget) TotalStatus {
	return TotalStatus{Dataset: ds, Rule: b.Rule(), Limit: b.Limit(), Spent: b.Spent(), Remaining: b.Remaining(), Releases: b.Releases(), Totals: b.Totals()}
}

// loadTotal returns the total budget of ds, or nil when it has none.
func loadTotal(tx kvTx, ds string) (*accounting.Budget, error) {
	return totalBook.load(tx, Key{Dataset: ds})
}

func storeTotal(tx kvTx, ds string, b *accounting.Budget) error {
	return totalBook.store(tx, Key{Dataset: ds}, b)
}

// newTotal makes the total budget of ds: it counts every release already
// charged to ds, so that the total covers what was released before it
// was declared. Releases charged to epochs are counted in the totals of
// their epochs, which it stores; with check, an epoch whose releases
// exceed limit refuses the total.
func newTotal(tx kvTx, ds string, limit accounting.EpsDelta, rule accounting.Rule, check bool) (*accounting.Budget, error) {
	b, err := accounting.NewBudget(limit, rule)
	if err != nil {
		return nil, err
	}
	var epochs *epochRecord
	err = tx.Bucket(bucketReleases).ForEach(func(k, v []byte) error {
		var r Release
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("stored release %x is damaged: %w", k, err)
		}
		if r.Key.Dataset != ds {
			return nil
		}
		if r.Epochs == nil {
			return b.Record(r.Cost)
		}
		if epochs == nil {
			epochs = &epochRecord{Dataset: ds, Every: r.Epochs.Every}
		}
		return epochs.record(*r.Epochs, r.Cost, limit, rule)
	})
	if err != nil {
		return nil, err
	}
	if epochs != nil {
		for _, run := range epochs.Runs {
			if check {
				if err := run.Budget.SetLimit(limit, rule); err != nil {
					return nil, fmt.Errorf("total budget of dataset %q: the %d releases already charged to epoch %s do not fit: %w",
						ds, run.Budget.Releases(), epoch.Range{Every: epochs.Every, From: run.From, To: run.To}, err)
				}
			}
		}
		epochs.Runs = merge(epochs.Runs)
		if err := storeEpochs(tx, epochs); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// GrantTotal sets the total budget of dataset ds (every analyst's releases
// together) to limit under rule, creating it if needed. A new total counts
// the releases already charged to ds, and is refused when they exceed
// limit; an existing one may be raised, or lowered down to what is spent.
func (l *Ledger) GrantTotal(ds string, limit accounting.EpsDelta, rule accounting.Rule) (TotalStatus, error) {
	return l.grantTotal(ds, limit, rule, false)
}

// EnsureTotal returns the total budget of ds, creating it with limit def
// under rule if it does not exist. A new total counts the releases already
// charged to ds, even when they exceed def (then it admits nothing more).
// An existing total is returned unchanged.
func (l *Ledger) EnsureTotal(ds string, def accounting.EpsDelta, rule accounting.Rule) (TotalStatus, error) {
	if st, err := l.Total(ds); err == nil || !errors.Is(err, ErrNoBudget) {
		return st, err
	}
	return l.grantTotal(ds, def, rule, true)
}

func (l *Ledger) grantTotal(ds string, limit accounting.EpsDelta, rule accounting.Rule, ensure bool) (TotalStatus, error) {
	if err := checkGrant(validName("dataset", ds, false), limit, rule); err != nil {
		return TotalStatus{}, err
	}
	if err := l.writable(); err != nil {
		return TotalStatus{}, err
	}
	var st TotalStatus
	err := l.update(func(tx kvTx) error {
		b, err := loadTotal(tx, ds)
		if err != nil {
			return err
		}
		switch {
		case b != nil && ensure:
			st = totalStatusOf(ds, b)
			return nil
		case b == nil:
			if b, err = newTotal(tx, ds, limit, rule, !ensure); err != nil {
				return err
			}
			if !ensure {
				if err := b.SetLimit(limit, rule); err != nil {
					return fmt.Errorf("total budget of dataset %q: the %d releases already charged to it do not fit: %w", ds, b.Releases(), err)
				}
			}
		default:
			if err := b.SetLimit(limit, rule); err != nil {
				return fmt.Errorf("total budget of dataset %q: %w", ds, err)
			}
			if err := setEpochLimits(tx, ds, "", limit, rule, fmt.Sprintf("total budget of dataset %q", ds)); err != nil {
				return err
			}
		}
		if err := l.recordGrant(tx, Key{Dataset: ds}, b); err != nil {
			return err
		}
		st = totalStatusOf(ds, b)
		return nil
	})
	return st, err
}

// Total returns the total budget of dataset ds, or an error wrapping
// ErrNoBudget when it has none.
func (l *Ledger) Total(ds string) (TotalStatus, error) {
	if err := validName("dataset", ds, false); err != nil {
		return TotalStatus{}, err
	}
	var st TotalStatus
	err := l.view(func(tx kvTx) error {
		b, err := loadTotal(tx, ds)
		if err != nil {
			return err
		}
		if b == nil {
			return fmt.Errorf("dataset %q has no total budget: %w", ds, ErrNoBudget)
		}
		st = totalStatusOf(ds, b)
		return nil
	})
	return st, err
}

// Totals returns every dataset's total budget, sorted by dataset.
func (l *Ledger) Totals() ([]TotalStatus, error) {
	var out []TotalStatus
	err := l.view(func(tx kvTx) error {
		return totalBook.each(tx, totalBook.damaged, func(_ []byte, k Key, b *accounting.Budget) error {
			out = append(out, totalStatusOf(k.Dataset, b))
			return nil
		})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Dataset < out[j].Dataset })
	return out, err
}

// totalRefusal wraps the total budget's refusal of a charge to k.
func totalRefusal(k Key, err error) error {
	return fmt.Errorf("%w on %q (a charge for analyst %q): %w", ErrTotalExceeded, k.Dataset, k.Analyst, err)
}
