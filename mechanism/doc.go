// Package mechanism holds dpstat's differentially private mechanisms: the
// Laplace, geometric and Gaussian mechanisms for numbers, binary and k-ary
// randomized response, the exponential mechanism, report-noisy-max
// (permute-and-flip) and sparse vector (AboveThreshold).
//
// Every mechanism has a validated constructor taking an Options struct; a bad
// parameter gives an error naming the parameter, its value and what is
// accepted, never a panic. Each states its privacy cost (Cost), the scale of
// its noise and its accuracy (Interval or UtilityBound).
//
// Noise is sampled exactly by package noise: integer noise from exact
// discrete samplers, real values on a power-of-two grid with the sensitivity
// grown by one grid step to cover the rounding, selection by exact
// Bernoulli(exp(−γ)) trials. A nil Source means the production source: a
// secure generator borrowed from the pool for the duration of one call, which
// makes the methods safe for concurrent use. A non-nil Source is used as is
// and is only as concurrency-safe as it is.
package mechanism
