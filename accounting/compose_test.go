package accounting

import (
	"math"
	"math/big"
	"strings"
	"testing"
)

// near reports whether got is within tol of want and, for an upper bound,
// not below want − tol.
func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

func TestZCDPToEpsilonGolden(t *testing.T) {
	tests := []struct {
		name              string
		rho, delta        float64
		wantSimple, wantT float64
	}{
		{"rho 0.5", 0.5, 1e-5, 5.2985, 4.7284},
		{"rho 0.02", 0.02, 1e-5, 0.9797, 0.7943},
		{"rho 0", 0, 1e-5, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ZCDPToEpsilonSimple(tt.rho, tt.delta)
			if err != nil || !near(s, tt.wantSimple, 1e-4) {
				t.Errorf("ZCDPToEpsilonSimple(%v, %v) = %v, %v; want %v", tt.rho, tt.delta, s, err, tt.wantSimple)
			}
			e, err := ZCDPToEpsilon(tt.rho, tt.delta)
			if err != nil || !near(e, tt.wantT, 1e-4) {
				t.Errorf("ZCDPToEpsilon(%v, %v) = %v, %v; want %v", tt.rho, tt.delta, e, err, tt.wantT)
			}
		})
	}
}

// TestZCDPToEpsilonIsAnUpperBoundOfTheMinimum checks the numerical minimum
// against a dense brute-force scan over α: the returned ε must be at least
// the minimum of the bound and no worse than the best scanned value.
func TestZCDPToEpsilonIsAnUpperBoundOfTheMinimum(t *testing.T) {
	for _, rho := range []float64{1e-9, 1e-6, 1e-4, 0.01, 0.02, 0.1, 0.5, 1, 3, 10, 100, 1e4} {
		for _, delta := range []float64{1e-12, 1e-9, 1e-5, 1e-2, 0.3} {
			got, err := ZCDPToEpsilon(rho, delta)
			if err != nil {
				t.Fatal(err)
			}
			L := -math.Log(delta)
			best := math.Inf(1)
			for i := 0; i <= 50000; i++ {
				a := math.Exp(-18 + 46*float64(i)/50000)
				v, _ := ckBound(rho, L, a)
				best = math.Min(best, v)
			}
			best = math.Max(best, 0)
			// The scan's grid step in ln(α−1) is 9.2e-4, so its best value
			// is within a relative 1e-6 of the true minimum.
			if got < best*(1-1e-6) {
				t.Errorf("ZCDPToEpsilon(%v, %v) = %v, below the minimum of the bound (scan: %v)", rho, delta, got, best)
			}
			if got > best+1e-9*math.Max(1, best) {
				t.Errorf("ZCDPToEpsilon(%v, %v) = %v, not tight: a scan finds %v", rho, delta, got, best)
			}
			simple, _ := ZCDPToEpsilonSimple(rho, delta)
			if got > simple {
				t.Errorf("ZCDPToEpsilon(%v, %v) = %v exceeds the simple bound %v", rho, delta, got, simple)
			}
		}
	}
}

func TestConversionErrors(t *testing.T) {
	tests := []struct {
		name    string
		f       func() error
		wantErr string
	}{
		{"negative rho", func() error { _, err := ZCDPToEpsilon(-1, 1e-5); return err }, "rho = -1"},
		{"NaN rho", func() error { _, err := ZCDPToEpsilonSimple(math.NaN(), 1e-5); return err }, "rho = NaN"},
		{"infinite rho", func() error { _, err := ZCDPToEpsilon(math.Inf(1), 1e-5); return err }, "rho = +Inf"},
		{"zero delta", func() error { _, err := ZCDPToEpsilon(1, 0); return err }, "delta = 0"},
		{"delta one", func() error { _, err := ZCDPToEpsilon(1, 1); return err }, "delta = 1"},
		{"delta below delta0", func() error { _, err := ApproxZCDPToEpsDelta(1, 1e-5, 1e-6); return err }, "must exceed"},
		{"negative epsilon", func() error { _, err := PureToRho(-0.5); return err }, "epsilon = -0.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.f()
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestApproxZCDPToEpsDelta(t *testing.T) {
	got, err := ApproxZCDPToEpsDelta(0.5, 5e-6, 1.5e-5)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ZCDPToEpsilon(0.5, 1e-5)
	if got.Delta != 1.5e-5 || !near(got.Epsilon, want, 1e-12) {
		t.Fatalf("ApproxZCDPToEpsDelta(0.5, 5e-6, 1.5e-5) = %+v, want ε = %v (ρ = 0.5 at δ = 1e-5), δ = 1.5e-5", got, want)
	}
}

func TestPureToRho(t *testing.T) {
	if r, err := PureToRho(1); err != nil || r != 0.5 {
		t.Fatalf("PureToRho(1) = %v, %v; want 0.5", r, err)
	}
	// 0.1·0.1/2 is inexact: the result must not be below the exact value.
	r, _ := PureToRho(0.1)
	exact := ratOf(0.1)
	exact.Mul(exact, exact)
	exact.Mul(exact, ratOf(0.5))
	if ratOf(r).Cmp(exact) < 0 {
		t.Fatalf("PureToRho(0.1) = %v is below ε²/2", r)
	}
}

func hundred(c Cost) []Cost {
	cs := make([]Cost, 100)
	for i := range cs {
		cs[i] = c
	}
	return cs
}

// TestCompositionGolden: k = 100 mechanisms of ε = 0.1 with δ' = 1e-5.
func TestCompositionGolden(t *testing.T) {
	basic, err := Sequential(hundred(Pure(0.1))...)
	if err != nil || !near(basic.Epsilon, 10, 1e-12) || basic.Epsilon < 10 {
		t.Errorf("Sequential(100 × ε=0.1) = %v, %v; want ε = 10 (never below)", basic, err)
	}
	if !near(basic.Rho, 0.5, 1e-12) {
		t.Errorf("Sequential(100 × ε=0.1).Rho = %v, want 0.5", basic.Rho)
	}
	adv, err := Advanced(Pure(0.1), 100, 1e-5)
	if err != nil || !near(adv.Epsilon, 5.850, 5e-4) || adv.Delta != 1e-5 {
		t.Errorf("Advanced(ε=0.1, 100, 1e-5) = %v, %v; want ε = 5.850, δ = 1e-5", adv, err)
	}
	z, err := ZCDPCompose(1e-5, hundred(Pure(0.1))...)
	if err != nil || !near(z.Epsilon, 4.728, 5e-4) || z.Delta != 1e-5 {
		t.Errorf("ZCDPCompose(1e-5, 100 × ε=0.1) = %v, %v; want ε = 4.728", z, err)
	}
	// Costs that state only (ε, δ) count as δ-approximately ε²/2-zCDP.
	z2, err := ZCDPCompose(1e-5, hundred(Cost{Epsilon: 0.1})...)
	if err != nil || z2 != z {
		t.Errorf("ZCDPCompose over ε-only costs = %v, %v; want %v", z2, err, z)
	}
}

func TestSequentialParallel(t *testing.T) {
	a := Cost{Epsilon: 0.5, Delta: 1e-6, Rho: 0.125, RhoDelta: 1e-7}
	b := Cost{Epsilon: 0.25, Delta: 2e-6, Rho: 0.5, RhoDelta: 0}
	tests := []struct {
		name string
		f    func(...Cost) (Cost, error)
		in   []Cost
		want Cost
	}{
		{"sequential", Sequential, []Cost{a, b}, Cost{Epsilon: 0.75, Delta: addUp(1e-6, 2e-6), Rho: 0.625, RhoDelta: 1e-7}},
		{"sequential empty", Sequential, nil, Cost{}},
		{"parallel", Parallel, []Cost{a, b}, Cost{Epsilon: 0.5, Delta: 2e-6, Rho: 0.5, RhoDelta: 1e-7}},
		{"parallel one", Parallel, []Cost{a}, a},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.f(tt.in...)
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	// A part without a ρ is not free in the zCDP fields.
	if got, _ := Sequential(Pure(1), Cost{Epsilon: 1, Delta: 1e-6}); got.Rho != 1 || got.RhoDelta != 1e-6 {
		t.Errorf("Sequential(Pure(1), (1, 1e-6) without ρ) = %v, want ρ = 1, δ0 = 1e-6", got)
	}
	if got, _ := Parallel(Cost{Epsilon: 0.5, Rho: 0.01}, Cost{Epsilon: 1}); got.Rho != 0.5 {
		t.Errorf("Parallel with a part without ρ = %v, want ρ = 0.5", got)
	}
	if _, err := Sequential(a, Cost{Epsilon: math.NaN()}); err == nil || !strings.Contains(err.Error(), "cost 1") {
		t.Errorf("Sequential with a NaN cost: error = %v, want one naming cost 1", err)
	}
	if _, err := Parallel(Cost{Delta: -1}); err == nil {
		t.Error("Parallel with a negative delta: no error")
	}
	if _, err := Sequential(Approximate(1, 0.6), Approximate(1, 0.6)); err == nil {
		t.Error("Sequential reaching delta 1.2: no error")
	}
}

// TestSequentialRoundsUp: ten 0.1's add to more than 1 exactly (float64(0.1)
// is above 1/10), and the rounded-up sum must say so.
func TestSequentialRoundsUp(t *testing.T) {
	cs := make([]Cost, 10)
	for i := range cs {
		cs[i] = Pure(0.1)
	}
	got, _ := Sequential(cs...)
	if got.Epsilon <= 1 {
		t.Fatalf("Sequential(10 × 0.1).Epsilon = %v, want > 1 (the exact sum is 1 + 5.55e-17)", got.Epsilon)
	}
}

func TestAdvancedErrors(t *testing.T) {
	tests := []struct {
		name    string
		c       Cost
		k       int
		dp      float64
		wantErr string
	}{
		{"k zero", Pure(0.1), 0, 1e-5, "k = 0"},
		{"delta prime zero", Pure(0.1), 10, 0, "delta' = 0"},
		{"bad cost", Cost{Epsilon: math.Inf(1)}, 10, 1e-5, "epsilon = +Inf"},
		{"delta overflow", Approximate(0.1, 0.1), 20, 1e-5, "no privacy guarantee"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Advanced(tt.c, tt.k, tt.dp)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestGroup(t *testing.T) {
	tests := []struct {
		name    string
		c       Cost
		k       int
		want    Cost
		wantErr string
	}{
		{"one person", Approximate(1, 1e-6), 1, Approximate(1, 1e-6), ""},
		{"pure group of 3", Pure(0.5), 3, Cost{Epsilon: 1.5, Rho: 9 * 0.125}, ""},
		{"approximate group of 2", Cost{Epsilon: 1, Delta: 1e-6, Rho: 0.5, RhoDelta: 1e-6}, 2,
			Cost{Epsilon: 2, Delta: 2 * math.E * 1e-6, Rho: 2, RhoDelta: 2 * math.E * 1e-6}, ""},
		{"k zero", Pure(1), 0, Cost{}, "k = 0"},
		{"k negative", Pure(1), -2, Cost{}, "k = -2"},
		{"delta explodes", Approximate(1, 1e-5), 20, Cost{}, "protects nothing"},
		{"bad cost", Cost{Epsilon: -1}, 2, Cost{}, "epsilon = -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Group(tt.c, tt.k)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []struct {
				name      string
				got, want float64
			}{{"epsilon", got.Epsilon, tt.want.Epsilon}, {"delta", got.Delta, tt.want.Delta}, {"rho", got.Rho, tt.want.Rho}, {"rho_delta", got.RhoDelta, tt.want.RhoDelta}} {
				if f.got < f.want || f.got > f.want*(1+1e-14) {
					t.Errorf("%s = %v, want %v (rounded up by at most a few ulps)", f.name, f.got, f.want)
				}
			}
		})
	}
}

func TestEpsilonForGroup(t *testing.T) {
	tests := []struct {
		name    string
		eps     float64
		k       int
		want    float64
		wantErr string
	}{
		{"one", 1, 1, 1, ""},
		{"four", 1, 4, 0.25, ""},
		{"three", 1, 3, 0.3333333333333333, ""},
		{"zero k", 1, 0, 0, "k = 0"},
		{"NaN", math.NaN(), 2, 0, "epsilon = NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EpsilonForGroup(tt.eps, tt.k)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("EpsilonForGroup(%v, %d) = %v, %v; want %v", tt.eps, tt.k, got, err, tt.want)
			}
			// Rounded down: k copies of the per-person ε never exceed ε.
			if ratOf(got).Mul(ratOf(got), ratOf(float64(tt.k))).Cmp(ratOf(tt.eps)) > 0 {
				t.Fatalf("%d × %v exceeds %v", tt.k, got, tt.eps)
			}
		})
	}
}

func TestDirectedRounding(t *testing.T) {
	tests := []struct {
		name string
		a, b float64
	}{
		{"tenths", 0.1, 0.2},
		{"tiny to large", 1, 1e-20},
		{"thirds", 1.0 / 3, 2.0 / 3},
		{"exact", 0.5, 0.25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exact := ratOf(tt.a).Add(ratOf(tt.a), ratOf(tt.b))
			s := addUp(tt.a, tt.b)
			if ratOf(s).Cmp(exact) < 0 {
				t.Fatalf("addUp(%v, %v) = %v is below the exact sum", tt.a, tt.b, s)
			}
			if below := math.Nextafter(s, 0); ratOf(below).Cmp(exact) >= 0 {
				t.Fatalf("addUp(%v, %v) = %v is not the smallest float >= the sum", tt.a, tt.b, s)
			}
			p := mulUp(tt.a, tt.b)
			exactP := ratOf(tt.a).Mul(ratOf(tt.a), ratOf(tt.b))
			if ratOf(p).Cmp(exactP) < 0 {
				t.Fatalf("mulUp(%v, %v) = %v is below the exact product", tt.a, tt.b, p)
			}
		})
	}
}

// TestRepeat: n copies of a cost are charged exactly n times each field when
// that is representable, never less than Sequential of the n copies, and
// bad counts and costs are refused.
func TestRepeat(t *testing.T) {
	tests := []struct {
		name string
		c    Cost
		n    int
	}{
		{"exact eighths", Pure(0.125), 4},
		{"tenths", Pure(0.1), 3},
		{"thirds", Approximate(1.0/3, 1e-7), 7},
		{"gaussian", Cost{Epsilon: 1, Delta: 1e-5, Rho: 0.0359}, 10},
		{"epsilon only, no rho", Cost{Epsilon: 0.3}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Repeat(tt.c, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			copies := make([]Cost, tt.n)
			for i := range copies {
				copies[i] = tt.c
			}
			seq, err := Sequential(copies...)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []struct {
				name     string
				rep, seq float64
				one      float64
			}{{"epsilon", got.Epsilon, seq.Epsilon, tt.c.Epsilon}, {"delta", got.Delta, seq.Delta, tt.c.Delta}, {"rho", got.Rho, seq.Rho, 0}, {"rho_delta", got.RhoDelta, seq.RhoDelta, 0}} {
				exact := new(big.Rat).Mul(new(big.Rat).SetFloat64(f.one), big.NewRat(int64(tt.n), 1))
				if f.one != 0 && new(big.Rat).SetFloat64(f.rep).Cmp(exact) < 0 {
					t.Errorf("%s = %v is below %d × %v", f.name, f.rep, tt.n, f.one)
				}
				// Sequential rounds up after every addition, so it may be a
				// little above Repeat, but never by more than n ulps.
				if f.rep > f.seq || f.seq-f.rep > float64(tt.n)*math.Abs(f.seq)*0x1p-52 {
					t.Errorf("%s: Repeat %v against Sequential %v", f.name, f.rep, f.seq)
				}
			}
		})
	}
	if got, _ := Repeat(Pure(0.125), 4); got.Epsilon != 0.5 {
		t.Errorf("Repeat(0.125, 4).Epsilon = %v, want exactly 0.5", got.Epsilon)
	}
	if _, err := Repeat(Pure(1), 0); err == nil {
		t.Error("Repeat with n = 0 was accepted")
	}
	if _, err := Repeat(Cost{Epsilon: -1}, 2); err == nil {
		t.Error("Repeat of a negative cost was accepted")
	}
}
