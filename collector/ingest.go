package collector

import (
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/dpstat/dpstat/ldp"
)

// Report is one report as a device sends it. Value is the reported value
// (rr, krr; mean and hr: the reported bit 0/1; olh: the perturbed hash),
// Seed the olh hash seed, Row the hr row, Bits the oue/sue bit vector in hex.
type Report struct {
	// ID is chosen by the device (1 to MaxIDLength letters, digits,
	// '-', '_', '.' or ':'); a report id is counted once.
	ID string `json:"id"`
	// Value is the reported value, bit or perturbed hash.
	Value *int64 `json:"value,omitempty"`
	// Seed is olh's hash seed.
	Seed *uint32 `json:"seed,omitempty"`
	// Row is hr's Hadamard row.
	Row *int64 `json:"row,omitempty"`
	// Bits is the unary encoding in hex: ceil(d/8) bytes, bit v in byte
	// v/8 at position v%8.
	Bits string `json:"bits,omitempty"`
}

// ReportError says which report of a batch does not fit the survey.
type ReportError struct {
	// Index is the report's position in the batch.
	Index int
	// Code is a short machine-readable reason.
	Code string
	// Message names the problem and what would be accepted.
	Message string
}

// Error implements error.
func (e *ReportError) Error() string { return fmt.Sprintf("report %d: %s", e.Index, e.Message) }

// IngestResult says what became of a batch.
type IngestResult struct {
	// Accepted counts the new reports, now counted in the survey.
	Accepted int `json:"accepted"`
	// Duplicates counts reports whose id was already accepted (they
	// are not counted again).
	Duplicates int `json:"duplicates"`
	// Total is the survey's number of reports after the batch.
	Total int64 `json:"total"`
}

// convert turns a wire report into an ldp.Report for the survey.
func (b *survey) convert(i int, r Report) (ldp.Report, *ReportError) {
	bad := func(code, format string, args ...any) *ReportError {
		return &ReportError{Index: i, Code: code, Message: fmt.Sprintf(format, args...)}
	}
	if !validID(r.ID) {
		return ldp.Report{}, bad("invalid_report_id", "report id %q: want 1 to %d letters, digits, '-', '_', '.' or ':' chosen by the device", r.ID, MaxIDLength)
	}
	k := b.params.Mechanism
	switch k {
	case ldp.KindOUE, ldp.KindSUE:
		if r.Value != nil || r.Seed != nil || r.Row != nil {
			return ldp.Report{}, bad("wrong_fields", "survey uses %s: want a report with \"bits\" only", k)
		}
		want := 2 * ((b.params.Domain + 7) / 8)
		if len(r.Bits) != want {
			return ldp.Report{}, bad("wrong_length", "bits has %d hex digits: want %d for a domain of %d values", len(r.Bits), want, b.params.Domain)
		}
		words := make([]uint64, (b.params.Domain+63)/64)
		for j := 0; j < len(r.Bits); j += 2 {
			hi, ok1 := unhex(r.Bits[j])
			lo, ok2 := unhex(r.Bits[j+1])
			if !ok1 || !ok2 {
				return ldp.Report{}, bad("malformed_bits", "bits has a non-hex character at %d: want hex digits", j)
			}
			byteIdx := j / 2
			words[byteIdx/8] |= uint64(hi<<4|lo) << (8 * (byteIdx % 8))
		}
		if rem := b.params.Domain % 8; rem != 0 {
			lastByte := len(r.Bits)/2 - 1
			if last := words[lastByte/8] >> (8 * (lastByte % 8)) & 0xff; last>>rem != 0 {
				return ldp.Report{}, bad("out_of_domain", "bits sets a bit at or beyond position %d: want bits of values in [0, %d) only", b.params.Domain, b.params.Domain)
			}
		}
		return ldp.Report{Bits: words}, nil
	case ldp.KindHR:
		if r.Value == nil || r.Row == nil || r.Seed != nil || r.Bits != "" {
			return ldp.Report{}, bad("wrong_fields", "survey uses hr: want a report with \"row\" and \"value\"")
		}
		if *r.Row < 0 || *r.Row >= int64(b.params.Rows) {
			return ldp.Report{}, bad("out_of_domain", "row = %d: want a Hadamard row in [0, %d)", *r.Row, b.params.Rows)
		}
		if *r.Value != 0 && *r.Value != 1 {
			return ldp.Report{}, bad("out_of_domain", "value = %d: want a bit, 0 or 1", *r.Value)
		}
		return ldp.Report{Value: int(*r.Value), Seed: uint32(*r.Row)}, nil
	case ldp.KindOLH:
		if r.Value == nil || r.Seed == nil || r.Row != nil || r.Bits != "" {
			return ldp.Report{}, bad("wrong_fields", "survey uses olh: want a report with \"seed\" and \"value\"")
		}
		if *r.Value < 0 || *r.Value >= int64(b.params.G) {
			return ldp.Report{}, bad("out_of_domain", "value = %d: want a hashed value in [0, %d)", *r.Value, b.params.G)
		}
		return ldp.Report{Value: int(*r.Value), Seed: *r.Seed}, nil
	default:
		if r.Value == nil || r.Seed != nil || r.Row != nil || r.Bits != "" {
			return ldp.Report{}, bad("wrong_fields", "survey uses %s: want a report with \"value\" only", k)
		}
		if *r.Value < 0 || *r.Value >= int64(b.params.Domain) {
			return ldp.Report{}, bad("out_of_domain", "value = %d: want a value in [0, %d)", *r.Value, b.params.Domain)
		}
		return ldp.Report{Value: int(*r.Value)}, nil
	}
}

func unhex(c byte) (uint64, bool) {
	switch {
	case '0' <= c && c <= '9':
		return uint64(c - '0'), true
	case 'a' <= c && c <= 'f':
		return uint64(c - 'a' + 10), true
	case 'A' <= c && c <= 'F':
		return uint64(c - 'A' + 10), true
	}
	return 0, false
}

// Ingest validates a batch of reports for a survey and, if every report
// fits, counts the new ones and records their ids durably (committed with
// fsync) before returning. A report that does not fit refuses the whole
// batch with a *ReportError and nothing is counted. Reports whose id was
// already accepted are acknowledged as duplicates and not counted again.
func (s *Store) Ingest(id string, reports []Report) (IngestResult, error) {
	if s.readOnly {
		return IngestResult{}, errors.New("the store is open read-only")
	}
	b, err := s.get(id)
	if err != nil {
		return IngestResult{}, err
	}
	conv := make([]ldp.Report, len(reports))
	hashes := make([][2]uint64, len(reports))
	for i, r := range reports {
		c, rerr := b.convert(i, r)
		if rerr != nil {
			return IngestResult{}, rerr
		}
		conv[i] = c
		hashes[i] = s.hashID([]byte(r.ID))
	}
	j := &ingestJob{reports: reports, conv: conv, hashes: hashes, done: make(chan struct{})}
	b.qmu.Lock()
	b.queue = append(b.queue, j)
	b.qmu.Unlock()
	// Group commit: whoever holds b.mu commits every queued batch of the
	// survey in one transaction (one fsync); a batch whose turn comes
	// after it was committed by another holder just returns its result.
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-j.done:
		return j.res, j.err
	default:
	}
	b.qmu.Lock()
	group := b.queue
	b.queue = nil
	b.qmu.Unlock()
	s.commitGroup(b, group)
	<-j.done
	return j.res, j.err
}

// ingestJob is one validated batch waiting for its commit.
type ingestJob struct {
	reports []Report
	conv    []ldp.Report
	hashes  [][2]uint64
	log     []byte // the batch's accepted ids, each preceded by its length
	res     IngestResult
	err     error
	done    chan struct{}
}

// commitGroup counts the new reports of a group of batches, writes their id
// logs and the new tally in one transaction, and only then updates the
// in-memory tally and id set and answers the batches. b.mu is held.
func (s *Store) commitGroup(b *survey, group []*ingestJob) {
	finish := func(err error) {
		for _, j := range group {
			if err != nil {
				j.res, j.err = IngestResult{}, err
			}
			close(j.done)
		}
	}
	set := b.ids
	agg := b.newAggregator()
	if err := agg.Merge(b.tally); err != nil {
		finish(err)
		return
	}
	// New ids go straight into the in-memory set (one lookup and one
	// insertion per report); they are taken out again if the commit fails.
	var added [][2]uint64
	rollback := func() {
		for _, h := range added {
			delete(set, h)
		}
	}
	accepted := 0
	for _, j := range group {
		for i, r := range j.conv {
			h := j.hashes[i]
			if _, dup := set[h]; dup {
				j.res.Duplicates++
				continue
			}
			if err := agg.Add(r); err != nil {
				// convert checks everything Add checks; reaching this is
				// a bug, and the whole group is refused.
				rollback()
				finish(fmt.Errorf("report %d: %w", i, err))
				return
			}
			if s.nids.Load()+int64(len(added)) >= int64(s.maxIDs) {
				rollback()
				finish(fmt.Errorf("survey %q: %w (%d, StoreOptions.MaxIDs; collect --max-ids raises it): nothing of this batch was counted", b.ID, ErrFull, s.maxIDs))
				return
			}
			set[h] = struct{}{}
			added = append(added, h)
			j.log = append(j.log, byte(len(j.reports[i].ID)))
			j.log = append(j.log, j.reports[i].ID...)
			j.res.Accepted++
			accepted++
		}
	}
	if accepted > 0 {
		t := agg.Tally()
		id := []byte(b.ID)
		err := s.db.Update(func(tx *bolt.Tx) error {
			ib := tx.Bucket(bucketIDs).Bucket(id)
			for _, j := range group {
				if len(j.log) == 0 {
					continue
				}
				seq, err := ib.NextSequence()
				if err != nil {
					return err
				}
				var key [8]byte
				binary.BigEndian.PutUint64(key[:], seq)
				if err := ib.Put(key[:], j.log); err != nil {
					return err
				}
			}
			return tx.Bucket(bucketTally).Put(id, encodeTally(t))
		})
		if err != nil {
			rollback()
			finish(fmt.Errorf("storing reports: %w", err))
			return
		}
		b.tally = t
		s.nids.Add(int64(len(added)))
	}
	for _, j := range group {
		j.res.Total = b.tally.N
	}
	finish(nil)
}

// HasReport reports whether a report id was accepted for a survey.
func (s *Store) HasReport(survey, reportID string) bool {
	b, err := s.get(survey)
	if err != nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.ids[s.hashID([]byte(reportID))]
	return ok
}
