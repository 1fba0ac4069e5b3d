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
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"sort"
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
