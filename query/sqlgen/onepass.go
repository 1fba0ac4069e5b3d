package sqlgen

import (
	"strconv"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/dpplan"
)

// onePassLimit is the largest L∞ that the one-pass form keeps: the rows
// with the smallest and the largest random key of a pair.
const onePassLimit = 2

// onePass reports whether the sampled bounding keeps at most L∞ values per
// (person, group) in one pass (onePassPerUnit) instead of splitPairs' second
// read: the dialect can (engine.ExtremeSampler) and L∞ ≤ 2. The choice
// depends on the plan and the dialect only, never on the data.
func (g *sqlGen) onePass() (engine.ExtremeSampler, bool) {
	es, ok := g.d.(engine.ExtremeSampler)
	return es, ok && g.p.Contribution.RowsPerGroup >= 1 && g.p.Contribution.RowsPerGroup <= onePassLimit
}

// onePassPerUnit returns the per-(person, group) aggregates of the one-pass
// form, for statistics that read values (the others are perUnit's):
//
//   - a count of values counts at most L∞ of them;
//   - with L∞ = 1, a sum takes the value of the row with the smallest
//     random key among the rows whose value is not NULL: a uniform random
//     one, as SmallestN's list of one;
//   - with L∞ = 2, a pair with at most 2 values sums them all; a pair with
//     more sums the values of the rows with the smallest and the largest
//     key among its non-NULL rows. The keys are i.i.d. and continuous, so
//     their ranks are a uniform random permutation of those rows, and the
//     rows ranked first and last are a uniform random 2-subset, the same
//     distribution as SmallestN's two smallest.
//
// The random key of each row is the rows stage's (rkName), drawn once per
// row and independent of the data, so which values a person keeps depends
// only on that person's rows and fresh randomness, as in sampled.
func (g *sqlGen) onePassPerUnit(es engine.ExtremeSampler, rowExprs []string, perUnit func(int) string) func(int) string {
	p := g.p
	L := p.Contribution.RowsPerGroup
	ls := strconv.FormatInt(L, 10)
	return func(i int) string {
		v := rowExprs[i]
		switch p.Statistics[i].Summand.Kind {
		case dpplan.NonNullCount:
			// NULL for a pair without values, as the list's count is.
			return "nullif(least(count(" + v + "), " + ls + "), 0)"
		case dpplan.FixedPointSum, dpplan.CentredSquareSum:
			if L == 1 {
				return es.ArgMin(v, rkName)
			}
			return "CASE WHEN count(" + v + ") <= " + ls + " THEN " + g.sum(i, v) +
				" ELSE " + es.SumOfTwo(es.ArgMin(v, rkName), es.ArgMax(v, rkName)) + " END"
		}
		return perUnit(i)
	}
}
