package query

import (
	"context"
	"math"
	"math/big"
	"testing"

	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/random"
)

// TestKeySelectionExact checks key selection at ε = 1e20: keys with at
// least two people are released with their exact counts, keys with one
// person never (τ = 2 and the noise is far below one).
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
			want, _ := toBig(truth.Rows[i][2])
			if r[0] != truth.Rows[i][0] || r[1] != truth.Rows[i][1] || r[2].(int64) != want.Int64() {
				t.Errorf("row %d = %v, want %v", i, r, truth.Rows[i])
			}
		}
	})
}

// TestKeySelectionBudget checks the split: the selection spends half of ε
// and all of δ, the aggregates the other half, and the charge is ε and δ
// exactly (the threshold must not silently spend the whole ε again).
func TestKeySelectionBudget(t *testing.T) {
	svc, _, led := newTestService(t, "../examples/catalog.yaml")
	opts := Options{Epsilon: 1, Delta: 1e-6, Confidence: 0.95, Analyst: "a"}
	res, err := svc.Answer(context.Background(), "SELECT education, COUNT(*), AVG(age) FROM adult GROUP BY education", opts)
	if err != nil {
		t.Fatal(err)
	}
	if c := led.charges[0].Cost; c.Epsilon != 1 || c.Delta != 1e-6 {
		t.Fatalf("charged %v, want ε=1 δ=1e-6", c)
	}
	var aggEps float64
	for _, s := range res.Split {
		if s.Column == "(key selection)" {
			if s.Epsilon != 0.5 || s.Delta != 1e-6 {
				t.Errorf("selection share ε=%v δ=%v, want 0.5 and 1e-6", s.Epsilon, s.Delta)
			}
			continue
		}
		aggEps += s.Epsilon
	}
	if aggEps > 0.5 {
		t.Errorf("aggregates spend ε=%v, want at most 0.5", aggEps)
	}
	p, err := svc.Prepare("SELECT education, COUNT(*) FROM adult GROUP BY education", opts)
	if err != nil {
		t.Fatal(err)
	}
	if p.Noise.sel.m.Scale() < 1/0.5 {
		t.Errorf("selection noise scale %v is below Δ/ε_s = 2", p.Noise.sel.m.Scale())
	}
}

// TestKeySelectionProbability runs the selection many times on one engine
// result and compares how often a key is released with the exact
// probability the threshold promises. With ε = 1, δ = 0.3 (large, so that
// the rare event is measurable) and L0 = 1: ε_s = 0.5, scale 2, τ = 3, and a
// one-person key is released with probability a²/(1+a) ≈ 0.229 ≤ δ. Over
// 20000 runs each frequency is within 5 standard deviations (≤ 0.015) of
// its probability except with probability below 1e-6 per key; the test's
// false-failure probability is below 3e-6. A threshold calibrated to the
// whole ε instead of ε_s would release the one-person key far more often.
func TestKeySelectionProbability(t *testing.T) {
	cat := loadCatalog(t, "../examples/catalog.yaml")
	tests := []struct {
		name, sql string
		delta     float64
		l0        int64
	}{
		{"row per person", "SELECT education, COUNT(*) FROM adult GROUP BY education", 0.3, 1},
		{"privacy unit with L0 = 3", "SELECT minutes_spent, COUNT(*) FROM visits GROUP BY minutes_spent", 0.3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Epsilon: 1, Delta: tt.delta, Confidence: 0.95, Analyst: "a", Source: random.NewInsecureSeeded(11)}
			p, err := Prepare(cat, duckdb.Dialect, tt.sql, opts)
			if err != nil {
				t.Fatal(err)
			}
			ks := p.Plan.Selection
			if ks == nil || ks.Sensitivity != tt.l0 {
				t.Fatalf("selection %+v, want sensitivity %d", ks, tt.l0)
			}
			sel := p.Noise.sel
			if sel.single > tt.delta/float64(tt.l0) {
				t.Fatalf("one-person release probability %v exceeds δ/L0 = %v", sel.single, tt.delta/float64(tt.l0))
			}
			if got := sel.ReleaseProbability(1); math.Abs(got-sel.single) > 1e-12 {
				t.Fatalf("ReleaseProbability(1) = %v, single = %v", got, sel.single)
			}
			// One engine result, reused: keys with 1, 2, 5 and 5000 people.
			people := []int64{1, 2, 5, 5000}
			ex := &Exact{}
			for i, n := range people {
				ex.Keys = append(ex.Keys, []any{int64(i)})
				st := make([]*big.Int, len(p.Plan.Statistics))
				for j := range st {
					st[j] = new(big.Int)
				}
				st[ks.Stat].SetInt64(n)
				ex.Stats = append(ex.Stats, st)
			}
			const runs = 20000
			released := make([]int, len(people))
			for range runs {
				out := p.Noise.selectKeys(ex)
				for _, k := range out.Keys {
					released[k[0].(int64)]++
				}
			}
			for i, n := range people {
				want := sel.ReleaseProbability(n)
				got := float64(released[i]) / runs
				tol := 5*math.Sqrt(want*(1-want)/runs) + 1e-9
				if math.Abs(got-want) > tol {
					t.Errorf("key with %d people released in %.4f of runs, want %.4f ± %.4f (τ = %d)", n, got, want, tol, sel.threshold)
				}
			}
			if released[len(people)-1] != runs {
				t.Errorf("key with 5000 people released %d of %d times", released[len(people)-1], runs)
			}
		})
	}
}

// TestSelectionThreshold checks the threshold formula against direct
// evaluation of the discrete-Laplace tail: τ is the smallest integer with
// L0·P(Z ≥ τ − 1) ≤ δ.
func TestSelectionThreshold(t *testing.T) {
	tests := []struct {
		name  string
		b     float64
		l0    int64
		delta float64
	}{
		{"scale 2", 2, 1, 1e-6},
		{"scale 6, L0 3", 6, 3, 1e-6},
		{"large delta", 2, 1, 0.3},
		{"tiny scale", 1e-3, 1, 1e-9},
		{"huge delta", 1, 1, 0.9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tau, single := selectionThreshold(tt.b, tt.l0, tt.delta)
			a := math.Exp(-1 / tt.b)
			tail := func(k int64) float64 { // P(Z ≥ k), by summing the pmf
				s := 0.0
				for j := k; j < k+100000; j++ {
					aj := math.Pow(a, math.Abs(float64(j)))
					s += (1 - a) / (1 + a) * aj
					if aj < 1e-300 {
						break
					}
				}
				return s
			}
			if got := float64(tt.l0) * tail(tau-1); got > tt.delta*(1+1e-9) {
				t.Errorf("τ = %d: L0·P(Z ≥ τ−1) = %v > δ", tau, got)
			}
			if tau > 1 && float64(tt.l0)*tail(tau-2) <= tt.delta*(1-1e-9) {
				t.Errorf("τ = %d is not the smallest: τ−1 also meets δ", tau)
			}
			if math.Abs(single-tail(tau-1)) > 1e-9*math.Max(single, 1e-300)+1e-300 {
				t.Errorf("single = %v, tail = %v", single, tail(tau-1))
			}
		})
	}
}
