package pgwire

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The front end reads SQL with the PostgreSQL grammar (pg_query): it splits
// query strings into statements, tells session commands, catalog queries and
// DP queries apart, and binds parameters into the parse tree as typed
// constants. It never edits SQL text.

// splitStatements splits a simple-protocol query string into its
// statements at the semicolons PostgreSQL's scanner finds (outside
// literals, quoted names and comments). Statements holding nothing but
// comments are dropped.
func splitStatements(sql string) ([]string, error) {
	res, err := pg_query.Scan(sql)
	if err != nil {
		return nil, err
	}
	var out []string
	start, code := 0, false
	cut := func(end int) {
		if code {
			out = append(out, strings.TrimSpace(sql[start:end]))
		}
		start, code = end+1, false
	}
	for _, t := range res.Tokens {
		switch t.Token {
		case pg_query.Token_ASCII_59:
			cut(int(t.Start))
		case pg_query.Token_SQL_COMMENT, pg_query.Token_C_COMMENT:
		default:
			code = true
		}
	}
	cut(len(sql))
	return out, nil
}

// statementInfo is one statement read with the PostgreSQL grammar.
type statementInfo struct {
	kind stmtKind
	// tree is the parse tree; nil when the text does not parse (dpstat's
	// own parser then reports the syntax error) or holds no statement.
	tree *pg_query.ParseResult
	// nparams is the highest $n placeholder.
	nparams int
}

// node is the statement's top node, or nil.
func (si *statementInfo) node() *pg_query.Node {
	if si.tree == nil || len(si.tree.Stmts) == 0 {
		return nil
	}
	return si.tree.Stmts[0].Stmt
}

// readStatement parses one statement and classifies it. Several statements
// in one text are an error.
func readStatement(sql string) (*statementInfo, error) {
	tree, err := pg_query.Parse(sql)
	if err != nil {
		// Not PostgreSQL SQL: a DP query whose syntax error dpstat's own
		// parser reports (with the same grammar).
		return &statementInfo{kind: kindDP}, nil
	}
	if len(tree.Stmts) == 0 {
		return &statementInfo{kind: kindEmpty, tree: tree}, nil
	}
	if len(tree.Stmts) > 1 {
		return nil, pgErrorf("42601", "cannot insert multiple commands into a prepared statement")
	}
	si := &statementInfo{tree: tree}
	n := tree.Stmts[0].Stmt
	switch {
	case n.GetTransactionStmt() != nil:
		si.kind = kindTxn
	case n.GetVariableSetStmt() != nil, n.GetDiscardStmt() != nil, n.GetDeallocateStmt() != nil:
		si.kind = kindSet
	case n.GetVariableShowStmt() != nil:
		si.kind = kindShow
	case n.GetSelectStmt() != nil && isCatalogQuery(n):
		si.kind = kindCatalog
	default:
		si.kind = kindDP
	}
	var perr error
	walk(tree.ProtoReflect(), func(n *pg_query.Node) {
		if p := n.GetParamRef(); p != nil {
			if p.Number < 1 || p.Number > maxParams {
				perr = pgErrorf("42P02", "parameter $%d: want $1 to $%d", p.Number, maxParams)
			}
			si.nparams = max(si.nparams, int(p.Number))
		}
	})
	if perr != nil {
		return nil, perr
	}
	return si, nil
}

// classify says which handler answers one statement.
func classify(sql string) stmtKind {
	si, err := readStatement(sql)
	if err != nil {
		return kindDP
	}
	return si.kind
}

// catalogSchemas are the schemas whose relations are answered from the
// catalog's declarations.
var catalogSchemas = map[string]bool{"pg_catalog": true, "information_schema": true}

// isCatalogQuery reports whether a SELECT reads the system catalogs
// (pg_catalog, information_schema, or an unqualified pg_* relation) or no
// relation at all (SELECT 1, SELECT version()). Such queries never reach
// the data.
func isCatalogQuery(n *pg_query.Node) bool {
	relations, catalog := 0, false
	walk(n.ProtoReflect(), func(n *pg_query.Node) {
		if rv := n.GetRangeVar(); rv != nil {
			relations++
			if catalogSchemas[strings.ToLower(rv.Schemaname)] || rv.Schemaname == "" && strings.HasPrefix(strings.ToLower(rv.Relname), "pg_") {
				catalog = true
			}
		}
	})
	return catalog || relations == 0 && !hasRangeFunction(n)
}

func hasRangeFunction(n *pg_query.Node) bool {
	found := false
	walk(n.ProtoReflect(), func(n *pg_query.Node) {
		if n.GetRangeFunction() != nil || n.GetRangeTableFunc() != nil {
			found = true
		}
	})
	return found
}

// walk calls fn for every node of a parse tree, parents before children.
// fn may replace a node's content in place; walk then descends into the
// new content.
// pgNode is a node of a parse tree.
type pgNode = pg_query.Node

func walk(m protoreflect.Message, fn func(*pg_query.Node)) {
	if n, ok := m.Interface().(*pg_query.Node); ok {
		fn(n)
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap() || fd.Message() == nil:
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				walk(l.Get(i).Message(), fn)
			}
		default:
			walk(v.Message(), fn)
		}
		return true
	})
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
	// oidDate and oidTimestamp type released keys of date and timestamp
	// columns.
	oidDate      = 1082
	oidTimestamp = 1114
)

// constant turns one bound parameter, in text or binary format, into a
// typed constant of the parse tree: NULL, an integer, a decimal number, a
// boolean or a string. Whatever it holds, a parameter stays one value.
func constant(v []byte, oid uint32, format int16) (*pg_query.Node, error) {
	if v == nil {
		return &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true, Location: -1}}}, nil
	}
	if format == 1 {
		t, err := binaryText(v, oid)
		if err != nil {
			return nil, err
		}
		v = t
	}
	s := string(v)
	if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
		return nil, fmt.Errorf("value is not valid UTF-8 text without NUL bytes")
	}
	switch oid {
	case oidText, oidVarchar, oidUnknown:
		return stringConst(s), nil
	case oidBool:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "t", "true", "on", "yes", "1":
			return boolConst(true), nil
		case "f", "false", "off", "no", "0":
			return boolConst(false), nil
		}
		return nil, fmt.Errorf("%q is not a boolean: want true or false", s)
	case oidInt2, oidInt4, oidInt8, oidFloat4, oidFloat8, oidNumeric:
		n, ok := numberConst(s)
		if !ok {
			return nil, fmt.Errorf("%q is not a finite number", s)
		}
		return n, nil
	}
	// Unspecified type: a number stays a number, anything else is a string.
	if n, ok := numberConst(s); ok {
		return n, nil
	}
	return stringConst(s), nil
}

func stringConst(s string) *pg_query.Node {
	return &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Val: &pg_query.A_Const_Sval{Sval: &pg_query.String{Sval: s}}, Location: -1}}}
}

func boolConst(b bool) *pg_query.Node {
	return &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Val: &pg_query.A_Const_Boolval{Boolval: &pg_query.Boolean{Boolval: b}}, Location: -1}}}
}

func intConst(i int32) *pg_query.Node {
	return &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Val: &pg_query.A_Const_Ival{Ival: &pg_query.Integer{Ival: i}}, Location: -1}}}
}

// numberConst returns s as an integer or decimal constant if it is a plain
// finite decimal number.
func numberConst(s string) (*pg_query.Node, bool) {
	t := strings.TrimSpace(s)
	if t == "" || len(t) > 64 {
		return nil, false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E') {
			return nil, false
		}
	}
	if i, err := strconv.ParseInt(t, 10, 64); err == nil {
		if i == int64(int32(i)) {
			return intConst(int32(i)), true
		}
		// PostgreSQL too keeps integers beyond 32 bits as numeric
		// constants.
		return floatConst(strconv.FormatInt(i, 10)), true
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, false
	}
	return floatConst(strconv.FormatFloat(f, 'g', -1, 64)), true
}

// floatConst is a numeric constant; text is a number strconv wrote.
func floatConst(text string) *pg_query.Node {
	return &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Val: &pg_query.A_Const_Fval{Fval: &pg_query.Float{Fval: text}}, Location: -1}}}
}

// binaryText decodes one binary-format parameter to its text form.
func binaryText(v []byte, oid uint32) ([]byte, error) {
	switch oid {
	case oidText, oidVarchar, oidUnknown:
		return v, nil
	case oidInt8:
		if len(v) == 8 {
			return []byte(strconv.FormatInt(int64(binary.BigEndian.Uint64(v)), 10)), nil
		}
	case oidInt4:
		if len(v) == 4 {
			return []byte(strconv.FormatInt(int64(int32(binary.BigEndian.Uint32(v))), 10)), nil
		}
	case oidInt2:
		if len(v) == 2 {
			return []byte(strconv.FormatInt(int64(int16(binary.BigEndian.Uint16(v))), 10)), nil
		}
	case oidFloat8:
		if len(v) == 8 {
			return []byte(strconv.FormatFloat(math.Float64frombits(binary.BigEndian.Uint64(v)), 'g', -1, 64)), nil
		}
	case oidFloat4:
		if len(v) == 4 {
			return []byte(strconv.FormatFloat(float64(math.Float32frombits(binary.BigEndian.Uint32(v))), 'g', -1, 32)), nil
		}
	case oidBool:
		if len(v) == 1 {
			if v[0] != 0 {
				return []byte("t"), nil
			}
			return []byte("f"), nil
		}
	}
	return nil, pgErrorf("22P03", "binary parameter of type OID %d and %d bytes is not supported: send it in text format, or as int2/int4/int8, float4/float8, bool or text", oid, len(v))
}

// bindTree returns a copy of tree with each $n replaced by params[n-1].
func bindTree(tree *pg_query.ParseResult, params []*pg_query.Node) (*pg_query.ParseResult, error) {
	out := proto.Clone(tree).(*pg_query.ParseResult)
	var err error
	walk(out.ProtoReflect(), func(n *pg_query.Node) {
		p := n.GetParamRef()
		if p == nil {
			return
		}
		if int(p.Number) > len(params) || p.Number < 1 {
			if err == nil {
				err = fmt.Errorf("query uses $%d but %d parameters were bound", p.Number, len(params))
			}
			return
		}
		n.Node = proto.Clone(params[p.Number-1]).(*pg_query.Node).Node
	})
	return out, err
}

// boundSQL is the text of si with its parameters bound: the statement's own
// text when it has none, otherwise the parse tree with typed constants in
// place of the placeholders, printed back as SQL.
func boundSQL(text string, si *statementInfo, params []*pg_query.Node) (string, error) {
	if si.nparams == 0 || si.tree == nil {
		return text, nil
	}
	tree, err := bindTree(si.tree, params)
	if err != nil {
		return "", err
	}
	return pg_query.Deparse(tree)
}
