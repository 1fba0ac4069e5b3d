// Package parse turns an analyst's SQL text into the logical IR
// (ir.Query).
//
// The text is read with the PostgreSQL grammar; common table expressions
// and subqueries in FROM are merged into the query that reads them (view
// merging, with a cap on the merged size so that planning time is
// bounded); a subquery grouped by the privacy unit becomes a per-person
// pre-aggregation. Expressions are typed and bounded as they are read.
// Anything the IR cannot express is refused with an ir.RefusedError that
// names the construct and what would be accepted, before any data is read
// and at no cost.
package parse
