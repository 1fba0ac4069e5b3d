package query

import (
	"context"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/random"
)

// TestKeySelectionExact checks key selection at ε = 1e20: keys with at
// least two people are released with their exact counts (and averages),
// keys with one person never (τ = 2 and the noise is far below one).
func TestKeySelectionExact(t *testing.T) {
	ctx := context.Background()
	opts := exactOpts()
	opts.Delta = 1e-6
	t.Run("one person per key", func(t *testing.T) {
		svc, _, _ := newTestService(t, "testdata/catalog.yaml")
		res, err := svc.Answer(ctx, "SELECT id, COUNT(*) FROM people GROUP BY id", opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != 0 {
			t.Fatalf("keys of one person released: %v", res.Rows)
		}
	})
	t.Run("average's count selects", func(t *testing.T) {
		svc, eng, _ := newTestService(t, "../examples/catalog.yaml")
		res, err := svc.Answer(ctx, "SELECT education, AVG(age) FROM adult GROUP BY education", opts)
		if err != nil {
			t.Fatal(err)
		}
		truth, err := eng.Engine.Query(ctx, "SELECT education, avg(age) FROM adult GROUP BY education HAVING count(*) >= 2 ORDER BY education")
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != len(truth.Rows) {
			t.Fatalf("%d keys released, want %d", len(res.Rows), len(truth.Rows))
		}
		for i, r := range res.Rows {
			want := truth.Rows[i][1].(float64)
			if r[0] != truth.Rows[i][0] || math.Abs(r[1].(float64)-want) > 1e-9*want {
				t.Errorf("row %d = %v, want %v", i, r, truth.Rows[i])
			}
		}
	})
	t.Run("many people per key", func(t *testing.T) {
		svc, eng, _ := newTestService(t, "../examples/catalog.yaml")
		res, err := svc.Answer(ctx, "SELECT sex, education, COUNT(*) FROM adult GROUP BY sex, education", opts)
		if err != nil {
			t.Fatal(err)
		}
		truth, err := eng.Engine.Query(ctx, "SELECT sex, education, count(*) FROM adult GROUP BY sex, education HAVING count(*) >= 2 ORDER BY sex, education")
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != len(truth.Rows) {
			t.Fatalf("%d keys released, want %d", len(res.Rows), len(truth.Rows))
		}
		for i, r := range res.Rows {
			want, _ := ir.ToBig(truth.Rows[i][2])
			if r[0] != truth.Rows[i][0] || r[1] != truth.Rows[i][1] || r[2].(int64) != want.Int64() {
				t.Errorf("row %d = %v, want %v", i, r, truth.Rows[i])
			}
		}
	})
}

// TestKeySelectionBudget checks the two ways of selecting keys. With a
// count in the query (COUNT, COUNT DISTINCT of the unit, AVG's count), the
// least noisy count selects: no ε is set aside (the
// selection's share is δ alone), the aggregates spend all of ε, and the
// count's noise is calibrated to its share. Otherwise the selection spends
// half of ε and all of δ, the aggregates the other half. Either way the
// charge is ε and δ exactly (the threshold must not silently spend the
// whole ε again).
func TestKeySelectionBudget(t *testing.T) {
	tests := []struct {
		name, sql    string
		byCount      bool
		selEps, aggs float64
		// scale is the selecting noise's least scale: Δ/ε.
		scale float64
	}{
		{"count first", "SELECT education, COUNT(*), AVG(age) FROM adult GROUP BY education", true, 0, 1, 1 / 0.5},
		{"count alone", "SELECT education, COUNT(*) FROM adult GROUP BY education", true, 0, 1, 1},
		{"distinct units first", "SELECT minutes_spent, COUNT(DISTINCT visitor_id) FROM visits GROUP BY minutes_spent", true, 0, 1, 3},
		{"average first, count second", "SELECT education, AVG(age), COUNT(*) FROM adult GROUP BY education", true, 0, 1, 1 / 0.5},
		{"average alone", "SELECT education, AVG(age) FROM adult GROUP BY education", true, 0, 1, 1 / 0.5},
		{"count of a column after a sum", "SELECT education, SUM(age), COUNT(age) FROM adult GROUP BY education", true, 0, 1, 1 / 0.5},
		{"sum alone", "SELECT education, SUM(age) FROM adult GROUP BY education", false, 0.5, 0.5, 1 / 0.5},
		{"median and sum", "SELECT education, MEDIAN(age), SUM(age) FROM adult GROUP BY education", false, 0.5, 0.5, 1 / 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, _, led := newTestService(t, "../examples/catalog.yaml")
			opts := Options{Epsilon: 1, Delta: 1e-6, Confidence: 0.95, Analyst: "a"}
			res, err := svc.Answer(context.Background(), tt.sql, opts)
			if err != nil {
				t.Fatal(err)
			}
			if c := led.charges[0].Cost; c.Epsilon != 1 || c.Delta != 1e-6 {
				t.Fatalf("charged %v, want ε=1 δ=1e-6", c)
			}
			var aggEps float64
			for _, s := range res.Split {
				if s.Column == "(key selection)" {
					if s.Epsilon != tt.selEps || s.Delta != 1e-6 {
						t.Errorf("selection share ε=%v δ=%v, want %v and 1e-6", s.Epsilon, s.Delta, tt.selEps)
					}
					continue
				}
				aggEps += s.Epsilon
			}
			if aggEps > tt.aggs || aggEps < tt.aggs*(1-1e-6) {
				t.Errorf("aggregates spend ε=%v, want %v", aggEps, tt.aggs)
			}
			p, err := svc.Prepare(tt.sql, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Plan.Selection.Release >= 0; got != tt.byCount {
				t.Errorf("selection by the count = %v, want %v", got, tt.byCount)
			}
			if p.Noise.Sel.M.Scale() < tt.scale*(1-1e-9) {
				t.Errorf("selection noise scale %v is below Δ/ε = %v", p.Noise.Sel.M.Scale(), tt.scale)
			}
			ex := p.Explain()
			if want := map[bool]string{true: "by the query's own count", false: "separate noisy count"}[tt.byCount]; !strings.Contains(ex.Keys, want) {
				t.Errorf("EXPLAIN keys %q, want it to say %q", ex.Keys, want)
			}
		})
	}
}

// TestKeySelectionProbability runs the selection many times on one engine
// result and compares how often a key is released with the exact
// probability the threshold promises, and checks that a key only one
// person has is released with probability at most δ/L0 (at most δ for the
// L0 keys together). δ = 0.3 is large so that the rare event is
// measurable. Over 20000 runs each frequency is within 5 standard
// deviations of its probability except with probability below 1e-6 per
// key, and the one-person key's frequency is below δ/L0 plus 5 standard
// deviations; the test's false-failure probability is below 1e-5. A
// threshold calibrated to the whole ε instead of the selecting noise's, or
// one that forgets L∞ or L0, releases the one-person key more often than
// δ/L0.
func TestKeySelectionProbability(t *testing.T) {
	cat := loadCatalog(t, "../examples/catalog.yaml")
	tests := []struct {
		name, sql string
		delta     float64
		l0        int64
		byCount   bool
	}{
		{"count, row per person", "SELECT education, COUNT(*) FROM adult GROUP BY education", 0.3, 1, true},
		{"count, privacy unit with L0 = 3", "SELECT minutes_spent, COUNT(*) FROM visits GROUP BY minutes_spent", 0.3, 3, true},
		{"distinct units, L0 = 3", "SELECT minutes_spent, COUNT(DISTINCT visitor_id) FROM visits GROUP BY minutes_spent", 0.3, 3, true},
		{"separate count, row per person", "SELECT education, SUM(age) FROM adult GROUP BY education", 0.3, 1, false},
		{"separate count, L0 = 3", "SELECT minutes_spent, SUM(minutes_spent) FROM visits GROUP BY minutes_spent", 0.3, 3, false},
		{"average's count, L0 = 3", "SELECT minutes_spent, AVG(minutes_spent) FROM visits GROUP BY minutes_spent", 0.3, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Epsilon: 1, Delta: tt.delta, Confidence: 0.95, Analyst: "a", Source: random.NewInsecureSeeded(11)}
			p, err := Prepare(cat, duckdb.Dialect, tt.sql, opts)
			if err != nil {
				t.Fatal(err)
			}
			ks := p.Plan.Selection
			if ks == nil || ks.Sensitivity != tt.l0 || (ks.Release >= 0) != tt.byCount {
				t.Fatalf("selection %+v, want sensitivity %d, by the count %v", ks, tt.l0, tt.byCount)
			}
			sel := p.Noise.Sel
			if sel.Single > tt.delta/float64(tt.l0) {
				t.Fatalf("one-person release probability %v exceeds δ/L0 = %v", sel.Single, tt.delta/float64(tt.l0))
			}
			if got := sel.ReleaseProbability(ks.MaxCount); math.Abs(got-sel.Single) > 1e-12 {
				t.Fatalf("ReleaseProbability(%d) = %v, single = %v", ks.MaxCount, got, sel.Single)
			}
			// One engine result, reused: keys whose selecting count is the
			// most one person gives, then 2, 5 and 5000.
			counts := []int64{ks.MaxCount, 2, 5, 5000}
			ex := &dpplan.Exact{}
			for i, n := range counts {
				ex.Keys = append(ex.Keys, []any{int64(i)})
				st := make([]*big.Int, len(p.Plan.Statistics))
				for j := range st {
					st[j] = new(big.Int)
				}
				st[ks.Stat].SetInt64(n)
				ex.Stats = append(ex.Stats, st)
			}
			const runs = 20000
			released := make([]int, len(counts))
			for range runs {
				out := p.Noise.SelectKeys(ex)
				if tt.byCount && len(out.Selected) != len(out.Keys) {
					t.Fatalf("%d noisy counts kept for %d keys", len(out.Selected), len(out.Keys))
				}
				for i, k := range out.Keys {
					released[k[0].(int64)]++
					if tt.byCount && out.Selected[i] < sel.Threshold {
						t.Fatalf("key %v kept with noisy count %d below τ = %d", k, out.Selected[i], sel.Threshold)
					}
				}
			}
			for i, n := range counts {
				want := sel.ReleaseProbability(n)
				got := float64(released[i]) / runs
				tol := 5*math.Sqrt(want*(1-want)/runs) + 1e-9
				if math.Abs(got-want) > tol {
					t.Errorf("key with count %d released in %.4f of runs, want %.4f ± %.4f (τ = %d)", n, got, want, tol, sel.Threshold)
				}
			}
			bound := tt.delta / float64(tt.l0)
			if got := float64(released[0]) / runs; got > bound+5*math.Sqrt(bound*(1-bound)/runs) {
				t.Errorf("a one-person key was released in %.4f of runs, above δ/L0 = %.4f", got, bound)
			}
			if released[len(counts)-1] != runs {
				t.Errorf("key with count 5000 released %d of %d times", released[len(counts)-1], runs)
			}
		})
	}
}

// TestKeySelectionReleasesSelectingCount checks that in a selection by the
// query's count the released COUNT is the very noisy value that selected
// the key (never a second draw, which would spend the count's ε twice), and
// so never below τ.
func TestKeySelectionReleasesSelectingCount(t *testing.T) {
	cat := loadCatalog(t, "../examples/catalog.yaml")
	opts := Options{Epsilon: 1, Delta: 1e-6, Confidence: 0.95, Analyst: "a", Source: random.NewInsecureSeeded(5)}
	p, err := Prepare(cat, duckdb.Dialect, "SELECT education, COUNT(*) FROM adult GROUP BY education", opts)
	if err != nil {
		t.Fatal(err)
	}
	ks := p.Plan.Selection
	ex := &dpplan.Exact{}
	for i, n := range []int64{3, 14, 15, 16, 20, 40} {
		ex.Keys = append(ex.Keys, []any{int64(i)})
		st := make([]*big.Int, len(p.Plan.Statistics))
		for j := range st {
			st[j] = new(big.Int)
		}
		st[ks.Stat].SetInt64(n)
		ex.Stats = append(ex.Stats, st)
	}
	for range 200 {
		out := p.Noise.SelectKeys(ex)
		values, _, err := p.Noise.Apply(out, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		for g, row := range values {
			if row[0].(int64) != out.Selected[g] {
				t.Fatalf("key %v: released count %v, selected by %d", out.Keys[g], row[0], out.Selected[g])
			}
			if row[0].(int64) < p.Noise.Sel.Threshold {
				t.Fatalf("key %v released with count %v below τ = %d", out.Keys[g], row[0], p.Noise.Sel.Threshold)
			}
		}
	}
}
