package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/epoch"
)

// Epochs. A dataset that declares epochs (catalog.Epoch) keeps a budget
// per (analyst, epoch) and a total per epoch, beside the dataset's own
// budget and total, which are their templates: an epoch's budget takes
// the limit and rule of the dataset's budget (the grant of the template is
// the grant of every epoch), starts with nothing spent the first time a
// release touches the epoch, and follows the template when it is granted
// again. A release that reads several epochs (Charge.Epochs) is charged
// its whole cost in each of them, in one transaction, or refused with
// nothing written when any of them cannot pay.
//
// Compactness: the release record holds the range of epochs (two
// numbers), and the epochs' budgets of one (dataset, analyst), and the
// totals of one dataset, are one record in bucketEpochs holding runs of
// consecutive epochs whose budgets are equal. A charge splits at most two
// runs and spends each run once, so that charging a year of days costs a
// few budget updates, not 365.
var bucketEpochs = []byte("epochs")

// EpochsExceededError refuses a charge that some of the epochs it touches
// cannot pay. errors.As matches it, and *accounting.ExceededError with the
// figures of the first epoch that refused; a refusal by the totals also
// matches ErrTotalExceeded.
type EpochsExceededError struct {
	// Key is the budget charged (without an epoch).
	Key Key
	// Every is the kind of epoch; Refused lists the runs of epochs that
	// could not pay, in order.
	Every   string
	Refused []epoch.Range
	// Total is true when the totals (every analyst together) refused.
	Total bool
	// First is the refusal of the first epoch in Refused.
	First *accounting.ExceededError
}

// Error names the spent epochs.
func (e *EpochsExceededError) Error() string {
	whose := fmt.Sprintf("the budget of analyst %q on %q", e.Key.Analyst, e.Key.Dataset)
	if e.Total {
		whose = fmt.Sprintf("%v on %q (a charge for analyst %q)", ErrTotalExceeded, e.Key.Dataset, e.Key.Analyst)
	}
	var n int64
	parts := make([]string, len(e.Refused))
	for i, r := range e.Refused {
		n += r.Len()
		parts[i] = r.String()
	}
	noun := "epoch"
	if n > 1 {
		noun = "epochs"
	}
	return fmt.Sprintf("%s cannot pay in %d %s (%s): spent in %s %s; in %s: %v",
		whose, n, noun, e.Every, noun, strings.Join(parts, ", "), epoch.Label(e.Every, e.Refused[0].From), e.First)
}

// Unwrap returns the first epoch's refusal, and ErrTotalExceeded for the
// totals.
func (e *EpochsExceededError) Unwrap() []error {
	if e.Total {
		return []error{e.First, ErrTotalExceeded}
	}
	return []error{e.First}
}

// kindChangedError refuses a charge by another kind of epoch than the
// dataset's epochs were charged by: a month's budget cannot become days'.
type kindChangedError struct{ ds, was, now string }

func (e *kindChangedError) Error() string {
	return fmt.Sprintf("the epochs of %q were charged by %s and this charge is by %s: the kind of a dataset's epochs cannot change once charged (declare every: %s again, or declare the table under a new name)", e.ds, e.was, e.now, e.was)
}

// epochRun is a run of consecutive epochs whose budgets are equal.
type epochRun struct {
	From   int64              `json:"from"`
	To     int64              `json:"to"`
	Budget *accounting.Budget `json:"budget"`
}

// epochRecord is the stored form of the epochs' budgets of one (dataset,
// analyst), or of one dataset's totals (Analyst empty): runs in order,
// disjoint; an epoch in no run has its whole budget.
type epochRecord struct {
	Dataset string     `json:"dataset"`
	Analyst string     `json:"analyst,omitempty"`
	Every   string     `json:"every"`
	Runs    []epochRun `json:"runs"`
}

// epochsKey is the stored key of the epochs' budgets of analyst on ds, or
// of ds's totals when analyst is empty.
func epochsKey(ds, analyst string) []byte {
	if analyst == "" {
		return append([]byte("t\x00"), ds...)
	}
	return append(append(append([]byte("b\x00"), ds...), 0), analyst...)
}

func loadEpochs(tx kvTx, ds, analyst string) (*epochRecord, error) {
	b := tx.Bucket(bucketEpochs)
	if b == nil {
		return nil, nil
	}
	v := b.Get(epochsKey(ds, analyst))
	if v == nil {
		return nil, nil
	}
	// UnmarshalJSON directly: json.Unmarshal would scan the record twice.
	var rec epochRecord
	if err := rec.UnmarshalJSON(v); err != nil {
		return nil, fmt.Errorf("stored epoch budgets of %q (analyst %q) are damaged: %w", ds, analyst, err)
	}
	return &rec, nil
}

func storeEpochs(tx kvTx, rec *epochRecord) error {
	b, err := tx.CreateBucketIfNotExists(bucketEpochs)
	if err != nil {
		return err
	}
	v, err := rec.MarshalJSON() // its output is compact JSON already
	if err != nil {
		return err
	}
	return b.Put(epochsKey(rec.Dataset, rec.Analyst), v)
}

// touch returns rec's runs with r's epochs split out: every epoch of r in
// a run of its own kind (new runs get a fresh budget under limit and
// rule), and the indices of the runs that cover r, in order.
func (rec *epochRecord) touch(r epoch.Range, limit accounting.EpsDelta, rule accounting.Rule) ([]epochRun, []int, error) {
	out := make([]epochRun, 0, len(rec.Runs)+3)
	var in []int
	next := r.From // the first epoch of r not yet covered
	fresh := func(from, to int64) error {
		b, err := accounting.NewBudget(limit, rule)
		if err != nil {
			return err
		}
		in = append(in, len(out))
		out = append(out, epochRun{From: from, To: to, Budget: b})
		return nil
	}
	for _, run := range rec.Runs {
		if run.To < r.From || run.From > r.To {
			if run.From > r.To && next <= r.To {
				if err := fresh(next, r.To); err != nil {
					return nil, nil, err
				}
				next = r.To + 1
			}
			out = append(out, run)
			continue
		}
		if run.From > next {
			if err := fresh(next, run.From-1); err != nil {
				return nil, nil, err
			}
		}
		// Split the run at r's ends: the parts outside keep copies.
		if run.From < r.From {
			out = append(out, epochRun{From: run.From, To: r.From - 1, Budget: run.Budget.Clone()})
			run.From = r.From
		}
		var after *epochRun
		if run.To > r.To {
			after = &epochRun{From: r.To + 1, To: run.To, Budget: run.Budget.Clone()}
			run.To = r.To
		}
		in = append(in, len(out))
		out = append(out, run)
		next = run.To + 1
		if after != nil {
			out = append(out, *after)
		}
	}
	if next <= r.To {
		if err := fresh(next, r.To); err != nil {
			return nil, nil, err
		}
	}
	return out, in, nil
}

// merge joins adjacent runs with equal budgets.
func merge(runs []epochRun) []epochRun {
	out := runs[:0]
	for _, run := range runs {
		if n := len(out); n > 0 && out[n-1].To+1 == run.From && out[n-1].Budget.SameSums(run.Budget) {
			out[n-1].To = run.To
			continue
		}
		out = append(out, run)
	}
	return out
}

// epochSpend is a charge spent in memory over its epochs: the records to
// store if every epoch admitted it.
type epochSpend struct {
	budgets, totals *epochRecord // totals nil when the dataset has none
	// least is the charged epoch with the least ε left, and its budget
	// and total (nil without one), for the receipt.
	least       int64
	leastBudget *accounting.Budget
	leastTotal  *accounting.Budget
}

// spendRecord spends c in every epoch of r in rec (created from the
// template's limit and rule), recording the runs that refused.
func spendRecord(tx kvTx, ds, analyst string, r epoch.Range, c accounting.Cost, template *accounting.Budget) (*epochRecord, []epoch.Range, *accounting.ExceededError, int, error) {
	rec, err := loadEpochs(tx, ds, analyst)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	if rec == nil {
		rec = &epochRecord{Dataset: ds, Analyst: analyst, Every: r.Every}
	}
	if rec.Every != r.Every {
		return nil, nil, nil, 0, &kindChangedError{ds: ds, was: rec.Every, now: r.Every}
	}
	runs, in, err := rec.touch(r, template.Limit(), template.Rule())
	if err != nil {
		return nil, nil, nil, 0, err
	}
	// One batched pass: the cost is converted once and, under rule
	// Basic, only the largest sums are compared with the shared limit.
	bs := make([]*accounting.Budget, len(in))
	for j, i := range in {
		bs[j] = runs[i].Budget
	}
	idx, first, most, err := accounting.SpendAll(bs, c)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	var refused []epoch.Range
	for _, j := range idx {
		i := in[j]
		refused = append(refused, epoch.Range{Every: r.Every, From: runs[i].From, To: runs[i].To})
	}
	rec.Runs = runs
	return rec, refused, first, in[most], nil
}

// spendEpochs spends cost c in each epoch of r for k, in memory: template
// is k's budget (without an epoch), total the dataset's total (or nil).
// A refusal is returned as refusal (nothing to store); a non-nil err is a
// storage failure or a charge that cannot be made.
func spendEpochs(tx kvTx, k Key, r epoch.Range, c accounting.Cost, template, total *accounting.Budget) (sp *epochSpend, refusal, err error) {
	base := Key{Dataset: k.Dataset, Analyst: k.Analyst}
	rec, refused, first, most, err := spendRecord(tx, k.Dataset, k.Analyst, r, c, template)
	var kc *kindChangedError
	if errors.As(err, &kc) {
		return nil, err, nil
	} else if err != nil {
		return nil, nil, err
	}
	if len(refused) > 0 {
		return nil, &EpochsExceededError{Key: base, Every: r.Every, Refused: refused, First: first}, nil
	}
	// The epoch with the least left is the one with the most spent (all
	// share one limit).
	sp = &epochSpend{budgets: rec, least: rec.Runs[most].From, leastBudget: rec.Runs[most].Budget}
	if total != nil {
		trec, refused, first, _, err := spendRecord(tx, k.Dataset, "", r, c, total)
		if errors.As(err, &kc) {
			return nil, err, nil
		} else if err != nil {
			return nil, nil, err
		}
		if len(refused) > 0 {
			return nil, &EpochsExceededError{Key: base, Every: r.Every, Refused: refused, Total: true, First: first}, nil
		}
		sp.totals = trec
		for _, run := range trec.Runs {
			if run.From <= sp.least && sp.least <= run.To {
				sp.leastTotal = run.Budget
			}
		}
	}
	return sp, nil, nil
}

// store writes the spent records of sp, their equal neighbours merged.
func (sp *epochSpend) store(tx kvTx) error {
	sp.budgets.Runs = merge(sp.budgets.Runs)
	if err := storeEpochs(tx, sp.budgets); err != nil {
		return err
	}
	if sp.totals != nil {
		sp.totals.Runs = merge(sp.totals.Runs)
		return storeEpochs(tx, sp.totals)
	}
	return nil
}

// setEpochLimits gives every epoch budget of analyst on ds (or of ds's
// totals, analyst empty) the template's new limit and rule, refusing the
// grant when an epoch has spent more than the new limit.
func setEpochLimits(tx kvTx, ds, analyst string, limit accounting.EpsDelta, rule accounting.Rule, what string) error {
	rec, err := loadEpochs(tx, ds, analyst)
	if err != nil || rec == nil {
		return err
	}
	for _, run := range rec.Runs {
		if err := run.Budget.SetLimit(limit, rule); err != nil {
			return fmt.Errorf("%s in epoch %s: %w", what, epoch.Range{Every: rec.Every, From: run.From, To: run.To}, err)
		}
	}
	return storeEpochs(tx, rec)
}

// CheckEpochs reports whether cost c would fit now in every epoch of r of
// the budget of k (and of its dataset's total), without charging it: nil,
// an error wrapping ErrNoBudget, a validation error, or an
// *EpochsExceededError naming the epochs that cannot pay. Only Charge
// decides.
func (l *Ledger) CheckEpochs(k Key, r epoch.Range, c accounting.Cost) error {
	if err := r.Validate(); err != nil {
		return err
	}
	return l.check(k, c, func(tx kvTx, b, t *accounting.Budget) error {
		_, refusal, err := spendEpochs(tx, k, r, c, b, t)
		if err != nil {
			return err
		}
		return refusal
	})
}

// EpochBudgets returns the budgets of k's epochs that releases have
// touched, one Status per run of consecutive epochs with equal budgets
// (Key.Epoch spells the run, e.g. "2024-01..2024-03"; an epoch in no run
// has its whole budget), in epoch order, with the total of each run's
// first epoch when the dataset has one.
func (l *Ledger) EpochBudgets(k Key) ([]Status, error) {
	if err := k.Validate(); err != nil {
		return nil, err
	}
	var out []Status
	err := l.view(func(tx kvTx) error {
		rec, err := loadEpochs(tx, k.Dataset, k.Analyst)
		if err != nil || rec == nil {
			return err
		}
		for _, run := range rec.Runs {
			ek := Key{Dataset: k.Dataset, Analyst: k.Analyst, Epoch: epoch.Range{Every: rec.Every, From: run.From, To: run.To}.String()}
			out = append(out, statusOf(ek, run.Budget))
		}
		return nil
	})
	return out, err
}

// EpochTotals returns the totals of dataset ds's epochs that releases have
// touched, one TotalStatus per run of consecutive epochs with equal totals
// (Epoch spells the run), in epoch order.
func (l *Ledger) EpochTotals(ds string) ([]TotalStatus, error) {
	if err := validName("dataset", ds, false); err != nil {
		return nil, err
	}
	var out []TotalStatus
	err := l.view(func(tx kvTx) error {
		rec, err := loadEpochs(tx, ds, "")
		if err != nil || rec == nil {
			return err
		}
		for _, run := range rec.Runs {
			ts := totalStatusOf(ds, run.Budget)
			ts.Epoch = epoch.Range{Every: rec.Every, From: run.From, To: run.To}.String()
			out = append(out, ts)
		}
		return nil
	})
	return out, err
}

// record counts cost c in every epoch of r (a release replayed, whatever
// the limit: the totals of releases charged before the total existed, and
// verification).
func (rec *epochRecord) record(r epoch.Range, c accounting.Cost, limit accounting.EpsDelta, rule accounting.Rule) error {
	if r.Every != rec.Every {
		return fmt.Errorf("a release of %q is charged by %s, an earlier one by %s: %w", rec.Dataset, r.Every, rec.Every, ErrTampered)
	}
	runs, in, err := rec.touch(r, limit, rule)
	if err != nil {
		return err
	}
	for _, i := range in {
		if err := runs[i].Budget.Record(c); err != nil {
			return err
		}
	}
	rec.Runs = runs
	return nil
}

// derivedEpochs is what the release records say the epochs' budgets
// should be: each (dataset, analyst)'s and each dataset's totals,
// replayed from the releases' ranges.
type derivedEpochs struct {
	budgets map[Key]*epochRecord
	totals  map[string]*epochRecord
}

// replayLimit is the limit the replayed budgets are made with: only their
// sums are compared, and the limits against the templates' grants.
var replayLimit = accounting.EpsDelta{Epsilon: 1}

func (d *derivedEpochs) add(r *chainRelease) error {
	if err := r.Epochs.Validate(); err != nil || r.Key.Epoch != "" {
		return fmt.Errorf("release %d names epochs that are not valid (%v): %w", r.ID, err, ErrTampered)
	}
	k := Key{Dataset: r.Key.Dataset, Analyst: r.Key.Analyst}
	b := d.budgets[k]
	if b == nil {
		b = &epochRecord{Dataset: k.Dataset, Analyst: k.Analyst, Every: r.Epochs.Every}
		d.budgets[k] = b
	}
	t := d.totals[k.Dataset]
	if t == nil {
		t = &epochRecord{Dataset: k.Dataset, Every: r.Epochs.Every}
		d.totals[k.Dataset] = t
	}
	if err := b.record(*r.Epochs, r.Cost, replayLimit, accounting.Basic); err != nil {
		return err
	}
	return t.record(*r.Epochs, r.Cost, replayLimit, accounting.Basic)
}

// verify checks every stored record of epochs' budgets against the
// replayed releases (the same runs with the same sums) and against its
// template's last grant, and that every replayed record whose template
// exists is stored. granted returns a template's last grant.
func (d *derivedEpochs) verify(tx kvTx, granted func(Key) (accounting.EpsDelta, accounting.Rule, bool), chained bool) error {
	seen := map[string]bool{}
	if b := tx.Bucket(bucketEpochs); b != nil {
		err := b.ForEach(func(kb, v []byte) error {
			var rec epochRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("stored epoch budgets %q are unreadable (%v): %w", kb, err, ErrTampered)
			}
			if string(epochsKey(rec.Dataset, rec.Analyst)) != string(kb) {
				return fmt.Errorf("stored epoch budgets under %q say they are of %q (analyst %q): records were moved: %w", kb, rec.Dataset, rec.Analyst, ErrTampered)
			}
			seen[string(kb)] = true
			want := d.totals[rec.Dataset]
			what := fmt.Sprintf("total budget of dataset %q", rec.Dataset)
			if rec.Analyst != "" {
				want = d.budgets[Key{Dataset: rec.Dataset, Analyst: rec.Analyst}]
				what = fmt.Sprintf("budget of analyst %q on %q", rec.Analyst, rec.Dataset)
			}
			if want == nil {
				want = &epochRecord{Every: rec.Every}
			}
			got, exp := merge(append([]epochRun{}, rec.Runs...)), merge(append([]epochRun{}, want.Runs...))
			if rec.Every != want.Every || len(got) != len(exp) {
				return fmt.Errorf("%s: stored for %d runs of epochs by %s, but the release records give %d by %s: the ledger was edited or damaged; it is refused (restore it from a backup): %w",
					what, len(got), rec.Every, len(exp), want.Every, ErrTampered)
			}
			limit, rule, ok := granted(Key{Dataset: rec.Dataset, Analyst: rec.Analyst})
			for i, run := range got {
				e := exp[i]
				r := epoch.Range{Every: rec.Every, From: run.From, To: run.To}
				if run.From != e.From || run.To != e.To || run.Budget.Sums() != e.Budget.Sums() {
					return fmt.Errorf("%s in epochs %s: stored %v, but the release records give %v in epochs %s: the ledger was edited or damaged; it is refused (restore it from a backup): %w",
						what, r, run.Budget.Sums(), e.Budget.Sums(), epoch.Range{Every: rec.Every, From: e.From, To: e.To}, ErrTampered)
				}
				if chained && (!ok || run.Budget.Limit() != limit || run.Budget.Rule() != rule) {
					return fmt.Errorf("%s in epochs %s: stored limit ε=%g δ=%g rule %s, which is not the last grant of the dataset's budget: %w",
						what, r, run.Budget.Limit().Epsilon, run.Budget.Limit().Delta, run.Budget.Rule(), ErrTampered)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for k := range d.budgets {
		if !seen[string(epochsKey(k.Dataset, k.Analyst))] {
			return fmt.Errorf("budget of %v has release records in epochs but no stored epoch budgets: they were removed: %w", k, ErrTampered)
		}
	}
	for ds := range d.totals {
		if _, _, ok := granted(Key{Dataset: ds}); ok && !seen[string(epochsKey(ds, ""))] {
			return fmt.Errorf("total budget of dataset %q has release records in epochs but no stored epoch totals: they were removed: %w", ds, ErrTampered)
		}
	}
	return nil
}
