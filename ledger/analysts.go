package ledger

import (
	"fmt"
)

// bucketAnalysts holds the analyst records that package analyst keeps in
// the ledger file, so that a deployment has one durable file. The bucket is
// created on first use; older ledgers without it are still valid.
var bucketAnalysts = []byte("analysts")

// MaxAnalystRecordLen bounds one stored analyst record.
const MaxAnalystRecordLen = 64 << 10

// AnalystRecord is one stored analyst record: a name and opaque bytes whose
// format belongs to package analyst.
type AnalystRecord struct {
	Name string
	Data []byte
}

// PutAnalystRecord stores data under name in the ledger's analyst bucket,
// replacing any previous record, and syncs it to disk before returning.
func (l *Ledger) PutAnalystRecord(name string, data []byte) error {
	if err := validName("analyst", name, false); err != nil {
		return err
	}
	if len(data) == 0 || len(data) > MaxAnalystRecordLen {
		return fmt.Errorf("analyst record of %d bytes: want 1 to %d", len(data), MaxAnalystRecordLen)
	}
	if err := l.writable(); err != nil {
		return err
	}
	return l.update(func(tx kvTx) error {
		b, err := tx.CreateBucketIfNotExists(bucketAnalysts)
		if err != nil {
			return err
		}
		return b.Put([]byte(name), append([]byte(nil), data...))
	})
}

// AnalystRecordOf returns the record stored under name and whether there is
// one.
func (l *Ledger) AnalystRecordOf(name string) ([]byte, bool, error) {
	var out []byte
	err := l.view(func(tx kvTx) error {
		b := tx.Bucket(bucketAnalysts)
		if b == nil {
			return nil
		}
		if v := b.Get([]byte(name)); v != nil {
			out = append([]byte(nil), v...)
		}
		return nil
	})
	return out, out != nil, err
}

// AnalystRecords returns every stored analyst record, sorted by name.
func (l *Ledger) AnalystRecords() ([]AnalystRecord, error) {
	var out []AnalystRecord
	err := l.view(func(tx kvTx) error {
		b := tx.Bucket(bucketAnalysts)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			out = append(out, AnalystRecord{Name: string(k), Data: append([]byte(nil), v...)})
			return nil
		})
	})
	return out, err
}
