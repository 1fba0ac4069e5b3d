package accounting

import (
	"fmt"
	"math/big"
)

// BudgetFromSums returns a budget with the given limit and rule that has
// admitted releases adding up to s exactly (the figures Sums returns): a
// compact stored form of many budgets that share a limit (the ledger's
// epochs) keeps only their sums. The limit is not checked against the
// sums, as Record does not check them.
func BudgetFromSums(limit EpsDelta, rule Rule, s ExactSums) (*Budget, error) {
	if err := ValidateLimit(limit, rule); err != nil {
		return nil, err
	}
	if s.Releases < 0 {
		return nil, fmt.Errorf("releases = %d: want >= 0", s.Releases)
	}
	b := &Budget{limit: limit, rule: rule, releases: s.Releases}
	for _, f := range []struct {
		name, text string
		dst        *big.Rat
	}{{"sum_epsilon", s.Epsilon, &b.eps}, {"sum_delta", s.Delta, &b.delta}, {"sum_rho", s.Rho, &b.rho}, {"sum_rho_delta", s.RhoDelta, &b.rhoDelta}} {
		if f.text == "" {
			continue // zero
		}
		if ok := setRat(f.dst, f.text); !ok || f.dst.Sign() < 0 {
			return nil, fmt.Errorf("%s = %q: want a rational number >= 0", f.name, f.text)
		}
	}
	return b, nil
}
