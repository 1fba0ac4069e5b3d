package audit

import (
	"fmt"
	"math"
	"sort"
)

// floatQuantiles are the quantiles of the pooled selection outputs at which
// FloatEvents places its thresholds; the extreme ones catch noise that is
// too small in the tails, the middle ones a shifted distribution.
var floatQuantiles = []float64{
	0.0001, 0.0003, 0.001, 0.003, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5,
	0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.997, 0.999, 0.9997, 0.9999,
}

// Range of k in the "multiple of 2^−k" events: from multiples of 16 down to
// multiples of 2^−64, which covers the spacing of float64 values near 1 and
// below (Mironov's holes) and every power-of-two release grid in use.
const (
	minMultipleExp = -4
	maxMultipleExp = 64
)

// maxValueEvents bounds how many single values an event family proposes.
const maxValueEvents = 64

// FloatEvents proposes events for real-valued outputs:
//   - "output ≤ t" and "output ≥ t" at quantiles from 0.01% to 99.99% of the
//     pooled selection outputs;
//   - "output is a multiple of 2^−k" and its complement for k from −4 to 64,
//     which expose the holes of floating-point samplers: a textbook Laplace
//     sample added to 1 is always a multiple of 2^−53, one added to 0 mostly
//     is not;
//   - "output = v" for the most frequent values seen at least ten times,
//     which expose outputs that only one input can produce.
func FloatEvents(selection []float64) []Event[float64] {
	var events []Event[float64]
	sorted := append([]float64(nil), selection...)
	sort.Float64s(sorted)
	seen := map[float64]bool{}
	for _, q := range floatQuantiles {
		if len(sorted) == 0 {
			break
		}
		t := sorted[int(q*float64(len(sorted)-1))]
		if seen[t] || math.IsNaN(t) {
			continue
		}
		seen[t] = true
		events = append(events,
			Event[float64]{Name: fmt.Sprintf("output ≤ %v", t), Contains: func(x float64) bool { return x <= t }},
			Event[float64]{Name: fmt.Sprintf("output ≥ %v", t), Contains: func(x float64) bool { return x >= t }},
		)
	}
	for k := minMultipleExp; k <= maxMultipleExp; k++ {
		events = append(events,
			Event[float64]{Name: fmt.Sprintf("output is a multiple of 2^%d", -k), Contains: func(x float64) bool { return isMultiple(x, k) }},
			Event[float64]{Name: fmt.Sprintf("output is not a multiple of 2^%d", -k), Contains: func(x float64) bool { return !isMultiple(x, k) }},
		)
	}
	for _, v := range frequent(selection, 10) {
		events = append(events, Event[float64]{Name: fmt.Sprintf("output = %v", v), Contains: func(x float64) bool { return x == v }})
	}
	return events
}

// isMultiple reports whether x is an integer multiple of 2^−k. Scaling by a
// power of two is exact for every float64 whose result stays finite and
// normal, which holds for the k in use and any value that is not subnormal.
func isMultiple(x float64, k int) bool {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return false
	}
	y := math.Ldexp(x, k)
	if math.IsInf(y, 0) {
		return true // |x|·2^k beyond the float64 range: x is a huge integer multiple
	}
	return y == math.Trunc(y)
}

// ValueEvents proposes, for outputs with few distinct values, the events
// "output = v" and "output ≠ v" for the (at most 64) most frequent values v
// of the pooled selection outputs.
func ValueEvents[T comparable](selection []T) []Event[T] {
	var events []Event[T]
	for _, v := range frequent(selection, 1) {
		events = append(events,
			Event[T]{Name: fmt.Sprintf("output = %v", v), Contains: func(x T) bool { return x == v }},
			Event[T]{Name: fmt.Sprintf("output ≠ %v", v), Contains: func(x T) bool { return x != v }},
		)
	}
	return events
}

// frequent returns the values seen at least minCount times, most frequent
// first (ties in order of first appearance), at most maxValueEvents of them.
func frequent[T comparable](xs []T, minCount int) []T {
	counts := map[T]int{}
	var order []T
	for _, x := range xs {
		if counts[x] == 0 {
			order = append(order, x)
		}
		counts[x]++
	}
	var vals []T
	for _, v := range order {
		if counts[v] >= minCount {
			vals = append(vals, v)
		}
	}
	sort.SliceStable(vals, func(i, j int) bool { return counts[vals[i]] > counts[vals[j]] })
	if len(vals) > maxValueEvents {
		vals = vals[:maxValueEvents]
	}
	return vals
}
