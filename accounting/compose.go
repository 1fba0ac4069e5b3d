package accounting

import (
	"errors"
	"fmt"
	"math"
	"math/big"
)

type ratT = big.Rat

// Sequential composes releases on the same data: ε's, δ's, ρ's and the
// approximate-zCDP δ's each add. Every sum is rounded up. In this and the
// other composition functions, a cost with ρ = 0 but ε > 0 or δ > 0
// enters the zCDP fields as δ-approximately (ε²/2)-zCDP (see ZCDPCompose),
// so that a missing ρ never makes a part of the composition free.
func Sequential(costs ...Cost) (Cost, error) {
	var out Cost
	for i, c := range costs {
		if err := c.Validate(); err != nil {
			return Cost{}, fmt.Errorf("cost %d: %w", i, err)
		}
		z := zcdpView(c)
		out.Epsilon = addUp(out.Epsilon, c.Epsilon)
		out.Delta = addUp(out.Delta, c.Delta)
		out.Rho = addUp(out.Rho, z.Rho)
		out.RhoDelta = addUp(out.RhoDelta, z.RhoDelta)
	}
	return out, checkComposed(out)
}

// Repeat is the cost of n releases of cost c on the same data: Sequential
// composition of n copies of c, computed as exact products and rounded up,
// so it costs nothing to state for a large n. n must be >= 1.
func Repeat(c Cost, n int) (Cost, error) {
	if err := c.Validate(); err != nil {
		return Cost{}, err
	}
	if n < 1 {
		return Cost{}, fmt.Errorf("repeat count %d: want a whole number >= 1", n)
	}
	times := func(x float64) float64 {
		return ratUp(new(big.Rat).Mul(ratOf(x), new(big.Rat).SetInt64(int64(n))))
	}
	z := zcdpView(c)
	out := Cost{Epsilon: times(c.Epsilon), Delta: times(c.Delta), Rho: times(z.Rho), RhoDelta: times(z.RhoDelta)}
	return out, checkComposed(out)
}

// checkComposed refuses a composed cost whose δ reached 1 (no guarantee).
func checkComposed(c Cost) error {
	if c.Delta >= 1 || c.RhoDelta >= 1 || math.IsInf(c.Epsilon, 0) || math.IsInf(c.Rho, 0) {
		return fmt.Errorf("composed cost %v gives no privacy guarantee (a delta reached 1 or a value overflowed)", c)
	}
	return nil
}

// Parallel composes releases on disjoint parts of the data, where each
// person is in at most one part: the cost is the largest of each field.
func Parallel(costs ...Cost) (Cost, error) {
	var out Cost
	for i, c := range costs {
		if err := c.Validate(); err != nil {
			return Cost{}, fmt.Errorf("cost %d: %w", i, err)
		}
		z := zcdpView(c)
		out.Epsilon = math.Max(out.Epsilon, c.Epsilon)
		out.Delta = math.Max(out.Delta, c.Delta)
		out.Rho = math.Max(out.Rho, z.Rho)
		out.RhoDelta = math.Max(out.RhoDelta, z.RhoDelta)
	}
	return out, nil
}

// Advanced is the advanced composition theorem of Dwork, Rothblum & Vadhan
// 2010 for k adaptively chosen releases of cost c each:
//
//	ε' = ε·sqrt(2k·ln(1/δ')) + k·ε·(e^ε − 1),  δ'' = k·δ + δ'.
//
// The returned cost also carries the zCDP view of the k releases (kρ and
// k·RhoDelta), so it can still be charged to a zCDP budget. deltaPrime must
// be in (0, 1) and k >= 1.
func Advanced(c Cost, k int, deltaPrime float64) (Cost, error) {
	if err := c.Validate(); err != nil {
		return Cost{}, err
	}
	if k < 1 {
		return Cost{}, fmt.Errorf("advanced composition: k = %d: want k >= 1", k)
	}
	if err := checkDelta("delta'", deltaPrime); err != nil {
		return Cost{}, fmt.Errorf("advanced composition: %w", err)
	}
	kf := float64(k)
	e := c.Epsilon
	c = zcdpView(c)
	first := e * math.Sqrt(2*kf*-math.Log(deltaPrime))
	second := kf * e * math.Expm1(e)
	out := Cost{
		Epsilon:  nudgeUp(first+second, 8),
		Delta:    addUp(mulUp(kf, c.Delta), deltaPrime),
		Rho:      mulUp(kf, c.Rho),
		RhoDelta: mulUp(kf, c.RhoDelta),
	}
	return out, checkComposed(out)
}

// ZCDPCompose composes releases by adding their ρ's and approximate-zCDP
// δ's (Bun & Steinke 2016) and converts the total to (ε, δ)-DP at the
// target δ with ZCDPToEpsilon: the result is (ε(Σρ, δ − Σδ0), δ)-DP.
// A cost without a zCDP statement (ρ = 0 but ε > 0 or δ > 0) is counted
// as δ-approximately (ε²/2)-zCDP, which every (ε, δ)-DP release is.
func ZCDPCompose(delta float64, costs ...Cost) (EpsDelta, error) {
	if err := checkDelta("delta", delta); err != nil {
		return EpsDelta{}, err
	}
	rho, rd := new(big.Rat), new(big.Rat)
	for i, c := range costs {
		if err := c.Validate(); err != nil {
			return EpsDelta{}, fmt.Errorf("cost %d: %w", i, err)
		}
		z := zcdpView(c)
		rho.Add(rho, ratOf(z.Rho))
		rd.Add(rd, ratOf(z.RhoDelta))
	}
	return ApproxZCDPToEpsDelta(ratUp(rho), ratUp(rd), delta)
}

// zcdpView returns the cost as a zCDP statement. A cost with ρ = 0 but a
// positive ε or δ has no zCDP statement (a zero ρ would make it free), so
// it is counted as what every (ε, δ)-DP release is: δ-approximately
// (ε²/2)-zCDP (keeping a larger stated approximate-zCDP δ).
func zcdpView(c Cost) Cost {
	if c.Rho == 0 && (c.Epsilon > 0 || c.Delta > 0) {
		c.Rho = mulUp(mulUp(c.Epsilon, c.Epsilon), 0.5)
		c.RhoDelta = math.Max(c.RhoDelta, c.Delta)
	}
	return c
}

// Group is the cost of a release for a group of k people (group privacy):
// ε becomes kε, δ becomes k·e^((k−1)ε)·δ, ρ becomes k²ρ and the
// approximate-zCDP δ scales like δ. k must be >= 1. It is an error when the
// group δ reaches 1, since the release then protects nothing.
func Group(c Cost, k int) (Cost, error) {
	if err := c.Validate(); err != nil {
		return Cost{}, err
	}
	if k < 1 {
		return Cost{}, fmt.Errorf("group size k = %d: want k >= 1", k)
	}
	if k == 1 {
		return c, nil
	}
	c = zcdpView(c)
	kf := float64(k)
	factor := nudgeUp(kf*math.Exp((kf-1)*c.Epsilon), 4)
	out := Cost{
		Epsilon:  mulUp(kf, c.Epsilon),
		Delta:    mulUp(factor, c.Delta),
		Rho:      mulUp(mulUp(kf, kf), c.Rho),
		RhoDelta: mulUp(factor, c.RhoDelta),
	}
	if out.Delta >= 1 || out.RhoDelta >= 1 {
		return Cost{}, fmt.Errorf("group of %d people: delta grows to %v (k·e^((k−1)ε)·δ), which protects nothing; use a smaller group or a smaller cost", k, out.Delta)
	}
	if math.IsInf(out.Epsilon, 0) || math.IsInf(out.Rho, 0) {
		return Cost{}, fmt.Errorf("group of %d people: the cost overflows", k)
	}
	return out, nil
}

// EpsilonForGroup is the per-person ε that gives groups of k people the
// protection epsilon: ε/k, rounded down.
func EpsilonForGroup(epsilon float64, k int) (float64, error) {
	if err := checkEpsilon(epsilon); err != nil {
		return 0, err
	}
	if k < 1 {
		return 0, fmt.Errorf("group size k = %d: want k >= 1", k)
	}
	q := new(big.Rat).Quo(ratOf(epsilon), new(big.Rat).SetInt64(int64(k)))
	return ratDown(q), nil
}

// ErrNoEpsDelta is returned when a cost that states only ρ is charged to a
// budget that adds ε's and δ's.
var ErrNoEpsDelta = errors.New("the cost states only a zCDP rho; a basic budget needs its (epsilon, delta)")
