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
package sqlgen
