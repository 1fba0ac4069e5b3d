package answer

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestCheckParam checks the numbers every front end accepts, and that a
// refusal names the parameter as the front end spells it and the value.
func TestCheckParam(t *testing.T) {
	for _, tc := range []struct {
		p    Param
		name string
		v    float64
		err  string
	}{
		{ParamEpsilon, "epsilon", 0.5, ""},
		{ParamEpsilon, "--epsilon", 0, "--epsilon = 0: want a finite number > 0"},
		{ParamEpsilon, "dpstat.epsilon", math.Inf(1), "dpstat.epsilon = +Inf: want a finite number > 0"},
		{ParamEpsilon, "epsilon", math.NaN(), "epsilon = NaN: want"},
		{ParamDelta, "delta", 0, ""},
		{ParamDelta, "delta", 1, "delta = 1: want a number in [0, 1)"},
		{ParamDelta, "delta", -1e-9, "delta = -1e-09: want"},
		{ParamConfidence, "confidence", 0.95, ""},
		{ParamConfidence, "confidence", 0, "confidence = 0: want a number in (0, 1)"},
		{ParamConfidence, "confidence", 1, "confidence = 1: want"},
	} {
		err := CheckParam(tc.p, tc.name, tc.v)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err) || AsError(err).Kind != KindBadRequest) {
			t.Errorf("CheckParam(%s, %v) = %v, want %q", tc.name, tc.v, err, tc.err)
		}
	}
}

// TestApplyDefaults checks that a negative setting is refused with its
// name and value (and nothing filled), and that zeros take their defaults.
func TestApplyDefaults(t *testing.T) {
	n, d, keep := 0, time.Duration(0), 0
	if err := ApplyDefaults("x", Default("N", &n, 4), Default("D", &d, time.Second), Default("Keep", &keep, 0)); err != nil || n != 4 || d != time.Second || keep != 0 {
		t.Errorf("got %v %v %v %v", n, d, keep, err)
	}
	n, d = 0, -time.Second
	err := ApplyDefaults("x", Default("N", &n, 4), Default("D", &d, time.Second))
	if err == nil || err.Error() != "x: D = -1s: want a value >= 0 (0 means the default)" || n != 0 {
		t.Errorf("got %v, n = %v", err, n)
	}
}
