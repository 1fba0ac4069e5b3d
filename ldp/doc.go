// Package ldp holds dpstat's local differential privacy: randomizers that run
// on the person's own device, so that only a noisy report ever leaves it, and
// the estimators a collector runs over many such reports.
//
// A FrequencyOracle answers "what fraction of people hold each value of a
// finite domain": Randomize turns one person's value into a Report that is
// ε-locally differentially private (for every two values v, v' and every
// report r, P[r | v] ≤ e^ε·P[r | v']); an Aggregator accumulates reports into
// a Tally of counts and returns, for every value, an unbiased frequency
// estimate with its variance and (1−α) interval. The mechanisms are
//
//   - binary randomized response (KindRR) and k-ary randomized response
//     (KindKRR), built on package mechanism's BinaryRR and KaryRR;
//   - optimized unary encoding (KindOUE) and optimized local hashing
//     (KindOLH) of Wang, Blocki, Li and Jha, "Locally Differentially Private
//     Protocols for Frequency Estimation", USENIX Security 2017;
//   - symmetric unary encoding (KindSUE), the basic one-time RAPPOR.
//
// Mean estimates the mean of a number in a declared range [lo, hi] with the
// one-dimensional mechanism of Duchi, Jordan and Wainwright (JASA 2018),
// implemented as unbiased stochastic rounding to lo or hi followed by binary
// randomized response. Recommend picks, for a given ε and domain size, the
// frequency oracle whose estimates have the least variance.
//
// Sampling is exact. Every probability a randomizer uses is a float64, that
// is an exact dyadic rational, rounded from the paper's irrational value in
// the direction that keeps the privacy loss at most the ε requested; Params
// publishes these exact values (as hexadecimal floats and as numerator over
// a power of two) so that another implementation, such as the JavaScript
// client, samples from the very same distribution, and the estimators use
// the exact probabilities. Bernoulli trials come from package noise, or from
// an exact 64-lane variant here for unary encodings; the random source is
// the secure one unless a test passes a seeded source.
package ldp
