// Package reuse answers COUNT, SUM and AVG queries from measurements that
// earlier queries released, by post-processing alone: nothing here reads
// data, and an answer derived from released noisy values costs no budget.
//
// A release's Record keeps, per released cell, the raw noisy value of each
// statistic it measured (rows, non-NULL values, a clamped sum, a centred
// sum) with the law of its noise. A new query's cell is derived when it is
// exactly a union of released cells of one context: the same table
// declaration, the same filter once its conditions on declared value lists
// are taken out, the same clamping bounds and contribution bounds. Cells
// differ only in the values of columns with declared value lists: a coarser
// GROUP BY or a total (a row may hold NULL or an unlisted value, which no
// GROUP BY shows: a release's record also keeps the hidden cells of those
// rows that its plan measured, dpplan.Plan.MeasureRest, and without them a
// roll-up is derived only over the listed values), a
// subset of keys, WHERE col = v or col IN (…), or in the
// ranges and bins of a bounded int or date column (ranges.go). Overlapping
// releases of one statistic are reconciled by generalized least squares
// (reconcile.go), so that a derived total is the sum of its derived parts;
// where that does not apply, independent derivations from several
// releases are combined by inverse-variance weighting. The derived value's
// variance is the weighted sum of the noises' exact variances, and its
// interval a Chernoff bound over their exact generating functions, valid
// for every data set.
package reuse
