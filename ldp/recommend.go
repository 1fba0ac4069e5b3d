package ldp

import (
	"fmt"
	"math"
)

// ApproxVariance returns the variance, per report (multiply by 1/N), of a
// frequency estimate of a rare value (f ≈ 0) for a mechanism at ε over d
// values, by the formulas of Wang et al. (2017), computed with the exact
// probabilities the mechanism would use: q(1−q)/(p−q)². For reference, with
// e = e^ε: krr (d−2+e)/(e−1)², oue 4e/(e−1)², olh (e−1+g)²/((e−1)²(g−1)),
// sue e^(ε/2)/(e^(ε/2)−1)².
func ApproxVariance(kind Kind, epsilon float64, d int) (float64, error) {
	o, err := New(Options{Mechanism: kind, Epsilon: epsilon, Domain: d})
	if err != nil {
		return 0, err
	}
	return o.Variance(1, 0), nil
}

// Recommend returns the frequency oracle with the least variance for ε and
// a domain of d values, and that variance per report. Binary randomized
// response is chosen for d = 2; ties go to the smaller report (krr, then
// olh, then oue). For large domains olh and oue have nearly equal variance;
// olh's reports are a seed and a small number, oue's are d bits, but olh's
// aggregation costs d hash evaluations per report.
func Recommend(epsilon float64, d int) (Kind, float64, error) {
	if err := checkEpsilon(epsilon); err != nil {
		return "", 0, fmt.Errorf("ldp recommend: %w", err)
	}
	if d < 2 || d > MaxDomain {
		return "", 0, fmt.Errorf("ldp recommend: domain = %d: want a number of values in [2, %d]", d, MaxDomain)
	}
	best, bestV := Kind(""), math.Inf(1)
	for _, k := range FrequencyKinds {
		if k == KindRR && d != 2 {
			continue
		}
		v, err := ApproxVariance(k, epsilon, d)
		if err != nil {
			continue
		}
		// Prefer earlier kinds unless a later one is better by more than
		// rounding.
		if v < bestV*(1-1e-9) {
			best, bestV = k, v
		}
	}
	if best == "" {
		return "", 0, fmt.Errorf("ldp recommend: no mechanism accepts epsilon = %v with domain = %d", epsilon, d)
	}
	return best, bestV, nil
}
