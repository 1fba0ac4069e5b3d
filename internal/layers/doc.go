// Package layers holds the test of dpstat's layering rule: every
// production package imports only packages of lower layers (or of its own
// folder's layer entry), so that no folder reaches back up to what is
// built on it, and that the query stages past the parser (ir, dpplan,
// sqlgen) never import the catalog. docs/architecture.md describes the
// layers.
package layers
