package accounting

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestAddRatMatchesAdd checks addRat against big.Rat.Add on sums of
// float64s (dyadic), huge and tiny ones among them, on zero, and on
// rationals that are not dyadic.
func TestAddRatMatchesAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vals := []*big.Rat{new(big.Rat), big.NewRat(1, 3), big.NewRat(7, 12), ratOf(1e20), ratOf(0x1p-1074), ratOf(math.MaxFloat64), ratOf(0x1p-10)}
	for range 300 {
		vals = append(vals, ratOf(math.Ldexp(rng.Float64(), rng.IntN(200)-100)))
	}
	var tmp big.Int
	for i := range 2000 {
		a, b := vals[rng.IntN(len(vals))], vals[rng.IntN(len(vals))]
		want := new(big.Rat).Add(a, b)
		got := new(big.Rat).Set(a)
		if i%7 == 0 {
			got = new(big.Rat) // an uninitialised zero
			addRat(got, a, &tmp)
		}
		addRat(got, b, &tmp)
		if got.RatString() != want.RatString() || !sameRat(got, want) {
			t.Fatalf("addRat(%s, %s) = %s, want %s", a.RatString(), b.RatString(), got.RatString(), want.RatString())
		}
	}
}

// TestSetRatMatchesSetString checks setRat against big.Rat.SetString,
// on the canonical form and on every other form SetString reads.
func TestSetRatMatchesSetString(t *testing.T) {
	in := []string{"3/8", "1/1024", "5", "0", "011/8", "3/010", "-3/8", "+3/8", "0/8", "6/8", "3/0", "3/6", "",
		"1e3/8", "0x3/8", "3/0x8", "3/8/2", "1.5", "3 /8", "3/1", "1/1"}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		in = append(in, ratOf(math.Ldexp(rng.Float64(), rng.IntN(200)-100)).RatString())
	}
	for _, s := range in {
		want, wantOK := new(big.Rat).SetString(s)
		got := new(big.Rat)
		ok := setRat(got, s)
		if ok != wantOK || (ok && (got.RatString() != want.RatString() || !sameRat(got, want))) {
			t.Errorf("setRat(%q) = %v, %v; SetString gives %v, %v", s, got, ok, want, wantOK)
		}
	}
}
