package pgwire

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// scan walks sql and calls visit for every stretch of code outside string
// literals, quoted identifiers, comments and dollar-quoted strings, with the
// stretch's start offset. It returns an error for an unterminated literal or
// comment.
func scan(sql string, code func(start, end int)) error {
	i, start := 0, 0
	flush := func(end int) {
		if end > start {
			code(start, end)
		}
	}
	for i < len(sql) {
		c := sql[i]
		switch {
		case c == '\'' || c == '"':
			flush(i)
			j := i + 1
			for {
				k := strings.IndexByte(sql[j:], c)
				if k < 0 {
					if c == '\'' {
						return fmt.Errorf("unterminated quoted string at offset %d", i+1)
					}
					return fmt.Errorf("unterminated quoted identifier at offset %d", i+1)
				}
				j += k + 1
				if j < len(sql) && sql[j] == c { // doubled quote
					j++
					continue
				}
				break
			}
			i, start = j, j
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-':
			flush(i)
			k := strings.IndexByte(sql[i:], '\n')
			if k < 0 {
				i = len(sql)
			} else {
				i += k + 1
			}
			start = i
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			flush(i)
			depth, j := 1, i+2
			for depth > 0 {
				if j+1 >= len(sql) {
					return fmt.Errorf("unterminated /* comment at offset %d", i+1)
				}
				switch {
				case sql[j] == '/' && sql[j+1] == '*':
					depth++
					j += 2
				case sql[j] == '*' && sql[j+1] == '/':
					depth--
					j += 2
				default:
					j++
				}
			}
			i, start = j, j
		case c == '$' && (i == 0 || !isIdent(sql[i-1])):
			// $n parameter or $tag$ dollar quote.
			j := i + 1
			for j < len(sql) && isIdent(sql[j]) && !(j == i+1 && sql[j] >= '0' && sql[j] <= '9') {
				j++
			}
			if j < len(sql) && sql[j] == '$' {
				tag := sql[i : j+1]
				flush(i)
				k := strings.Index(sql[j+1:], tag)
				if k < 0 {
					return fmt.Errorf("unterminated dollar-quoted string at offset %d", i+1)
				}
				i = j + 1 + k + len(tag)
				start = i
				continue
			}
			i++
		default:
			i++
		}
	}
	flush(len(sql))
	return nil
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// splitStatements splits a simple-protocol query string at the semicolons
// that are outside literals and comments. Empty statements are dropped.
func splitStatements(sql string) ([]string, error) {
	var cuts []int
	err := scan(sql, func(s, e int) {
		for i := s; i < e; i++ {
			if sql[i] == ';' {
				cuts = append(cuts, i)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	var out []string
	prev := 0
	for _, c := range append(cuts, len(sql)) {
		st := sql[prev:c]
		if !isBlank(st) {
			out = append(out, st)
		}
		prev = c + 1
	}
	return out, nil
}

// isBlank reports whether sql holds nothing but white space and comments.
func isBlank(sql string) bool {
	blank := true
	if err := scan(sql, func(s, e int) {
		if strings.TrimSpace(sql[s:e]) != "" {
			blank = false
		}
	}); err != nil {
		return false
	}
	return blank
}

// maxParam returns the highest $n placeholder in sql (0 for none).
func maxParam(sql string) (int, error) {
	n := 0
	err := scanParams(sql, func(_, _, k int) { n = max(n, k) })
	return n, err
}

// scanParams calls fn for every $n placeholder outside literals and
// comments, with its offsets and number.
func scanParams(sql string, fn func(start, end, n int)) error {
	var perr error
	err := scan(sql, func(s, e int) {
		for i := s; i < e; i++ {
			if sql[i] != '$' || (i > 0 && isIdent(sql[i-1])) {
				continue
			}
			j := i + 1
			for j < e && sql[j] >= '0' && sql[j] <= '9' {
				j++
			}
			if j == i+1 {
				continue
			}
			k, err := strconv.Atoi(sql[i+1 : j])
			if err != nil || k < 1 || k > maxParams {
				if perr == nil {
					perr = fmt.Errorf("parameter %s: want $1 to $%d", sql[i:j], maxParams)
				}
				continue
			}
			fn(i, j, k)
			i = j - 1
		}
	})
	if err != nil {
		return err
	}
	return perr
}

// maxParams bounds the placeholders of one statement.
const maxParams = 1000

// Parameter type OIDs the front end understands.
const (
	oidBool    = 16
	oidInt8    = 20
	oidInt2    = 21
	oidInt4    = 23
	oidText    = 25
	oidFloat4  = 700
	oidFloat8  = 701
	oidUnknown = 705
	oidVarchar = 1043
	oidNumeric = 1700
)

// literal turns one bound parameter into a DP SQL literal: NULL, a number in
// parentheses, TRUE/FALSE, or a quoted string with its quotes doubled. A
// value is never spliced in as SQL text: whatever it holds, it stays one
// literal.
func literal(v []byte, oid uint32) (string, error) {
	if v == nil {
		return "NULL", nil
	}
	s := string(v)
	if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
		return "", fmt.Errorf("parameter value is not valid UTF-8 text without NUL bytes")
	}
	switch oid {
	case oidText, oidVarchar, oidUnknown:
		return quote(s), nil
	case oidBool:
		switch strings.ToLower(s) {
		case "t", "true", "on", "yes", "1":
			return "TRUE", nil
		case "f", "false", "off", "no", "0":
			return "FALSE", nil
		}
		return "", fmt.Errorf("parameter %q is not a boolean", s)
	case oidInt2, oidInt4, oidInt8, oidFloat4, oidFloat8, oidNumeric:
		lit, ok := number(s)
		if !ok {
			return "", fmt.Errorf("parameter %q is not a finite number", s)
		}
		return lit, nil
	}
	// Unspecified type: a number stays a number, anything else is a string.
	if lit, ok := number(s); ok {
		return lit, nil
	}
	return quote(s), nil
}

// number returns s as a parenthesised numeric literal if it is a plain
// finite decimal number.
func number(s string) (string, bool) {
	t := strings.TrimSpace(s)
	if t == "" || len(t) > 64 {
		return "", false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E') {
			return "", false
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", false
	}
	return "(" + t + ")", true
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// substitute replaces each $n in sql by the literal of params[n-1].
func substitute(sql string, params []string) (string, error) {
	var b strings.Builder
	prev := 0
	var serr error
	err := scanParams(sql, func(s, e, n int) {
		if n > len(params) {
			if serr == nil {
				serr = fmt.Errorf("query uses $%d but %d parameters were bound", n, len(params))
			}
			return
		}
		b.WriteString(sql[prev:s])
		b.WriteByte(' ')
		b.WriteString(params[n-1])
		b.WriteByte(' ')
		prev = e
	})
	if err != nil {
		return "", err
	}
	if serr != nil {
		return "", serr
	}
	b.WriteString(sql[prev:])
	return b.String(), nil
}

// words returns the first n words of sql outside comments, lower-cased, with
// punctuation other than '.' and '_' as separators.
func words(sql string, n int) []string {
	var out []string
	scan(sql, func(s, e int) {
		if len(out) >= n {
			return
		}
		f := strings.FieldsFunc(strings.ToLower(sql[s:e]), func(r rune) bool {
			return !(r == '_' || r == '.' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '(' || r == ')')
		})
		for _, w := range f {
			if len(out) < n {
				out = append(out, w)
			}
		}
	})
	return out
}
