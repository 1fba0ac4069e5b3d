package answer

import (
	"math"
	"strconv"
	"strings"
)

// ParseAccuracy reads an accuracy as the text front ends spell it (the
// command line's --accuracy, the wire protocol's dpstat.accuracy): one
// number ("20") for every COUNT, SUM and COUNT(DISTINCT) column, or
// column=number pairs separated by commas ("n=20,total=5"). Its errors
// are KindBadRequest, naming the value and what is accepted.
func ParseAccuracy(s string) (*Accuracy, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, Errorf(KindBadRequest, "accuracy is empty: want a half-width such as 20, or column=half-width pairs such as n=20,total=5")
	}
	if !strings.Contains(s, "=") {
		h, err := halfWidth("accuracy", s)
		if err != nil {
			return nil, err
		}
		return &Accuracy{All: h}, nil
	}
	a := &Accuracy{Columns: map[string]float64{}}
	for _, part := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(part, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, Errorf(KindBadRequest, "accuracy %q: want column=half-width pairs separated by commas, such as n=20,total=5", s)
		}
		h, err := halfWidth("accuracy of "+name, val)
		if err != nil {
			return nil, err
		}
		if _, dup := a.Columns[name]; dup {
			return nil, Errorf(KindBadRequest, "accuracy names column %s twice: give each column one half-width", name)
		}
		a.Columns[name] = h
	}
	return a, nil
}

// halfWidth reads one half-width of an accuracy: a finite number > 0.
func halfWidth(what, s string) (float64, error) {
	h, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, Errorf(KindBadRequest, "%s = %q: want a finite number > 0 (a half-width, such as 20)", what, strings.TrimSpace(s))
	}
	if err := checkHalfWidth(what, h); err != nil {
		return 0, err
	}
	return h, nil
}

func checkHalfWidth(what string, h float64) error {
	if math.IsNaN(h) || math.IsInf(h, 0) || h <= 0 {
		return Errorf(KindBadRequest, "%s = %v: want a finite number > 0 (a half-width, such as 20)", what, h)
	}
	return nil
}

// Check checks the numbers of an accuracy built without ParseAccuracy (the
// HTTP body's number or object): every half-width a finite number > 0,
// every column named, and either All or Columns. Its errors are
// KindBadRequest.
func (a *Accuracy) Check() error {
	if len(a.Columns) == 0 {
		return checkHalfWidth("accuracy", a.All)
	}
	if a.All != 0 {
		return Errorf(KindBadRequest, "accuracy: give one half-width for every column or one per column, not both")
	}
	for n, h := range a.Columns {
		if strings.TrimSpace(n) == "" {
			return Errorf(KindBadRequest, "accuracy names an empty column: want column=half-width pairs such as n=20")
		}
		if err := checkHalfWidth("accuracy of "+n, h); err != nil {
			return err
		}
	}
	return nil
}
