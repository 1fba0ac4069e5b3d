// Package dpplan is the differential-privacy plan of a query.
//
// NewPlanDelta reads only the facts an ir.Query carries. It bounds each
// person's contribution (at most L0 groups and L∞ rows per group),
// derives each released statistic's sensitivity from the plan's stages
// (Contribution, Summand), splits ε and δ among the releases, and picks
// the mechanisms: Laplace and geometric noise, or the Gaussian plan in
// zCDP, key selection, the exponential mechanism for quantiles,
// permute-and-flip for the most common values.
//
// After the engine has computed the exact per-group statistics (Exact),
// Noise adds the noise, selects the released keys and evaluates
// post-processing over the released values. Form names the ways the
// engine may compute the same exact statistics.
package dpplan
