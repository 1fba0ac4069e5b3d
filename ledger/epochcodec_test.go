package ledger

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/dpstat/dpstat/accounting"
)

// TestEpochCodecBytes checks that the hand-written encoding of an epoch
// record is the bytes json.Marshal writes for its stored form, and that it
// decodes to the same runs and exact sums.
func TestEpochCodecBytes(t *testing.T) {
	nonZero := func(s string) string {
		if s == "0" {
			return ""
		}
		return s
	}
	costs := []accounting.Cost{
		accounting.Pure(0x1p-10),
		{Epsilon: 0.1, Delta: 1e-9},
		{Rho: 0.003, RhoDelta: 1e-12},
		accounting.Pure(1e20),
	}
	for _, rule := range []accounting.Rule{accounting.Basic, accounting.ZCDP} {
		limit := accounting.EpsDelta{Epsilon: 1e300, Delta: 1e-5}
		rec := &epochRecord{Dataset: "people \"q\" <x>", Analyst: "ana", Every: "day"}
		for i := range 6 {
			b, err := accounting.NewBudget(limit, rule)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range costs[:i%5] {
				if rule == accounting.Basic && c.Epsilon == 0 {
					continue
				}
				if err := b.Record(c); err != nil {
					t.Fatal(err)
				}
			}
			rec.Runs = append(rec.Runs, epochRun{From: int64(10 * i), To: int64(10*i + i), Budget: b})
		}
		want := storedEpochs{Dataset: rec.Dataset, Analyst: rec.Analyst, Every: rec.Every, Limit: limit, Rule: rule}
		for _, run := range rec.Runs {
			s := run.Budget.Sums()
			want.Runs = append(want.Runs, storedRun{From: run.From, To: run.To, Releases: s.Releases,
				Epsilon: nonZero(s.Epsilon), Delta: nonZero(s.Delta), Rho: nonZero(s.Rho), RhoDelta: nonZero(s.RhoDelta)})
		}
		wantBytes, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := rec.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, wantBytes) {
			t.Fatalf("rule %s: encoded\n%s\nwant\n%s", rule, got, wantBytes)
		}
		var back epochRecord
		if err := back.UnmarshalJSON(got); err != nil {
			t.Fatalf("rule %s: decode: %v", rule, err)
		}
		for i, run := range back.Runs {
			if run.From != rec.Runs[i].From || run.To != rec.Runs[i].To || !run.Budget.SameSums(rec.Runs[i].Budget) {
				t.Errorf("rule %s run %d: decoded %d..%d %v, want %d..%d %v", rule, i, run.From, run.To, run.Budget.Sums(), rec.Runs[i].From, rec.Runs[i].To, rec.Runs[i].Budget.Sums())
			}
		}
	}
}
