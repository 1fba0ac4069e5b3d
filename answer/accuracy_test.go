package answer

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestParseAccuracy: the text form of an accuracy, one number or
// column=number pairs, and its refusals naming the value and what is
// accepted, as bad requests.
func TestParseAccuracy(t *testing.T) {
	tests := []struct {
		in   string
		want *Accuracy
		err  string
	}{
		{"20", &Accuracy{All: 20}, ""},
		{" 2.5 ", &Accuracy{All: 2.5}, ""},
		{"n=20,total=5", &Accuracy{Columns: map[string]float64{"n": 20, "total": 5}}, ""},
		{"n = 20 , total=5", &Accuracy{Columns: map[string]float64{"n": 20, "total": 5}}, ""},
		{"", nil, "accuracy is empty: want a half-width such as 20"},
		{"0", nil, "accuracy = 0: want a finite number > 0"},
		{"-3", nil, "accuracy = -3: want a finite number > 0"},
		{"NaN", nil, "accuracy = NaN: want a finite number > 0"},
		{"Inf", nil, "accuracy = +Inf: want a finite number > 0"},
		{"twenty", nil, `accuracy = "twenty": want a finite number > 0`},
		{"n=2,n=3", nil, "accuracy names column n twice"},
		{"n=2,=3", nil, `accuracy "n=2,=3": want column=half-width pairs`},
		{"n=0", nil, "accuracy of n = 0: want a finite number > 0"},
	}
	for _, tt := range tests {
		got, err := ParseAccuracy(tt.in)
		if tt.err != "" {
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindBadRequest || !strings.Contains(e.Message, tt.err) {
				t.Errorf("ParseAccuracy(%q) = %v, %v: want a bad request containing %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseAccuracy(%q) = %+v, %v: want %+v", tt.in, got, err, tt.want)
		}
		if err := got.Check(); err != nil {
			t.Errorf("ParseAccuracy(%q) does not pass Check: %v", tt.in, err)
		}
	}
}

// TestAccuracyCheck: an accuracy built from another form (the HTTP body's
// number or object) is checked as the text form is.
func TestAccuracyCheck(t *testing.T) {
	tests := []struct {
		a   Accuracy
		err string
	}{
		{Accuracy{All: 1e-9}, ""},
		{Accuracy{Columns: map[string]float64{"n": 3}}, ""},
		{Accuracy{}, "accuracy = 0: want a finite number > 0"},
		{Accuracy{All: math.Inf(1)}, "accuracy = +Inf: want a finite number > 0"},
		{Accuracy{All: 2, Columns: map[string]float64{"n": 3}}, "not both"},
		{Accuracy{Columns: map[string]float64{" ": 3}}, "accuracy names an empty column"},
		{Accuracy{Columns: map[string]float64{"n": -1}}, "accuracy of n = -1: want a finite number > 0"},
	}
	for _, tt := range tests {
		err := tt.a.Check()
		if tt.err == "" {
			if err != nil {
				t.Errorf("%+v: %v", tt.a, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindBadRequest || !strings.Contains(e.Message, tt.err) {
			t.Errorf("%+v: %v, want a bad request containing %q", tt.a, err, tt.err)
		}
	}
}
