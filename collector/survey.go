package collector

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/dpstat/dpstat/ldp"
)

// Domain is the set of answers a survey accepts: either a list of values
// (labels), or a numeric range [lo, hi]. With a frequency mechanism a range
// stands for the integers lo, lo+1, …, hi; with the mean mechanism it is the
// real interval the number is declared to lie in.
type Domain struct {
	// Values lists the answers (2 to MaxValues distinct labels).
	Values []string `json:"values,omitempty"`
	// Range is [lo, hi].
	Range []float64 `json:"range,omitempty"`
}

// SurveySpec is what a curator sends to create a survey.
type SurveySpec struct {
	// ID is optional; the collector picks a random id if it is empty.
	ID string `json:"id,omitempty"`
	// Question is the text shown to people.
	Question string `json:"question"`
	// Domain is the set of answers.
	Domain Domain `json:"domain"`
	// Mechanism is rr, krr, oue, olh, sue, mean or auto: for a list of
	// values the frequency oracle with the least variance at ε and the
	// domain size (ldp.Recommend), for a numeric range the mean.
	Mechanism string `json:"mechanism"`
	// Epsilon is the local ε of each report.
	Epsilon float64 `json:"epsilon"`
	// Enrolment, when true, accepts reports only from enrolled devices,
	// one per device (see Store.EnrolDevices).
	Enrolment bool `json:"enrolment,omitempty"`
}

// Survey is a stored survey.
type Survey struct {
	// ID names the survey in URLs.
	ID string `json:"id"`
	// Question is the text shown to people.
	Question string `json:"question"`
	// Domain is the set of answers.
	Domain Domain `json:"domain"`
	// Mechanism is the randomizer (never "auto" once stored).
	Mechanism ldp.Kind `json:"mechanism"`
	// Epsilon is the ε the curator asked for; Public.Params.Epsilon is
	// the ε the exact probabilities give (at most this).
	Epsilon float64 `json:"epsilon"`
	// Created is the creation time (UTC, to the second).
	Created time.Time `json:"created"`
	// Enrolment says that only enrolled devices may report, once each.
	Enrolment bool `json:"enrolment,omitempty"`
}

// Labels returns the answer labels, one per domain value (for mean, the
// single label "mean").
func (s Survey) Labels() []string {
	if s.Mechanism == ldp.KindMean {
		return []string{"mean"}
	}
	if len(s.Domain.Values) > 0 {
		return s.Domain.Values
	}
	lo, hi := int64(s.Domain.Range[0]), int64(s.Domain.Range[1])
	out := make([]string, 0, hi-lo+1)
	for v := lo; v <= hi; v++ {
		out = append(out, strconv.FormatInt(v, 10))
	}
	return out
}

// survey is a loaded survey with its randomizer and live state.
type survey struct {
	Survey
	oracle ldp.FrequencyOracle // nil for mean
	mean   *ldp.Mean
	params ldp.Params

	mu    sync.Mutex // guards tally and ids; held across an ingest's commit
	qmu   sync.Mutex // guards queue
	queue []*ingestJob
	tally ldp.Tally
	ids   map[[2]uint64]struct{} // hashes of the accepted report ids
}

func (s *survey) newAggregator() ldp.Aggregator {
	if s.mean != nil {
		return s.mean.NewAggregator()
	}
	return s.oracle.NewAggregator()
}

// build validates a survey and constructs its randomizer.
func build(sv Survey) (*survey, error) {
	out := &survey{Survey: sv}
	if sv.Question == "" || len(sv.Question) > 1000 {
		return nil, fmt.Errorf("question has %d bytes: want 1 to 1000", len(sv.Question))
	}
	d := sv.Domain
	switch {
	case len(d.Values) > 0 && d.Range != nil:
		return nil, errors.New("domain has both values and range: want exactly one")
	case len(d.Values) > 0:
		if len(d.Values) < 2 || len(d.Values) > MaxValues {
			return nil, fmt.Errorf("domain has %d values: want 2 to %d", len(d.Values), MaxValues)
		}
		seen := make(map[string]bool, len(d.Values))
		for i, v := range d.Values {
			if v == "" || len(v) > 200 {
				return nil, fmt.Errorf("domain value %d has %d bytes: want 1 to 200", i, len(v))
			}
			if seen[v] {
				return nil, fmt.Errorf("domain value %q appears twice: want distinct values", v)
			}
			seen[v] = true
		}
		if sv.Mechanism == ldp.KindMean {
			return nil, errors.New("mechanism mean needs a numeric range domain: want domain {\"range\": [lo, hi]}")
		}
	case d.Range != nil:
		if len(d.Range) != 2 || math.IsNaN(d.Range[0]) || math.IsNaN(d.Range[1]) || math.IsInf(d.Range[0], 0) || math.IsInf(d.Range[1], 0) || !(d.Range[0] < d.Range[1]) {
			return nil, fmt.Errorf("domain range %v: want [lo, hi] with finite lo < hi", d.Range)
		}
		if sv.Mechanism != ldp.KindMean {
			lo, hi := d.Range[0], d.Range[1]
			if lo != math.Trunc(lo) || hi != math.Trunc(hi) || hi-lo+1 > ldp.MaxDomain {
				return nil, fmt.Errorf("domain range [%v, %v] with mechanism %s: want integer bounds spanning at most %d values (or mechanism mean for a real range)", lo, hi, sv.Mechanism, ldp.MaxDomain)
			}
		}
	default:
		return nil, errors.New("domain is empty: want {\"values\": [...]} or {\"range\": [lo, hi]}")
	}
	if sv.Mechanism == ldp.KindOLH && domainSize(d) > MaxOLHDomain {
		return nil, fmt.Errorf("domain has %d values with mechanism olh: want at most %d (olh's aggregation costs one hash per value and report; use oue or krr)", domainSize(d), MaxOLHDomain)
	}
	var err error
	if sv.Mechanism == ldp.KindMean {
		out.mean, err = ldp.NewMean(ldp.MeanOptions{Epsilon: sv.Epsilon, Lo: d.Range[0], Hi: d.Range[1]})
		if err != nil {
			return nil, err
		}
		out.params = out.mean.Params()
	} else {
		out.oracle, err = ldp.New(ldp.Options{Mechanism: sv.Mechanism, Epsilon: sv.Epsilon, Domain: domainSize(d)})
		if err != nil {
			return nil, err
		}
		out.params = out.oracle.Params()
	}
	out.tally = ldp.Tally{Counts: make([]int64, out.params.TallySize())}
	return out, nil
}

func domainSize(d Domain) int {
	if len(d.Values) > 0 {
		return len(d.Values)
	}
	return int(d.Range[1]-d.Range[0]) + 1
}

// validID accepts 1 to MaxIDLength bytes of letters, digits and - _ . :
func validID(id string) bool {
	if len(id) == 0 || len(id) > MaxIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}
