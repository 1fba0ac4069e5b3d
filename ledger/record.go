package ledger

import (
	"encoding/json"
	"fmt"

	"github.com/dpstat/dpstat/accounting"
)

// budgetRecord is the stored form of a budget, an analyst's or a
// dataset's total: its name and the budget. An analyst's budget is named
// by its Key ({"key": …, "budget": …}), a total budget by its dataset
// ({"dataset": …, "budget": …}).
type budgetRecord struct {
	Key     *Key               `json:"key,omitempty"`
	Dataset string             `json:"dataset,omitempty"`
	Budget  *accounting.Budget `json:"budget"`
}

// book is where one kind of budget is stored, each as a budgetRecord
// under its name's bytes in the book's bucket: the analysts' budgets
// (analystBook) and the datasets' total budgets (totalBook, named by a
// Key with the dataset only). Everything that reads or writes a stored
// budget goes through a book.
type book struct {
	bucket []byte
	// what names the kind of budget in messages; of joins it to the
	// budget's name ("budget for analyst …", "total budget of dataset …").
	what, of string
	// total marks the book of total budgets.
	total bool
}

var (
	analystBook = book{bucket: bucketBudgets, what: "budget", of: "for"}
	totalBook   = book{bucket: bucketTotals, what: "total budget", of: "of", total: true}
)

// key is the bytes k is stored under.
func (bk book) key(k Key) []byte {
	if bk.total {
		return []byte(k.Dataset)
	}
	return k.bytes()
}

// ident names k in messages: `analyst "a" on "d"`, `dataset "d"`.
func (bk book) ident(k Key) string {
	if bk.total {
		return fmt.Sprintf("dataset %q", k.Dataset)
	}
	return k.String()
}

// load returns the stored budget of k, or nil when there is none.
func (bk book) load(tx kvTx, k Key) (*accounting.Budget, error) {
	b := tx.Bucket(bk.bucket)
	if b == nil {
		return nil, nil
	}
	v := b.Get(bk.key(k))
	if v == nil {
		return nil, nil
	}
	rec := budgetRecord{Budget: new(accounting.Budget)}
	if err := json.Unmarshal(v, &rec); err != nil {
		return nil, fmt.Errorf("stored %s %s %s is damaged: %w", bk.what, bk.of, bk.ident(k), err)
	}
	return rec.Budget, nil
}

// store writes b as the budget of k.
func (bk book) store(tx kvTx, k Key, b *accounting.Budget) error {
	rec := budgetRecord{Budget: b}
	if bk.total {
		rec.Dataset = k.Dataset
	} else {
		rec.Key = &k
	}
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return tx.Bucket(bk.bucket).Put(bk.key(k), v)
}

// each calls fn with every stored budget of the book, its stored key
// bytes and its name, in key order. A record that cannot be read stops it
// with bad(kb, err).
func (bk book) each(tx kvTx, bad func(kb []byte, err error) error, fn func(kb []byte, k Key, b *accounting.Budget) error) error {
	b := tx.Bucket(bk.bucket)
	if b == nil {
		return nil
	}
	return b.ForEach(func(kb, v []byte) error {
		rec := budgetRecord{Budget: new(accounting.Budget)}
		if err := json.Unmarshal(v, &rec); err != nil {
			return bad(kb, err)
		}
		k := Key{Dataset: rec.Dataset}
		if rec.Key != nil {
			k = *rec.Key
		}
		return fn(kb, k, rec.Budget)
	})
}

// damaged is the error of each for a listing.
func (bk book) damaged(kb []byte, err error) error {
	return fmt.Errorf("stored %s %q is damaged: %w", bk.what, kb, err)
}

// verify checks every stored budget of the book against the budget its
// records give (derivedOf): readable, stored under its own name, with
// the sums and limit the records say. It returns the names seen.
func (bk book) verify(tx kvTx, derivedOf func(Key) *derived, chained bool) (map[Key]bool, error) {
	seen := map[Key]bool{}
	err := bk.each(tx, func(kb []byte, err error) error {
		return fmt.Errorf("stored %s %q is unreadable (%v): %w", bk.what, kb, err, ErrTampered)
	}, func(kb []byte, k Key, b *accounting.Budget) error {
		if string(bk.key(k)) != string(kb) {
			return fmt.Errorf("stored %s under %q says it is %s: records were moved: %w", bk.what, kb, bk.ident(k), ErrTampered)
		}
		seen[k] = true
		return compareBudget(bk.what+" of "+bk.ident(k), b, derivedOf(k), chained)
	})
	return seen, err
}
