package query

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"time"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/reuse"
	"github.com/dpstat/dpstat/query/sqlgen"
)

// AnswerStore looks up answers stored with earlier charges; *ledger.Ledger
// provides it. When a Service's ledger is also an AnswerStore, answers are
// repeat-safe: the same analyst asking the same query with the same
// parameters on the same table gets the stored noisy answer at no cost,
// instead of fresh noise that averaging could remove.
type AnswerStore interface {
	// Answer returns the answer stored under answerKey for k, and whether
	// there is one. An empty answer is a charge whose answer is not stored
	// (yet).
	Answer(k ledger.Key, answerKey string) ([]byte, bool, error)
	// StoreAnswer stores the answer of a charge that reserved answerKey.
	StoreAnswer(k ledger.Key, answerKey string, answer []byte) error
}

// RepeatedNote is the note a stored answer carries when it is returned
// again.
const RepeatedNote = "repeated query: stored answer returned, no charge"

// answerKeyVersion changes whenever the stored format or what identifies a
// query changes.
const answerKeyVersion = "dpstat-query-answer-v2"

// AnswerKey identifies the answer of a prepared query in the ledger: a hash
// of the data it is computed from (the table's whole declaration: its
// source, columns, bounds, value lists and contribution bounds, so that two
// catalogs giving one name to different data, or a changed declaration,
// ask different questions), the normalized query text, ε, δ, the
// confidence level, and the engine SQL. The analyst and table are the
// ledger key the answer is stored under.
func (p *Prepared) AnswerKey() string {
	// Whose releases may be reused does not change what an answer is.
	t := relationDecl(p.decl, p.Plan.Table)
	t.ReuseReleases = ""
	decl, err := json.Marshal(t)
	if err != nil {
		// A table that cannot be spelled gets a key of its own.
		decl = []byte(fmt.Sprintf("%p", p.Plan.Table))
	}
	source, err := filepath.Abs(p.decl.Source)
	if err != nil {
		source = p.decl.Source
	}
	h := sha256.New()
	for _, part := range []string{
		answerKeyVersion,
		p.Plan.Table.Name,
		string(decl),
		source,
		p.Plan.Query.Text,
		strconv.FormatFloat(p.Opts.Epsilon, 'g', -1, 64),
		strconv.FormatFloat(p.Opts.Delta, 'g', -1, 64),
		strconv.FormatFloat(p.Opts.Confidence, 'g', -1, 64),
		keySQL(p),
	} {
		fmt.Fprintf(h, "%d:%s;", len(part), part)
	}
	if p.DroppedSQL != "" {
		fmt.Fprintf(h, "dropped %d:%s;", len(p.DroppedSQL), p.DroppedSQL)
	}
	for _, hs := range p.HistogramSQL {
		fmt.Fprintf(h, "%d:%s;", len(hs), hs)
	}
	return answerKeyVersion + ":" + hex.EncodeToString(h.Sum(nil))
}

// keySQL is the statement an answer key names: p's, or, when p's plan
// also measures the rows outside its value lists in hidden cells
// (dpplan.Plan.MeasureRest), the statement of the same plan without them.
// The released groups are the same statistic either way, so an answer
// stored before those cells were measured is found again.
func keySQL(p *Prepared) string {
	if p.Plan.Hidden == 0 || p.dialect == nil {
		return p.SQL
	}
	np := *p.Plan
	np.Keys, np.Hidden, np.Rest = np.Released(), 0, nil
	text, err := sqlgen.SQL(&np, p.dialect)
	if err != nil {
		return p.SQL
	}
	return text
}

// storedCell is one answer value with its type kept.
type storedCell struct {
	T string  `json:"t"` // "i", "f", "s", "b", "n" (NULL)
	I int64   `json:"i,omitempty"`
	F float64 `json:"f,omitempty"`
	S string  `json:"s,omitempty"`
	B bool    `json:"b,omitempty"`
}

// storedAnswer is the durable form of a Result.
type storedAnswer struct {
	Columns    []string             `json:"columns"`
	Rows       [][]storedCell       `json:"rows"`
	CI         [][]*dpplan.Interval `json:"ci"`
	Confidence float64              `json:"confidence"`
	Cost       accounting.Cost      `json:"cost"`
	Split      []dpplan.Share       `json:"split"`
	Notes      []string             `json:"notes"`
	// Measured is what the release measured, for later derivations
	// (package query/reuse); nil when nothing in it can be reused.
	Measured *reuse.Record `json:"measured,omitempty"`
	// Dropped is the dropped-rows estimate, when one was released.
	Dropped *dpplan.DroppedEstimate `json:"dropped,omitempty"`
}

// encodeAnswer serializes a result for storage with its charge.
func encodeAnswer(r *Result) ([]byte, error) { return encodeAnswerWith(r, nil) }

// encodeAnswerWith is encodeAnswer keeping the release's measurements.
func encodeAnswerWith(r *Result, rec *reuse.Record) ([]byte, error) {
	s := storedAnswer{Columns: r.Columns, CI: r.CI, Confidence: r.Confidence, Cost: r.Cost, Split: r.Split, Notes: r.Notes, Measured: rec, Dropped: r.Dropped}
	for _, ivs := range r.CI {
		for _, iv := range ivs {
			if iv != nil && !(finite(iv.Low) && finite(iv.High)) {
				return nil, fmt.Errorf("query: interval %v cannot be stored", *iv)
			}
		}
	}
	for _, row := range r.Rows {
		cells := make([]storedCell, len(row))
		for j, v := range row {
			switch x := v.(type) {
			case nil:
				cells[j] = storedCell{T: "n"}
			case int64:
				cells[j] = storedCell{T: "i", I: x}
			case float64:
				if !finite(x) {
					return nil, fmt.Errorf("query: value %v cannot be stored", x)
				}
				cells[j] = storedCell{T: "f", F: x}
			case string:
				cells[j] = storedCell{T: "s", S: x}
			case bool:
				cells[j] = storedCell{T: "b", B: x}
			default:
				return nil, fmt.Errorf("query: value of type %T cannot be stored", v)
			}
		}
		s.Rows = append(s.Rows, cells)
	}
	return json.Marshal(s)
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// decodeAnswer restores a stored result.
func decodeAnswer(b []byte) (*Result, error) {
	var s storedAnswer
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("query: stored answer is damaged: %w", err)
	}
	r := &Result{Columns: s.Columns, CI: s.CI, Confidence: s.Confidence, Cost: s.Cost, Split: s.Split, Notes: s.Notes, Dropped: s.Dropped}
	for _, cells := range s.Rows {
		row := make([]any, len(cells))
		for j, c := range cells {
			switch c.T {
			case "i":
				row[j] = c.I
			case "f":
				row[j] = c.F
			case "s":
				row[j] = c.S
			case "b":
				row[j] = c.B
			case "n":
				row[j] = nil
			default:
				return nil, fmt.Errorf("query: stored answer has a value of unknown type %q", c.T)
			}
		}
		r.Rows = append(r.Rows, row)
	}
	if len(r.Rows) != len(r.CI) {
		return nil, fmt.Errorf("query: stored answer is damaged: %d rows, %d interval rows", len(r.Rows), len(r.CI))
	}
	return r, nil
}

// storedResult returns the stored answer of p for key, if there is one,
// marked as repeated: it was charged when first released and costs nothing
// now.
func storedResult(store AnswerStore, key ledger.Key, answerKey string) (*Result, bool, error) {
	b, ok, err := store.Answer(key, answerKey)
	if err != nil || !ok || len(b) == 0 || bytes.Equal(b, noAnswer) {
		// Nothing stored, or a charge whose answer was never stored.
		return nil, false, err
	}
	r, err := repeated(b)
	if err != nil {
		return nil, false, err
	}
	return r, true, nil
}

// repeated decodes a stored answer, marked as returned again at no cost.
func repeated(b []byte) (*Result, error) {
	r, err := decodeAnswer(b)
	if err != nil {
		return nil, err
	}
	r.Repeated = true
	r.OriginalCost = r.Cost
	r.Cost = accounting.Cost{}
	r.Notes = append([]string{RepeatedNote}, r.Notes...)
	return r, nil
}

// DefaultRepeatWait is how long a query waits, at most, for the stored
// answer of an identical query that another run reserved in the ledger (a
// second server on the same ledger answering it at the same moment) before
// it is charged and answered on its own.
const DefaultRepeatWait = 10 * time.Second

// SetRepeatWait sets how long a query waits, at most, for the stored answer
// of an identical query another run reserved (0 or less: DefaultRepeatWait).
// The wait also ends with the query's context.
func (s *Service) SetRepeatWait(d time.Duration) {
	s.mu.Lock()
	s.repeatWait = d
	s.mu.Unlock()
}

// noAnswer is stored under a reserved answer key whose run will never
// store its answer (the engine failed, or the answer has no stored form):
// a repeat then does not wait for it, and is charged and answered afresh.
// It is not JSON, so that no reader takes it for an answer.
var noAnswer = []byte("dpstat: no answer stored")

// abandon records in the ledger that the answer reserved under answerKey
// for k will never be stored, so that repeats, on any server, need not
// wait for it.
func (s *Service) abandon(store AnswerStore, k ledger.Key, answerKey string) {
	if err := store.StoreAnswer(k, answerKey, noAnswer); err != nil && !errors.Is(err, ledger.ErrNoPendingAnswer) {
		s.logger().Warn("a reserved answer could not be marked as never stored: repeats of the query wait for it", "table", k.Dataset,
			"analyst", k.Analyst, "error", err.Error())
	}
}

// awaitStored waits for the answer another run reserved under answerKey for
// k: with several servers on one ledger, an identical query sent to two of
// them at once is charged by the first, and the second, refused with
// ledger.ErrAnswerExists, returns the first's stored answer at no cost
// instead of paying again. It polls the ledger until the answer is stored,
// the reservation is known to be abandoned, the wait (SetRepeatWait) runs
// out or ctx ends; it returns false, and no error, when no answer came.
// The wait depends only on when the other, charged, run finishes.
func (s *Service) awaitStored(ctx context.Context, store AnswerStore, k ledger.Key, answerKey string) (*Result, bool, error) {
	s.mu.Lock()
	wait := s.repeatWait
	s.mu.Unlock()
	if wait <= 0 {
		wait = DefaultRepeatWait
	}
	deadline := time.Now().Add(wait)
	pause := 2 * time.Millisecond
	for {
		b, _, err := store.Answer(k, answerKey)
		if err != nil {
			return nil, false, fmt.Errorf("reading the stored answer, nothing charged: %w", err)
		}
		if bytes.Equal(b, noAnswer) {
			return nil, false, nil
		}
		if len(b) > 0 {
			res, err := repeated(b)
			if err != nil {
				return nil, false, fmt.Errorf("reading the stored answer, nothing charged: %w", err)
			}
			return res, true, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, false, nil
		}
		t := time.NewTimer(min(pause, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, false, fmt.Errorf("the query was stopped while waiting for the answer of the identical query another run is answering; nothing charged: %w", ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// chargeOnce charges c. When another run reserved c's answer key (another
// server on the ledger answering the same query now, or a run that never
// stored its answer), it waits, bounded, for that run's stored answer and
// returns it, charging nothing; if none comes it charges c without the key,
// with fresh noise at full cost, and says so (takeOver): the caller then
// stores its answer under the key, so that the next repeat is free.
func (s *Service) chargeOnce(ctx context.Context, store AnswerStore, c *ledger.Charge) (ledger.Receipt, *Result, bool, error) {
	receipt, err := s.led.Charge(ctx, *c)
	if err == nil || c.AnswerKey == "" || !errors.Is(err, ledger.ErrAnswerExists) {
		return receipt, nil, false, err
	}
	res, ok, err := s.awaitStored(ctx, store, c.Key, c.AnswerKey)
	if err != nil || ok {
		return ledger.Receipt{}, res, false, err
	}
	c.AnswerKey, c.RequestID = "", newRequestID()
	receipt, err = s.led.Charge(ctx, *c)
	return receipt, nil, true, err
}
