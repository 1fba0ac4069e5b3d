package ledger

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/epoch"
)

// The chain. Every event that changes what a budget may admit (a release,
// a grant) is stored with a sequence number and the SHA-256 of the stored
// bytes of the event before it; the meta bucket keeps the last sequence
// number and the hash of the last event (the head). Grants are kept in
// bucketGrants under their sequence number, releases in bucketReleases
// under their release ID. Every budget's limit and rule are those of its
// last grant event, and its sums are the sums of its release records: Open
// and Verify rebuild them from the events and compare.
var (
	bucketGrants = []byte("grants")
	keyChainSeq  = []byte("chain_seq")
	keyChainHead = []byte("chain_head")
	keyChainMAC  = []byte("chain_mac")
)

// Errors of the chain and of verification, for errors.Is.
var (
	// ErrTampered: the ledger's budgets do not match its own records (a
	// stored sum, limit or release count differs from what the records
	// give, or the chain of records is broken). The ledger is refused
	// rather than repaired; restore it from a backup.
	ErrTampered = errors.New("the ledger does not match its own records")
	// ErrKey: the ledger is sealed with a key (an HMAC of its chain) and
	// the key was not given, is wrong, or the seal does not verify; or a
	// key was given for a ledger that is not sealed.
	ErrKey = errors.New("ledger key problem")
)

// MinKeyLen is the shortest key Options.Key accepts, in bytes.
const MinKeyLen = 16

// releaseRecord is the stored form of a release: the release and its place
// in the chain.
type releaseRecord struct {
	Release
	Seq  uint64 `json:"seq,omitempty"`
	Prev string `json:"prev,omitempty"`
}

// chainRelease is what verification reads of a stored release: the
// fields that count, without the time and description.
type chainRelease struct {
	ID     uint64          `json:"id"`
	Key    Key             `json:"key"`
	Cost   accounting.Cost `json:"cost"`
	Epochs *epoch.Range    `json:"epochs"`
	Seq    uint64          `json:"seq"`
	Prev   string          `json:"prev"`
}

// grantRecord is a grant event: the limit and rule a budget got. An empty
// Analyst is the dataset's total budget.
type grantRecord struct {
	Seq     uint64              `json:"seq"`
	Prev    string              `json:"prev"`
	Time    time.Time           `json:"time"`
	Dataset string              `json:"dataset"`
	Analyst string              `json:"analyst,omitempty"`
	Limit   accounting.EpsDelta `json:"limit"`
	Rule    accounting.Rule     `json:"rule"`
}

// chainHead is the end of the chain as the meta bucket records it.
type chainHead struct {
	seq  uint64
	head string // hex SHA-256 of the last event's stored bytes; "" with no events
}

func readHead(tx kvTx) (chainHead, error) {
	meta := tx.Bucket(bucketMeta)
	var h chainHead
	if v := meta.Get(keyChainSeq); v != nil {
		n, err := strconv.ParseUint(string(v), 10, 64)
		if err != nil {
			return h, fmt.Errorf("stored chain length %q is not a number: %w", v, ErrTampered)
		}
		h.seq = n
	}
	h.head = string(meta.Get(keyChainHead))
	return h, nil
}

// macOf is the seal of a chain head under key.
func macOf(key []byte, h chainHead) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "dpstat ledger chain\x00%d\x00%s", h.seq, h.head)
	return hex.EncodeToString(m.Sum(nil))
}

func writeHead(tx kvTx, h chainHead, key []byte) error {
	meta := tx.Bucket(bucketMeta)
	if err := meta.Put(keyChainSeq, []byte(strconv.FormatUint(h.seq, 10))); err != nil {
		return err
	}
	if err := meta.Put(keyChainHead, []byte(h.head)); err != nil {
		return err
	}
	if key != nil {
		return meta.Put(keyChainMAC, []byte(macOf(key, h)))
	}
	return nil
}

func hashHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// appendEvent adds one event to the chain: encode gets the event's
// sequence number and the previous head and returns the bytes to store,
// put stores them; the head moves to their hash.
func (l *Ledger) appendEvent(tx kvTx, encode func(seq uint64, prev string) ([]byte, error), put func([]byte) error) error {
	h, err := readHead(tx)
	if err != nil {
		return err
	}
	raw, err := encode(h.seq+1, h.head)
	if err != nil {
		return err
	}
	if err := put(raw); err != nil {
		return err
	}
	return writeHead(tx, chainHead{seq: h.seq + 1, head: hashHex(raw)}, l.key)
}

// recordGrant stores b as the budget of k (an empty analyst: the total
// budget of k.Dataset) and appends the grant event that sets its limit.
func (l *Ledger) recordGrant(tx kvTx, k Key, b *accounting.Budget) error {
	if k.Analyst == "" {
		if err := storeTotal(tx, k.Dataset, b); err != nil {
			return err
		}
	} else if err := storeBudget(tx, k, b); err != nil {
		return err
	}
	grants := tx.Bucket(bucketGrants)
	var seq uint64
	return l.appendEvent(tx, func(s uint64, prev string) ([]byte, error) {
		seq = s
		return json.Marshal(grantRecord{Seq: s, Prev: prev, Time: time.Now().UTC().Round(0), Dataset: k.Dataset, Analyst: k.Analyst, Limit: b.Limit(), Rule: b.Rule()})
	}, func(raw []byte) error { return grants.Put(idBytes(seq), raw) })
}

// VerifyReport says what Verify checked.
type VerifyReport struct {
	// Version is the ledger's format version.
	Version int `json:"version"`
	// Events is the length of the chain (releases and grants); Releases
	// and Grants count each.
	Events   uint64 `json:"events"`
	Releases int    `json:"releases"`
	Grants   int    `json:"grants"`
	// Budgets and Totals are the analyst budgets and total budgets whose
	// limits and sums were checked against the events.
	Budgets int `json:"budgets"`
	Totals  int `json:"totals"`
	// Chained is false for a format-1 ledger, whose records carry no
	// chain yet (its sums are still checked); opening it for writing
	// chains it.
	Chained bool `json:"chained"`
	// Sealed is true when the chain carries a seal (an HMAC under a key
	// kept outside the ledger); SealChecked when the key was given and the
	// seal verified.
	Sealed      bool `json:"sealed"`
	SealChecked bool `json:"seal_checked"`
}

// Verify checks the whole ledger: the chain of release and grant records
// (each holds the hash of the one before, and the meta bucket the hash of
// the last one), every budget's limit and rule against its last grant, its
// sums and release count against its release records, and the seal when
// the ledger has a key. A mismatch is an error wrapping ErrTampered that
// names the budget or record. Open runs the same check.
func (l *Ledger) Verify() (VerifyReport, error) {
	var rep VerifyReport
	err := l.view(func(tx kvTx) error {
		var err error
		rep, err = verifyTx(tx, l.key)
		return err
	})
	if err != nil {
		return rep, fmt.Errorf("ledger %s: %w", l.path, err)
	}
	return rep, nil
}

// derived is what the records say a budget should be: its costs, counted
// by value (exact sums of many equal costs are then one product), and its
// last grant.
type derived struct {
	costs   map[accounting.Cost]int
	granted bool
	limit   accounting.EpsDelta
	rule    accounting.Rule
}

// sums adds up the derived costs exactly.
func (d *derived) sums() accounting.ExactSums {
	b := new(accounting.Budget)
	for c, n := range d.costs {
		// Costs were validated when they were counted.
		_ = b.RecordN(c, n)
	}
	return b.Sums()
}

func formatVersion(tx kvTx) int {
	v, _ := strconv.Atoi(string(tx.Bucket(bucketMeta).Get(keyVersion)))
	return v
}

// verifyTx checks the ledger in tx (see Verify). key may be nil.
func verifyTx(tx kvTx, key []byte) (VerifyReport, error) {
	rep := VerifyReport{Version: formatVersion(tx), Chained: formatVersion(tx) >= 2}
	budgets := map[Key]*derived{}
	totals := map[string]*derived{}
	get := func(m map[Key]*derived, k Key) *derived {
		d := m[k]
		if d == nil {
			d = &derived{costs: map[accounting.Cost]int{}}
			m[k] = d
		}
		return d
	}
	getTotal := func(ds string) *derived {
		d := totals[ds]
		if d == nil {
			d = &derived{costs: map[accounting.Cost]int{}}
			totals[ds] = d
		}
		return d
	}
	epochs := &derivedEpochs{budgets: map[Key]*epochRecord{}, totals: map[string]*epochRecord{}}
	addRelease := func(r *chainRelease) error {
		if err := r.Cost.Validate(); err != nil {
			return fmt.Errorf("release %d has a cost that is not valid (%v): %w", r.ID, err, ErrTampered)
		}
		rep.Releases++
		if r.Epochs != nil {
			return epochs.add(r)
		}
		get(budgets, r.Key).costs[r.Cost]++
		getTotal(r.Key.Dataset).costs[r.Cost]++
		return nil
	}
	var h chainHead
	if rep.Chained {
		var err error
		if h, err = walkChain(tx, addRelease, func(g *grantRecord) error {
			var d *derived
			if g.Analyst == "" {
				d = getTotal(g.Dataset)
			} else {
				d = get(budgets, Key{Dataset: g.Dataset, Analyst: g.Analyst})
			}
			d.granted, d.limit, d.rule = true, g.Limit, g.Rule
			rep.Grants++
			return nil
		}); err != nil {
			return rep, err
		}
		rep.Events = h.seq
	} else {
		// Format 1: no chain, but the sums must still match the releases.
		c := tx.Bucket(bucketReleases).Cursor()
		var last uint64
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var r chainRelease
			if err := json.Unmarshal(v, &r); err != nil {
				return rep, fmt.Errorf("release record %x is unreadable (%v): %w", k, err, ErrTampered)
			}
			if len(k) != 8 || binary.BigEndian.Uint64(k) != r.ID || r.ID <= last {
				return rep, fmt.Errorf("release record under key %x says it is release %d: records were moved: %w", k, r.ID, ErrTampered)
			}
			last = r.ID
			if err := addRelease(&r); err != nil {
				return rep, err
			}
		}
	}
	// Every stored budget against its records, and every budget the
	// records name must be stored.
	seen, err := analystBook.verify(tx, func(k Key) *derived { return get(budgets, k) }, rep.Chained)
	rep.Budgets += len(seen)
	if err != nil {
		return rep, err
	}
	for k, d := range budgets {
		if !seen[k] {
			return rep, fmt.Errorf("budget of %v has %d release records and grants but no stored budget: it was removed: %w", k, d.sums().Releases, ErrTampered)
		}
	}
	granted := func(k Key) (accounting.EpsDelta, accounting.Rule, bool) {
		var d *derived
		if k.Analyst == "" {
			d = totals[k.Dataset]
		} else {
			d = budgets[k]
		}
		if d == nil || !d.granted {
			return accounting.EpsDelta{}, "", false
		}
		return d.limit, d.rule, true
	}
	if err := epochs.verify(tx, granted, rep.Chained); err != nil {
		return rep, err
	}
	if err := verifyTotals(tx, &rep, totals, getTotal); err != nil {
		return rep, err
	}
	if !rep.Chained {
		return rep, nil
	}
	return rep, verifyEnd(tx, &rep, h, key)
}

// verifyTotals checks every stored total budget against what the records
// give (totals, filled by verifyTx), and that no granted total was removed.
func verifyTotals(tx kvTx, rep *VerifyReport, totals map[string]*derived, getTotal func(string) *derived) error {
	seen, err := totalBook.verify(tx, func(k Key) *derived { return getTotal(k.Dataset) }, rep.Chained)
	rep.Totals += len(seen)
	if err != nil {
		return err
	}
	for ds, d := range totals {
		if d.granted && !seen[Key{Dataset: ds}] {
			return fmt.Errorf("total budget of dataset %q was granted but is not stored: it was removed: %w", ds, ErrTampered)
		}
	}
	return nil
}

// verifyEnd checks, on a chained ledger, that the chain ends where the
// ledger records its end (h, from the walk) and, with key, the seal.
func verifyEnd(tx kvTx, rep *VerifyReport, h chainHead, key []byte) error {
	stored, err := readHead(tx)
	if err != nil {
		return err
	}
	if stored != h {
		return fmt.Errorf("the chain's records end at event %d (hash %.16s…) but the ledger records its end as event %d (hash %.16s…): records at the end were removed or altered: %w",
			h.seq, h.head, stored.seq, stored.head, ErrTampered)
	}
	mac := tx.Bucket(bucketMeta).Get(keyChainMAC)
	rep.Sealed = mac != nil
	if key != nil {
		if mac == nil {
			return fmt.Errorf("a ledger key was given but the ledger is not sealed with one (seal it with dpstat budget verify --seal, or give no key): %w", ErrKey)
		}
		if !hmac.Equal([]byte(macOf(key, h)), mac) {
			return fmt.Errorf("the ledger's seal does not verify with the key given: either the key is not the one it was sealed with, or the ledger was rewritten by someone without the key: %w", ErrKey)
		}
		rep.SealChecked = true
	}
	return nil
}

// compareBudget checks a stored budget against what its records give.
func compareBudget(what string, stored *accounting.Budget, d *derived, chained bool) error {
	if got, want := stored.Sums(), d.sums(); got != want {
		return fmt.Errorf("%s: stored %v, but its %d release records add up to %v: the ledger was edited or damaged; it is refused, nothing was reset (restore it from a backup): %w",
			what, got, want.Releases, want, ErrTampered)
	}
	if !chained {
		return nil
	}
	if !d.granted {
		return fmt.Errorf("%s: stored with no grant record: %w", what, ErrTampered)
	}
	if stored.Limit() != d.limit || stored.Rule() != d.rule {
		return fmt.Errorf("%s: stored limit ε=%g δ=%g rule %s, but its last grant record says ε=%g δ=%g rule %s: the ledger was edited or damaged; it is refused (restore it from a backup): %w",
			what, stored.Limit().Epsilon, stored.Limit().Delta, stored.Rule(), d.limit.Epsilon, d.limit.Delta, d.rule, ErrTampered)
	}
	return nil
}

// walkChain visits the releases and grants in chain order, checking that
// the sequence numbers run 1, 2, … without gaps and that each record holds
// the hash of the one before. It returns the chain's end.
func walkChain(tx kvTx, release func(*chainRelease) error, grant func(*grantRecord) error) (chainHead, error) {
	var h chainHead
	rc := tx.Bucket(bucketReleases).Cursor()
	gc := tx.Bucket(bucketGrants).Cursor()
	rk, rv := rc.First()
	gk, gv := gc.First()
	var rel chainRelease
	var g grantRecord
	var lastRelease uint64
	loadRelease := func() error {
		if rk == nil {
			return nil
		}
		rel = chainRelease{}
		if err := json.Unmarshal(rv, &rel); err != nil {
			return fmt.Errorf("release record %x is unreadable (%v): %w", rk, err, ErrTampered)
		}
		if len(rk) != 8 || binary.BigEndian.Uint64(rk) != rel.ID || rel.ID <= lastRelease {
			return fmt.Errorf("release record under key %x says it is release %d: records were moved: %w", rk, rel.ID, ErrTampered)
		}
		lastRelease = rel.ID
		return nil
	}
	loadGrant := func() error {
		if gk == nil {
			return nil
		}
		g = grantRecord{}
		if err := json.Unmarshal(gv, &g); err != nil {
			return fmt.Errorf("grant record %x is unreadable (%v): %w", gk, err, ErrTampered)
		}
		if len(gk) != 8 || binary.BigEndian.Uint64(gk) != g.Seq {
			return fmt.Errorf("grant record under key %x says it is event %d: records were moved: %w", gk, g.Seq, ErrTampered)
		}
		return nil
	}
	if err := loadRelease(); err != nil {
		return h, err
	}
	if err := loadGrant(); err != nil {
		return h, err
	}
	for rk != nil || gk != nil {
		useRelease := gk == nil || (rk != nil && rel.Seq < g.Seq)
		var seq uint64
		var prev string
		var raw []byte
		var what string
		if useRelease {
			seq, prev, raw, what = rel.Seq, rel.Prev, rv, fmt.Sprintf("release %d", rel.ID)
		} else {
			seq, prev, raw, what = g.Seq, g.Prev, gv, fmt.Sprintf("grant event %d", g.Seq)
		}
		switch {
		case seq != h.seq+1:
			return h, fmt.Errorf("%s is event %d of the chain where event %d was expected: a record was removed, added or reordered: %w", what, seq, h.seq+1, ErrTampered)
		case prev != h.head:
			return h, fmt.Errorf("%s (event %d) does not hold the hash of the event before it: that event was altered or removed: %w", what, seq, ErrTampered)
		}
		h = chainHead{seq: seq, head: hashHex(raw)}
		if useRelease {
			if err := release(&rel); err != nil {
				return h, err
			}
			rk, rv = rc.Next()
			if err := loadRelease(); err != nil {
				return h, err
			}
		} else {
			if err := grant(&g); err != nil {
				return h, err
			}
			gk, gv = gc.Next()
			if err := loadGrant(); err != nil {
				return h, err
			}
		}
	}
	return h, nil
}

// migrate turns a format-1 ledger into format 2 in one transaction: it
// checks the stored sums against the releases (a ledger that does not
// match is refused, not chained), chains the release records in ID order,
// records one grant event per existing budget with its current limit, and
// writes the version. The existing limits are taken as they are: the chain
// vouches for them from this point on.
func (l *Ledger) migrate(tx kvTx) error {
	if formatVersion(tx) >= 2 {
		return nil
	}
	if _, err := verifyTx(tx, nil); err != nil {
		return fmt.Errorf("format 1 ledger cannot be upgraded: %w", err)
	}
	for _, b := range [][]byte{bucketGrants, bucketTotals} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	rel := tx.Bucket(bucketReleases)
	type kv struct{ k, v []byte }
	var all []kv
	if err := rel.ForEach(func(k, v []byte) error {
		all = append(all, kv{bytes.Clone(k), bytes.Clone(v)})
		return nil
	}); err != nil {
		return err
	}
	for _, e := range all {
		var r Release
		if err := json.Unmarshal(e.v, &r); err != nil {
			return err
		}
		if err := l.appendEvent(tx, func(seq uint64, prev string) ([]byte, error) {
			return json.Marshal(releaseRecord{Release: r, Seq: seq, Prev: prev})
		}, func(raw []byte) error { return rel.Put(e.k, raw) }); err != nil {
			return err
		}
	}
	type budgetKV struct {
		k Key
		b *accounting.Budget
	}
	var bs []budgetKV
	if err := analystBook.each(tx, func(_ []byte, err error) error { return err }, func(_ []byte, k Key, b *accounting.Budget) error {
		bs = append(bs, budgetKV{k, b})
		return nil
	}); err != nil {
		return err
	}
	sort.Slice(bs, func(i, j int) bool { return bytes.Compare(bs[i].k.bytes(), bs[j].k.bytes()) < 0 })
	for _, e := range bs {
		if err := l.recordGrant(tx, e.k, e.b); err != nil {
			return err
		}
	}
	if err := writeHeadMACIfKeyed(tx, l.key); err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put(keyVersion, []byte(strconv.Itoa(FormatVersion)))
}

// writeHeadMACIfKeyed seals the current head when key is set.
func writeHeadMACIfKeyed(tx kvTx, key []byte) error {
	h, err := readHead(tx)
	if err != nil {
		return err
	}
	return writeHead(tx, h, key)
}
