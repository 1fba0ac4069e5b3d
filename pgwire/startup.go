package pgwire

import (
	"sort"
	"strings"
)

// startupOnly are the startup parameters that are not settings: who
// connects, to what, and how.
var startupOnly = map[string]bool{
	"user": true, "database": true, "options": true, "replication": true, "application_name": true,
}

// startupSettings reads the settings a client gives when it connects, in
// the order they take effect: each startup parameter that names a setting
// (pgJDBC and psycopg pass them so), then each `-c name=value` or
// `--name=value` of the options parameter (libpq's options='-c
// dpstat.epsilon=0.05', which SQLAlchemy and pandas users set). A later
// value of a setting overrides an earlier one, as in PostgreSQL.
func startupSettings(params map[string]string) ([][2]string, *pgError) {
	var out [][2]string
	names := make([]string, 0, len(params))
	for name := range params {
		if !startupOnly[strings.ToLower(name)] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		out = append(out, [2]string{strings.ToLower(name), params[name]})
	}
	args := splitOptions(params["options"])
	for i := 0; i < len(args); i++ {
		a := args[i]
		var kv string
		switch {
		case a == "-c":
			if i+1 == len(args) {
				return nil, pgErrorf("22023", "the options parameter ends with -c; want -c name=value, e.g. options='-c dpstat.epsilon=0.1'")
			}
			i++
			kv = args[i]
		case strings.HasPrefix(a, "-c"):
			kv = a[2:]
		case strings.HasPrefix(a, "--"):
			kv = a[2:]
		default:
			return nil, pgErrorf("22023", "invalid command-line argument %q in the options parameter; dpstat takes -c name=value or --name=value, e.g. options='-c dpstat.epsilon=0.1'", a)
		}
		name, val, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return nil, pgErrorf("22023", "option %q in the options parameter needs a value: -c name=value, e.g. -c dpstat.epsilon=0.1", kv)
		}
		// PostgreSQL spells - and _ alike in option names given so.
		out = append(out, [2]string{strings.ToLower(strings.ReplaceAll(name, "-", "_")), val})
	}
	return out, nil
}

// splitOptions splits the options parameter at unescaped whitespace; a
// backslash keeps the next character (libpq's escaping of spaces).
func splitOptions(s string) []string {
	var args []string
	var cur strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			in = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if in {
				args = append(args, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		args = append(args, cur.String())
	}
	return args
}

// applyStartup applies the settings of the startup packet to a new
// session; an invalid or misspelt dpstat setting ends the connection
// with the error, as PostgreSQL does for a bad option, rather than
// letting queries spend a default the client did not ask for.
func (ss *session) applyStartup(params map[string]string) *pgError {
	settings, err := startupSettings(params)
	if err != nil {
		return err
	}
	// An ε and an accuracy are two ways to ask what a query costs: given
	// both at connect time, neither is known to win, so the connection
	// is refused rather than one silently ignored.
	given := map[string]bool{}
	for _, kv := range settings {
		given[kv[0]] = true
	}
	if given["dpstat.epsilon"] && given["dpstat.accuracy"] {
		return pgErrorf("22023", "dpstat.epsilon and dpstat.accuracy are both given when connecting: keep one (an ε to spend, or a half-width for dpstat to choose ε by)")
	}
	for _, kv := range settings {
		if err := ss.assign(kv[0], kv[1]); err != nil {
			if pe, ok := err.(*pgError); ok {
				return pe
			}
			return pgErrorf("22023", "%v", err)
		}
	}
	return nil
}
