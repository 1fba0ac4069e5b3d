package dpplan

import (
	"fmt"
	"math"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/mechanism"
	"github.com/dpstat/dpstat/random"
)

// MinGaussianAggregates is the fewest aggregates for which the Gaussian
// plan is considered.
const MinGaussianAggregates = 2

// gaussianSum adapts mechanism.Gaussian to the noise stage.
type gaussianSum struct{ *mechanism.Gaussian }

// Scale is the noise's standard deviation.
func (g gaussianSum) Scale() float64 { return g.Sigma() }

// gaussianCount releases counts with Gaussian noise rounded to an integer
// (post-processing).
type gaussianCount struct{ *mechanism.Gaussian }

// Release adds Gaussian noise to x and rounds it to an integer.
func (g gaussianCount) Release(x int64) int64 {
	v, err := g.Gaussian.Release(float64(x))
	if err != nil {
		return x
	}
	return int64(math.Round(v))
}

// Scale is the noise's standard deviation.
func (g gaussianCount) Scale() float64 { return g.Sigma() }

// Interval is the Gaussian's half-width plus the rounding to an integer.
func (g gaussianCount) Interval(confidence float64) float64 {
	return math.Ceil(g.Gaussian.Interval(confidence) + 0.5)
}

// gaussianEligible reports whether the plan may use Gaussian noise: every
// release is a count or a sum, there are several aggregates, and no stage
// (key selection, most common values) spends δ or needs another mechanism.
func (p *Plan) gaussianEligible(delta float64) bool {
	if !(delta > 0 && delta < 1) || p.Selection != nil || p.TopK != nil || len(p.Aggregates) < MinGaussianAggregates {
		return false
	}
	for _, r := range p.Releases {
		if r.Kind == RankSelect {
			return false
		}
	}
	return true
}

// L2 is the L2 sensitivity of a release across groups (Contribution.L2).
func (p *Plan) L2(r Release) float64 { return p.Contribution.L2(r.Sensitivity) }

// ZcdpToEpsilon converts ρ-zCDP to (ε, δ)-DP: ε = ρ + 2√(ρ·ln(1/δ)).
func ZcdpToEpsilon(rho, delta float64) float64 {
	return rho + 2*math.Sqrt(rho*math.Log(1/delta))
}

// NewGaussianNoise calibrates discrete Gaussian noise for every release so
// that the releases' total zCDP ρ (from the mechanisms' own Cost().Rho,
// accounting for their grids) converts to at most (ε, δ) of the query: the
// same cost as the Laplace/geometric plan. All releases get the same
// calibration ε′, found by bisection.
func (p *Plan) NewGaussianNoise(src random.Source, delta float64) (*Noise, error) {
	build := func(e float64) (*Noise, float64, error) {
		n := &Noise{plan: p, Counts: map[int]countMechanism{}, Sums: map[int]sumMechanism{}, Selects: map[int]*mechanism.Exponential{}}
		rho := 0.0
		for i, r := range p.Releases {
			l2 := p.L2(r)
			if l2 <= 0 {
				l2 = math.SmallestNonzeroFloat64
			}
			sens := l2
			var m *mechanism.Gaussian
			var err error
			if r.Kind != NoisyCount {
				// Each group's sum is rounded to the grid separately; the
				// mechanism covers one step, the other groups' steps are
				// added in L2.
				extra := math.Sqrt(float64(p.Contribution.GroupsTouched())) - 1
				for it := 0; it < 8; it++ {
					m, err = mechanism.NewGaussian(mechanism.GaussianOptions{Epsilon: e, Delta: delta, Sensitivity: sens, Source: src})
					if err != nil {
						return nil, 0, err
					}
					need := l2 + extra*m.Granularity()
					if need <= sens {
						break
					}
					sens = need
				}
			} else {
				m, err = mechanism.NewGaussian(mechanism.GaussianOptions{Epsilon: e, Delta: delta, Sensitivity: sens, Source: src})
				if err != nil {
					return nil, 0, err
				}
			}
			rho += m.Cost().Rho
			if r.Kind == NoisyCount {
				n.Counts[i] = gaussianCount{m}
			} else {
				n.Sums[i] = gaussianSum{m}
			}
			n.Mechanisms = append(n.Mechanisms, MechanismInfo{"gaussian", r.Epsilon, sens, m.Sigma()})
		}
		return n, rho, nil
	}
	budget := p.Epsilon
	lo, hi := 0.0, budget
	var best *Noise
	bestRho := 0.0
	for it := 0; it < 40; it++ {
		mid := (lo + hi) / 2
		if mid <= 0 {
			break
		}
		n, rho, err := build(mid)
		if err != nil {
			hi = mid
			continue
		}
		if ZcdpToEpsilon(rho, delta) <= budget {
			best, bestRho, lo = n, rho, mid
		} else {
			hi = mid
		}
	}
	if best == nil {
		return nil, fmt.Errorf("query: no Gaussian calibration fits ε=%g δ=%g", budget, delta)
	}
	// The releases' ε shares are not what the Gaussian plan spends; the
	// mechanisms report the common calibration ε′ instead.
	for i := range best.Mechanisms {
		best.Mechanisms[i].Epsilon = lo
	}
	best.Cost = accounting.Cost{Epsilon: budget, Delta: delta, Rho: bestRho}
	best.Gaussian = true
	return best, nil
}

// narrower reports whether g's intervals are narrower than l's on average:
// the mean, over the aggregates, of the ratio of half-widths (for an
// aggregate made of several releases, the mean of its releases' ratios).
func narrower(g, l *Noise, confidence float64) (bool, float64) {
	half := func(nz *Noise, i int) float64 {
		if c, ok := nz.Counts[i]; ok {
			return c.Interval(confidence)
		}
		return nz.Sums[i].Interval(confidence)
	}
	total, n := 0.0, 0
	for _, a := range l.plan.Aggregates {
		r, k := 0.0, 0
		for _, i := range a.Releases {
			if hl := half(l, i); hl > 0 {
				r += half(g, i) / hl
				k++
			}
		}
		if k > 0 {
			total += r / float64(k)
			n++
		}
	}
	if n == 0 {
		return false, 1
	}
	ratio := total / float64(n)
	return ratio < 1, ratio
}

// ChooseNoise returns the Laplace/geometric noise or, when δ > 0 allows it
// and its intervals are narrower at the same cost, the Gaussian noise, with
// a note saying which was chosen and why.
func (p *Plan) ChooseNoise(lap *Noise, src random.Source, delta, confidence float64) *Noise {
	if !p.gaussianEligible(delta) {
		return lap
	}
	g, err := p.NewGaussianNoise(src, delta)
	if err != nil {
		return lap
	}
	better, ratio := narrower(g, lap, confidence)
	if better {
		g.Choice = fmt.Sprintf("noise: Gaussian (zCDP-accounted, L2 sensitivities, ρ=%s, converted to ε=%s δ=%s): its intervals are on average %.0f%% of the Laplace/geometric plan's at the same cost", accounting.Note(g.Cost.Rho), accounting.Num(g.Cost.Epsilon), accounting.Num(g.Cost.Delta), 100*ratio)
		return g
	}
	lap.Choice = fmt.Sprintf("noise: Laplace/geometric, pure ε-DP: the Gaussian plan at the same cost (ε=%s δ=%s) would have intervals %.0f%% as wide on average", accounting.Num(p.Epsilon), accounting.Num(delta), 100*ratio)
	return lap
}
