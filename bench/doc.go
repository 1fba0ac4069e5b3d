// Package bench holds side-by-side benchmarks of dpstat's samplers and
// mechanisms against Google's differential-privacy library. It is a module
// of its own so that dpstat itself never depends on the library it is
// compared with.
package bench
