package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestQueryCLIDropped asks dpstat query for the dropped-rows estimate: at
// ε = 1e20 the JSON carries the exact counts (the example visits: 2693 rows
// kept, 157 dropped, each visitor's counted up to 9), the table prints its
// note and its share of the split, and a table without a privacy unit gets
// the free note and is charged only the ε asked.
func TestQueryCLIDropped(t *testing.T) {
	led := filepath.Join(t.TempDir(), "l.db")
	for _, args := range [][]string{
		{"budget", "grant", "--ledger", led, "--table", "visits", "--total", "--epsilon", "1e21"},
		{"budget", "grant", "--ledger", led, "--table", "visits", "--analyst", "ana", "--epsilon", "1e21"},
	} {
		if out, errOut, code := runQueryCLI(args...); code != 0 {
			t.Fatalf("%v: %s %s", args, out, errOut)
		}
	}
	q := []string{"query", "--catalog", exampleCatalog, "--ledger", led, "--analyst", "ana", "--dropped"}
	out, errOut, code := runQueryCLI(append(q, "--epsilon", "1e20", "--format", "json", "SELECT day, COUNT(*) FROM visits GROUP BY day")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Dropped struct {
			Share         float64
			Kept, Dropped int64
			Cap           int64 `json:"cap_per_person"`
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if d := r.Dropped; d.Kept != 2693 || d.Dropped != 157 || d.Cap != 9 || d.Share != 157.0/2850 {
		t.Fatalf("JSON dropped = %+v\n%s", d, out)
	}
	out, errOut, code = runQueryCLI(append(q, "--epsilon", "2", "SELECT day, COUNT(*) FROM visits GROUP BY day")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"ε split: count ε=1.8, (rows dropped by bounding) ε=0.2", "note: contribution bounding dropped at least about ", "cost ε=2 δ=0"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	out, errOut, code = runQueryCLI(append(q, "--epsilon", "0.5", "SELECT COUNT(*) FROM adult")...)
	if code != 0 || !strings.Contains(out, "note: contribution bounding dropped no row: the table has no privacy unit") || !strings.Contains(out, "cost ε=0.5 δ=0") {
		t.Errorf("no privacy unit: exit %d\n%s%s", code, out, errOut)
	}
}
