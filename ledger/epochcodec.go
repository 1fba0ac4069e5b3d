package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/dpstat/dpstat/accounting"
)

// The stored form of an epochRecord: its runs share one limit and rule
// (the template's), so each run keeps only its range, release count and
// exact sums (a zero sum left out). A record of 365 runs is then a few
// kilobytes that decode without a budget object per run in the text.

type storedRun struct {
	From     int64  `json:"f"`
	To       int64  `json:"t"`
	Releases int    `json:"n"`
	Epsilon  string `json:"e,omitempty"`
	Delta    string `json:"d,omitempty"`
	Rho      string `json:"r,omitempty"`
	RhoDelta string `json:"rd,omitempty"`
}

// storedEpochs is the whole stored record: the head, then the runs (the
// last member, which MarshalJSON writes by hand and UnmarshalJSON finds
// after the head).
type storedEpochs struct {
	storedHead
	Runs []storedRun `json:"runs"`
}

// storedHead is the stored record without its runs.
type storedHead struct {
	Dataset string              `json:"dataset"`
	Analyst string              `json:"analyst,omitempty"`
	Every   string              `json:"every"`
	Limit   accounting.EpsDelta `json:"limit"`
	Rule    accounting.Rule     `json:"rule"`
}

// runSums are the members of a stored run's sums, in order.
var runSums = [...]struct {
	name string
	sum  accounting.Sum
}{{`,"e":"`, accounting.SumEpsilon}, {`,"d":"`, accounting.SumDelta}, {`,"r":"`, accounting.SumRho}, {`,"rd":"`, accounting.SumRhoDelta}}

// MarshalJSON stores the record compactly (storedEpochs), in the bytes
// json.Marshal would write for it; the runs are written by hand, with
// their sums appended digit by digit (no string per sum). Every run must
// share the first run's limit and rule.
func (rec *epochRecord) MarshalJSON() ([]byte, error) {
	head := storedHead{Dataset: rec.Dataset, Analyst: rec.Analyst, Every: rec.Every}
	for i, run := range rec.Runs {
		if i == 0 {
			head.Limit, head.Rule = run.Budget.Limit(), run.Budget.Rule()
		} else if run.Budget.Limit() != head.Limit || run.Budget.Rule() != head.Rule {
			return nil, fmt.Errorf("epoch budgets of %q (analyst %q) have different limits: %v and %v", rec.Dataset, rec.Analyst, head.Limit, run.Budget.Limit())
		}
	}
	out, err := json.Marshal(head)
	if err != nil {
		return nil, err
	}
	out = append(out[:len(out)-1], `,"runs":[`...) // drop the closing brace
	for i, run := range rec.Runs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"f":`...)
		out = strconv.AppendInt(out, run.From, 10)
		out = append(out, `,"t":`...)
		out = strconv.AppendInt(out, run.To, 10)
		out = append(out, `,"n":`...)
		out = strconv.AppendInt(out, int64(run.Budget.Releases()), 10)
		for _, s := range runSums {
			if !run.Budget.SumIsZero(s.sum) {
				out = append(out, s.name...)
				out = run.Budget.AppendSum(out, s.sum)
				out = append(out, '"')
			}
		}
		out = append(out, '}')
	}
	return append(out, "]}"...), nil
}

// UnmarshalJSON reads a record stored by MarshalJSON, checking that its
// runs are in order and disjoint. Runs in the form MarshalJSON writes are
// read by hand (parseRuns); any other valid form by encoding/json.
func (rec *epochRecord) UnmarshalJSON(data []byte) error {
	var in struct {
		storedHead
		Runs json.RawMessage `json:"runs"`
	}
	// The form MarshalJSON writes: the head, then the runs, last. The
	// runs member cannot start inside a string (its quotes would be
	// escaped there), so the head ends where it starts.
	var runs []storedRun
	ok := false
	if i := bytes.Index(data, []byte(`,"runs":[`)); i > 0 && bytes.HasSuffix(data, []byte("]}")) {
		head := append(data[:i:i], '}')
		if json.Unmarshal(head, &in) == nil && in.Runs == nil {
			runs, ok = parseRuns(data[i+len(`,"runs":`) : len(data)-1])
		}
	}
	if !ok {
		in.storedHead, in.Runs = storedHead{}, nil
		if err := json.Unmarshal(data, &in); err != nil {
			return err
		}
		runs, ok = parseRuns(in.Runs)
	}
	if !ok {
		runs = nil
		if len(in.Runs) > 0 {
			if err := json.Unmarshal(in.Runs, &runs); err != nil {
				return err
			}
		}
	}
	*rec = epochRecord{Dataset: in.Dataset, Analyst: in.Analyst, Every: in.Every, Runs: make([]epochRun, len(runs))}
	for i, r := range runs {
		if r.From > r.To || (i > 0 && r.From <= runs[i-1].To) {
			return fmt.Errorf("run %d (%d..%d) is empty or overlaps the one before", i, r.From, r.To)
		}
		b, err := accounting.BudgetFromSums(in.Limit, in.Rule, accounting.ExactSums{Epsilon: r.Epsilon, Delta: r.Delta, Rho: r.Rho, RhoDelta: r.RhoDelta, Releases: r.Releases})
		if err != nil {
			return fmt.Errorf("run %d: %w", i, err)
		}
		rec.Runs[i] = epochRun{From: r.From, To: r.To, Budget: b}
	}
	return nil
}

// parseRuns reads runs written by MarshalJSON: exactly its members, in its
// order, without spaces. Anything else is not ok (encoding/json then
// reads it, or says what is wrong with it).
func parseRuns(data []byte) ([]storedRun, bool) {
	p := runParser{data: data}
	if !p.lit("[") {
		return nil, false
	}
	runs := make([]storedRun, 0, bytes.Count(data, []byte(`{"f":`)))
	if p.lit("]") {
		return runs, p.pos == len(data)
	}
	for {
		var r storedRun
		var n int64
		ok := p.lit(`{"f":`) && p.int(&r.From) && p.lit(`,"t":`) && p.int(&r.To) && p.lit(`,"n":`) && p.int(&n)
		if !ok || n != int64(int(n)) {
			return nil, false
		}
		r.Releases = int(n)
		for _, f := range []struct {
			name string
			dst  *string
		}{{`,"e":"`, &r.Epsilon}, {`,"d":"`, &r.Delta}, {`,"r":"`, &r.Rho}, {`,"rd":"`, &r.RhoDelta}} {
			if p.lit(f.name) && !p.rat(f.dst) {
				return nil, false
			}
		}
		if !p.lit("}") {
			return nil, false
		}
		runs = append(runs, r)
		if p.lit("]") {
			return runs, p.pos == len(data)
		}
		if !p.lit(",") {
			return nil, false
		}
	}
}

// runParser reads the canonical form of stored runs.
type runParser struct {
	data []byte
	pos  int
}

// lit consumes s if the input continues with it.
func (p *runParser) lit(s string) bool {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(s)) {
		return false
	}
	p.pos += len(s)
	return true
}

// int reads a decimal integer.
func (p *runParser) int(dst *int64) bool {
	end := p.pos
	if end < len(p.data) && p.data[end] == '-' {
		end++
	}
	digits := end
	for end < len(p.data) && p.data[end] >= '0' && p.data[end] <= '9' {
		end++
	}
	if end-digits > 1 && p.data[digits] == '0' {
		return false // not JSON (a leading zero): encoding/json decides
	}
	v, err := strconv.ParseInt(string(p.data[p.pos:end]), 10, 64)
	if err != nil {
		return false
	}
	*dst, p.pos = v, end
	return true
}

// rat reads the rest of a string of digits and '/' and its closing quote.
func (p *runParser) rat(dst *string) bool {
	end := p.pos
	for end < len(p.data) && (p.data[end] >= '0' && p.data[end] <= '9' || p.data[end] == '/') {
		end++
	}
	if end == len(p.data) || p.data[end] != '"' {
		return false
	}
	*dst, p.pos = string(p.data[p.pos:end]), end+1
	return true
}
