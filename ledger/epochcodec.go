package ledger

import (
	"encoding/json"
	"fmt"

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

type storedEpochs struct {
	Dataset string              `json:"dataset"`
	Analyst string              `json:"analyst,omitempty"`
	Every   string              `json:"every"`
	Limit   accounting.EpsDelta `json:"limit"`
	Rule    accounting.Rule     `json:"rule"`
	Runs    []storedRun         `json:"runs"`
}

func nonZero(s string) string {
	if s == "0" {
		return ""
	}
	return s
}

// MarshalJSON stores the record compactly (storedEpochs). Every run must
// share the first run's limit and rule.
func (rec *epochRecord) MarshalJSON() ([]byte, error) {
	out := storedEpochs{Dataset: rec.Dataset, Analyst: rec.Analyst, Every: rec.Every, Runs: make([]storedRun, len(rec.Runs))}
	for i, run := range rec.Runs {
		if i == 0 {
			out.Limit, out.Rule = run.Budget.Limit(), run.Budget.Rule()
		} else if run.Budget.Limit() != out.Limit || run.Budget.Rule() != out.Rule {
			return nil, fmt.Errorf("epoch budgets of %q (analyst %q) have different limits: %v and %v", rec.Dataset, rec.Analyst, out.Limit, run.Budget.Limit())
		}
		s := run.Budget.Sums()
		out.Runs[i] = storedRun{From: run.From, To: run.To, Releases: s.Releases,
			Epsilon: nonZero(s.Epsilon), Delta: nonZero(s.Delta), Rho: nonZero(s.Rho), RhoDelta: nonZero(s.RhoDelta)}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads a record stored by MarshalJSON, checking that its
// runs are in order and disjoint.
func (rec *epochRecord) UnmarshalJSON(data []byte) error {
	var in storedEpochs
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	*rec = epochRecord{Dataset: in.Dataset, Analyst: in.Analyst, Every: in.Every, Runs: make([]epochRun, len(in.Runs))}
	for i, r := range in.Runs {
		if r.From > r.To || (i > 0 && r.From <= in.Runs[i-1].To) {
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
