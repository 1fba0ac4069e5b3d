package collector

import (
	"fmt"
	"math"

	"github.com/dpstat/dpstat/ldp"
)

// ValueEstimate is the estimate of one answer's frequency (or of the mean).
type ValueEstimate struct {
	// Label is the answer (or "mean").
	Label string `json:"label"`
	// Estimate is the unbiased estimate (not clamped into [0, 1]).
	Estimate float64 `json:"estimate"`
	// StdError is the estimate's standard error.
	StdError float64 `json:"std_error"`
	// Lo is the lower end of the normal-approximation interval.
	Lo float64 `json:"lo"`
	// Hi is the interval's upper end.
	Hi float64 `json:"hi"`
}

// EstimateResult holds a survey's estimates.
type EstimateResult struct {
	// Survey is the survey estimated.
	Survey Survey `json:"survey"`
	// Epsilon is the ε each report satisfies.
	Epsilon float64 `json:"epsilon"`
	// N is the number of reports.
	N int64 `json:"n"`
	// Confidence is the intervals' confidence.
	Confidence float64 `json:"confidence"`
	// Estimates has one row per answer (or one "mean" row).
	Estimates []ValueEstimate `json:"estimates"`
}

// Estimates returns a survey's estimates with (confidence) intervals; with
// no reports yet, Estimates is empty.
func (s *Store) Estimates(id string, confidence float64) (EstimateResult, error) {
	if math.IsNaN(confidence) || !(confidence > 0 && confidence < 1) {
		return EstimateResult{}, fmt.Errorf("confidence = %v: want a number in (0, 1)", confidence)
	}
	b, err := s.get(id)
	if err != nil {
		return EstimateResult{}, err
	}
	b.mu.Lock()
	t := ldp.Tally{N: b.tally.N, Counts: append([]int64(nil), b.tally.Counts...)}
	b.mu.Unlock()
	out := EstimateResult{Survey: b.Survey, Epsilon: b.params.Epsilon, N: t.N, Confidence: confidence, Estimates: []ValueEstimate{}}
	if t.N == 0 {
		return out, nil
	}
	if b.mean != nil {
		e, err := b.mean.Estimate(t)
		if err != nil {
			return out, err
		}
		lo, hi := e.Interval(confidence)
		out.Estimates = append(out.Estimates, ValueEstimate{Label: "mean", Estimate: e.Value, StdError: math.Sqrt(e.Variance), Lo: lo, Hi: hi})
		return out, nil
	}
	est, err := ldp.Estimates(b.oracle, t)
	if err != nil {
		return out, err
	}
	labels := b.Labels()
	for v, e := range est {
		lo, hi := e.Interval(confidence)
		out.Estimates = append(out.Estimates, ValueEstimate{Label: labels[v], Estimate: e.Value, StdError: math.Sqrt(e.Variance), Lo: lo, Hi: hi})
	}
	return out, nil
}
