package query

import (
	"fmt"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/ledger"
)

// BudgetReader is implemented by ledgers that report a budget without
// creating it (*ledger.Ledger does). Options.RequireGrant needs it.
type BudgetReader interface {
	// Status returns the budget of k, or an error wrapping
	// ledger.ErrNoBudget.
	Status(k ledger.Key) (ledger.Status, error)
}

// totalKey marks, in Service.known, a dataset whose total budget exists.
type totalKey string

// ensureBudget makes sure, before anything is read or charged, that the
// analyst's budget key exists: created with limit when the options allow
// it, else required (an error wrapping ledger.ErrNoBudget when it is
// missing). Budgets are never deleted, so a budget seen once is
// remembered in s.known and its existence is not read again. Only
// existence is remembered, never a figure: a grant changes the limit at
// any time, and the charge decides, atomically, on the ledger's figures.
func (s *Service) ensureBudget(key ledger.Key, limit accounting.EpsDelta, require bool) error {
	if _, ok := s.known.Load(key); ok {
		return nil
	}
	if require {
		br, ok := s.led.(BudgetReader)
		if !ok {
			return fmt.Errorf("budget for %s: this ledger cannot say whether a budget exists without creating it, so a grant cannot be required (Options.RequireGrant)", key)
		}
		if _, err := br.Status(key); err != nil {
			return fmt.Errorf("budget for %s: %w", key, err)
		}
	} else if _, err := s.led.EnsureBudget(key, limit, accounting.Basic); err != nil {
		return fmt.Errorf("budget for %s: %w", key, err)
	}
	s.known.Store(key, struct{}{})
	return nil
}

// budgetNow reads the analyst's budget of key as the ledger holds it now,
// for the answers that charge nothing (an explanation, public keys, a
// stored or derived answer). A charged answer reports its receipt's
// figures instead.
func (s *Service) budgetNow(key ledger.Key, limit accounting.EpsDelta) (BudgetState, error) {
	st, err := s.led.EnsureBudget(key, limit, accounting.Basic)
	if err != nil {
		return BudgetState{}, fmt.Errorf("budget for %s: %w", key, err)
	}
	return BudgetState{Dataset: key.Dataset, Analyst: key.Analyst, Rule: st.Rule, Spent: st.Spent, Remaining: st.Remaining, Total: st.Total}, nil
}
