package query

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestTiedExtremesExact: MIN and MAX of values that many rows share are
// those values at ε = 1e20. Counting tied values as halves of a rank
// released a value below the minimum (above the maximum): the empty
// candidates beyond the extreme scored better than the tied one.
func TestTiedExtremesExact(t *testing.T) {
	const cat = `budget: {epsilon: 1e30, delta: 1e-6}
tables:
  t:
    source: data.csv
    columns:
      g: {type: text, values: [a, b]}
      v: {type: int, lower: 0, upper: 100}
`
	var b strings.Builder
	b.WriteString("g,v\n")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&b, "a,30\nb,%d\n", 40+i%2*20) // b: 500 rows at 40, 500 at 60
	}
	svc, _, _ := newTestService(t, writeTable(t, cat, b.String()))
	res, err := svc.Answer(context.Background(), "SELECT g, MIN(v), MAX(v) FROM t GROUP BY g", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]float64{"a": {30, 30}, "b": {40, 60}}
	for _, row := range res.Rows {
		w := want[fmt.Sprint(row[0])]
		if fmt.Sprint(row[1]) != fmt.Sprint(w[0]) || fmt.Sprint(row[2]) != fmt.Sprint(w[1]) {
			t.Errorf("group %v: MIN %v MAX %v, want %v and %v", row[0], row[1], row[2], w[0], w[1])
		}
	}
}
