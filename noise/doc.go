// Package noise holds the exact samplers that every dpstat mechanism draws its
// noise from.
//
// Everything here works on integers and exact rationals: a uniform integer
// without modulo bias, Bernoulli trials with rational or dyadic success
// probabilities, Bernoulli(exp(−γ)) for rational γ, the discrete Laplace and
// the discrete Gaussian distributions (Canonne, Kamath & Steinke 2020, "The
// Discrete Gaussian for Differential Privacy"). Real-valued releases are
// placed on a power-of-two Grid, so that a release is an exact integer number
// of grid steps and the floating-point conversion at the very end is
// post-processing.
//
// No sampler here uses floating-point arithmetic to decide an outcome, and
// every loop is bounded. A loop that reaches its cap returns a value that
// does not depend on the data; the probability that any cap is reached while
// drawing one sample is below SamplerDelta, so a release that is ε-DP with the
// exact distribution is ε-DP up to a statistical distance of SamplerDelta
// with the implemented one. The running time of a sampler depends only on the
// random draws, never on the data; it is bounded but not constant.
//
// Samplers take a random.Source. They are as safe for concurrent use as the
// source they are given: random.Shared{} is safe, while a source obtained
// from random.Borrow belongs to one goroutine until it is returned.
package noise
