package dpplan

import (
	"math"
	"strconv"

	"github.com/dpstat/dpstat/query/ir"
)

// The range and resolution of SmallestEpsilon's search, fixed before any
// search starts: the answer depends only on the predicate (the plan and
// the catalog), never on the data, and the search always takes the same
// number of steps.
const (
	// MinSearchEpsilon and MaxSearchEpsilon bound the ε an accuracy target
	// may choose.
	MinSearchEpsilon = 1e-9
	MaxSearchEpsilon = 1e6
	// SearchSteps is the number of bisection steps on ln ε: the bracket
	// [ln MinSearchEpsilon, ln MaxSearchEpsilon] (width 34.5) shrinks to
	// below 1e-17, finer than a float64 ε.
	SearchSteps = 64
	// EpsilonDigits is the number of significant digits of a chosen ε, so
	// that the ledger entry reads well (0.1843, not 0.18429641...).
	EpsilonDigits = 4
)

// SmallestEpsilon returns the smallest ε of EpsilonDigits significant
// digits in [MinSearchEpsilon, MaxSearchEpsilon] for which meets holds,
// and true; or MaxSearchEpsilon and false when even that ε does not meet
// it. meets must be monotone (false below some ε, true from there on), as
// interval half-widths shrink when ε grows; it is called at most
// SearchSteps + 6 times.
//
// The search is a bisection on ln ε between bounds fixed before it starts;
// the ε found is rounded up to EpsilonDigits significant digits, and one
// grid step lower is tried too, so that the answer is the smallest grid
// value that meets the target: ε·(1 − 10^(1−EpsilonDigits)) does not.
func SmallestEpsilon(meets func(eps float64) bool) (float64, bool) {
	if !meets(MaxSearchEpsilon) {
		return MaxSearchEpsilon, false
	}
	if meets(MinSearchEpsilon) {
		return MinSearchEpsilon, true
	}
	lo, hi := math.Log(MinSearchEpsilon), math.Log(MaxSearchEpsilon)
	for i := 0; i < SearchSteps; i++ {
		mid := lo + (hi-lo)/2
		if meets(math.Exp(mid)) {
			hi = mid
		} else {
			lo = mid
		}
	}
	g := gridAbove(math.Exp(hi))
	// Rounding up keeps the target met when meets is monotone; a few
	// further steps cover the float spelling of the grid value.
	for i := 0; i < 3 && !meets(g.value()) && g.value() < MaxSearchEpsilon; i++ {
		g = g.next()
	}
	if down := g.prev(); down.value() >= MinSearchEpsilon && meets(down.value()) {
		g = down
	}
	return math.Min(g.value(), MaxSearchEpsilon), true
}

// epsGrid is a number of EpsilonDigits significant digits: m·10^e with m
// in [10^(EpsilonDigits−1), 10^EpsilonDigits).
type epsGrid struct {
	m int64
	e int
}

var gridLow = int64(math.Pow10(EpsilonDigits - 1))

// gridAbove is the smallest grid value ≥ x > 0.
func gridAbove(x float64) epsGrid {
	e := int(math.Floor(math.Log10(x))) - (EpsilonDigits - 1)
	// Start one step below the quotient (which float rounding can move
	// either way) and step up to the first decimal value ≥ x.
	m := min(max(int64(math.Floor(x/math.Pow10(e))), gridLow), 10*gridLow-1)
	g := epsGrid{m, e}.prev()
	for i := 0; i < 4 && g.value() < x; i++ {
		g = g.next()
	}
	return g
}

func (g epsGrid) norm() epsGrid {
	for g.m >= 10*gridLow {
		g.m, g.e = (g.m+9)/10, g.e+1
	}
	for g.m < gridLow {
		g.m, g.e = g.m*10, g.e-1
	}
	return g
}

func (g epsGrid) next() epsGrid { return epsGrid{g.m + 1, g.e}.norm() }

func (g epsGrid) prev() epsGrid {
	if g.m == gridLow {
		return epsGrid{10*gridLow - 1, g.e - 1}
	}
	return epsGrid{g.m - 1, g.e}
}

// value is the float64 nearest to m·10^e, as the decimal spelling reads.
func (g epsGrid) value() float64 {
	v, _ := strconv.ParseFloat(strconv.FormatInt(g.m, 10)+"e"+strconv.Itoa(g.e), 64)
	return v
}

// TargetedHalfWidth reports whether aggregate j's interval half-width is
// known before any data is read (COUNT, SUM, COUNT(DISTINCT)), so that an
// accuracy target can choose ε for it, and that half-width at the noise n.
func (n *Noise) TargetedHalfWidth(j int, confidence float64) (float64, bool) {
	h, note := n.HalfWidth(j, confidence)
	return h, note == "" && DataIndependentWidth(n.plan.Aggregates[j].Aggregate.Func)
}

// DataIndependentWidth reports whether an aggregate of function f has an
// interval half-width that only the plan decides: COUNT(*), COUNT(col),
// COUNT(DISTINCT col) and SUM(col). AVG's depends on the noisy count,
// variances' on the group's size, quantiles' (and MIN/MAX) on the values.
func DataIndependentWidth(f ir.AggFunc) bool { return f.Info().KnownWidth }
