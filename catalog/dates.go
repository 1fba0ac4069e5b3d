package catalog

import (
	"fmt"

	"github.com/dpstat/dpstat/schema"
	"gopkg.in/yaml.v3"
)

// parseTemporal reads a date or timestamp of a column of type t.
func parseTemporal(t schema.Type, s string) (int64, error) {
	if t == schema.Date {
		d, err := schema.ParseDate(s)
		if err == nil && (d < schema.MinDate || d > schema.MaxDate) {
			err = fmt.Errorf("%q: want a date from 0001-01-01 to 9999-12-31", s)
		}
		return d, err
	}
	return schema.ParseTimestamp(s)
}

// rawBound is a column's `lower:` or `upper:` as written: a number, or a
// date or timestamp.
type rawBound struct{ node yaml.Node }

// UnmarshalYAML keeps the node; bounds are read once the column's type is
// known.
func (b *rawBound) UnmarshalYAML(n *yaml.Node) error {
	b.node = *n
	return nil
}

// bounds reads the column's declared bounds for its type: numbers for int
// and float columns, dates or timestamps for date and timestamp columns
// (kept as days or microseconds since 1970-01-01).
func (rc *rawColumn) bounds(t schema.Type) (lower, upper *float64, errs []error) {
	read := func(name string, b *rawBound) *float64 {
		if b == nil {
			return nil
		}
		n := &b.node
		if n.Kind != yaml.ScalarNode {
			errs = append(errs, fmt.Errorf("%s: want a single value", name))
			return nil
		}
		if t.Temporal() {
			if n.Tag != "!!str" && n.Tag != "!!timestamp" {
				errs = append(errs, fmt.Errorf("%s = %s: a %s column wants a %s bound, e.g. %q", name, n.Value, t, t,
					map[schema.Type]string{schema.Date: "2024-01-01", schema.Timestamp: "2024-01-01 00:00:00"}[t]))
				return nil
			}
			v, err := parseTemporal(t, n.Value)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", name, err))
				return nil
			}
			f := float64(v)
			return &f
		}
		var f float64
		if (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&f) != nil {
			errs = append(errs, fmt.Errorf("%s = %q: want a number", name, n.Value))
			return nil
		}
		return &f
	}
	return read("lower", rc.Lower), read("upper", rc.Upper), errs
}
