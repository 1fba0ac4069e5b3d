package pgwire

import (
	"math"
	"sort"
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/query"
)

// constText is the text of a constant in a SET statement: a string,
// number or boolean as written.
func constText(n *pg_query.Node) string {
	if tc := n.GetTypeCast(); tc != nil {
		return constText(tc.Arg)
	}
	c := n.GetAConst()
	if c == nil {
		if cr := n.GetColumnRef(); cr != nil && len(cr.Fields) > 0 {
			return cr.Fields[len(cr.Fields)-1].GetString_().GetSval()
		}
		return ""
	}
	switch v := c.Val.(type) {
	case *pg_query.A_Const_Sval:
		return v.Sval.Sval
	case *pg_query.A_Const_Ival:
		return strconv.FormatInt(int64(v.Ival.Ival), 10)
	case *pg_query.A_Const_Fval:
		return v.Fval.Fval
	case *pg_query.A_Const_Boolval:
		if v.Boolval.Boolval {
			return "on"
		}
		return "off"
	}
	return ""
}

// dpSettings are the session settings the front end keeps.
var dpSettings = []string{"dpstat.accuracy", "dpstat.confidence", "dpstat.delta", "dpstat.dropped", "dpstat.epsilon", "dpstat.fresh", "dpstat.intervals"}

// reset sets one dpstat setting, or all of them, back to its default.
func (ss *session) reset(name string) {
	all := name == ""
	if all || name == "dpstat.epsilon" {
		ss.epsilon = ss.s.opts.DefaultEpsilon
	}
	if all || name == "dpstat.accuracy" {
		ss.accuracy = nil
	}
	if all || name == "dpstat.delta" {
		ss.delta = 0
	}
	if all || name == "dpstat.confidence" {
		ss.confidence = 0
	}
	if all || name == "dpstat.intervals" {
		ss.intervals = false
	}
	if all || name == "dpstat.fresh" {
		ss.fresh = false
	}
	if all || name == "dpstat.dropped" {
		ss.dropped = false
	}
}

// set runs SET, RESET, DISCARD and DEALLOCATE.
func (ss *session) set(n *pg_query.Node) error {
	if d := n.GetDeallocateStmt(); d != nil {
		if d.Name != "" {
			delete(ss.stmts, d.Name)
		}
		return nil
	}
	vs := n.GetVariableSetStmt()
	if vs == nil {
		// DISCARD: session state a DP query does not depend on.
		return nil
	}
	name := strings.ToLower(vs.Name)
	switch vs.Kind {
	case pg_query.VariableSetKind_VAR_RESET_ALL:
		ss.reset("")
		return nil
	case pg_query.VariableSetKind_VAR_RESET, pg_query.VariableSetKind_VAR_SET_DEFAULT:
		if strings.HasPrefix(name, "dpstat.") {
			if ss.dpSetting(name) == "" {
				return pgErrorf("42704", "unrecognized configuration parameter %q; dpstat has %s", name, strings.Join(dpSettings, ", "))
			}
			ss.reset(name)
		}
		delete(ss.params, name)
		return nil
	case pg_query.VariableSetKind_VAR_SET_VALUE:
	default:
		// SET TRANSACTION ..., SET SESSION CHARACTERISTICS ..., FROM CURRENT.
		return nil
	}
	parts := make([]string, len(vs.Args))
	for i, a := range vs.Args {
		parts[i] = constText(a)
	}
	return ss.assign(name, strings.Join(parts, ", "))
}

// assign sets one setting from its text, as SET and the startup packet
// give it: a dpstat setting is checked and kept, a misspelt one refused
// naming the valid ones; another setting is kept for SHOW.
func (ss *session) assign(name, val string) error {
	if !strings.HasPrefix(name, "dpstat.") {
		switch name {
		case "client_encoding":
			if e := strings.ToUpper(strings.ReplaceAll(strings.ReplaceAll(val, "-", ""), "_", "")); e != "UTF8" && e != "UNICODE" && e != "DEFAULT" {
				return pgErrorf("22023", "client_encoding %q is not supported: dpstat speaks UTF8 only", val)
			}
		default:
			if len(val) <= 256 && len(ss.params) < 256 {
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
		if err := answer.CheckParam(answer.ParamEpsilon, name, f); err != nil {
			return pgErrorf("22023", "invalid value for %s", err)
		}
		// An ε and an accuracy are two ways to ask: the last one set wins.
		ss.epsilon, ss.accuracy = f, nil
	case "dpstat.accuracy":
		switch strings.ToLower(strings.TrimSpace(val)) {
		case "", "off", "none":
			ss.accuracy = nil
			return nil
		}
		acc, err := answer.ParseAccuracy(val)
		if err != nil {
			return pgErrorf("22023", "invalid value for dpstat.accuracy: %v; e.g. SET dpstat.accuracy = 20, or = 'n=20,total=500' (off to ask by dpstat.epsilon again)", err)
		}
		ss.accuracy = acc
	case "dpstat.delta":
		f, err := num(name)
		if err != nil {
			return err
		}
		if err := answer.CheckParam(answer.ParamDelta, name, f); err != nil {
			return pgErrorf("22023", "invalid value for %s", err)
		}
		ss.delta = f
	case "dpstat.confidence":
		f, err := num(name)
		if err != nil {
			return err
		}
		if err := answer.CheckParam(answer.ParamConfidence, name, f); err != nil {
			return pgErrorf("22023", "invalid value for %s", err)
		}
		ss.confidence = f
	case "dpstat.intervals", "dpstat.dropped":
		dst := &ss.intervals
		if name == "dpstat.dropped" {
			dst = &ss.dropped
		}
		switch strings.ToLower(strings.TrimSpace(val)) {
		case "on", "true", "yes", "1":
			*dst = true
		case "off", "false", "no", "0":
			*dst = false
		default:
			return pgErrorf("22023", "invalid value for %s: %s; want on or off", name, quote(val))
		}
	case "dpstat.fresh":
		switch strings.ToLower(strings.TrimSpace(val)) {
		case "on", "true", "yes", "1":
			ss.fresh = true
		case "off", "false", "no", "0":
			ss.fresh = false
		default:
			return pgErrorf("22023", "invalid value for dpstat.fresh: %s; want on (every answer fresh, charged) or off (answers derived from earlier releases at no cost where they can be)", quote(val))
		}
	default:
		return pgErrorf("42704", "unrecognized configuration parameter %q; dpstat has %s", name, strings.Join(dpSettings, ", "))
	}
	return nil
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func (ss *session) dpSetting(name string) string {
	switch name {
	case "dpstat.accuracy":
		if ss.accuracy == nil {
			return "off"
		}
		return (&query.Accuracy{All: ss.accuracy.All, Columns: ss.accuracy.Columns}).String()
	case "dpstat.epsilon":
		// The ε the next query spends: the session's, or the answerer's
		// default.
		eps := ss.epsilon
		if eps == 0 {
			eps = query.DefaultEpsilon
		}
		return strconv.FormatFloat(eps, 'g', -1, 64)
	case "dpstat.delta":
		return strconv.FormatFloat(ss.delta, 'g', -1, 64)
	case "dpstat.confidence":
		if ss.confidence == 0 {
			return strconv.FormatFloat(query.DefaultConfidence, 'g', -1, 64)
		}
		return strconv.FormatFloat(ss.confidence, 'g', -1, 64)
	case "dpstat.intervals":
		if ss.intervals {
			return "on"
		}
		return "off"
	case "dpstat.fresh":
		if ss.fresh {
			return "on"
		}
		return "off"
	case "dpstat.dropped":
		if ss.dropped {
			return "on"
		}
		return "off"
	}
	return ""
}

// fixedSettings are the server settings clients ask about; their values
// do not change.
var fixedSettings = map[string]string{
	"server_version": ServerVersion, "server_version_num": "150000", "server_encoding": "UTF8", "client_encoding": "UTF8",
	"standard_conforming_strings": "on", "datestyle": "ISO, MDY", "timezone": "UTC", "integer_datetimes": "on",
	"transaction_isolation": "read committed", "default_transaction_isolation": "read committed",
	"default_transaction_read_only": "on", "transaction_read_only": "on", "transaction_deferrable": "off",
	"max_identifier_length": "63", "search_path": "public", "intervalstyle": "postgres", "lc_collate": "C",
	"lc_ctype": "C", "lc_messages": "C", "is_superuser": "off", "max_index_keys": "32", "block_size": "8192",
}

// settingValue is the value of a setting SHOW or current_setting asks for.
func (ss *session) settingValue(name string) (string, bool) {
	if strings.HasPrefix(name, "dpstat.") {
		v := ss.dpSetting(name)
		return v, v != ""
	}
	if v, ok := ss.params[name]; ok {
		return v, true
	}
	v, ok := fixedSettings[name]
	return v, ok
}

func (ss *session) show(n *pg_query.Node) ([]column, [][]any, error) {
	name := strings.ToLower(n.GetVariableShowStmt().GetName())
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
	if v, ok := ss.settingValue(name); ok {
		return []column{{name, oidText}}, [][]any{{v}}, nil
	}
	if strings.HasPrefix(name, "dpstat.") {
		return nil, nil, pgErrorf("42704", "unrecognized configuration parameter %q; dpstat has %s", name, strings.Join(dpSettings, ", "))
	}
	return nil, nil, pgErrorf("42704", "unrecognized configuration parameter %q; SHOW answers dpstat's settings (%s) and the server settings clients ask for (SHOW ALL lists them)", name, strings.Join(dpSettings, ", "))
}

// txnTag is the command tag of a transaction statement.
func txnTag(n *pg_query.Node) (tag string, status byte) {
	switch n.GetTransactionStmt().GetKind() {
	case pg_query.TransactionStmtKind_TRANS_STMT_BEGIN, pg_query.TransactionStmtKind_TRANS_STMT_START:
		return "BEGIN", 'T'
	case pg_query.TransactionStmtKind_TRANS_STMT_ROLLBACK:
		return "ROLLBACK", 'I'
	case pg_query.TransactionStmtKind_TRANS_STMT_SAVEPOINT:
		return "SAVEPOINT", 0
	case pg_query.TransactionStmtKind_TRANS_STMT_RELEASE:
		return "RELEASE", 0
	case pg_query.TransactionStmtKind_TRANS_STMT_ROLLBACK_TO:
		return "ROLLBACK", 0
	}
	return "COMMIT", 'I'
}
