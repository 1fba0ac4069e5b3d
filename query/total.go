package query

import (
	"fmt"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/ledger"
)

// TotalBudgets is implemented by ledgers that keep a total budget per
// dataset, across analysts (*ledger.Ledger does). When the catalog
// declares a table's total budget, the service creates it on the table's
// first query; the ledger's Charge then charges it with the analyst's
// budget, atomically.
type TotalBudgets interface {
	EnsureTotal(dataset string, def accounting.EpsDelta, rule accounting.Rule) (ledger.TotalStatus, error)
}

// budgetOf is the ledger key of analyst's budget on table t (tables of one
// id space share it) and its default limit.
func (s *Service) budgetOf(t *catalog.Table, analyst string) (ledger.Key, accounting.EpsDelta) {
	def := t.Budget
	if def == (catalog.Budget{}) {
		def = s.cat.Budget
	}
	return ledger.Key{Dataset: t.BudgetDataset(), Analyst: analyst}, accounting.EpsDelta{Epsilon: def.Epsilon, Delta: def.Delta}
}

// ensureTotal creates the total budget the catalog declares for t, if the
// ledger keeps totals and it does not exist yet. Totals are never deleted:
// a total seen once is remembered (s.known) and not read again.
func (s *Service) ensureTotal(t *catalog.Table) error {
	tl, ok := s.led.(TotalBudgets)
	if !ok || t.TotalBudget == nil {
		return nil
	}
	ds := t.BudgetDataset()
	if _, ok := s.known.Load(totalKey(ds)); ok {
		return nil
	}
	def := accounting.EpsDelta{Epsilon: t.TotalBudget.Epsilon, Delta: t.TotalBudget.Delta}
	if _, err := tl.EnsureTotal(ds, def, accounting.Basic); err != nil {
		return fmt.Errorf("total budget of %q: %w", ds, err)
	}
	s.known.Store(totalKey(ds), struct{}{})
	return nil
}
