package answer

import (
	"fmt"
	"time"
)

// Setting is one numeric option of a front end (a limit or a timeout): it
// must not be negative, and its zero stands for a default.
type Setting struct {
	name     string
	negative func() (any, bool)
	fill     func()
}

// Default is the setting name, held at v, whose zero means def (a def of
// zero keeps the zero, for settings where it means "no limit").
func Default[T int | int64 | time.Duration](name string, v *T, def T) Setting {
	return Setting{
		name:     name,
		negative: func() (any, bool) { return *v, *v < 0 },
		fill: func() {
			if *v == 0 {
				*v = def
			}
		},
	}
}

// ApplyDefaults checks that no setting is negative, the error (begun by
// who, e.g. "pgwire") naming the first one and its value, and then replaces
// each zero with its default.
func ApplyDefaults(who string, settings ...Setting) error {
	for _, s := range settings {
		if v, neg := s.negative(); neg {
			return fmt.Errorf("%s: %s = %v: want a value >= 0 (0 means the default)", who, s.name, v)
		}
	}
	for _, s := range settings {
		s.fill()
	}
	return nil
}
