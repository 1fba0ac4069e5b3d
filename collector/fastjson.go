package collector

import "math"

// parseBatchFast parses the common shape of a report batch,
// {"reports": [{"id": "...", "value": 3, "seed": 7, "row": 5, "bits": "..."}, ...]},
// several times faster than encoding/json. It accepts only a strict subset
// of JSON whose meaning is unambiguous (printable ASCII strings without
// escapes, lower-case known keys without repetition, integers without
// fraction or exponent); on anything else it returns false and the caller
// decodes with encoding/json, which then produces the same result or the
// precise error. A body accepted here decodes to exactly what
// encoding/json would give.
func parseBatchFast(b []byte) ([]Report, bool) {
	p := fastParser{b: b}
	if !p.lit('{') || !p.key("reports") || !p.lit('[') {
		return nil, false
	}
	reports := make([]Report, 0, len(b)/32)
	p.ws()
	if p.peek() == ']' {
		p.i++
	} else {
		for {
			r, ok := p.report()
			if !ok {
				return nil, false
			}
			reports = append(reports, r)
			p.ws()
			c := p.peek()
			p.i++
			if c == ']' {
				break
			}
			if c != ',' {
				return nil, false
			}
		}
	}
	if !p.lit('}') {
		return nil, false
	}
	p.ws()
	return reports, p.i == len(p.b)
}

type fastParser struct {
	b []byte
	i int
}

func (p *fastParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *fastParser) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// lit skips whitespace and one expected byte.
func (p *fastParser) lit(c byte) bool {
	p.ws()
	if p.peek() != c {
		return false
	}
	p.i++
	return true
}

// str reads a string of printable ASCII without escapes.
func (p *fastParser) str() (string, bool) {
	p.ws()
	if p.peek() != '"' {
		return "", false
	}
	p.i++
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			s := string(p.b[start:p.i])
			p.i++
			return s, true
		}
		if c < 0x20 || c > 0x7e || c == '\\' {
			return "", false
		}
		p.i++
	}
	return "", false
}

// key reads "name" followed by a colon.
func (p *fastParser) key(name string) bool {
	s, ok := p.str()
	return ok && s == name && p.lit(':')
}

// integer reads -?(0|[1-9][0-9]*) as an int64, refusing fractions,
// exponents and overflow.
func (p *fastParser) integer() (int64, bool) {
	p.ws()
	neg := false
	if p.peek() == '-' {
		neg = true
		p.i++
	}
	start := p.i
	var v uint64
	for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
		d := uint64(p.b[p.i] - '0')
		if v > (math.MaxInt64-d)/10 {
			return 0, false
		}
		v = v*10 + d
		p.i++
	}
	n := p.i - start
	if n == 0 || (n > 1 && p.b[start] == '0') {
		return 0, false
	}
	if c := p.peek(); c == '.' || c == 'e' || c == 'E' {
		return 0, false
	}
	if neg {
		return -int64(v), true
	}
	return int64(v), true
}

func (p *fastParser) report() (Report, bool) {
	var r Report
	if !p.lit('{') {
		return r, false
	}
	var seen [5]bool
	p.ws()
	if p.peek() == '}' {
		p.i++
		return r, true
	}
	for {
		k, ok := p.str()
		if !ok || !p.lit(':') {
			return r, false
		}
		switch k {
		case "id":
			if seen[0] {
				return r, false
			}
			seen[0] = true
			if r.ID, ok = p.str(); !ok {
				return r, false
			}
		case "bits":
			if seen[1] {
				return r, false
			}
			seen[1] = true
			if r.Bits, ok = p.str(); !ok {
				return r, false
			}
		case "value":
			if seen[2] {
				return r, false
			}
			seen[2] = true
			v, ok := p.integer()
			if !ok {
				return r, false
			}
			r.Value = &v
		case "seed":
			if seen[3] {
				return r, false
			}
			seen[3] = true
			v, ok := p.integer()
			if !ok || v < 0 || v > math.MaxUint32 {
				return r, false
			}
			s := uint32(v)
			r.Seed = &s
		case "row":
			if seen[4] {
				return r, false
			}
			seen[4] = true
			v, ok := p.integer()
			if !ok {
				return r, false
			}
			r.Row = &v
		default:
			return r, false
		}
		p.ws()
		c := p.peek()
		p.i++
		if c == '}' {
			return r, true
		}
		if c != ',' {
			return r, false
		}
	}
}
