package parse

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/dpstat/dpstat/query/ir"
)

// nullExtend makes the computed columns of subqueries on the optional side
// of an outer join NULL where the join found no match, as SQL has them:
// merged as they are, a column such as 1 AS one would read 1 on a row the
// join extended with NULLs. j is the join; subs are the subqueries read on
// its optional side; direct says that the optional side is one subquery
// (not a join of several).
//
// A computed column e becomes CASE WHEN c IS NOT NULL THEN e END, where c
// is a plain column of the subquery that the join's condition equates with
// a column of the other side: c is not NULL on a row that matched (the
// equality held), and NULL on a row the join extended. Where there is no
// such column the query is refused.
func nullExtend(j *pg.JoinExpr, subs []*subquery, direct bool) error {
	for _, sq := range subs {
		var computed []string
		for _, name := range sq.names {
			if sq.outputs[strings.ToLower(name)].GetColumnRef() == nil {
				computed = append(computed, name)
			}
		}
		if len(computed) == 0 {
			continue
		}
		var match *pg.Node
		if direct && j.Jointype == pg.JoinType_JOIN_LEFT {
			match = matchColumn(j, sq)
		}
		if match == nil {
			return ir.Refuse("subquery %s is on the optional side of an outer join and computes the column %s, which must read NULL where the join finds no match: LEFT JOIN the subquery directly, ON (or USING) one of its plain columns, e.g. ON t.id = %s.id", sq.alias, computed[0], sq.alias)
		}
		for _, name := range computed {
			key := strings.ToLower(name)
			test := &pg.Node{Node: &pg.Node_NullTest{NullTest: &pg.NullTest{
				Arg: proto.Clone(match).(*pg.Node), Nulltesttype: pg.NullTestType_IS_NOT_NULL, Location: -1}}}
			sq.outputs[key] = &pg.Node{Node: &pg.Node_CaseExpr{CaseExpr: &pg.CaseExpr{
				Args: []*pg.Node{pg.MakeCaseWhenNode(test, sq.outputs[key], -1)}, Location: -1}}}
		}
	}
	return nil
}

// matchColumn returns the expression of a plain column of sq that j's
// condition equates with another column (an equality of the ON condition,
// alone or ANDed, or a USING column), or nil.
func matchColumn(j *pg.JoinExpr, sq *subquery) *pg.Node {
	plain := func(name string) *pg.Node {
		if out := sq.outputs[strings.ToLower(name)]; out.GetColumnRef() != nil {
			return out
		}
		return nil
	}
	for _, u := range j.UsingClause {
		if out := plain(u.GetString_().GetSval()); out != nil {
			return out
		}
	}
	var found *pg.Node
	var visit func(n *pg.Node)
	visit = func(n *pg.Node) {
		if found != nil || n == nil {
			return
		}
		if b := n.GetBoolExpr(); b != nil {
			if b.Boolop == pg.BoolExprType_AND_EXPR {
				for _, a := range b.Args {
					visit(a)
				}
			}
			return
		}
		a := n.GetAExpr()
		if a == nil || a.Kind != pg.A_Expr_Kind_AEXPR_OP || len(a.Name) != 1 || a.Name[0].GetString_().GetSval() != "=" {
			return
		}
		for _, side := range []*pg.Node{a.Lexpr, a.Rexpr} {
			cr := side.GetColumnRef()
			if cr == nil || len(cr.Fields) != 2 || !strings.EqualFold(cr.Fields[0].GetString_().GetSval(), sq.alias) {
				continue
			}
			if out := plain(cr.Fields[1].GetString_().GetSval()); out != nil {
				found = out
				return
			}
		}
	}
	visit(j.Quals)
	return found
}
