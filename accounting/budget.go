package accounting

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sync"
)

// Budget is a privacy filter: it admits releases one at a time, each
// possibly chosen after seeing the earlier answers, and refuses any release
// whose cost would take the total past the limit. A Budget is safe for
// concurrent use.
//
// Totals are kept exactly: the ε's, δ's, ρ's and approximate-zCDP δ's of the
// admitted costs are summed as exact rationals (every float64 is a
// rational), so the test "does it fit" is exact and floating-point drift can
// never give budget back. Amounts reported as float64 round against the data
// subject: spent is rounded up, remaining down.
//
// With rule Basic the filter admits a cost when Σε ≤ ε_limit and
// Σδ ≤ δ_limit (sequential composition, which is valid for adaptively
// chosen costs). With rule ZCDP the filter keeps Σρ and Σδ0 (the
// approximate-zCDP δ's) and admits a cost when Σδ0 < δ_limit and
// ZCDPToEpsilon(Σρ, δ_limit − Σδ0) ≤ ε_limit, counting the new cost in both
// sums. That the sum of adaptively chosen ρ's may be capped this way is the
// zCDP (Rényi) filter theorem (Feldman & Zrnic 2021; Whitehouse et al.
// 2023); the whole sequence of admitted releases is then (ε_limit,
// δ_limit)-DP.
type Budget struct {
	mu       sync.Mutex
	limit    EpsDelta
	rule     Rule
	eps      big.Rat
	delta    big.Rat
	rho      big.Rat
	rhoDelta big.Rat
	releases int
	// spent caches spentLocked (a zCDP conversion is not free); valid
	// when spentOK.
	spent   EpsDelta
	spentOK bool
}

// NewBudget returns an empty budget with the given limit and rule. The
// limit's ε must be a finite number >= 0 and its δ in [0, 1); rule ZCDP
// needs δ > 0, since zCDP converts to (ε, δ)-DP only with a positive δ.
func NewBudget(limit EpsDelta, rule Rule) (*Budget, error) {
	if err := ValidateLimit(limit, rule); err != nil {
		return nil, err
	}
	return &Budget{limit: limit, rule: rule}, nil
}

// ValidateLimit reports whether limit and rule make a valid budget (see
// NewBudget).
func ValidateLimit(limit EpsDelta, rule Rule) error {
	if err := rule.Validate(); err != nil {
		return err
	}
	if math.IsNaN(limit.Epsilon) || math.IsInf(limit.Epsilon, 0) || limit.Epsilon < 0 {
		return fmt.Errorf("budget epsilon = %v: want a finite number >= 0", limit.Epsilon)
	}
	if math.IsNaN(limit.Delta) || limit.Delta < 0 || limit.Delta >= 1 {
		return fmt.Errorf("budget delta = %v: want a number in [0, 1)", limit.Delta)
	}
	if rule == ZCDP && limit.Delta == 0 {
		return fmt.Errorf("budget delta = 0 with rule %q: zCDP needs a delta in (0, 1) to convert to (epsilon, delta); use rule %q for pure-DP budgets", ZCDP, Basic)
	}
	return nil
}

// Validate reports whether r is a known rule.
func (r Rule) Validate() error {
	switch r {
	case Basic, ZCDP:
		return nil
	}
	return fmt.Errorf("unknown budget rule %q: want %q or %q", string(r), Basic, ZCDP)
}

// ParseRule parses a rule name ("basic" or "zcdp").
func ParseRule(s string) (Rule, error) {
	r := Rule(s)
	return r, r.Validate()
}

// Rule is the composition rule the budget uses.
func (b *Budget) Rule() Rule { return b.rule }

// Limit is the budget's limit.
func (b *Budget) Limit() EpsDelta { return b.limit }

// Releases is the number of costs admitted so far.
func (b *Budget) Releases() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.releases
}

// Spent is the (ε, δ) guarantee of everything admitted so far, rounded up.
// With rule ZCDP it is the conversion of Σρ at δ_limit − Σδ0, and its δ is
// the whole δ_limit as soon as any ρ has been spent (the conversion uses
// it).
func (b *Budget) Spent() EpsDelta {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spentLocked()
}

// Remaining is the limit minus Spent, rounded down and never negative. With
// rule ZCDP, the ε's of later releases do not add, so the remaining ε is
// what the conversion leaves; a release of cost up to the remaining ε may
// still be refused, and usually much more fits (see ZCDPToEpsilon).
func (b *Budget) Remaining() EpsDelta {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.remainingLocked(b.spentLocked())
}

// Totals returns the sums of the admitted costs' ε, δ, ρ and
// approximate-zCDP δ, each rounded up. Costs that state only (ε, δ) are
// counted in the zCDP sums as δ-approximately (ε²/2)-zCDP.
func (b *Budget) Totals() Cost {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Cost{Epsilon: ratUp(&b.eps), Delta: ratUp(&b.delta), Rho: ratUp(&b.rho), RhoDelta: ratUp(&b.rhoDelta)}
}

func (b *Budget) spentLocked() EpsDelta {
	if !b.spentOK {
		b.spent, b.spentOK = b.computeSpent(), true
	}
	return b.spent
}

func (b *Budget) computeSpent() EpsDelta {
	if b.rule == ZCDP {
		if b.rho.Sign() == 0 {
			return EpsDelta{Delta: ratUp(&b.rhoDelta)}
		}
		rest := ratDown(new(big.Rat).Sub(ratOf(b.limit.Delta), &b.rhoDelta))
		if rest <= 0 {
			// Only a trial limit in SetLimit can get here: nothing is left
			// for the conversion.
			return EpsDelta{Epsilon: math.Inf(1), Delta: b.limit.Delta}
		}
		return EpsDelta{Epsilon: tightEps(ratUp(&b.rho), rest), Delta: b.limit.Delta}
	}
	return EpsDelta{Epsilon: ratUp(&b.eps), Delta: ratUp(&b.delta)}
}

func (b *Budget) remainingLocked(spent EpsDelta) EpsDelta {
	sub := func(limit float64, spent *big.Rat) float64 {
		r := ratDown(new(big.Rat).Sub(ratOf(limit), spent))
		return math.Max(r, 0)
	}
	if b.rule == Basic {
		return EpsDelta{Epsilon: sub(b.limit.Epsilon, &b.eps), Delta: sub(b.limit.Delta, &b.delta)}
	}
	return EpsDelta{Epsilon: sub(b.limit.Epsilon, ratOf(spent.Epsilon)), Delta: sub(b.limit.Delta, ratOf(spent.Delta))}
}

// Check reports whether c would fit, without spending it: nil, a
// validation error, or an *ExceededError.
func (b *Budget) Check(c Cost) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, err := b.admitLocked(c)
	return err
}

// Spend charges c if it fits and otherwise returns an *ExceededError (test
// with errors.As) and charges nothing. A cost that fails Cost.Validate is
// refused with that error; with rule Basic, a cost that states only a ρ is
// refused with an error wrapping ErrNoEpsDelta.
func (b *Budget) Spend(c Cost) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	next, err := b.admitLocked(c)
	if err != nil {
		return err
	}
	b.spent, b.spentOK = next.spent, true
	b.eps.Set(&next.eps)
	b.delta.Set(&next.delta)
	b.rho.Set(&next.rho)
	b.rhoDelta.Set(&next.rhoDelta)
	b.releases++
	return nil
}

// sums are a budget's totals after a cost, with the resulting spent.
type sums struct {
	eps, delta, rho, rhoDelta big.Rat
	spent                     EpsDelta
}

// admitLocked returns the totals after c, or the reason c does not fit.
func (b *Budget) admitLocked(c Cost) (*sums, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if b.rule == Basic && c.Epsilon == 0 && c.Delta == 0 && c.Rho > 0 {
		return nil, fmt.Errorf("cost %v: %w", c, ErrNoEpsDelta)
	}
	z := zcdpView(c)
	n := new(sums)
	n.eps.Add(&b.eps, ratOf(c.Epsilon))
	n.delta.Add(&b.delta, ratOf(c.Delta))
	n.rho.Add(&b.rho, ratOf(z.Rho))
	n.rhoDelta.Add(&b.rhoDelta, ratOf(z.RhoDelta))

	limE, limD := ratOf(b.limit.Epsilon), ratOf(b.limit.Delta)
	var would EpsDelta
	fits := true
	switch b.rule {
	case ZCDP:
		would.Delta = b.limit.Delta
		if n.rhoDelta.Cmp(limD) >= 0 {
			fits = false
			would = EpsDelta{Epsilon: math.Inf(1), Delta: ratUp(&n.rhoDelta)}
			break
		}
		rest := ratDown(new(big.Rat).Sub(limD, &n.rhoDelta))
		if rest <= 0 {
			fits = false
			would.Epsilon = math.Inf(1)
			break
		}
		if n.rho.Sign() == 0 {
			would = EpsDelta{Delta: ratUp(&n.rhoDelta)}
			break
		}
		would.Epsilon = tightEps(ratUp(&n.rho), rest)
		fits = would.Epsilon <= b.limit.Epsilon
	default:
		would = EpsDelta{Epsilon: ratUp(&n.eps), Delta: ratUp(&n.delta)}
		fits = n.eps.Cmp(limE) <= 0 && n.delta.Cmp(limD) <= 0
	}
	if !fits {
		spent := b.spentLocked()
		return nil, &ExceededError{
			Requested: c,
			Spent:     spent,
			Remaining: b.remainingLocked(spent),
			Limit:     b.limit,
			Rule:      b.rule,
			Would:     would,
		}
	}
	n.spent = would
	return n, nil
}

// ExceededError is returned when a cost does not fit in a budget. Nothing
// was charged.
type ExceededError struct {
	// Requested is the refused cost.
	Requested Cost
	// Spent, Remaining and Limit describe the budget when it refused.
	Spent, Remaining, Limit EpsDelta
	// Rule is the budget's composition rule.
	Rule Rule
	// Would is what Spent would have become with the cost admitted.
	Would EpsDelta
}

// Error states the request and the budget's figures.
func (e *ExceededError) Error() string {
	return fmt.Sprintf("privacy budget exceeded: the request (%s) would bring spending to ε=%s δ=%s, over the limit ε=%s δ=%s (%s composition: spent ε=%s δ=%s, remaining ε=%s δ=%s)",
		e.Requested.Display(e.Rule), Num(e.Would.Epsilon), Num(e.Would.Delta), Num(e.Limit.Epsilon), Num(e.Limit.Delta),
		e.Rule, Num(e.Spent.Epsilon), Num(e.Spent.Delta), Num(e.Remaining.Epsilon), Num(e.Remaining.Delta))
}

// budgetJSON is the stored form of a Budget: exact sums as rationals.
type budgetJSON struct {
	Rule     Rule     `json:"rule"`
	Limit    EpsDelta `json:"limit"`
	Epsilon  string   `json:"sum_epsilon"`
	Delta    string   `json:"sum_delta"`
	Rho      string   `json:"sum_rho"`
	RhoDelta string   `json:"sum_rho_delta"`
	Releases int      `json:"releases"`
}

// MarshalJSON stores the budget exactly: the rule, the limit and the exact
// sums as rationals.
func (b *Budget) MarshalJSON() ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return json.Marshal(budgetJSON{
		Rule: b.rule, Limit: b.limit,
		Epsilon: b.eps.RatString(), Delta: b.delta.RatString(),
		Rho: b.rho.RatString(), RhoDelta: b.rhoDelta.RatString(),
		Releases: b.releases,
	})
}

// UnmarshalJSON restores a budget stored by MarshalJSON, validating it.
func (b *Budget) UnmarshalJSON(data []byte) error {
	var s budgetJSON
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("stored budget: %w", err)
	}
	if err := ValidateLimit(s.Limit, s.Rule); err != nil {
		return fmt.Errorf("stored budget: %w", err)
	}
	if s.Releases < 0 {
		return fmt.Errorf("stored budget: releases = %d: want >= 0", s.Releases)
	}
	var n sums
	for _, f := range []struct {
		name string
		text string
		dst  *big.Rat
	}{{"sum_epsilon", s.Epsilon, &n.eps}, {"sum_delta", s.Delta, &n.delta}, {"sum_rho", s.Rho, &n.rho}, {"sum_rho_delta", s.RhoDelta, &n.rhoDelta}} {
		if _, ok := f.dst.SetString(f.text); !ok || f.dst.Sign() < 0 {
			return fmt.Errorf("stored budget: %s = %q: want a rational number >= 0", f.name, f.text)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rule, b.limit, b.releases = s.Rule, s.Limit, s.Releases
	b.spentOK = false
	b.eps.Set(&n.eps)
	b.delta.Set(&n.delta)
	b.rho.Set(&n.rho)
	b.rhoDelta.Set(&n.rhoDelta)
	return nil
}

// SetLimit changes the budget's limit and rule. It refuses a limit below
// what is already spent under the new rule, and a change of rule once
// anything has been spent.
func (b *Budget) SetLimit(limit EpsDelta, rule Rule) error {
	if err := ValidateLimit(limit, rule); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if rule != b.rule && b.releases > 0 {
		return fmt.Errorf("budget rule is %q with %d releases charged: it cannot change to %q", b.rule, b.releases, rule)
	}
	trial := &Budget{limit: limit, rule: rule}
	trial.eps.Set(&b.eps)
	trial.delta.Set(&b.delta)
	trial.rho.Set(&b.rho)
	trial.rhoDelta.Set(&b.rhoDelta)
	spent := trial.spentLocked()
	var below bool
	if rule == ZCDP {
		// Σδ0 must stay below δ (strictly once anything is spent, as
		// Spend requires) and the conversion within ε.
		below = (b.releases > 0 && trial.rhoDelta.Cmp(ratOf(limit.Delta)) >= 0) || spent.Epsilon > limit.Epsilon
	} else {
		below = trial.eps.Cmp(ratOf(limit.Epsilon)) > 0 || trial.delta.Cmp(ratOf(limit.Delta)) > 0
	}
	if below {
		return fmt.Errorf("budget limit ε=%g δ=%g is below what is already spent (ε=%g δ=%g under rule %s): a limit can be lowered only down to the amount spent",
			limit.Epsilon, limit.Delta, spent.Epsilon, spent.Delta, rule)
	}
	b.limit, b.rule = limit, rule
	b.spentOK = false
	return nil
}

// Record adds c to the sums unconditionally, whatever the limit: it rebuilds
// a budget from the releases it admitted (to check a stored budget against
// its records) or opens a budget that must count releases admitted before
// it existed. It refuses only a cost that fails Cost.Validate. Spend is the
// call that enforces the limit.
func (b *Budget) Record(c Cost) error { return b.RecordN(c, 1) }

// RecordN is n calls of Record(c) at once: it adds n·c to the sums
// exactly and n to the release count. n must be >= 0.
func (b *Budget) RecordN(c Cost, n int) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("record %d releases: want a count >= 0", n)
	}
	z := zcdpView(c)
	k := new(big.Rat).SetInt64(int64(n))
	times := func(x float64) *big.Rat { return new(big.Rat).Mul(ratOf(x), k) }
	b.mu.Lock()
	defer b.mu.Unlock()
	b.eps.Add(&b.eps, times(c.Epsilon))
	b.delta.Add(&b.delta, times(c.Delta))
	b.rho.Add(&b.rho, times(z.Rho))
	b.rhoDelta.Add(&b.rhoDelta, times(z.RhoDelta))
	b.releases += n
	b.spentOK = false
	return nil
}

// ExactSums are a budget's exact sums, each as a rational number in the
// form big.Rat.RatString writes ("3/8", "0"), and its release count: the
// figures a stored budget must share with the releases it admitted.
type ExactSums struct {
	Epsilon, Delta, Rho, RhoDelta string
	Releases                      int
}

// String lists the sums as the stored form names them.
func (s ExactSums) String() string {
	return fmt.Sprintf("sum_epsilon=%s sum_delta=%s sum_rho=%s sum_rho_delta=%s releases=%d", s.Epsilon, s.Delta, s.Rho, s.RhoDelta, s.Releases)
}

// Sums returns the budget's exact sums and release count.
func (b *Budget) Sums() ExactSums {
	b.mu.Lock()
	defer b.mu.Unlock()
	return ExactSums{Epsilon: b.eps.RatString(), Delta: b.delta.RatString(), Rho: b.rho.RatString(), RhoDelta: b.rhoDelta.RatString(), Releases: b.releases}
}
