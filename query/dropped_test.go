package query

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/random"
)

// droppedTable writes a table of visits (person, day, group of a public
// join-free query) and its catalog (L0 = 2 days, L∞ = 1 visit per day):
// person p has p%5 + 1 visits on each of p%4 + 1 days; person 0 is left
// out when without0 is set. It returns the catalog's path.
func droppedTable(t *testing.T, dir string, without0 bool) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("pid,day,x\n")
	for p := 0; p < 200; p++ {
		if p == 0 && without0 {
			continue
		}
		visits, days := p%5+1, p%4+1
		if p == 0 {
			visits, days = 40, 7 // the heaviest person, far beyond the bounds
		}
		for d := 1; d <= days; d++ {
			for v := 0; v < visits; v++ {
				fmt.Fprintf(&b, "%d,%d,%d\n", p, d, v)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "visits.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cat := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(cat, []byte(`budget: {epsilon: 10}
tables:
  visits:
    source: visits.csv
    privacy_unit: pid
    max_groups_per_unit: 2
    max_rows_per_group: 1
    columns:
      pid: {type: int}
      day: {type: int, values: [1, 2, 3, 4, 5, 6, 7]}
      x:   {type: int, lower: 0, upper: 100}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return cat
}

// droppedTruth is what the statement computes on the table: per person,
// kept = min(Σ min(n, 1), 2), dropped = min(rows − kept, 6).
func droppedTruth(without0 bool) (kept, dropped int64) {
	for p := 0; p < 200; p++ {
		if p == 0 && without0 {
			continue
		}
		visits, days := int64(p%5+1), int64(p%4+1)
		if p == 0 {
			visits, days = 40, 7
		}
		k := min(days, 2)
		kept += k
		dropped += min(visits*days-k, 6)
	}
	return kept, dropped
}

// TestDroppedStatementAndNeighbours runs the dropped-rows statement on a
// table and on the table without its heaviest person: the statement's
// counts are the expected ones, and they move by at most the estimate's
// sensitivities (L0·L∞ kept, the cap dropped), on which its noise rests.
func TestDroppedStatementAndNeighbours(t *testing.T) {
	var got [2][2]int64
	for i, without0 := range []bool{false, true} {
		svc, rec, _ := newTestService(t, droppedTable(t, t.TempDir(), without0))
		p, err := svc.Prepare("SELECT day, COUNT(*) FROM visits WHERE x >= 0 GROUP BY day", Options{Epsilon: 1, Confidence: 0.95, Analyst: "a", Dropped: true})
		if err != nil {
			t.Fatal(err)
		}
		if p.Dropped == nil || p.Dropped.KeptMax != 2 || p.Dropped.Cap != 6 {
			t.Fatalf("dropped plan %+v", p.Dropped)
		}
		rows, err := rec.Query(context.Background(), p.DroppedSQL)
		if err != nil {
			t.Fatalf("%v\n%s", err, p.DroppedSQL)
		}
		for j := range 2 {
			b, err := ir.ToBig(rows.Rows[0][j])
			if err != nil {
				t.Fatal(err)
			}
			got[i][j] = b.Int64()
		}
		if k, d := droppedTruth(without0); got[i] != [2]int64{k, d} {
			t.Errorf("without person 0 %v: kept, dropped = %v, want %d, %d", without0, got[i], k, d)
		}
	}
	if dk, dd := got[0][0]-got[1][0], got[0][1]-got[1][1]; dk < 0 || dk > 2 || dd < 0 || dd > 6 {
		t.Errorf("one person moved kept by %d (at most 2) and dropped by %d (at most 6)", dk, dd)
	}
}

// TestDroppedCostAndRelease checks that the estimate takes its share of
// the query's ε (the charge stays the ε asked), that at ε = 1e20 the
// share is exact, and that a table without a privacy unit gets a free note.
func TestDroppedCostAndRelease(t *testing.T) {
	svc, _, led := newTestService(t, droppedTable(t, t.TempDir(), false))
	opts := exactOpts()
	opts.Dropped = true
	p, err := svc.Prepare("SELECT day, COUNT(*) FROM visits GROUP BY day", opts)
	if err != nil {
		t.Fatal(err)
	}
	if p.Noise.Cost.Epsilon > opts.Epsilon*(1+1e-15) || p.Plan.Epsilon > opts.Epsilon*(1-0.09) {
		t.Errorf("cost %v and the aggregates' ε %v, want the asked %v in all and 90%% for the aggregates", p.Noise.Cost, p.Plan.Epsilon, opts.Epsilon)
	}
	res, err := svc.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	k, d := droppedTruth(false)
	want := float64(d) / float64(k+d)
	if res.Dropped == nil || res.Dropped.Kept != k || res.Dropped.Dropped != d || res.Dropped.Share != want {
		t.Fatalf("estimate %+v, want kept %d dropped %d share %v", res.Dropped, k, d, want)
	}
	notes := strings.Join(res.Notes, "\n")
	if !strings.Contains(notes, "contribution bounding dropped at least about") {
		t.Errorf("notes lack the estimate:\n%s", notes)
	}
	if last := res.Split[len(res.Split)-1]; last.Column != "(rows dropped by bounding)" {
		t.Errorf("split %+v lacks the estimate's share", res.Split)
	}
	if led.count() != 1 {
		t.Errorf("%d charges, want 1", led.count())
	}
	// Refused before the charge: with an accuracy.
	acc := Options{Confidence: 0.95, Analyst: "a", Dropped: true, Accuracy: &Accuracy{All: 10}}
	if _, err := svc.Prepare("SELECT COUNT(*) FROM visits", acc); err == nil || !strings.Contains(err.Error(), "ask the estimate with an ε") {
		t.Errorf("accuracy with the estimate: %v", err)
	}
	// Refused before the charge: an ε too small for its noise.
	tiny := Options{Epsilon: 1e-15, Confidence: 0.95, Analyst: "a", Dropped: true}
	if _, err := svc.Prepare("SELECT COUNT(*) FROM visits", tiny); err == nil || !strings.Contains(err.Error(), "the dropped-rows estimate at ε=1e-16 (10% of the query's) cannot be planned") {
		t.Errorf("a tiny ε: %v", err)
	}
	// No privacy unit: free, with a note.
	svc2, _, _ := newTestService(t, "testdata/catalog.yaml")
	opts2 := exactOpts()
	opts2.Dropped = true
	p2, err := svc2.Prepare("SELECT COUNT(*) FROM people", opts2)
	if err != nil {
		t.Fatal(err)
	}
	if p2.Dropped != nil || p2.Noise.Cost.Epsilon != opts2.Epsilon {
		t.Fatalf("no unit: dropped %+v, cost %v", p2.Dropped, p2.Noise.Cost)
	}
	res2, err := svc2.Run(context.Background(), p2)
	if err != nil {
		t.Fatal(err)
	}
	if res2.Dropped != nil || !strings.Contains(strings.Join(res2.Notes, "\n"), NoBoundingNote) {
		t.Errorf("no unit: %+v %v", res2.Dropped, res2.Notes)
	}
}

// TestDroppedIntervalCovers re-noises the estimate 2,000 times at ε = 0.05
// (noise scales 80 and 240 against counts of about 340 and 900) and checks
// that the 95% interval of the share covers the true share at least 95% of
// the time. Each count's interval holds with 97.5%, so the share's holds
// with at least 95%: misses are at most Binomial(2000, 0.05) (mean 100, sd
// 9.7); the test fails above 100 + 5.3 sd = 152, with probability below
// 1e-6. The seed is fixed.
func TestDroppedIntervalCovers(t *testing.T) {
	svc, _, _ := newTestService(t, droppedTable(t, t.TempDir(), false))
	p, err := svc.Prepare("SELECT COUNT(*) FROM visits", Options{Epsilon: 0.5, Confidence: 0.95, Analyst: "a", Dropped: true, Source: random.NewInsecureSeeded(20261127)})
	if err != nil {
		t.Fatal(err)
	}
	k, d := droppedTruth(false)
	truth := float64(d) / float64(k+d)
	misses := 0
	for range 2000 {
		e := p.Dropped.Release(big.NewInt(k), big.NewInt(d), 0.95)
		if e.Low > truth || e.High < truth || e.Share < e.Low || e.Share > e.High {
			misses++
		}
	}
	if misses > 152 {
		t.Fatalf("%d misses of 2000, want at most 152", misses)
	}
}
