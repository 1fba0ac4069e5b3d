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
	"runtime/debug"
	"time"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/epoch"
)

// sameRange reports whether two optional epoch ranges are equal.
func sameRange(a, b *epoch.Range) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
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
	// Epochs, when set, are the epochs of Key's dataset the release read:
	// Cost is charged in each of them (to the analyst's budget and the
	// total of each epoch), and Key's own budget is only their template
	// (see EpochsExceededError). Nil charges Key's budget itself.
	Epochs *epoch.Range
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
	// Epochs are the epochs charged, for a charge with Charge.Epochs;
	// Spent and Remaining (and Total's figures) are then those of
	// LeastEpoch, the charged epoch with the least ε left.
	Epochs     *epoch.Range `json:"epochs,omitempty"`
	LeastEpoch string       `json:"least_epoch,omitempty"`
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
	// Epochs are the epochs the release was charged in, or nil.
	Epochs *epoch.Range `json:"epochs,omitempty"`
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
	if c.Epochs != nil {
		if c.Key.Epoch != "" {
			return fmt.Errorf("charge to %v names an epoch and a range of epochs: want the dataset's key with Charge.Epochs", c.Key)
		}
		if err := c.Epochs.Validate(); err != nil {
			return fmt.Errorf("charge to %v: %w", c.Key, err)
		}
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
	return l.commit(ctx, &chargeReq{c: c, ready: make(chan struct{})})
}

// commit hands r to the committer and waits for the outcome.
func (l *Ledger) commit(ctx context.Context, r *chargeReq) (Receipt, error) {
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

// chargeReq is a charge, or an answer to store (storeOnly), waiting for
// the committer.
type chargeReq struct {
	c         Charge
	storeOnly bool
	receipt   Receipt
	err       error
	ready     chan struct{}
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
		err := l.update(func(tx kvTx) error {
			for _, r := range group {
				if err := l.apply(r, tx); err != nil {
					return err
				}
			}
			return nil
		})
		// A store that cannot be reached fails the whole group at once;
		// any other failure is retried charge by charge.
		if err != nil && len(group) > 1 && !l.st.unavailable(err) {
			for _, r := range group {
				if err := l.update(func(tx kvTx) error { return l.apply(r, tx) }); err != nil {
					r.receipt, r.err = Receipt{}, l.notRecorded(r, err)
				}
			}
		} else if err != nil {
			for _, r := range group {
				r.receipt, r.err = Receipt{}, l.notRecorded(r, err)
			}
		}
		for _, r := range group {
			close(r.ready)
		}
	}
}

// notRecorded is the error of a request whose transaction failed.
func (l *Ledger) notRecorded(r *chargeReq, err error) error {
	if r.storeOnly {
		return fmt.Errorf("ledger %s: answer not stored: %w", l.path, err)
	}
	return fmt.Errorf("ledger %s: charge not recorded: %w", l.path, err)
}

// update runs fn in a read-write transaction, turning a panic into an error.
func (l *Ledger) update(fn func(kvTx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(l.path, &err)
	return l.st.update(fn)
}

// apply performs the charge inside tx. Outcomes that write nothing (a
// refusal, a replay) are recorded in r and apply returns nil; a non-nil
// return is a storage failure and aborts the transaction. apply resets r
// first, so it can be run again after an aborted transaction.
func (l *Ledger) apply(r *chargeReq, tx kvTx) error {
	r.receipt, r.err = Receipt{}, nil
	c := &r.c
	if r.storeOnly {
		b := tx.Bucket(bucketAnswers)
		key := answerBytes(c.Key, c.AnswerKey)
		if v := b.Get(key); v == nil || len(v) > 0 {
			r.err = fmt.Errorf("%v answer key %q: %w", c.Key, c.AnswerKey, ErrNoPendingAnswer)
			return nil
		}
		return b.Put(key, c.Answer)
	}
	reqs := tx.Bucket(bucketRequests)
	if v := reqs.Get([]byte(c.RequestID)); v != nil {
		var rec requestRecord
		if err := json.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("stored request %q is damaged: %w", c.RequestID, err)
		}
		if rec.Receipt.Key != c.Key || rec.Receipt.Cost != c.Cost || rec.AnswerKey != c.AnswerKey || !sameRange(rec.Receipt.Epochs, c.Epochs) {
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
	// Both budgets (each epoch's, for a charge to epochs) are spent in
	// memory first; nothing is stored unless all admit the cost.
	var sp *epochSpend
	if c.Epochs != nil {
		var refusal error
		if sp, refusal, err = spendEpochs(tx, c.Key, *c.Epochs, c.Cost, b, total); err != nil {
			return err
		} else if refusal != nil {
			r.err = refusal
			return nil
		}
	} else {
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
	}
	rel := tx.Bucket(bucketReleases)
	id, err := rel.NextSequence()
	if err != nil {
		return err
	}
	now := time.Now().UTC().Round(0)
	release := Release{ID: id, RequestID: c.RequestID, Time: now, Key: c.Key, Description: c.Description, Cost: c.Cost, Rule: b.Rule(), AnswerKey: c.AnswerKey, Epochs: c.Epochs}
	if err := l.appendEvent(tx, func(seq uint64, prev string) ([]byte, error) {
		return json.Marshal(releaseRecord{Release: release, Seq: seq, Prev: prev})
	}, func(raw []byte) error { return rel.Put(idBytes(id), raw) }); err != nil {
		return err
	}
	receipt := Receipt{ReleaseID: id, RequestID: c.RequestID, Time: now, Key: c.Key, Cost: c.Cost, Rule: b.Rule(), Spent: b.Spent(), Remaining: b.Remaining(), Epochs: c.Epochs}
	if sp != nil {
		if err := sp.store(tx); err != nil {
			return err
		}
		receipt.Spent, receipt.Remaining, receipt.LeastEpoch = sp.leastBudget.Spent(), sp.leastBudget.Remaining(), epoch.Label(c.Epochs.Every, sp.least)
	} else if err := storeBudget(tx, c.Key, b); err != nil {
		return err
	}
	// The stored receipt (returned again on a retry) leaves out the
	// total's figures, which would add a few hundred bytes per release.
	qv, err := json.Marshal(requestRecord{Receipt: receipt, AnswerKey: c.AnswerKey})
	if err != nil {
		return err
	}
	if err := reqs.Put([]byte(c.RequestID), qv); err != nil {
		return err
	}
	switch {
	case sp != nil && sp.leastTotal != nil:
		ts := totalStatusOf(c.Key.Dataset, sp.leastTotal)
		ts.Epoch = receipt.LeastEpoch
		receipt.Total = &ts
	case sp == nil && total != nil:
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
	err := l.view(func(tx kvTx) error {
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
	err := l.view(func(tx kvTx) error {
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
// StoreAnswer returns; concurrent ones share the charges' group commit.
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
	r := &chargeReq{c: Charge{Key: k, AnswerKey: answerKey, Answer: bytes.Clone(answer)}, storeOnly: true, ready: make(chan struct{})}
	_, err := l.commit(context.Background(), r)
	return err
}
