package accounting

import (
	"errors"
	"fmt"
	"math/big"
	"sync"
)

// lockAll orders the taking of many budgets' locks (SpendAll).
var lockAll sync.Mutex

// SpendAll charges cost c in every budget of bs at once, or in none of
// them: the ledger's epochs, where one release is charged in each epoch it
// reads. It decides exactly as a Spend per budget would (c fits in all of
// them), but converts c once and, with rule Basic, compares only the
// largest sums with the shared limit. It returns the indices of the
// budgets c does not fit in (nothing is spent then) and the refusal of the
// first, or, when everything was spent, most: the index of a budget that
// has spent the most ε now (the one with the least left). A cost that
// fails Cost.Validate, or a budget list whose limits or rules differ, is
// err, with nothing spent. bs must not be empty.
func SpendAll(bs []*Budget, c Cost) (refused []int, first *ExceededError, most int, err error) {
	if len(bs) == 0 {
		return nil, nil, 0, errors.New("spend in no budget: want at least one")
	}
	limit, rule := bs[0].Limit(), bs[0].Rule()
	seen := make(map[*Budget]bool, len(bs))
	for i, b := range bs {
		if seen[b] {
			return nil, nil, 0, fmt.Errorf("spend in budget %d twice: want each budget once", i)
		}
		seen[b] = true
		if b.Limit() != limit || b.Rule() != rule {
			return nil, nil, 0, fmt.Errorf("spend in budgets of different limits or rules (budget %d: ε=%g δ=%g %s; budget 0: ε=%g δ=%g %s): want one limit and rule", i, b.Limit().Epsilon, b.Limit().Delta, b.Rule(), limit.Epsilon, limit.Delta, rule)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, nil, 0, err
	}
	if rule == Basic && c.Epsilon == 0 && c.Delta == 0 && c.Rho > 0 {
		return nil, nil, 0, fmt.Errorf("cost %v: %w", c, ErrNoEpsDelta)
	}
	// All the locks are taken under lockAll, so that two SpendAll over
	// overlapping budgets, in any order, cannot wait for each other.
	lockAll.Lock()
	for _, b := range bs {
		b.mu.Lock()
	}
	lockAll.Unlock()
	defer func() {
		for _, b := range bs {
			b.mu.Unlock()
		}
	}()
	fits := true
	var next []*sums // rule ZCDP: each budget's sums after c
	if rule == Basic {
		// Every budget gains the same c, so c fits in all of them exactly
		// when it fits in the largest ε sum and in the largest δ sum.
		me, md := 0, 0
		for i, b := range bs[1:] {
			if b.eps.Cmp(&bs[me].eps) > 0 {
				me = i + 1
			}
			if b.delta.Cmp(&bs[md].delta) > 0 {
				md = i + 1
			}
		}
		var e, d big.Rat
		e.Add(&bs[me].eps, ratOf(c.Epsilon))
		d.Add(&bs[md].delta, ratOf(c.Delta))
		fits = e.Cmp(ratOf(limit.Epsilon)) <= 0 && d.Cmp(ratOf(limit.Delta)) <= 0
		most = me
	} else {
		// The zCDP conversion is not monotone in a way the filter may
		// lean on: each budget is checked on its own.
		next = make([]*sums, len(bs))
		for i, b := range bs {
			n, err := b.admitLocked(c)
			if err != nil {
				fits = false
				break
			}
			next[i] = n
		}
	}
	if !fits {
		for i, b := range bs {
			if _, err := b.admitLocked(c); err != nil {
				var ex *ExceededError
				if !errors.As(err, &ex) {
					return nil, nil, 0, err
				}
				refused = append(refused, i)
				if first == nil {
					first = ex
				}
			}
		}
		return refused, first, 0, nil
	}
	if next != nil {
		for i, b := range bs {
			n := next[i]
			b.eps.Set(&n.eps)
			b.delta.Set(&n.delta)
			b.rho.Set(&n.rho)
			b.rhoDelta.Set(&n.rhoDelta)
			b.releases++
			b.spent, b.spentOK = n.spent, true
			if i == 0 || n.spent.Epsilon > bs[most].spent.Epsilon {
				most = i
			}
		}
		return nil, nil, most, nil
	}
	z := zcdpView(c)
	ce, cd, cr, crd := ratOf(c.Epsilon), ratOf(c.Delta), ratOf(z.Rho), ratOf(z.RhoDelta)
	var tmp big.Int
	add := func(sum, x *big.Rat) {
		if x.Sign() != 0 { // adding zero would still normalise
			addRat(sum, x, &tmp)
		}
	}
	for _, b := range bs {
		add(&b.eps, ce)
		add(&b.delta, cd)
		add(&b.rho, cr)
		add(&b.rhoDelta, crd)
		b.releases++
		b.spentOK = false
	}
	return nil, nil, most, nil
}

// SameSums reports whether b and o hold the same limit, rule, release
// count and exact sums (what Sums would return for both), without writing
// the sums out.
func (b *Budget) SameSums(o *Budget) bool {
	if b == o {
		return true
	}
	// One lock at a time, so that a.SameSums(b) and b.SameSums(a) may run
	// together.
	b.mu.Lock()
	limit, rule, n := b.limit, b.rule, b.releases
	b.mu.Unlock()
	o.mu.Lock()
	differ := limit != o.limit || rule != o.rule || n != o.releases
	o.mu.Unlock()
	if differ {
		return false
	}
	b.mu.Lock()
	limit, rule, n = b.limit, b.rule, b.releases
	var mine [4]big.Rat
	mine[0].Set(&b.eps)
	mine[1].Set(&b.delta)
	mine[2].Set(&b.rho)
	mine[3].Set(&b.rhoDelta)
	b.mu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	return limit == o.limit && rule == o.rule && n == o.releases &&
		sameRat(&mine[0], &o.eps) && sameRat(&mine[1], &o.delta) && sameRat(&mine[2], &o.rho) && sameRat(&mine[3], &o.rhoDelta)
}

// sameRat compares two normalised rationals (every big.Rat operation
// leaves its result normalised) term by term.
func sameRat(a, b *big.Rat) bool {
	return a.Num().Cmp(b.Num()) == 0 && a.Denom().Cmp(b.Denom()) == 0
}

// Sum names one of a budget's exact sums (ExactSums).
type Sum int

// The sums of a budget: of the ε's, the δ's, the ρ's and the
// approximate-zCDP δ's.
const (
	SumEpsilon Sum = iota
	SumDelta
	SumRho
	SumRhoDelta
)

func (b *Budget) sumLocked(s Sum) *big.Rat {
	switch s {
	case SumDelta:
		return &b.delta
	case SumRho:
		return &b.rho
	case SumRhoDelta:
		return &b.rhoDelta
	}
	return &b.eps
}

// AppendSum appends sum s of b to dst as Sums writes it ("3/8", "0"),
// without allocating a string: the ledger writes hundreds of sums per
// commit.
func (b *Budget) AppendSum(dst []byte, s Sum) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.sumLocked(s)
	dst = appendInt(dst, r.Num())
	if !r.IsInt() {
		dst = append(dst, '/')
		dst = appendInt(dst, r.Denom())
	}
	return dst
}

// SumIsZero reports whether sum s of b is zero.
func (b *Budget) SumIsZero(s Sum) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sumLocked(s).Sign() == 0
}
