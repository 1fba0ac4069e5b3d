// Package query answers aggregate SQL over a catalog's tables with
// differential privacy. It is the service at the end of four stages, each
// a package of its own:
//
//   - parse turns the analyst's SQL text, read with the PostgreSQL grammar,
//     into the logical IR, and refuses what it cannot express;
//   - ir is that IR: the relation a query reads, its conditions, typed
//     expressions, keys and aggregates, each with its privacy facts;
//   - dpplan derives every released statistic's sensitivity from the plan's
//     stages (contribution bounding, clamping, aggregation, noise), splits
//     ε and picks the mechanisms, and later adds the noise;
//   - sqlgen generates the engine statements that compute the plan's exact
//     statistics, through the engine's dialect (never from the analyst's
//     text).
//
// A Service prepares a query through those stages, charges its cost to a
// durable ledger, runs the statements on the engine once, and only then
// adds noise and releases the answer.
//
// Beyond counts, sums and averages, the SQL covers COUNT(DISTINCT), MIN
// and MAX, variances and standard deviations, quantiles (exponential
// mechanism over a public candidate grid), GROUP BY columns without public
// values (DP key selection, which spends δ), computed and public-image
// keys, the most common values (permute-and-flip), joins, CTEs and
// per-person pre-aggregation, and a Gaussian plan accounted in zCDP for
// queries with many aggregates. EXPLAIN and Prepared.Explain describe a
// query without reading data or charging, and a ledger that is also an
// AnswerStore makes answers repeat-safe.
package query
