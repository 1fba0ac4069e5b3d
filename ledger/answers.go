package ledger

import (
	"bytes"
)

// StoredAnswer is one answer stored with a charge (Charge.AnswerKey).
type StoredAnswer struct {
	Key       Key
	AnswerKey string
	Answer    []byte
}

// Answers returns the answers stored for dataset, every analyst's, whose
// answer keys begin with prefix; charges whose answers were never stored
// are left out. Answers are read-only once stored, so callers may keep
// what they read.
func (l *Ledger) Answers(dataset, prefix string) ([]StoredAnswer, error) {
	if err := validName("dataset", dataset, false); err != nil {
		return nil, err
	}
	start := append([]byte(dataset), 0)
	var out []StoredAnswer
	err := l.view(func(tx kvTx) error {
		c := tx.Bucket(bucketAnswers).Cursor()
		for k, v := c.Seek(start); k != nil && bytes.HasPrefix(k, start); k, v = c.Next() {
			rest := k[len(start):]
			i := bytes.IndexByte(rest, 0)
			if i < 0 || len(v) == 0 {
				continue
			}
			ak := string(rest[i+1:])
			if len(ak) < len(prefix) || ak[:len(prefix)] != prefix {
				continue
			}
			out = append(out, StoredAnswer{Key: Key{Dataset: dataset, Analyst: string(rest[:i])}, AnswerKey: ak, Answer: bytes.Clone(v)})
		}
		return nil
	})
	return out, err
}
