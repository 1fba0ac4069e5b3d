package pgwire

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/dpstat/dpstat/server"
)

// codeText returns sql with literals and comments replaced by spaces,
// lower-cased: what classification looks at.
func codeText(sql string) string {
	b := []byte(strings.Repeat(" ", len(sql)))
	scan(sql, func(s, e int) { copy(b[s:e], strings.ToLower(sql[s:e])) })
	return string(b)
}

var catalogMarkers = []string{"pg_catalog", "information_schema", "pg_class", "pg_namespace", "pg_type", "pg_attribute",
	"pg_settings", "pg_database", "version()", "current_database", "current_schema", "current_setting", "current_user",
	"session_user", "pg_backend_pid", "pg_is_in_recovery"}

// classify says which handler answers a statement.
func classify(sql string) stmtKind {
	if isBlank(sql) {
		return kindEmpty
	}
	w := words(sql, 1)
	if len(w) == 0 {
		return kindEmpty
	}
	switch w[0] {
	case "begin", "start", "commit", "end", "rollback", "abort":
		return kindTxn
	case "set", "reset", "discard", "deallocate":
		return kindSet
	case "show":
		return kindShow
	}
	if selectOneRE.MatchString(sql) {
		return kindCatalog
	}
	code := codeText(sql)
	for _, m := range catalogMarkers {
		if strings.Contains(code, m) {
			return kindCatalog
		}
	}
	return kindDP
}

var setRE = regexp.MustCompile(`(?is)^\s*set\s+(?:session\s+|local\s+)?([a-z_][a-z0-9_.]*)\s*(?:=|\s+to\s+|\s+)\s*(.*?)\s*$`)

// settingValue strips one pair of single quotes (undoubling inner quotes).
func settingValue(v string) string {
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		return strings.ReplaceAll(v[1:len(v)-1], "''", "'")
	}
	return v
}

// dpSettings are the session settings the front end keeps.
var dpSettings = []string{"dpstat.confidence", "dpstat.delta", "dpstat.epsilon", "dpstat.intervals"}

func (ss *session) set(sql string) error {
	w := words(sql, 2)
	if w[0] != "set" {
		// RESET, DISCARD and DEALLOCATE: session state a DP query does
		// not depend on, except RESET of dpstat settings.
		if w[0] == "reset" && len(w) > 1 && (w[1] == "all" || strings.HasPrefix(w[1], "dpstat.")) {
			if w[1] == "all" || w[1] == "dpstat.epsilon" {
				ss.epsilon = ss.s.opts.DefaultEpsilon
			}
			if w[1] == "all" || w[1] == "dpstat.delta" {
				ss.delta = 0
			}
			if w[1] == "all" || w[1] == "dpstat.confidence" {
				ss.confidence = 0
			}
			if w[1] == "all" || w[1] == "dpstat.intervals" {
				ss.intervals = false
			}
		}
		if w[0] == "deallocate" && len(w) > 1 && w[1] != "all" && w[1] != "prepare" {
			delete(ss.stmts, w[1])
		}
		return nil
	}
	m := setRE.FindStringSubmatch(sql)
	if m == nil {
		// SET TIME ZONE, SET TRANSACTION ... and the like.
		return nil
	}
	name, raw := strings.ToLower(m[1]), m[2]
	val := settingValue(raw)
	if !strings.HasPrefix(name, "dpstat.") {
		switch name {
		case "client_encoding", "names":
			if e := strings.ToUpper(strings.ReplaceAll(strings.ReplaceAll(val, "-", ""), "_", "")); e != "UTF8" && e != "UNICODE" && e != "DEFAULT" {
				return pgErrorf("22023", "client_encoding %q is not supported: dpstat speaks UTF8 only", val)
			}
		default:
			if len(val) <= 256 {
				ss.params[name] = val
			}
		}
		return nil
	}
	num := func(what string) (float64, error) {
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, pgErrorf("22023", "invalid value for %s: %s; want a number such as 0.5", what, quote(val))
		}
		return f, nil
	}
	switch name {
	case "dpstat.epsilon":
		f, err := num(name)
		if err != nil {
			return err
		}
		if f <= 0 {
			return pgErrorf("22023", "invalid value for dpstat.epsilon: %s; want a number > 0", val)
		}
		ss.epsilon = f
	case "dpstat.delta":
		f, err := num(name)
		if err != nil {
			return err
		}
		if f < 0 || f >= 1 {
			return pgErrorf("22023", "invalid value for dpstat.delta: %s; want a number in [0, 1)", val)
		}
		ss.delta = f
	case "dpstat.confidence":
		f, err := num(name)
		if err != nil {
			return err
		}
		if f <= 0 || f >= 1 {
			return pgErrorf("22023", "invalid value for dpstat.confidence: %s; want a number in (0, 1) such as 0.95", val)
		}
		ss.confidence = f
	case "dpstat.intervals":
		switch strings.ToLower(strings.TrimSpace(val)) {
		case "on", "true", "yes", "1":
			ss.intervals = true
		case "off", "false", "no", "0":
			ss.intervals = false
		default:
			return pgErrorf("22023", "invalid value for dpstat.intervals: %s; want on or off", quote(val))
		}
	default:
		return pgErrorf("42704", "unrecognized configuration parameter %q; dpstat has %s", name, strings.Join(dpSettings, ", "))
	}
	return nil
}

func (ss *session) dpSetting(name string) string {
	switch name {
	case "dpstat.epsilon":
		if ss.epsilon == 0 {
			return "default"
		}
		return strconv.FormatFloat(ss.epsilon, 'g', -1, 64)
	case "dpstat.delta":
		return strconv.FormatFloat(ss.delta, 'g', -1, 64)
	case "dpstat.confidence":
		if ss.confidence == 0 {
			return "0.95"
		}
		return strconv.FormatFloat(ss.confidence, 'g', -1, 64)
	case "dpstat.intervals":
		if ss.intervals {
			return "on"
		}
		return "off"
	}
	return ""
}

var fixedSettings = map[string]string{
	"server_version": ServerVersion, "server_version_num": "150000", "server_encoding": "UTF8", "client_encoding": "UTF8",
	"standard_conforming_strings": "on", "datestyle": "ISO, MDY", "timezone": "UTC", "integer_datetimes": "on",
	"transaction_isolation": "read committed", "default_transaction_read_only": "on", "transaction_read_only": "on",
	"max_identifier_length": "63", "search_path": "public", "intervalstyle": "postgres", "lc_collate": "C",
}

func (ss *session) show(sql string) ([]column, [][]any, error) {
	w := words(sql, 2)
	if len(w) < 2 {
		return nil, nil, pgErrorf("42601", "SHOW needs a setting name, e.g. SHOW dpstat.epsilon")
	}
	name := w[1]
	if name == "all" {
		var rows [][]any
		for _, n := range dpSettings {
			rows = append(rows, []any{n, ss.dpSetting(n), "dpstat session setting"})
		}
		keys := make([]string, 0, len(fixedSettings))
		for k := range fixedSettings {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			rows = append(rows, []any{k, fixedSettings[k], ""})
		}
		return []column{{"name", oidText}, {"setting", oidText}, {"description", oidText}}, rows, nil
	}
	if strings.HasPrefix(name, "dpstat.") {
		if v := ss.dpSetting(name); v != "" {
			return []column{{name, oidText}}, [][]any{{v}}, nil
		}
		return nil, nil, pgErrorf("42704", "unrecognized configuration parameter %q; dpstat has %s", name, strings.Join(dpSettings, ", "))
	}
	if v, ok := fixedSettings[name]; ok {
		return []column{{name, oidText}}, [][]any{{v}}, nil
	}
	if v, ok := ss.params[name]; ok {
		return []column{{name, oidText}}, [][]any{{v}}, nil
	}
	return nil, nil, pgErrorf("42704", "unrecognized configuration parameter %q", name)
}

const oidBase = 16384

var (
	aliasRE     = regexp.MustCompile(`(?i)\bas\s+"([^"]+)"`)
	relnameRE   = regexp.MustCompile(`(?i)relname\s+operator\s*\(\s*pg_catalog\.~\s*\)\s*'((?:[^']|'')*)'`)
	oidEqRE     = regexp.MustCompile(`(?i)(?:c\.oid|attrelid)\s*=\s*'(\d+)'`)
	simpleSelRE = regexp.MustCompile(`(?is)^\s*select\s+(pg_catalog\.)?(version\(\)|current_database\(\)|current_schema\(\)|current_user|session_user|pg_backend_pid\(\)|pg_is_in_recovery\(\))\s*;?\s*$`)
	selectOneRE = regexp.MustCompile(`(?is)^\s*select\s+1\s*;?\s*$`)
)

// catalog answers the pg_catalog queries that clients send, from the
// catalog's declarations. Queries it does not recognise get an empty result.
func (ss *session) catalog(sql string) ([]column, [][]any, error) {
	tables := ss.s.opts.Answerer.Tables(ss.user.Name)
	code := codeText(sql)
	if selectOneRE.MatchString(sql) {
		// Connection health checks.
		return []column{{"?column?", oidInt4}}, [][]any{{"1"}}, nil
	}
	if m := simpleSelRE.FindStringSubmatch(sql); m != nil {
		fn := strings.ToLower(m[2])
		name := strings.TrimSuffix(fn, "()")
		var v any
		switch name {
		case "version":
			v = "PostgreSQL " + ServerVersion + ": dpstat differentially private SQL"
		case "current_database":
			v = "dpstat"
		case "current_schema":
			v = "public"
		case "current_user", "session_user":
			v = ss.user.Name
		case "pg_backend_pid":
			return []column{{name, oidInt4}}, [][]any{{"0"}}, nil
		case "pg_is_in_recovery":
			return []column{{name, oidBool}}, [][]any{{false}}, nil
		}
		return []column{{name, oidText}}, [][]any{{v}}, nil
	}
	// psql \d NAME, step 1: find the relation by a regular expression.
	if m := relnameRE.FindStringSubmatch(sql); m != nil && strings.Contains(code, "c.oid") && strings.Contains(code, "pg_class") {
		re, err := regexp.Compile("(?i)" + strings.ReplaceAll(m[1], "''", "'"))
		if err != nil {
			return nil, nil, pgErrorf("2201B", "invalid regular expression: %v", err)
		}
		var rows [][]any
		for i, t := range tables {
			if re.MatchString(t.Name) {
				rows = append(rows, []any{strconv.Itoa(oidBase + i), "public", t.Name})
			}
		}
		return []column{{"oid", oidText}, {"nspname", oidText}, {"relname", oidText}}, rows, nil
	}
	if m := oidEqRE.FindStringSubmatch(sql); m != nil {
		n, _ := strconv.Atoi(m[1])
		idx := n - oidBase
		var t *server.TableInfo
		if idx >= 0 && idx < len(tables) {
			t = &tables[idx]
		}
		switch {
		// psql \d NAME, step 2: the relation's properties.
		case strings.Contains(code, "relchecks"):
			names := []string{"relchecks", "relkind", "relhasindex", "relhasrules", "relhastriggers", "relrowsecurity",
				"relforcerowsecurity", "relhasoids", "relispartition", "reloptions", "reltablespace", "reloftype",
				"relpersistence", "relreplident", "amname"}
			cols := make([]column, len(names))
			for i, n := range names {
				cols[i] = column{n, oidText}
			}
			if t == nil {
				return cols, nil, nil
			}
			return cols, [][]any{{"0", "r", "f", "f", "f", "f", "f", "f", "f", "", "0", "", "p", "d", ""}}, nil
		// psql \d NAME, step 3: the columns, with the declared bounds
		// shown as the type.
		case strings.Contains(code, "format_type") && strings.Contains(code, "a.attname"):
			cols := []column{{"attname", oidText}, {"format_type", oidText}, {"default", oidText}, {"attnotnull", oidText},
				{"attcollation", oidText}, {"attidentity", oidText}, {"attgenerated", oidText}}
			// \d+ asks for more, depending on the psql version.
			var extra []string
			for _, c := range []string{"attstorage", "attcompression", "attstattarget", "col_description"} {
				if strings.Contains(code, c) {
					cols = append(cols, column{c, oidText})
					extra = append(extra, c)
				}
			}
			if t == nil {
				return cols, nil, nil
			}
			var rows [][]any
			for _, c := range t.Columns {
				notNull := "t"
				if c.Nullable {
					notNull = "f"
				}
				r := []any{c.Name, declaredType(c), nil, notNull, "", "", ""}
				for _, x := range extra {
					switch x {
					case "attstorage":
						r = append(r, "p")
					case "col_description":
						r = append(r, columnNote(t, c))
					default:
						r = append(r, nil)
					}
				}
				rows = append(rows, r)
			}
			return cols, rows, nil
		}
	}
	// psql \d, \dt (and \d+): the list of relations, by the column aliases
	// the query asks for.
	if strings.Contains(code, "pg_class") && strings.Contains(code, "relkind") {
		aliases := aliasRE.FindAllStringSubmatch(sql, -1)
		if len(aliases) > 0 {
			cols := make([]column, len(aliases))
			for i, a := range aliases {
				cols[i] = column{a[1], oidText}
			}
			var rows [][]any
			for _, t := range tables {
				r := make([]any, len(cols))
				for i, c := range cols {
					switch c.name {
					case "Schema":
						r[i] = "public"
					case "Name":
						r[i] = t.Name
					case "Type":
						r[i] = "table"
					case "Owner":
						r[i] = "dpstat"
					case "Persistence":
						r[i] = "permanent"
					case "Description":
						r[i] = tableNote(t)
					default:
						r[i] = ""
					}
				}
				rows = append(rows, r)
			}
			return cols, rows, nil
		}
	}
	// Anything else: no rows, with the column names the query asked for
	// where it named them.
	if aliases := aliasRE.FindAllStringSubmatch(sql, -1); len(aliases) > 0 {
		cols := make([]column, len(aliases))
		for i, a := range aliases {
			cols[i] = column{a[1], oidText}
		}
		return cols, nil, nil
	}
	return []column{{"?column?", oidText}}, nil, nil
}

func fmtBound(f *float64) string {
	if f == nil {
		return "?"
	}
	return strconv.FormatFloat(*f, 'g', -1, 64)
}

// declaredType is a column's type with its declaration, as \d shows it.
func declaredType(c server.ColumnInfo) string {
	typ := c.Type
	switch {
	case c.Lower != nil || c.Upper != nil:
		typ += fmt.Sprintf(" in [%s, %s]", fmtBound(c.Lower), fmtBound(c.Upper))
	case len(c.Values) > 0:
		vals := c.Values
		more := ""
		if len(vals) > 8 {
			vals, more = vals[:8], ", ..."
		}
		typ += " in {" + strings.Join(vals, ", ") + more + "}"
	}
	return typ
}

func columnNote(t *server.TableInfo, c server.ColumnInfo) string {
	if c.Name == t.PrivacyUnit {
		return "privacy unit"
	}
	return ""
}

func tableNote(t server.TableInfo) string {
	if t.PrivacyUnit == "" {
		return "one row per person"
	}
	return fmt.Sprintf("privacy unit %s (at most %d groups per person, %d rows per group)", t.PrivacyUnit, t.MaxGroupsPerUnit, t.MaxRowsPerGroup)
}
