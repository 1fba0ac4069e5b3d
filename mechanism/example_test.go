package mechanism_test

import (
	"fmt"
	"math"

	"github.com/dpstat/dpstat/mechanism"
	"github.com/dpstat/dpstat/random"
)

// The examples draw their noise from a seeded source so that their output
// is reproducible. A real release leaves Source nil, which selects the
// secure source: anyone who knows a seed can remove the noise.

// How many patients in a clinic's records have a given disease? One person
// changes the count by at most 1, so the sensitivity is 1. The geometric
// mechanism adds integer noise, the natural choice for a count.
func ExampleGeometric_patientCount() {
	const patientsWithDisease = 42
	m, err := mechanism.NewGeometric(mechanism.GeometricOptions{
		Epsilon:     0.5,
		Sensitivity: 1,
		Source:      random.NewInsecureSeeded(1),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("noisy count:", m.Release(patientsWithDisease))
	fmt.Printf("95%% of releases are within ±%g of the true count\n", m.Interval(0.95))
	fmt.Println("cost:", m.Cost())
	// Output:
	// noisy count: 44
	// 95% of releases are within ±6 of the true count
	// cost: ε=0.5 δ=0 ρ=0.125
}

// The same count with the Laplace mechanism: the release is a real number
// on a fine power-of-two grid.
func ExampleLaplace_patientCount() {
	m, err := mechanism.NewLaplace(mechanism.LaplaceOptions{
		Epsilon:     0.5,
		Sensitivity: 1,
		Source:      random.NewInsecureSeeded(1),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := m.Release(42)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("noisy count: %.2f\n", v)
	fmt.Printf("scale b ≈ %.4f (Δ/ε = 2, plus one grid step of %g)\n", m.Scale(), m.Granularity())
	fmt.Printf("95%% interval: ±%.2f\n", m.Interval(0.95))
	// Output:
	// noisy count: 44.22
	// scale b ≈ 2.0000 (Δ/ε = 2, plus one grid step of 9.5367431640625e-07)
	// 95% interval: ±5.99
}

// A sum of ages. Ages are clamped to the declared range [0, 100] before
// summing, so one person changes the sum by at most 100: the sensitivity.
// The bounds come from the data owner's declaration, never from the data.
func ExampleLaplace_sumOfAges() {
	const lo, hi = 0, 100
	ages := []float64{34, 51, 29, 102, 67, 45, -1, 38} // 102 and -1 are data errors
	sum := 0.0
	for _, a := range ages {
		sum += math.Min(math.Max(a, lo), hi)
	}
	m, err := mechanism.NewLaplace(mechanism.LaplaceOptions{
		Epsilon:     1,
		Sensitivity: math.Max(math.Abs(lo), math.Abs(hi)),
		Source:      random.NewInsecureSeeded(2),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := m.Release(sum)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("true clamped sum:", sum)
	fmt.Printf("noisy sum: %.1f ± %.1f (95%%)\n", v, m.Interval(0.95))
	// Output:
	// true clamped sum: 364
	// noisy sum: 472.0 ± 299.6 (95%)
}

// The most common nationality among respondents, chosen by the exponential
// mechanism with the count of each nationality as its score. Adding or
// removing one person changes one count by 1: the sensitivity is 1.
func ExampleExponential_mostCommonNationality() {
	nationalities := []string{"French", "German", "Italian", "Spanish", "Polish"}
	counts := []float64{412, 530, 298, 377, 140}
	m, err := mechanism.NewExponential(mechanism.ExponentialOptions{
		Epsilon:     0.1,
		Sensitivity: 1,
		Source:      random.NewInsecureSeeded(3),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	i, err := m.Select(counts)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("most common nationality:", nationalities[i])
	fmt.Printf("with probability 95%%, its count is within %.0f of the largest\n",
		m.UtilityBound(len(counts), 0.05))
	// Output:
	// most common nationality: German
	// with probability 95%, its count is within 92 of the largest
}

// Choosing a price for a digital good: revenue at price p is
// p·#{buyers who value the good at p or more}. One buyer changes the
// revenue at price p by at most p, so the sensitivity is the largest price.
func ExampleExponential_pricing() {
	values := []float64{1, 1, 2, 3, 3, 3, 4, 5, 5, 6, 8, 9, 9, 10, 10, 10, 10, 12, 14, 15}
	prices := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	revenue := make([]float64, len(prices))
	for i, p := range prices {
		buyers := 0
		for _, v := range values {
			if v >= p {
				buyers++
			}
		}
		revenue[i] = p * float64(buyers)
	}
	m, err := mechanism.NewExponential(mechanism.ExponentialOptions{
		Epsilon:     1,
		Sensitivity: prices[len(prices)-1],
		Source:      random.NewInsecureSeeded(4),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	i, err := m.Select(revenue)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("price %g, revenue %g (best possible: %g)\n", prices[i], revenue[i], maxOf(revenue))
	// Output:
	// price 7, revenue 70 (best possible: 81)
}

func maxOf(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = math.Max(m, x)
	}
	return m
}

// Reporting a location on a 4×4 grid (16 cells) with local privacy: each
// person randomizes their own cell with k-ary randomized response before
// sending it, and the collector de-biases the counts of reports.
func ExampleKaryRR_gridLocation() {
	const k = 4
	src := random.NewInsecureSeeded(5)
	m, err := mechanism.NewKaryRR(mechanism.KaryRROptions{Epsilon: 2, K: k * k, Source: src})
	if err != nil {
		fmt.Println(err)
		return
	}
	// 5,000 people: 2,000 in cell (1, 2), the rest spread evenly.
	counts := make([]int64, k*k)
	for person := 0; person < 5000; person++ {
		cell := person % (k * k)
		if person < 2000 {
			cell = 1*k + 2
		}
		report, err := m.Randomize(cell)
		if err != nil {
			fmt.Println(err)
			return
		}
		counts[report]++
	}
	est, err := m.Estimate(counts)
	if err != nil {
		fmt.Println(err)
		return
	}
	lo, hi := est[1*k+2].Interval(0.95)
	fmt.Printf("p = %.4f, q = %.4f\n", m.P(), m.Q())
	fmt.Printf("cell (1, 2): true share %.3f, estimated %.3f, 95%% interval [%.3f, %.3f]\n",
		(2000+3000.0/16)/5000, est[1*k+2].Value, lo, hi)
	// Output:
	// p = 0.3300, q = 0.0447
	// cell (1, 2): true share 0.438, estimated 0.434, 95% interval [0.401, 0.468]
}

// The same location reported with the exponential mechanism, scoring each
// cell by minus its distance to the true cell: nearby cells are likely, far
// ones unlikely. Moving the person anywhere on the grid changes any score by
// at most the grid's diameter, the sensitivity; that large sensitivity is why
// even at ε = 4 a single report is often far from the truth.
func ExampleExponential_gridLocation() {
	const k = 4
	trueRow, trueCol := 1, 2
	scores := make([]float64, k*k)
	for r := 0; r < k; r++ {
		for c := 0; c < k; c++ {
			scores[r*k+c] = -math.Hypot(float64(r-trueRow), float64(c-trueCol))
		}
	}
	m, err := mechanism.NewExponential(mechanism.ExponentialOptions{
		Epsilon:     4,
		Sensitivity: math.Hypot(k-1, k-1),
		Source:      random.NewInsecureSeeded(6),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := 0; i < 3; i++ {
		cell, err := m.Select(scores)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("reported cell (%d, %d)\n", cell/k, cell%k)
	}
	// Output:
	// reported cell (1, 3)
	// reported cell (2, 1)
	// reported cell (2, 1)
}

// A yes/no survey on a sensitive question by randomized response: each
// respondent answers truthfully with probability p = 3/4 (ε = ln 3), so no
// single answer reveals anything certain, yet the share of "yes" is
// estimated without bias.
func ExampleBinaryRR_survey() {
	src := random.NewInsecureSeeded(7)
	m, err := mechanism.NewBinaryRR(mechanism.BinaryRROptions{P: 0.75, Source: src})
	if err != nil {
		fmt.Println(err)
		return
	}
	const n = 2000
	var yes int64
	for i := 0; i < n; i++ {
		truth := i%10 < 3 // 30% would truly answer yes
		if m.Randomize(truth) {
			yes++
		}
	}
	est, err := m.Estimate(yes, n)
	if err != nil {
		fmt.Println(err)
		return
	}
	lo, hi := est.Interval(0.95)
	fmt.Printf("ε = %.4f\n", m.Cost().Epsilon)
	fmt.Printf("%d of %d reported yes; estimated share π̂ = %.3f, 95%% interval [%.3f, %.3f]\n", yes, n, est.Value, lo, hi)
	// Output:
	// ε = 1.0986
	// 804 of 2000 reported yes; estimated share π̂ = 0.304, 95% interval [0.261, 0.347]
}

// Report-noisy-max picks the candidate with the largest noisy score. With
// exponential noise it is permute-and-flip: never less accurate than the
// exponential mechanism, at zCDP cost ρ = ε²/2.
func ExampleReportNoisyMax() {
	topics := []string{"housing", "transport", "schools", "parks"}
	votes := []float64{180, 240, 233, 95}
	m, err := mechanism.NewReportNoisyMax(mechanism.NoisyMaxOptions{
		Epsilon:     0.5,
		Sensitivity: 1,
		Noise:       mechanism.ExponentialNoise,
		Source:      random.NewInsecureSeeded(8),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	i, err := m.Select(votes)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("most requested topic:", topics[i])
	fmt.Println("cost:", m.Cost())
	// Output:
	// most requested topic: transport
	// cost: ε=0.5 δ=0 ρ=0.125
}

// The Gaussian mechanism releases a value with (ε, δ)-DP, calibrated by the
// analytic method of Balle & Wang; its zCDP cost adds up tightly over many
// releases.
func ExampleGaussian() {
	m, err := mechanism.NewGaussian(mechanism.GaussianOptions{
		Epsilon:     1,
		Delta:       1e-5,
		Sensitivity: 1,
		Source:      random.NewInsecureSeeded(9),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := m.Release(100)
	if err != nil {
		fmt.Println(err)
		return
	}
	classic, _ := mechanism.ClassicGaussianSigma(0.99, 1e-5, 1)
	fmt.Printf("σ = %.4f (the classic formula at ε = 0.99 needs %.4f)\n", m.Sigma(), classic)
	fmt.Printf("noisy value: %.2f ± %.2f (95%%)\n", v, m.Interval(0.95))
	fmt.Printf("cost: ε = %g, δ = %g, ρ = %.4f\n", m.Cost().Epsilon, m.Cost().Delta, m.Cost().Rho)
	// Output:
	// σ = 3.7307 (the classic formula at ε = 0.99 needs 4.8937)
	// noisy value: 101.21 ± 7.31 (95%)
	// cost: ε = 1, δ = 1e-05, ρ = 0.0359
}
