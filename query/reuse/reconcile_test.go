package reuse

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpstat/dpstat/query/dpplan"
)

// The reconciliation tests' table: sex (2 values) and race (3 values),
// both complete, with these exact counts per (sex, race).
var (
	recLists    = map[string]int{"sex": 2, "race": 3}
	recComplete = map[string]int{"sex": 2, "race": 3}
	recTruth    = [2][3]float64{{120, 45, 300}, {80, 61, 7}}
)

// recRelease is one release of the tests: its grouping, its noise scale,
// and the keys it released.
type recRelease struct {
	id      uint64
	groupBy []string
	scale   float64
}

// keysOf lists the cells of a grouping in order.
func keysOf(groupBy []string) [][]int {
	keys := [][]int{{}}
	for _, c := range groupBy {
		var next [][]int
		for _, k := range keys {
			for v := 0; v < recLists[c]; v++ {
				next = append(next, append(append([]int(nil), k...), v))
			}
		}
		keys = next
	}
	return keys
}

// exactCell is the exact count of the rows whose columns hold key.
func exactCell(groupBy []string, key []int) float64 {
	sum := 0.0
	for s := 0; s < 2; s++ {
		for r := 0; r < 3; r++ {
			ok := true
			for i, c := range groupBy {
				if (c == "sex" && key[i] != s) || (c == "race" && key[i] != r) {
					ok = false
				}
			}
			if ok {
				sum += recTruth[s][r]
			}
		}
	}
	return sum
}

// discreteLaplace draws step·K, P(K = k) ∝ exp(−|k|/scale), as the
// difference of two geometric draws.
func discreteLaplace(rng *rand.Rand, scale float64) float64 {
	p := math.Exp(-1 / scale)
	geo := func() float64 { return math.Floor(math.Log(1-rng.Float64()) / math.Log(p)) }
	return geo() - geo()
}

// records releases rs, noisy (rng non-nil) or exact.
func records(rs []recRelease, rng *rand.Rand) []*Record {
	var out []*Record
	for _, r := range rs {
		keys := keysOf(r.groupBy)
		m := Measured{ID: "rows", Law: dpplan.NoiseLaw{Kind: dpplan.LawDiscreteLaplace, Step: 1, Scale: r.scale}}
		for _, k := range keys {
			v := exactCell(r.groupBy, k)
			if rng != nil {
				v += discreteLaplace(rng, r.scale)
			}
			m.Values = append(m.Values, v)
		}
		out = append(out, &Record{ReleaseID: r.id, GroupBy: r.groupBy, Keys: keys, Stats: []Measured{m}})
	}
	return out
}

// boxesOf returns the cells of a query grouped by groupBy, restricted
// by where.
func boxesOf(groupBy []string, where map[string][]int) []map[string][]int {
	var out []map[string][]int
	for _, k := range keysOf(groupBy) {
		b := map[string][]int{}
		for c, idx := range where {
			b[c] = idx
		}
		for i, c := range groupBy {
			b[c] = []int{k[i]}
		}
		out = append(out, b)
	}
	return out
}

// boxTruth is the exact count of a query cell.
func boxTruth(b map[string][]int) float64 {
	sum := 0.0
	for s := 0; s < 2; s++ {
		for r := 0; r < 3; r++ {
			if (b["sex"] == nil || contains(b["sex"], s)) && (b["race"] == nil || contains(b["race"], r)) {
				sum += recTruth[s][r]
			}
		}
	}
	return sum
}

var overlapping = []recRelease{
	{1, []string{"sex", "race"}, 20},
	{2, []string{"sex"}, 5},
	{3, nil, 2},
	{4, []string{"race"}, 8},
}

func TestReconcileExact(t *testing.T) {
	recs := records(overlapping, nil)
	for _, tc := range []struct {
		name    string
		groupBy []string
		where   map[string][]int
	}{
		{"total", nil, nil},
		{"by sex", []string{"sex"}, nil},
		{"by race", []string{"race"}, nil},
		{"cells", []string{"sex", "race"}, nil},
		{"subset", []string{"race"}, map[string][]int{"sex": {1}, "race": {0, 2}}},
		{"union", nil, map[string][]int{"race": {1, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			boxes := boxesOf(tc.groupBy, tc.where)
			est, from, ok := reconcile("rows", boxes, domain{lists: recLists, complete: recComplete}, recs)
			if !ok {
				t.Fatal("not reconciled")
			}
			if len(from) == 0 {
				t.Fatal("no release named")
			}
			for g, b := range boxes {
				if want := boxTruth(b); math.Abs(est[g].value-want) > 1e-9*math.Max(1, want) {
					t.Errorf("cell %v: %v, want %v", b, est[g].value, want)
				}
				if !(est[g].variance() > 0) {
					t.Errorf("cell %v: variance %v", b, est[g].variance())
				}
			}
		})
	}
}

// TestReconcileConsistent: after reconciliation the total is the sum of
// its parts (by sex, by race, and the finest cells), whatever the noise.
func TestReconcileConsistent(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	recs := records(overlapping, rng)
	total, _, ok := reconcile("rows", boxesOf(nil, nil), domain{lists: recLists, complete: recComplete}, recs)
	if !ok {
		t.Fatal("not reconciled")
	}
	for _, g := range [][]string{{"sex"}, {"race"}, {"sex", "race"}} {
		parts, _, ok := reconcile("rows", boxesOf(g, nil), domain{lists: recLists, complete: recComplete}, recs)
		if !ok {
			t.Fatalf("%v: not reconciled", g)
		}
		sum := 0.0
		for _, e := range parts {
			sum += e.value
		}
		if math.Abs(sum-total[0].value) > 1e-9*math.Abs(total[0].value) {
			t.Errorf("GROUP BY %v: parts sum to %v, the total is %v", g, sum, total[0].value)
		}
	}
	// Each release alone disagrees with the others.
	if recs[1].Stats[0].Values[0]+recs[1].Stats[0].Values[1] == recs[2].Stats[0].Values[0] {
		t.Fatal("the test's releases agree before reconciliation")
	}
}

// TestReconcileVariance: over 4000 noisy draws (seeded), the empirical
// variance of each reconciled estimate is within 20% of the propagated
// one. The sample variance's relative standard deviation is at most
// sqrt((2 + κ)/n) ≈ 0.035 for an excess kurtosis κ ≤ 3 (the Laplace's,
// the largest of any weighted sum of Laplace noises), so a 20% miss is
// over 5.6 standard deviations: a false failure with probability below
// 1e-7 by the normal approximation. The 95% intervals cover at ≥ 0.93
// (the coverage's standard deviation is below 0.0035 if it is 0.95),
// each interval is at least 1.96 propagated standard deviations wide, and
// the reconciled variance is never above that of the exact covers alone.
func TestReconcileVariance(t *testing.T) {
	const runs = 4000
	rng := rand.New(rand.NewPCG(1, 2))
	queries := [][]string{nil, {"sex"}, {"race"}, {"sex", "race"}}
	type acc struct{ sum, sq, cover, n float64 }
	stats := map[int][]acc{}
	props := map[int][]*estimate{}
	widths := map[[2]int]float64{}
	for run := 0; run < runs; run++ {
		recs := records(overlapping, rng)
		for qi, g := range queries {
			boxes := boxesOf(g, nil)
			est, _, ok := reconcile("rows", boxes, domain{lists: recLists, complete: recComplete}, recs)
			if !ok {
				t.Fatalf("%v: not reconciled", g)
			}
			if stats[qi] == nil {
				stats[qi] = make([]acc, len(boxes))
				props[qi] = est
				for c, e := range est {
					h := halfWidth(e.terms, 0.95)
					widths[[2]int{qi, c}] = h
					if h < 1.96*math.Sqrt(e.variance()) {
						t.Errorf("%v cell %d: half-width %v below 1.96 σ = %v", g, c, h, 1.96*math.Sqrt(e.variance()))
					}
					single, _ := deriveStat("rows", boxes[c], recComplete, recs)
					if single == nil || e.variance() > single.variance()*(1+1e-9) {
						t.Errorf("%v cell %d: reconciled variance %v above the covers' %v", g, c, e.variance(), single)
					}
				}
			}
			for c, e := range est {
				d := e.value - boxTruth(boxes[c])
				a := &stats[qi][c]
				a.sum, a.sq, a.n = a.sum+d, a.sq+d*d, a.n+1
				if math.Abs(d) <= widths[[2]int{qi, c}] {
					a.cover++
				}
			}
		}
	}
	for qi, g := range queries {
		for c, a := range stats[qi] {
			mean := a.sum / a.n
			emp := (a.sq - a.n*mean*mean) / (a.n - 1)
			prop := props[qi][c].variance()
			if math.Abs(emp/prop-1) > 0.2 {
				t.Errorf("%v cell %d: empirical variance %v, propagated %v", g, c, emp, prop)
			}
			if cov := a.cover / a.n; cov < 0.93 {
				t.Errorf("%v cell %d: coverage %v", g, c, cov)
			}
		}
	}
}

func TestReconcileRefuses(t *testing.T) {
	margins := records([]recRelease{{1, []string{"sex"}, 5}, {2, []string{"race"}, 5}}, nil)
	// A cell of the joint table is not estimable from two margins.
	if _, _, ok := reconcile("rows", boxesOf([]string{"sex", "race"}, nil), domain{lists: recLists, complete: recComplete}, margins); ok {
		t.Error("a joint cell reconciled from its margins")
	}
	// The total is, and exactly.
	est, from, ok := reconcile("rows", boxesOf(nil, nil), domain{lists: recLists, complete: recComplete}, margins)
	if !ok || math.Abs(est[0].value-boxTruth(map[string][]int{})) > 1e-9 || len(from) != 2 {
		t.Errorf("total from two margins: %v %v %v", est, from, ok)
	}
	// One release: nothing to reconcile.
	if _, _, ok := reconcile("rows", boxesOf(nil, nil), domain{lists: recLists, complete: recComplete}, margins[:1]); ok {
		t.Error("one release reconciled")
	}
	// A noise without variance (ε = 1e20) with one of some: derived from
	// the exact one alone, cell by cell.
	exact := records([]recRelease{{1, []string{"sex"}, 1e-20}, {2, nil, 5}}, nil)
	if _, _, ok := reconcile("rows", boxesOf(nil, nil), domain{lists: recLists, complete: recComplete}, exact); ok {
		t.Error("a measurement without variance reconciled with a noisy one")
	}
	// Two of them are reconciled, exactly.
	exact = records([]recRelease{{1, []string{"sex"}, 1e-20}, {2, []string{"race"}, 1e-20}, {3, nil, 5}}, nil)
	if est, from, ok := reconcile("rows", boxesOf(nil, nil), domain{lists: recLists, complete: recComplete}, exact); !ok || math.Abs(est[0].value-boxTruth(map[string][]int{})) > 1e-9 || est[0].variance() != 0 || len(from) != 2 {
		t.Errorf("two exact margins: %v %v %v", est, from, ok)
	}
	// A nullable column's cells do not cover its NULL rows.
	nullable := map[string]int{"sex": 2} // race nullable
	if _, _, ok := reconcile("rows", boxesOf(nil, nil), domain{lists: recLists, complete: nullable}, margins); !ok {
		t.Error("the total over sex (complete) not reconciled")
	}
	recs := records([]recRelease{{1, []string{"race"}, 5}, {2, []string{"race"}, 7}}, nil)
	if _, _, ok := reconcile("rows", boxesOf(nil, nil), domain{lists: recLists, complete: nullable}, recs); ok {
		t.Error("a total reconciled from a nullable column's groups")
	}
}

// TestReconcileBounded: however many releases there are, at most
// maxReconciled are considered, and a system over too many classes is
// not built.
func TestReconcileBounded(t *testing.T) {
	var rs []recRelease
	for i := 0; i < 40; i++ {
		rs = append(rs, recRelease{uint64(i + 1), []string{"sex"}, 5})
	}
	recs := records(rs, nil)
	est, from, ok := reconcile("rows", boxesOf(nil, nil), domain{lists: recLists, complete: recComplete}, recs)
	if !ok || len(from) != maxReconciled || math.Abs(est[0].value-boxTruth(map[string][]int{})) > 1e-9 {
		t.Errorf("40 releases: %d used, ok %v", len(from), ok)
	}
	big := map[string]int{"a": 300, "b": 300}
	r1 := &Record{ReleaseID: 1, GroupBy: []string{"a"}, Keys: [][]int{{0}}, Stats: []Measured{{ID: "rows", Law: recs[0].Stats[0].Law, Values: []float64{1}}}}
	r2 := &Record{ReleaseID: 2, GroupBy: []string{"b"}, Keys: [][]int{{0}}, Stats: []Measured{{ID: "rows", Law: recs[0].Stats[0].Law, Values: []float64{1}}}}
	if _, _, ok := reconcile("rows", []map[string][]int{{"a": {0}, "b": {0}}}, domain{lists: big, complete: big}, []*Record{r1, r2}); ok {
		t.Error("a 300 × 300 system reconciled")
	}
	// A query of 200 × 160 groups over a total and one slice: the atoms
	// stay under maxAtoms, but testing each of them against each group
	// would take about 10^9 steps: the system is not built.
	wide := map[string]int{"a": 200, "b": 160}
	total := &Record{ReleaseID: 1, Keys: [][]int{{}}, Stats: []Measured{{ID: "rows", Law: recs[0].Stats[0].Law, Values: []float64{1}}}}
	slice := &Record{ReleaseID: 2, Restrict: map[string][]int{"a": {0}}, Keys: [][]int{{}}, Stats: []Measured{{ID: "rows", Law: recs[0].Stats[0].Law, Values: []float64{1}}}}
	var boxes []map[string][]int
	for a := 0; a < wide["a"]; a++ {
		for b := 0; b < wide["b"]; b++ {
			boxes = append(boxes, map[string][]int{"a": {a}, "b": {b}})
		}
	}
	if _, _, ok := reconcile("rows", boxes, domain{lists: wide}, []*Record{total, slice}); ok {
		t.Error("a 32,000-group query reconciled from a total and a slice")
	}
}
