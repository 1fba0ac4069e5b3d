package accounting

// Clone returns an independent copy of b: its limit, rule, sums and
// number of releases, as MarshalJSON and UnmarshalJSON would carry them,
// without the round trip through text. Spending on the copy leaves b as
// it was.
func (b *Budget) Clone() *Budget {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := &Budget{limit: b.limit, rule: b.rule, releases: b.releases, spent: b.spent, spentOK: b.spentOK}
	c.eps.Set(&b.eps)
	c.delta.Set(&b.delta)
	c.rho.Set(&b.rho)
	c.rhoDelta.Set(&b.rhoDelta)
	return c
}
