package ledger

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrNotEmpty: Copy was given a destination ledger that already holds
// budgets, releases or analysts.
var ErrNotEmpty = errors.New("the destination ledger is not empty")

// CopyReport says what Copy copied and checked.
type CopyReport struct {
	// From and To are the two ledgers' locations (passwords removed).
	From string `json:"from"`
	To   string `json:"to"`
	// Buckets and Entries count what was copied.
	Buckets int `json:"buckets"`
	Entries int `json:"entries"`
	// Source and Copy are the verification of each side; they agree.
	Source VerifyReport `json:"source"`
	Copy   VerifyReport `json:"copy"`
}

// Copy copies the ledger src into dst (e.g. a file ledger into
// PostgreSQL): every record of every bucket byte for byte, with the
// bucket sequences, in one transaction of dst, so that the chain of
// records and its seal carry over unchanged. src is verified first, and
// dst afterwards (with dst's key, when src is sealed: open dst with the
// same key); the two verifications must agree. dst must be open for
// writing and empty (a new ledger): otherwise Copy returns an error
// wrapping ErrNotEmpty and writes nothing. src should not be written to
// while Copy runs (open it read-only: a file ledger opened read-only
// admits no writer).
func Copy(src, dst *Ledger) (CopyReport, error) {
	rep := CopyReport{From: src.path, To: dst.path}
	srcRep, err := src.Verify()
	if err != nil {
		return rep, fmt.Errorf("ledger copy: the source does not verify, nothing was copied: %w", err)
	}
	rep.Source = srcRep
	if !srcRep.Chained {
		return rep, fmt.Errorf("ledger copy: %s has format version %d: open it for writing once with this dpstat to upgrade it, then copy it", src.path, srcRep.Version)
	}
	if srcRep.Sealed && dst.key == nil {
		return rep, fmt.Errorf("ledger copy: %s is sealed with a key: give the key (%s) so that the copy is checked and stays writable: %w", src.path, KeyFileEnv, ErrKey)
	}
	if err := dst.writable(); err != nil {
		return rep, err
	}
	type bucket struct {
		name    []byte
		seq     uint64
		entries [][2][]byte
	}
	var all []bucket
	err = src.view(func(tx kvTx) error {
		all = all[:0]
		return tx.ForEachBucket(func(name []byte) error {
			b := tx.Bucket(name)
			if b == nil {
				return fmt.Errorf("bucket %q vanished during the copy", name)
			}
			bk := bucket{name: bytes.Clone(name), seq: b.Sequence()}
			err := b.ForEach(func(k, v []byte) error {
				bk.entries = append(bk.entries, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
				return nil
			})
			all = append(all, bk)
			return err
		})
	})
	if err != nil {
		return rep, fmt.Errorf("ledger copy: reading %s: %w", src.path, err)
	}
	err = dst.update(func(tx kvTx) error {
		rep.Buckets, rep.Entries = 0, 0
		// Only the meta bucket may hold anything: a new ledger's magic,
		// version and (keyed) empty chain.
		if err := tx.ForEachBucket(func(name []byte) error {
			if bytes.Equal(name, bucketMeta) {
				return nil
			}
			if k, _ := tx.Bucket(name).Cursor().First(); k != nil {
				return fmt.Errorf("ledger copy: %s holds records in %q: copy into a new ledger (nothing was written): %w", dst.path, name, ErrNotEmpty)
			}
			return nil
		}); err != nil {
			return err
		}
		if h, err := readHead(tx); err != nil || h.seq != 0 {
			if err == nil {
				err = fmt.Errorf("ledger copy: %s has a chain of %d events: copy into a new ledger (nothing was written): %w", dst.path, h.seq, ErrNotEmpty)
			}
			return err
		}
		for _, bk := range all {
			b, err := tx.CreateBucketIfNotExists(bk.name)
			if err != nil {
				return err
			}
			for _, e := range bk.entries {
				if err := b.Put(e[0], e[1]); err != nil {
					return err
				}
			}
			if err := b.SetSequence(bk.seq); err != nil {
				return err
			}
			rep.Buckets++
			rep.Entries += len(bk.entries)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrNotEmpty) {
			return rep, err
		}
		return rep, fmt.Errorf("ledger copy into %s failed, nothing was written: %w", dst.path, err)
	}
	dstRep, err := dst.Verify()
	rep.Copy = dstRep
	if err != nil {
		return rep, fmt.Errorf("ledger copy: the copy does not verify: %w", err)
	}
	a, b := srcRep, dstRep
	a.SealChecked, b.SealChecked = false, false
	if a != b {
		return rep, fmt.Errorf("ledger copy: the source verifies as %+v but the copy as %+v: %w", srcRep, dstRep, ErrTampered)
	}
	return rep, nil
}
