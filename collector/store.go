// Package collector is dpstat's collector of locally private reports: a
// durable store of surveys and their aggregated reports, and the HTTP
// service through which a curator creates surveys, devices fetch a survey's
// public parameters and post their randomized reports, and anyone reads the
// estimates with intervals.
//
// The collector never sees a true answer: devices randomize with package
// ldp (or the JavaScript client, which uses the same exact probabilities)
// before anything leaves them. No person identifier is ever asked for; a
// report carries only a report id chosen by the device, which makes posting
// idempotent (a report posted twice is counted once).
//
// Durability: a batch of reports is validated as a whole, then its tally
// update and its report ids are written in one bbolt transaction, which is
// committed (fsync) before the collector answers 2xx; a report that was
// acknowledged survives a crash. The store keeps, per survey, the tally (the
// counts the estimators need) and a log of accepted report ids, one record
// per batch appended at the end of the log; the ids are also held in memory
// (as 128-bit hashes) so that duplicates are found without reading the log.
// The report contents themselves are not kept.
package collector

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/dpstat/dpstat/ldp"
)

var (
	bucketMeta    = []byte("meta")
	bucketSurveys = []byte("surveys")
	bucketTally   = []byte("tally")
	bucketIDs     = []byte("ids")
	keyAdmin      = []byte("admin-token-sha256")
)

// MaxValues is the largest number of listed domain values.
const MaxValues = 10000

// MaxOLHDomain is the largest domain of an olh survey.
const MaxOLHDomain = 1 << 16

// MaxIDLength is the longest report or survey id, in bytes.
const MaxIDLength = 64

// Domain is the set of answers a survey accepts: either a list of values
// (labels), or a numeric range [lo, hi]. With a frequency mechanism a range
// stands for the integers lo, lo+1, …, hi; with the mean mechanism it is the
// real interval the number is declared to lie in.
type Domain struct {
	// Values lists the answers (2 to MaxValues distinct labels).
	Values []string `json:"values,omitempty"`
	// Range is [lo, hi].
	Range []float64 `json:"range,omitempty"`
}

// SurveySpec is what a curator sends to create a survey.
type SurveySpec struct {
	// ID is optional; the collector picks a random id if it is empty.
	ID string `json:"id,omitempty"`
	// Question is the text shown to people.
	Question string `json:"question"`
	// Domain is the set of answers.
	Domain Domain `json:"domain"`
	// Mechanism is rr, krr, oue, olh, sue, mean or auto: for a list of
	// values the frequency oracle with the least variance at ε and the
	// domain size (ldp.Recommend), for a numeric range the mean.
	Mechanism string `json:"mechanism"`
	// Epsilon is the local ε of each report.
	Epsilon float64 `json:"epsilon"`
	// Enrolment, when true, accepts reports only from enrolled devices,
	// one per device (see Store.EnrolDevices).
	Enrolment bool `json:"enrolment,omitempty"`
}

// Survey is a stored survey.
type Survey struct {
	// ID names the survey in URLs.
	ID string `json:"id"`
	// Question is the text shown to people.
	Question string `json:"question"`
	// Domain is the set of answers.
	Domain Domain `json:"domain"`
	// Mechanism is the randomizer (never "auto" once stored).
	Mechanism ldp.Kind `json:"mechanism"`
	// Epsilon is the ε the curator asked for; Public.Params.Epsilon is
	// the ε the exact probabilities give (at most this).
	Epsilon float64 `json:"epsilon"`
	// Created is the creation time (UTC, to the second).
	Created time.Time `json:"created"`
	// Enrolment says that only enrolled devices may report, once each.
	Enrolment bool `json:"enrolment,omitempty"`
}

// Labels returns the answer labels, one per domain value (for mean, the
// single label "mean").
func (s Survey) Labels() []string {
	if s.Mechanism == ldp.KindMean {
		return []string{"mean"}
	}
	if len(s.Domain.Values) > 0 {
		return s.Domain.Values
	}
	lo, hi := int64(s.Domain.Range[0]), int64(s.Domain.Range[1])
	out := make([]string, 0, hi-lo+1)
	for v := lo; v <= hi; v++ {
		out = append(out, strconv.FormatInt(v, 10))
	}
	return out
}

// survey is a loaded survey with its randomizer and live state.
type survey struct {
	Survey
	oracle ldp.FrequencyOracle // nil for mean
	mean   *ldp.Mean
	params ldp.Params

	mu    sync.Mutex // guards tally and ids; held across an ingest's commit
	qmu   sync.Mutex // guards queue
	queue []*ingestJob
	tally ldp.Tally
	ids   map[[2]uint64]struct{} // hashes of the accepted report ids
}

func (s *survey) newAggregator() ldp.Aggregator {
	if s.mean != nil {
		return s.mean.NewAggregator()
	}
	return s.oracle.NewAggregator()
}

// build validates a survey and constructs its randomizer.
func build(sv Survey) (*survey, error) {
	out := &survey{Survey: sv}
	if sv.Question == "" || len(sv.Question) > 1000 {
		return nil, fmt.Errorf("question has %d bytes: want 1 to 1000", len(sv.Question))
	}
	d := sv.Domain
	switch {
	case len(d.Values) > 0 && d.Range != nil:
		return nil, errors.New("domain has both values and range: want exactly one")
	case len(d.Values) > 0:
		if len(d.Values) < 2 || len(d.Values) > MaxValues {
			return nil, fmt.Errorf("domain has %d values: want 2 to %d", len(d.Values), MaxValues)
		}
		seen := make(map[string]bool, len(d.Values))
		for i, v := range d.Values {
			if v == "" || len(v) > 200 {
				return nil, fmt.Errorf("domain value %d has %d bytes: want 1 to 200", i, len(v))
			}
			if seen[v] {
				return nil, fmt.Errorf("domain value %q appears twice: want distinct values", v)
			}
			seen[v] = true
		}
		if sv.Mechanism == ldp.KindMean {
			return nil, errors.New("mechanism mean needs a numeric range domain: want domain {\"range\": [lo, hi]}")
		}
	case d.Range != nil:
		if len(d.Range) != 2 || math.IsNaN(d.Range[0]) || math.IsNaN(d.Range[1]) || math.IsInf(d.Range[0], 0) || math.IsInf(d.Range[1], 0) || !(d.Range[0] < d.Range[1]) {
			return nil, fmt.Errorf("domain range %v: want [lo, hi] with finite lo < hi", d.Range)
		}
		if sv.Mechanism != ldp.KindMean {
			lo, hi := d.Range[0], d.Range[1]
			if lo != math.Trunc(lo) || hi != math.Trunc(hi) || hi-lo+1 > ldp.MaxDomain {
				return nil, fmt.Errorf("domain range [%v, %v] with mechanism %s: want integer bounds spanning at most %d values (or mechanism mean for a real range)", lo, hi, sv.Mechanism, ldp.MaxDomain)
			}
		}
	default:
		return nil, errors.New("domain is empty: want {\"values\": [...]} or {\"range\": [lo, hi]}")
	}
	if sv.Mechanism == ldp.KindOLH && domainSize(d) > MaxOLHDomain {
		return nil, fmt.Errorf("domain has %d values with mechanism olh: want at most %d (olh's aggregation costs one hash per value and report; use oue or krr)", domainSize(d), MaxOLHDomain)
	}
	var err error
	if sv.Mechanism == ldp.KindMean {
		out.mean, err = ldp.NewMean(ldp.MeanOptions{Epsilon: sv.Epsilon, Lo: d.Range[0], Hi: d.Range[1]})
		if err != nil {
			return nil, err
		}
		out.params = out.mean.Params()
	} else {
		out.oracle, err = ldp.New(ldp.Options{Mechanism: sv.Mechanism, Epsilon: sv.Epsilon, Domain: domainSize(d)})
		if err != nil {
			return nil, err
		}
		out.params = out.oracle.Params()
	}
	out.tally = ldp.Tally{Counts: make([]int64, out.params.TallySize())}
	return out, nil
}

func domainSize(d Domain) int {
	if len(d.Values) > 0 {
		return len(d.Values)
	}
	return int(d.Range[1]-d.Range[0]) + 1
}

// validID accepts 1 to MaxIDLength bytes of letters, digits and - _ . :
func validID(id string) bool {
	if len(id) == 0 || len(id) > MaxIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// StoreOptions configures Open.
type StoreOptions struct {
	// ReadOnly opens the store for reading (estimates) alongside no
	// writer; a store held by a running collector cannot be opened.
	ReadOnly bool
	// Timeout is how long to wait for the store's file lock (default 1 s).
	Timeout time.Duration
	// MaxIDs bounds the report ids held in memory to find duplicates,
	// over all surveys (default DefaultMaxIDs, about 60 bytes each). A
	// batch that would go beyond it is refused with ErrFull; nothing is
	// dropped silently.
	MaxIDs int
}

// DefaultMaxIDs is the default StoreOptions.MaxIDs: 4 million report ids,
// about 240 MB.
const DefaultMaxIDs = 4_000_000

// ErrFull is returned (wrapped) when accepting a batch would hold more
// report ids than StoreOptions.MaxIDs.
var ErrFull = errors.New("the collector holds its maximum of report ids")

// Store is the collector's durable store. Its methods are safe for
// concurrent use.
type Store struct {
	db       *bolt.DB
	readOnly bool
	seeds    [2]maphash.Seed
	maxIDs   int
	// nids counts the report ids held in memory, over all surveys.
	nids atomic.Int64

	mu      sync.Mutex // guards surveys
	surveys map[string]*survey
}

// Open opens (creating if needed) the store at path and loads its surveys,
// tallies and report ids.
func Open(path string, o StoreOptions) (*Store, error) {
	if o.Timeout <= 0 {
		o.Timeout = time.Second
	}
	if o.MaxIDs < 0 {
		return nil, fmt.Errorf("collector store: MaxIDs = %d: want >= 0 (0: the default, %d)", o.MaxIDs, DefaultMaxIDs)
	}
	if o.MaxIDs == 0 {
		o.MaxIDs = DefaultMaxIDs
	}
	if o.ReadOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("collector store %s: %w", path, err)
		}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.Timeout, ReadOnly: o.ReadOnly, FreelistType: bolt.FreelistMapType})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("collector store %s is locked by another process (a running collector?): ask it over HTTP, or stop it first", path)
		}
		return nil, fmt.Errorf("collector store %s: %w", path, err)
	}
	s := &Store{db: db, readOnly: o.ReadOnly, seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		surveys: map[string]*survey{}, maxIDs: o.MaxIDs}
	if !o.ReadOnly {
		err = db.Update(func(tx *bolt.Tx) error {
			for _, b := range [][]byte{bucketMeta, bucketSurveys, bucketTally, bucketIDs, bucketDevices} {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("collector store %s: %w", path, err)
		}
	}
	if err := s.load(); err != nil {
		db.Close()
		return nil, fmt.Errorf("collector store %s: %w", path, err)
	}
	return s, nil
}

func (s *Store) load() error {
	return s.db.View(func(tx *bolt.Tx) error {
		sb := tx.Bucket(bucketSurveys)
		if sb == nil {
			return nil // a read-only open of an empty store
		}
		return sb.ForEach(func(k, v []byte) error {
			var sv Survey
			if err := json.Unmarshal(v, &sv); err != nil {
				return fmt.Errorf("survey %q: %w", k, err)
			}
			b, err := build(sv)
			if err != nil {
				return fmt.Errorf("survey %q: %w", k, err)
			}
			if raw := tx.Bucket(bucketTally).Get(k); raw != nil {
				t, err := decodeTally(raw, b.params.TallySize())
				if err != nil {
					return fmt.Errorf("survey %q tally: %w", k, err)
				}
				b.tally = t
			}
			set := map[[2]uint64]struct{}{}
			if ib := tx.Bucket(bucketIDs).Bucket(k); ib != nil {
				err := ib.ForEach(func(_, rec []byte) error {
					for len(rec) > 0 {
						n := int(rec[0])
						if n == 0 || len(rec) < 1+n {
							return errors.New("corrupt report id log")
						}
						set[s.hashID(rec[1:1+n])] = struct{}{}
						rec = rec[1+n:]
					}
					return nil
				})
				if err != nil {
					return fmt.Errorf("survey %q: %w", k, err)
				}
			}
			b.ids = set
			s.nids.Add(int64(len(set)))
			s.surveys[sv.ID] = b
			return nil
		})
	})
}

func (s *Store) hashID(id []byte) [2]uint64 {
	return [2]uint64{maphash.Bytes(s.seeds[0], id), maphash.Bytes(s.seeds[1], id)}
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

func encodeTally(t ldp.Tally) []byte {
	buf := make([]byte, 0, 2+binary.MaxVarintLen64*(1+len(t.Counts)))
	buf = binary.AppendUvarint(buf, uint64(t.N))
	for _, c := range t.Counts {
		buf = binary.AppendUvarint(buf, uint64(c))
	}
	return buf
}

func decodeTally(b []byte, d int) (ldp.Tally, error) {
	t := ldp.Tally{Counts: make([]int64, d)}
	r := bytes.NewReader(b)
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return t, err
	}
	t.N = int64(n)
	for i := range t.Counts {
		c, err := binary.ReadUvarint(r)
		if err != nil {
			return t, err
		}
		t.Counts[i] = int64(c)
	}
	return t, nil
}

// ErrNotFound is returned (wrapped) for an unknown survey.
var ErrNotFound = errors.New("survey not found")

// CreateSurvey validates a survey and stores it (durably) before returning.
func (s *Store) CreateSurvey(spec SurveySpec) (Survey, error) {
	if s.readOnly {
		return Survey{}, errors.New("the store is open read-only")
	}
	var kind ldp.Kind
	switch {
	case spec.Mechanism != "auto" && spec.Mechanism != "":
		var err error
		if kind, err = ldp.ParseKind(spec.Mechanism); err != nil {
			return Survey{}, err
		}
	case len(spec.Domain.Values) > 0:
		// auto over labels: the frequency oracle with the least variance.
		var err error
		if kind, _, err = ldp.Recommend(spec.Epsilon, len(spec.Domain.Values)); err != nil {
			return Survey{}, err
		}
	default:
		// auto over a numeric range (or nothing, which build refuses):
		// the mean.
		kind = ldp.KindMean
	}
	sv := Survey{ID: spec.ID, Question: spec.Question, Domain: spec.Domain, Mechanism: kind, Epsilon: spec.Epsilon, Created: time.Now().UTC().Truncate(time.Second), Enrolment: spec.Enrolment}
	if sv.ID == "" {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return Survey{}, err
		}
		sv.ID = hex.EncodeToString(b[:])
	} else if !validID(sv.ID) {
		return Survey{}, fmt.Errorf("survey id %q: want 1 to %d letters, digits, '-', '_', '.' or ':'", sv.ID, MaxIDLength)
	}
	b, err := build(sv)
	if err != nil {
		return Survey{}, err
	}
	raw, err := json.Marshal(sv)
	if err != nil {
		return Survey{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.surveys[sv.ID]; ok {
		return Survey{}, fmt.Errorf("survey id %q is taken: %w", sv.ID, ErrExists)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketSurveys).Put([]byte(sv.ID), raw); err != nil {
			return err
		}
		if err := tx.Bucket(bucketTally).Put([]byte(sv.ID), encodeTally(b.tally)); err != nil {
			return err
		}
		_, err := tx.Bucket(bucketIDs).CreateBucketIfNotExists([]byte(sv.ID))
		return err
	})
	if err != nil {
		return Survey{}, err
	}
	b.ids = map[[2]uint64]struct{}{}
	s.surveys[sv.ID] = b
	return sv, nil
}

// ErrExists is returned (wrapped) when a survey id is taken.
var ErrExists = errors.New("survey exists")

func (s *Store) get(id string) (*survey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.surveys[id]
	if !ok {
		return nil, fmt.Errorf("survey %q: %w", id, ErrNotFound)
	}
	return b, nil
}

// Public is what devices need to answer a survey: the question, the answer
// labels, and the randomizer's exact public parameters.
type Public struct {
	Survey
	// Labels are the answers in the order of the domain values 0, 1, ….
	Labels []string `json:"labels,omitempty"`
	// Params are the randomizer's exact parameters.
	Params ldp.Params `json:"params"`
	// HexDigits is, for oue and sue, the number of hex digits of a report's
	// bits (2 per byte, ceil(domain/8) bytes, bit v in byte v/8 at
	// position v%8).
	HexDigits int `json:"hex_digits,omitempty"`
}

// Public returns a survey's public parameters.
func (s *Store) Public(id string) (Public, error) {
	b, err := s.get(id)
	if err != nil {
		return Public{}, err
	}
	return b.public(), nil
}

func (b *survey) public() Public {
	p := Public{Survey: b.Survey, Params: b.params}
	if b.mean == nil && b.params.Domain <= MaxValues {
		p.Labels = b.Labels()
	}
	if b.params.Mechanism == ldp.KindOUE || b.params.Mechanism == ldp.KindSUE {
		p.HexDigits = 2 * ((b.params.Domain + 7) / 8)
	}
	return p
}

// Surveys lists the stored surveys, by id.
func (s *Store) Surveys() []Survey {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Survey, 0, len(s.surveys))
	for _, b := range s.surveys {
		out = append(out, b.Survey)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

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

// ValueEstimate is the estimate of one answer's frequency (or of the mean).
type ValueEstimate struct {
	// Label is the answer (or "mean").
	Label string `json:"label"`
	// Estimate is the unbiased estimate (not clamped into [0, 1]).
	Estimate float64 `json:"estimate"`
	// StdError is the estimate's standard error.
	StdError float64 `json:"std_error"`
	// Lo is the lower end of the normal-approximation interval.
	Lo float64 `json:"lo"`
	// Hi is the interval's upper end.
	Hi float64 `json:"hi"`
}

// EstimateResult holds a survey's estimates.
type EstimateResult struct {
	// Survey is the survey estimated.
	Survey Survey `json:"survey"`
	// Epsilon is the ε each report satisfies.
	Epsilon float64 `json:"epsilon"`
	// N is the number of reports.
	N int64 `json:"n"`
	// Confidence is the intervals' confidence.
	Confidence float64 `json:"confidence"`
	// Estimates has one row per answer (or one "mean" row).
	Estimates []ValueEstimate `json:"estimates"`
}

// Estimates returns a survey's estimates with (confidence) intervals; with
// no reports yet, Estimates is empty.
func (s *Store) Estimates(id string, confidence float64) (EstimateResult, error) {
	if math.IsNaN(confidence) || !(confidence > 0 && confidence < 1) {
		return EstimateResult{}, fmt.Errorf("confidence = %v: want a number in (0, 1)", confidence)
	}
	b, err := s.get(id)
	if err != nil {
		return EstimateResult{}, err
	}
	b.mu.Lock()
	t := ldp.Tally{N: b.tally.N, Counts: append([]int64(nil), b.tally.Counts...)}
	b.mu.Unlock()
	out := EstimateResult{Survey: b.Survey, Epsilon: b.params.Epsilon, N: t.N, Confidence: confidence, Estimates: []ValueEstimate{}}
	if t.N == 0 {
		return out, nil
	}
	if b.mean != nil {
		e, err := b.mean.Estimate(t)
		if err != nil {
			return out, err
		}
		lo, hi := e.Interval(confidence)
		out.Estimates = append(out.Estimates, ValueEstimate{Label: "mean", Estimate: e.Value, StdError: math.Sqrt(e.Variance), Lo: lo, Hi: hi})
		return out, nil
	}
	est, err := ldp.Estimates(b.oracle, t)
	if err != nil {
		return out, err
	}
	labels := b.Labels()
	for v, e := range est {
		lo, hi := e.Interval(confidence)
		out.Estimates = append(out.Estimates, ValueEstimate{Label: labels[v], Estimate: e.Value, StdError: math.Sqrt(e.Variance), Lo: lo, Hi: hi})
	}
	return out, nil
}

// AdminTokenMatches reports whether token is the curator's token (compared
// in constant time through its SHA-256).
func (s *Store) AdminTokenMatches(token string) bool {
	var stored []byte
	_ = s.db.View(func(tx *bolt.Tx) error {
		if mb := tx.Bucket(bucketMeta); mb != nil {
			stored = append(stored, mb.Get(keyAdmin)...)
		}
		return nil
	})
	if len(stored) != sha256.Size || token == "" {
		return false
	}
	h := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(h[:], stored) == 1
}

// HasAdminToken reports whether a curator token is set.
func (s *Store) HasAdminToken() bool {
	var ok bool
	_ = s.db.View(func(tx *bolt.Tx) error {
		if mb := tx.Bucket(bucketMeta); mb != nil {
			ok = mb.Get(keyAdmin) != nil
		}
		return nil
	})
	return ok
}

// SetAdminToken stores the SHA-256 of the curator's token (the token itself
// is never stored).
func (s *Store) SetAdminToken(token string) error {
	if len(token) < 16 {
		return fmt.Errorf("admin token has %d characters: want at least 16", len(token))
	}
	h := sha256.Sum256([]byte(token))
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyAdmin, h[:]) })
}

// NewToken returns a random 256-bit token in hex.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}
