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
		want := storedEpochs{storedHead: storedHead{Dataset: rec.Dataset, Analyst: rec.Analyst, Every: rec.Every, Limit: limit, Rule: rule}}
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

// TestEpochCodecParseRuns checks the hand reader of stored runs against
// encoding/json: the same runs from the canonical form, and the other
// valid forms (spaces, members reordered or repeated, escapes) left to
// encoding/json with the same result.
func TestEpochCodecParseRuns(t *testing.T) {
	head := `{"dataset":"d","every":"day","limit":{"epsilon":1,"delta":0},"rule":"basic","runs":`
	tests := []struct {
		name, runs string
		fast       bool // read by hand
	}{
		{"empty", `[]`, true},
		{"canonical", `[{"f":1,"t":2,"n":3,"e":"3/8","rd":"1"},{"f":4,"t":4,"n":0}]`, true},
		{"negative", `[{"f":-5,"t":-1,"n":1,"e":"1/1024"}]`, true},
		{"spaces", `[ {"f":1, "t":2,"n":3,"e":"3/8"} ]`, false},
		{"reordered", `[{"t":2,"f":1,"n":3,"e":"3/8"}]`, false},
		{"repeated", `[{"f":1,"t":2,"n":3,"e":"1/8","e":"3/8"}]`, false},
		{"escaped", `[{"f":1,"t":2,"n":3,"e":"3\u002f8"}]`, false},
		{"null", `null`, false},
		{"unknown member", `[{"f":1,"t":2,"n":3,"x":7,"e":"3/8"}]`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var want storedEpochs
			if err := json.Unmarshal([]byte(head+tc.runs+"}"), &want); err != nil {
				t.Fatal(err)
			}
			got, ok := parseRuns([]byte(tc.runs))
			if ok != tc.fast {
				t.Fatalf("parseRuns(%s): ok = %v, want %v", tc.runs, ok, tc.fast)
			}
			if ok && (len(got) != len(want.Runs) || (len(got) > 0 && !equalRuns(got, want.Runs))) {
				t.Fatalf("parseRuns(%s) = %+v, want %+v", tc.runs, got, want.Runs)
			}
			var rec epochRecord
			if err := rec.UnmarshalJSON([]byte(head + tc.runs + "}")); err != nil {
				t.Fatal(err)
			}
			if len(rec.Runs) != len(want.Runs) {
				t.Fatalf("decoded %d runs, want %d", len(rec.Runs), len(want.Runs))
			}
			for i, r := range want.Runs {
				s := rec.Runs[i].Budget.Sums()
				if rec.Runs[i].From != r.From || rec.Runs[i].To != r.To || s.Releases != r.Releases || (r.Epsilon != "" && s.Epsilon != r.Epsilon) {
					t.Errorf("run %d: decoded %d..%d %v, want %+v", i, rec.Runs[i].From, rec.Runs[i].To, s, r)
				}
			}
		})
	}
}

func equalRuns(a, b []storedRun) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestEpochCodecHead checks records whose head could be mistaken for the
// start of the runs: each decodes as encoding/json reads it.
func TestEpochCodecHead(t *testing.T) {
	for _, doc := range []string{
		`{"dataset":"a,\"runs\":[","every":"day","limit":{"epsilon":1,"delta":0},"rule":"basic","runs":[{"f":1,"t":1,"n":1,"e":"1/2"}]}`,
		`{"runs":[{"f":7,"t":9,"n":2}],"dataset":"d","every":"day","limit":{"epsilon":1,"delta":0},"rule":"basic","runs":[{"f":1,"t":1,"n":1,"e":"1/2"}]}`,
		`{"dataset":"d","every":"day","limit":{"epsilon":1,"delta":0},"rule":"basic","runs":[{"f":1,"t":1,"n":1,"e":"1/2"}],"runs":[{"f":3,"t":4,"n":5}]}`,
		`{"dataset":"d","runs":[{"f":3,"t":4,"n":5}],"every":"day","limit":{"epsilon":1,"delta":0},"rule":"basic"}`,
	} {
		var want storedEpochs
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatal(err)
		}
		var rec epochRecord
		if err := rec.UnmarshalJSON([]byte(doc)); err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if rec.Dataset != want.Dataset || len(rec.Runs) != len(want.Runs) {
			t.Fatalf("%s: decoded %q with %d runs, want %q with %d", doc, rec.Dataset, len(rec.Runs), want.Dataset, len(want.Runs))
		}
		for i, r := range want.Runs {
			if got := rec.Runs[i]; got.From != r.From || got.To != r.To || got.Budget.Releases() != r.Releases {
				t.Errorf("%s: run %d is %d..%d n=%d, want %+v", doc, i, got.From, got.To, got.Budget.Releases(), r)
			}
		}
	}
}

// TestEpochCodecRefusesWhatJSONRefuses: a number with a leading zero is
// not JSON; the hand reader leaves it to encoding/json, which refuses the
// record as verify does.
func TestEpochCodecRefusesWhatJSONRefuses(t *testing.T) {
	runs := `[{"f":007,"t":8,"n":1,"e":"1/8"}]`
	if _, ok := parseRuns([]byte(runs)); ok {
		t.Errorf("parseRuns read %s", runs)
	}
	var rec epochRecord
	if err := rec.UnmarshalJSON([]byte(`{"dataset":"d","every":"day","limit":{"epsilon":1,"delta":0},"rule":"basic","runs":` + runs + `}`)); err == nil {
		t.Errorf("a record with a leading zero was read")
	}
}
