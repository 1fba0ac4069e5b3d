package accounting

import (
	"encoding/json"
	"testing"
)

// TestClone: a clone carries what the stored form carries (its JSON is
// the original's, for each rule), and spending on it leaves the original
// as it was.
func TestClone(t *testing.T) {
	for _, c := range []struct {
		rule  Rule
		limit EpsDelta
		cost  Cost
	}{
		{Basic, EpsDelta{Epsilon: 3, Delta: 1e-5}, Pure(0.1)},
		{ZCDP, EpsDelta{Epsilon: 3, Delta: 1e-5}, Pure(0.3)},
	} {
		b, err := NewBudget(c.limit, c.rule)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if err := b.Spend(c.cost); err != nil {
				t.Fatal(err)
			}
		}
		cl := b.Clone()
		want, _ := json.Marshal(b)
		got, _ := json.Marshal(cl)
		if string(got) != string(want) || !cl.SameSums(b) || cl.Spent() != b.Spent() {
			t.Fatalf("%s: clone %s; want %s", c.rule, got, want)
		}
		if err := cl.Spend(c.cost); err != nil {
			t.Fatal(err)
		}
		if after, _ := json.Marshal(b); string(after) != string(want) || cl.SameSums(b) {
			t.Errorf("%s: spending on the clone changed the original: %s, was %s", c.rule, after, want)
		}
	}
}
