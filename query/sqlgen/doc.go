// Package sqlgen generates the engine statements that compute a plan's
// exact statistics.
//
// A statement bounds each person's contribution, clamps every value to
// its bounds and rounds it onto its power-of-two grid, and computes exact
// per-group sums and counts (SQL, FormSQL); quantiles get a histogram
// statement each (HistogramSQL). Everything is spelled through the
// engine's dialect and its capabilities (engine.Dialect): identifiers are
// quoted and literals rendered by the dialect, and nothing of the
// analyst's text reaches the engine.
//
// A statement is built as a small tree of SELECTs, the relations they
// read and the stages they compose (ast.go), and one renderer spells it
// through the dialect: stages become WITH queries, or nested subqueries
// for a dialect without them (engine.Nested). Expressions inside the tree
// are text spelled by the dialect. ast.go also says what the generated
// column and stage names (u, k0, s0, rk, b, c, …) mean.
package sqlgen
