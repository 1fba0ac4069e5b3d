package main

import (
	"fmt"
	"math"
)

// avgBias prints the exact bias and RMSE of the two libraries' AVG
// estimators (no simulation): with X the centred sum's Laplace noise and Y
// the count's discrete Laplace noise, E[f(X, Y)] is a sum over Y of
// integrals over X, computed by Simpson's rule. dpstat releases
// clamp(m + c/n) and the midpoint m when n ≤ 0; Google's BoundedMean
// releases clamp(m + c/max(1, n)). Both clamp into [lo, hi]. (Google's
// count noise is rounded continuous Laplace; both are modelled here as
// discrete Laplace of the same scale, so the comparison isolates the
// estimators.)
func avgBias() {
	const lo, hi = 17.0, 90.0
	r, mid := (hi-lo)/2, (hi+lo)/2
	fmt.Printf("## Exact bias and RMSE of AVG(age) (age in [%g, %g]), the AVG's ε halved between sum and count\n\n", lo, hi)
	fmt.Printf("| AVG's ε | people | true mean | P(noisy count ≤ 0) | dpstat bias | Google bias | dpstat RMSE | Google RMSE |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, eps := range []float64{1.0 / 3, 1} {
		bs, bn := r/(eps/2), 1/(eps/2)
		a := math.Exp(-1 / bn)
		c0 := (1 - a) / (1 + a)
		lim := int(60*bn) + 100
		for _, n := range []float64{12, 50, 311} {
			for _, mean := range []float64{25, 38.6, mid, 70} {
				d := mean - mid // the true centred mean
				s := n * d      // the exact centred sum
				var eD, eG, sqD, sqG, pNeg float64
				for y := -lim; y <= lim; y++ {
					p := c0 * math.Pow(a, math.Abs(float64(y)))
					cnt := n + float64(y)
					if cnt >= 1 {
						m1, m2 := clampMoments(s/cnt, bs/cnt, r)
						eD += p * m1
						eG += p * m1
						sqD += p * (m2 - 2*d*m1 + d*d)
						sqG += p * (m2 - 2*d*m1 + d*d)
						continue
					}
					pNeg += p
					sqD += p * d * d // the midpoint
					m1, m2 := clampMoments(s, bs, r)
					eG += p * m1
					sqG += p * (m2 - 2*d*m1 + d*d)
				}
				fmt.Printf("| %.3g | %g | %g | %.3f | %.3f | %.3f | %.3f | %.3f |\n", eps, n, mean, pNeg,
					eD-d, eG-d, math.Sqrt(sqD), math.Sqrt(sqG))
			}
		}
	}
	fmt.Println()
}

// clampMoments returns E[W] and E[W²] for W = clamp(Z, −r, r), Z Laplace
// with centre mu and scale beta: E[W] = −r + ∫ P(Z > z) dz over [−r, r],
// E[W²] = ∫ 2z (P(Z > z) + P(Z < −z)) dz over [0, r].
func clampMoments(mu, beta, r float64) (float64, float64) {
	surv := func(z float64) float64 {
		if u := z - mu; u >= 0 {
			return 0.5 * math.Exp(-u/beta)
		} else {
			return 1 - 0.5*math.Exp(u/beta)
		}
	}
	const steps = 2000 // even
	simpson := func(f func(float64) float64, a, b float64) float64 {
		h := (b - a) / steps
		s := f(a) + f(b)
		for i := 1; i < steps; i++ {
			w := 2.0
			if i%2 == 1 {
				w = 4
			}
			s += w * f(a+float64(i)*h)
		}
		return s * h / 3
	}
	m1 := -r + simpson(surv, -r, r)
	m2 := simpson(func(z float64) float64 { return 2 * z * (surv(z) + 1 - surv(-z)) }, 0, r)
	return m1, m2
}
