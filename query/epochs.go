package query

import (
	"fmt"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/epoch"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// epochsOf derives the epochs query q reads on base, a table that
// declares an epoch (nil otherwise), from q's conditions and the declared
// bounds (ir.EpochRange), adds the condition that enforces them to q's
// WHERE, so that the statement never reads a row of an epoch it was not
// charged for, and refuses, before any charge, what would mix one
// person's rows of several epochs inside one unit's contribution. A join
// of private tables must equate their epochs (epochJoins).
func epochsOf(q *ir.Query, base *ir.Table) (*epoch.Range, error) {
	if base == nil || base.Epoch == nil {
		return nil, nil
	}
	e := base.Epoch
	if q.Pre != nil {
		return preEpochs(q, base)
	}
	if err := epochJoins(q, base); err != nil {
		return nil, err
	}
	rel := base
	if q.Relation != nil {
		rel = q.Relation
	}
	r, err := restrictEpochs(epochRelation(rel, e), &q.Where)
	if err != nil {
		return nil, err
	}
	if r.Len() > 1 && base.HasPrivacyUnit() {
		for _, a := range q.Aggregates() {
			if a.Func == ir.CountDistinct && !groupedByEpoch(q, e) {
				return nil, ir.Refuse("COUNT(DISTINCT %s) over %d %ss (%s): on table %s each person's rows of one %s are a unit of their own, so a person present in several %ss would be counted once in each; add GROUP BY date_trunc('%s', %s), or restrict %s to one %s",
					a.Column, r.Len(), e.Every, r, base.Name, e.Every, e.Every, e.Every, e.Column, e.Column, e.Every)
			}
		}
	}
	return &r, nil
}

// epochRelation is rel declaring epoch e: rel itself when it declares
// one (the table, or a relation built from it), else one copy of it.
func epochRelation(rel *ir.Table, e *ir.Epoch) *ir.Table {
	if rel.Epoch != nil {
		return rel
	}
	cp := *rel
	cp.Epoch = e
	return &cp
}

// restrictEpochs derives the epochs that condition *where reads on rel
// (which declares the epoch: ir.EpochRange), refused when it leaves no
// declared epoch, and ANDs to *where the filter that keeps only the rows
// of those epochs (ir.EpochFilter), so that the statement never reads a
// row of an epoch it was not charged for.
func restrictEpochs(rel *ir.Table, where *ir.Expr) (epoch.Range, error) {
	r, lo, hi, empty, _ := ir.EpochRange(rel, *where)
	if empty {
		c := rel.Column(rel.Epoch.Column)
		return r, ir.Refuse("the conditions on %s leave no date within its declared range (%s to %s): the query would read no epoch; ask about dates in that range",
			c.Name, schema.FormatValue(c.Type, int64(*c.Lower)), schema.FormatValue(c.Type, int64(*c.Upper)))
	}
	filter := ir.EpochFilter(rel, lo, hi)
	if *where == nil {
		*where = filter
	} else {
		*where = ir.And{Args: []ir.Expr{filter, *where}}
	}
	return r, nil
}

// preEpochs is epochsOf for a query that reads a per-person
// pre-aggregation of base: the epochs follow from the inner query's
// conditions, whose WHERE gets the filter that enforces them; the
// statement groups the inner query by the epoch as well as by the person
// (sqlgen), so that each pre-aggregated row holds the rows of one
// (person, epoch) unit. An inner join with a private table must equate
// the epochs as a join outside does (epochJoins); COUNT(DISTINCT) over
// several epochs, which would count a person once over epochs that are
// protected separately, is refused.
func preEpochs(q *ir.Query, base *ir.Table) (*epoch.Range, error) {
	e, pre := base.Epoch, q.Pre
	if pre.Query == nil || pre.Relation == nil {
		return nil, ir.Refuse("table %s declares epochs by %s of %s: this subquery cannot be grouped by (person, %s); aggregate the table directly (GROUP BY date_trunc('%s', %s) keeps the %ss apart)",
			base.Name, e.Every, e.Column, e.Every, e.Every, e.Column, e.Every)
	}
	if err := epochJoins(pre.Query, base); err != nil {
		return nil, err
	}
	if pre.Relation.Column(e.Column) == nil {
		return nil, ir.Refuse("table %s declares epochs by %s of %s, which this subquery does not read: it cannot be grouped by (person, %s); aggregate the table directly",
			base.Name, e.Every, e.Column, e.Every)
	}
	r, err := restrictEpochs(epochRelation(pre.Relation, e), &pre.Query.Where)
	if err != nil {
		return nil, err
	}
	if r.Len() > 1 && base.HasPrivacyUnit() {
		for _, a := range q.Aggregates() {
			if a.Func == ir.CountDistinct {
				return nil, ir.Refuse("COUNT(DISTINCT %s) over %d %ss (%s) of a subquery grouped by the person: on table %s each person's rows of one %s are a unit of their own, so a person present in several %ss would be counted once in each; restrict %s to one %s inside the subquery",
					a.Column, r.Len(), e.Every, r, base.Name, e.Every, e.Every, e.Column, e.Every)
			}
		}
	}
	return &r, nil
}

// groupedByEpoch reports whether q groups by date_trunc of the epoch
// column by a unit within one epoch, so that each group holds one epoch.
func groupedByEpoch(q *ir.Query, e *ir.Epoch) bool {
	for _, k := range q.GroupBy {
		b := q.Buckets[k]
		if b != nil && b.Kind == ir.DateBucket && b.Trunc && b.Shift == 0 && b.Column == e.Column && epoch.Valid(b.Field) && epoch.Nests(b.Field, e.Every) {
			return true
		}
	}
	return false
}

// epochWords states the guarantee of a query over epochs r of table t
// (which declares the epochs all), for
// EXPLAIN and the answer's notes: what it reads and is charged, and the
// protection of one person's rows of one epoch, and of a person present in
// every declared epoch, under the catalog's budgets.
func epochWords(r *epoch.Range, all epoch.Range, column string, eps float64, t *catalog.Table) string {
	out := fmt.Sprintf("the privacy unit is (person, %s of %s): this query reads %d %s(s), %s, and is charged ε=%g in each",
		r.Every, column, r.Len(), r.Every, r, eps)
	per, whose := t.Budget.Epsilon, "each analyst's budget per "+r.Every+"; no total budget caps the analysts together"
	if t.TotalBudget != nil {
		per, whose = t.TotalBudget.Epsilon, "the total budget per "+r.Every+", every analyst together"
	}
	if all.Len() > 0 && per > 0 {
		out += fmt.Sprintf("; each person's rows of one %s are protected at ε = %g (%s), and a person present in all %d declared %ss (%s) has, over all of them, at most %d × %g = %.10g",
			r.Every, per, whose, all.Len(), r.Every, all, all.Len(), per, per*float64(all.Len()))
	}
	return out
}
