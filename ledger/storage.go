package ledger

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// The storage seam. The ledger's logic (budgets, totals, the chain,
// charges, analysts) is written once against a small transactional
// key-value store: named buckets of byte keys kept in byte order, with a
// sequence per bucket. Two stores implement it: the embedded bbolt file
// (the default; its on-disk format is the bucket layout below, unchanged)
// and a PostgreSQL schema (pgstore.go), which several processes may share.
//
// A store's read-write transactions are serialized: one at a time sees and
// changes the ledger, across every process sharing it.

// kvStore is the storage under a Ledger.
type kvStore interface {
	// view runs fn in a read-only transaction that sees one consistent
	// state of the ledger.
	view(fn func(kvTx) error) error
	// update runs fn in a read-write transaction and commits it durably
	// when fn returns nil; any error rolls everything back. fn may be run
	// again after a transient failure of the store, so it must set its
	// results afresh on each run.
	update(fn func(kvTx) error) error
	// close releases the store.
	close() error
	// unavailable reports whether err says the store could not be
	// reached (rather than that one transaction failed).
	unavailable(err error) bool
	// ping checks that the store answers a read, within ctx.
	ping(ctx context.Context) error
}

// kvTx is one transaction of a kvStore.
type kvTx interface {
	// Bucket returns the named bucket, or nil when it does not exist.
	Bucket(name []byte) kvBucket
	// CreateBucketIfNotExists returns the named bucket, creating it.
	CreateBucketIfNotExists(name []byte) (kvBucket, error)
	// ForEachBucket calls fn with the name of every bucket, in order.
	ForEachBucket(fn func(name []byte) error) error
}

// kvBucket is a bucket of a transaction: keys in byte order.
type kvBucket interface {
	// Get returns the value under key, or nil when there is none (a
	// stored empty value is a non-nil empty slice). The slice is valid
	// only during the transaction.
	Get(key []byte) []byte
	// Put stores value under key.
	Put(key, value []byte) error
	// ForEach calls fn for every key in order; fn must not write.
	ForEach(fn func(k, v []byte) error) error
	// Cursor iterates the keys in order, forwards or backwards.
	Cursor() kvCursor
	// NextSequence returns the bucket's next sequence number (1, 2, …).
	NextSequence() (uint64, error)
	// Sequence is the last number NextSequence returned (0: none).
	Sequence() uint64
	// SetSequence sets the bucket's sequence (a copy of a ledger).
	SetSequence(n uint64) error
}

// kvCursor walks a bucket; a nil key means the walk is over.
type kvCursor interface {
	First() (key, value []byte)
	// Seek moves to the first key at or after key.
	Seek(key []byte) (k, value []byte)
	Last() (key, value []byte)
	Next() (key, value []byte)
	Prev() (key, value []byte)
}

// boltStore is the bbolt file store.
type boltStore struct{ db *bolt.DB }

func (s boltStore) view(fn func(kvTx) error) error {
	return s.db.View(func(tx *bolt.Tx) error { return fn(boltTx{tx}) })
}

func (s boltStore) update(fn func(kvTx) error) error {
	return s.db.Update(func(tx *bolt.Tx) error { return fn(boltTx{tx}) })
}

func (s boltStore) close() error { return s.db.Close() }

func (s boltStore) unavailable(error) bool { return false }

func (s boltStore) ping(context.Context) error {
	return s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketMeta) == nil {
			return fmt.Errorf("the ledger's %q bucket is missing: %w", bucketMeta, ErrNotLedger)
		}
		return nil
	})
}

type boltTx struct{ tx *bolt.Tx }

func (t boltTx) Bucket(name []byte) kvBucket {
	b := t.tx.Bucket(name)
	if b == nil {
		return nil
	}
	return boltBucket{b}
}

func (t boltTx) CreateBucketIfNotExists(name []byte) (kvBucket, error) {
	b, err := t.tx.CreateBucketIfNotExists(name)
	if err != nil {
		return nil, err
	}
	return boltBucket{b}, nil
}

func (t boltTx) ForEachBucket(fn func(name []byte) error) error {
	return t.tx.ForEach(func(name []byte, _ *bolt.Bucket) error { return fn(name) })
}

type boltBucket struct{ b *bolt.Bucket }

func (b boltBucket) Get(key []byte) []byte                    { return b.b.Get(key) }
func (b boltBucket) Put(key, value []byte) error              { return b.b.Put(key, value) }
func (b boltBucket) ForEach(fn func(k, v []byte) error) error { return b.b.ForEach(fn) }
func (b boltBucket) Cursor() kvCursor                         { return b.b.Cursor() }
func (b boltBucket) NextSequence() (uint64, error)            { return b.b.NextSequence() }
func (b boltBucket) Sequence() uint64                         { return b.b.Sequence() }
func (b boltBucket) SetSequence(n uint64) error               { return b.b.SetSequence(n) }
