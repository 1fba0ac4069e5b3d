package parse

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/dpstat/dpstat/query/ir"
)

// MaxMergedNodes is the most syntax nodes a query may have once its
// subqueries and common table expressions are merged into it. A column of a
// subquery used several times is copied each time, so nested subqueries
// could grow a query exponentially; the bound keeps planning time bounded,
// whatever the query, with a refusal that depends only on its text.
const MaxMergedNodes = 20000

// subquery is one subquery or common table expression read in FROM.
type subquery struct {
	alias string
	// names lists the output columns in order; outputs maps each
	// (lower-cased) to the expression computing it over the subquery's
	// FROM.
	names   []string
	outputs map[string]*pg.Node
	where   *pg.Node
	// aliases lists the FROM aliases inside the subquery, which become the
	// merged query's.
	aliases []string
	// pre is set when the subquery is a per-person pre-aggregation.
	pre *pg.SelectStmt
}

// fromItem is a table or subquery of the outer FROM, for resolving
// unqualified column names.
type fromItem struct {
	alias string
	table *ir.Table // nil for a subquery, or a name the catalog lacks
	sub   *subquery
}

// mergeSubqueries rewrites s in place: every common table expression and
// subquery in its FROM is merged into it. It refuses what cannot be merged.
// Only the outermost query (top) may read a per-person pre-aggregation.
// outer holds the common table expressions of the enclosing queries,
// already merged (s's own shadow them): each is merged once, and copied
// where it is read.
func (p *parser) mergeSubqueries(s *pg.SelectStmt, top bool, outer map[string]*pg.SelectStmt) error {
	ctes := make(map[string]*pg.SelectStmt, len(outer))
	for name, c := range outer {
		ctes[name] = c
	}
	if w := s.WithClause; w != nil {
		if err := p.mergeCTEs(w, ctes); err != nil {
			return err
		}
		s.WithClause = nil
	}
	var items []fromItem
	var subs []*subquery
	for i, n := range s.FromClause {
		nn, err := p.mergeFrom(n, ctes, &items, &subs, false)
		if err != nil {
			return err
		}
		s.FromClause[i] = nn
	}
	if len(subs) == 0 {
		return nil
	}
	for _, sq := range subs {
		if sq.pre != nil {
			if !top {
				return ir.Refuse("subquery %s aggregates per person and is read by another subquery; read a per-person pre-aggregation directly in the outer query (filter it there with WHERE)", sq.alias)
			}
			if len(subs) > 1 || len(items) > 1 {
				return ir.Refuse("a per-person pre-aggregation (%s: GROUP BY the privacy unit) is read alone: join tables inside it, not to it", sq.alias)
			}
			return p.preaggregate(s, sq)
		}
	}
	// Aliases inside the subqueries become the merged query's: they must
	// not collide with each other or with the outer FROM's.
	seen := map[string]string{}
	for _, it := range items {
		if it.sub == nil {
			seen[strings.ToLower(it.alias)] = it.alias
		}
	}
	for _, sq := range subs {
		for _, a := range sq.aliases {
			if _, dup := seen[strings.ToLower(a)]; dup {
				return ir.Refuse("the name %s is used both inside subquery %s and elsewhere in FROM; give the tables different aliases", a, sq.alias)
			}
			seen[strings.ToLower(a)] = sq.alias
		}
	}
	// Every column of a subquery becomes its expression.
	resolve := func(cr *pg.ColumnRef) (*pg.Node, error) { return resolveMerged(items, cr) }
	// SELECT * and s.* name the columns of the subqueries they read.
	if err := expandStars(s, items); err != nil {
		return err
	}
	// An output named by a bare column keeps that column's name.
	for _, t := range s.TargetList {
		if rt := t.GetResTarget(); rt != nil && rt.Name == "" {
			if cr := rt.Val.GetColumnRef(); cr != nil && len(cr.Fields) > 0 {
				if last := cr.Fields[len(cr.Fields)-1].GetString_(); last != nil {
					if out, _ := resolve(cr); out != nil {
						rt.Name = last.Sval
					}
				}
			}
		}
	}
	// The merged query's size is counted before any column is copied: a
	// query that would grow past MaxMergedNodes is refused without
	// building it.
	parts := []proto.Message{listMsg(s.TargetList), s.WhereClause, listMsg(s.GroupClause), s.HavingClause, listMsg(s.SortClause), listMsg(s.FromClause)}
	if err := p.checkMergedSize(s, parts, subs, resolve); err != nil {
		return err
	}
	var firstErr error
	replace := func(n *pg.Node) bool {
		cr := n.GetColumnRef()
		if cr == nil || firstErr != nil {
			return true
		}
		out, err := resolve(cr)
		if err != nil {
			firstErr = err
			return false
		}
		if out != nil {
			n.Node = proto.Clone(out).(*pg.Node).Node
			return false
		}
		return true
	}
	for _, part := range parts {
		if part == nil || !part.ProtoReflect().IsValid() {
			continue
		}
		walkNodes(part.ProtoReflect(), replace)
		if firstErr != nil {
			return firstErr
		}
	}
	for _, sq := range subs {
		if sq.where != nil {
			s.WhereClause = and(s.WhereClause, proto.Clone(sq.where).(*pg.Node))
		}
	}
	return nil
}

// mergeCTEs merges each common table expression of w (each may read
// those before it) and adds it to ctes under its name.
func (p *parser) mergeCTEs(w *pg.WithClause, ctes map[string]*pg.SelectStmt) error {
	own := map[string]bool{}
	if w.Recursive {
		return ir.Refuse("WITH RECURSIVE is not supported: a recursive query's rows are not bounded per person; write the steps as separate common table expressions")
	}
	for _, n := range w.Ctes {
		c := n.GetCommonTableExpr()
		if c == nil {
			return ir.Refuse("unsupported WITH clause")
		}
		if p.cat.Table(c.Ctename) != nil {
			return ir.Refuse("WITH %s: the catalog has a table named %s; give the common table expression another name", c.Ctename, c.Ctename)
		}
		if own[strings.ToLower(c.Ctename)] {
			return ir.Refuse("WITH names %s twice; give each common table expression its own name", c.Ctename)
		}
		own[strings.ToLower(c.Ctename)] = true
		sel := c.Ctequery.GetSelectStmt()
		if sel == nil {
			return ir.Refuse("WITH %s AS (…): only SELECT queries are allowed in a common table expression", c.Ctename)
		}
		sel = proto.Clone(sel).(*pg.SelectStmt)
		if len(c.Aliascolnames) > 0 {
			if len(c.Aliascolnames) != len(sel.TargetList) {
				return ir.Refuse("WITH %s (%d column names) AS (…) selects %d columns; give one name per column", c.Ctename, len(c.Aliascolnames), len(sel.TargetList))
			}
			for i, a := range c.Aliascolnames {
				if rt := sel.TargetList[i].GetResTarget(); rt != nil {
					rt.Name = a.GetString_().GetSval()
				}
			}
		}
		// A common table expression may read those before it.
		if err := p.mergeSubqueries(sel, false, ctes); err != nil {
			return err
		}
		ctes[strings.ToLower(c.Ctename)] = sel
		p.cteSize[sel] = countNodes(sel.ProtoReflect())
	}
	return nil
}

// resolveMerged resolves a column reference of a query whose FROM holds
// items: a column of a subquery is its expression; nil for anything else.
func resolveMerged(items []fromItem, cr *pg.ColumnRef) (*pg.Node, error) {
	var parts []string
	for _, f := range cr.Fields {
		if f.GetAStar() != nil {
			return nil, nil
		}
		parts = append(parts, f.GetString_().GetSval())
	}
	switch len(parts) {
	case 1:
		var found *subquery
		var in []string
		for _, it := range items {
			if it.sub != nil && it.sub.outputs[strings.ToLower(parts[0])] != nil {
				found = it.sub
				in = append(in, it.alias)
			} else if it.table != nil && it.table.Column(parts[0]) != nil {
				in = append(in, it.alias)
			}
		}
		if len(in) > 1 && found != nil {
			return nil, ir.Refuse("column %s is in %s: qualify it, e.g. %s.%s", parts[0], strings.Join(in, " and "), in[0], parts[0])
		}
		if found != nil {
			return found.outputs[strings.ToLower(parts[0])], nil
		}
	case 2:
		for _, it := range items {
			if it.sub == nil || !strings.EqualFold(it.alias, parts[0]) {
				continue
			}
			out := it.sub.outputs[strings.ToLower(parts[1])]
			if out == nil {
				return nil, ir.RefuseAs(ir.KindUnknownColumn, "unknown column %s.%s: %s has the columns %s", parts[0], parts[1], it.alias, strings.Join(it.sub.names, ", "))
			}
			return out, nil
		}
	}
	return nil, nil
}

// checkMergedSize counts the size the merged query would have, before
// any column is copied, and refuses a query that would grow past
// MaxMergedNodes without building it.
func (p *parser) checkMergedSize(s *pg.SelectStmt, parts []proto.Message, subs []*subquery, resolve func(*pg.ColumnRef) (*pg.Node, error)) error {
	var firstErr error
	size, visited := countNodes(s.ProtoReflect()), 0
	sizes := map[*pg.Node]int{}
	count := func(n *pg.Node) bool {
		cr := n.GetColumnRef()
		if visited++; visited%1024 == 0 && firstErr == nil {
			firstErr = p.checkTime()
		}
		if cr == nil || firstErr != nil {
			return firstErr == nil
		}
		out, err := resolve(cr)
		if err != nil {
			firstErr = err
			return false
		}
		if out != nil {
			if _, ok := sizes[out]; !ok {
				sizes[out] = countNodes(out.ProtoReflect())
			}
			size += sizes[out] - countNodes(n.ProtoReflect())
			return false
		}
		return true
	}
	for _, part := range parts {
		if part == nil || !part.ProtoReflect().IsValid() {
			continue
		}
		walkNodes(part.ProtoReflect(), count)
		if firstErr != nil {
			return firstErr
		}
	}
	for _, sq := range subs {
		if sq.where != nil {
			size += countNodes(sq.where.ProtoReflect())
		}
	}
	if size > MaxMergedNodes {
		return ir.Refuse("the query would have %d syntax nodes once its subqueries are merged: want at most %d; a column of a subquery used many times is copied each time", size, MaxMergedNodes)
	}
	if err := p.copying(size, "the merged query"); err != nil {
		return err
	}
	return nil
}

// mergeFrom replaces the subqueries of a FROM item by their FROM, and lists
// the item's tables and subqueries.
func (p *parser) mergeFrom(n *pg.Node, ctes map[string]*pg.SelectStmt, items *[]fromItem, subs *[]*subquery, nullable bool) (*pg.Node, error) {
	switch {
	case n.GetJoinExpr() != nil:
		j := n.GetJoinExpr()
		rightNullable := j.Jointype == pg.JoinType_JOIN_LEFT || j.Jointype == pg.JoinType_JOIN_FULL
		leftNullable := j.Jointype == pg.JoinType_JOIN_RIGHT || j.Jointype == pg.JoinType_JOIN_FULL
		before := len(*subs)
		l, err := p.mergeFrom(j.Larg, ctes, items, subs, nullable || leftNullable)
		if err != nil {
			return nil, err
		}
		if leftNullable {
			if err := nullExtend(j, (*subs)[before:], false); err != nil {
				return nil, err
			}
		}
		before = len(*subs)
		r, err := p.mergeFrom(j.Rarg, ctes, items, subs, nullable || rightNullable)
		if err != nil {
			return nil, err
		}
		if rightNullable {
			if err := nullExtend(j, (*subs)[before:], j.Rarg.GetJoinExpr() == nil); err != nil {
				return nil, err
			}
		}
		j.Larg, j.Rarg = l, r
		return n, nil
	case n.GetRangeSubselect() != nil:
		rs := n.GetRangeSubselect()
		if rs.Lateral {
			return nil, ir.Refuse("LATERAL subqueries are not supported")
		}
		sel := rs.Subquery.GetSelectStmt()
		if sel == nil {
			return nil, ir.Refuse("unsupported subquery in FROM")
		}
		alias := "subquery"
		if rs.Alias != nil {
			alias = rs.Alias.Aliasname
			if len(rs.Alias.Colnames) > 0 {
				return nil, ir.Refuse("column aliases in FROM are not supported; name the columns inside the subquery with AS")
			}
		}
		sel = proto.Clone(sel).(*pg.SelectStmt)
		if err := p.mergeSubqueries(sel, false, ctes); err != nil {
			return nil, err
		}
		return p.subqueryItem(sel, alias, items, subs, nullable)
	case n.GetRangeVar() != nil:
		rv := n.GetRangeVar()
		if c := ctes[strings.ToLower(rv.Relname)]; c != nil && rv.Schemaname == "" && rv.Catalogname == "" {
			alias := rv.Relname
			if rv.Alias != nil {
				alias = rv.Alias.Aliasname
				if len(rv.Alias.Colnames) > 0 {
					return nil, ir.Refuse("column aliases in FROM are not supported; name the columns inside WITH %s AS (…) with AS", rv.Relname)
				}
			}
			if err := p.copying(p.cteSize[c], "WITH "+rv.Relname); err != nil {
				return nil, err
			}
			return p.subqueryItem(proto.Clone(c).(*pg.SelectStmt), alias, items, subs, nullable)
		}
		alias := rv.Relname
		if rv.Alias != nil {
			alias = rv.Alias.Aliasname
		}
		t := p.bind(rv.Relname, alias)
		*items = append(*items, fromItem{alias: alias, table: t})
		return n, nil
	}
	return n, nil
}

// subqueryItem checks that sel is a row-level transformation (or a
// per-person pre-aggregation) and records it as a FROM item under alias.
// It returns the node that takes its place in the outer FROM.
func (p *parser) subqueryItem(sel *pg.SelectStmt, alias string, items *[]fromItem, subs *[]*subquery, nullable bool) (*pg.Node, error) {
	switch {
	case sel.Op != pg.SetOperation_SETOP_NONE && sel.Op != pg.SetOperation_SET_OPERATION_UNDEFINED:
		return nil, ir.Refuse("subquery %s: UNION, INTERSECT and EXCEPT are not supported", alias)
	case len(sel.DistinctClause) > 0:
		return nil, ir.Refuse("subquery %s: SELECT DISTINCT is not supported: rows would no longer be one person's; GROUP BY the privacy unit to aggregate per person", alias)
	case sel.LimitCount != nil || sel.LimitOffset != nil:
		return nil, ir.Refuse("subquery %s: LIMIT and OFFSET are not allowed in a subquery: which rows they keep would depend on the data", alias)
	case len(sel.WindowClause) > 0:
		return nil, ir.Refuse("subquery %s: window functions are not supported", alias)
	case len(sel.ValuesLists) > 0 || len(sel.FromClause) == 0:
		return nil, ir.Refuse("subquery %s reads no catalog table; subqueries read a private table: %s", alias, p.tableNames())
	case len(sel.FromClause) > 1:
		return nil, ir.Refuse("subquery %s: FROM a, b is not supported: write a JOIN with ON or USING", alias)
	}
	sq := &subquery{alias: alias, outputs: map[string]*pg.Node{}}
	aggregates := len(sel.GroupClause) > 0 || sel.HavingClause != nil
	for _, t := range sel.TargetList {
		if rt := t.GetResTarget(); rt != nil && rt.Val != nil {
			aggregates = aggregates || containsAggregate(rt.Val)
		}
	}
	if aggregates {
		sq.pre = sel
		*subs = append(*subs, sq)
		*items = append(*items, fromItem{alias: alias, sub: sq})
		return sel.FromClause[0], nil
	}
	from := sel.FromClause[0]
	var inner []fromItem
	var innerSubs []*subquery
	if _, err := p.mergeFrom(from, nil, &inner, &innerSubs, false); err != nil {
		return nil, err
	}
	for _, it := range inner {
		sq.aliases = append(sq.aliases, it.alias)
	}
	// With one table inside, its columns are qualified, so that they keep
	// their meaning once merged next to other tables.
	var single *ir.Table
	if rv := from.GetRangeVar(); rv != nil {
		single = p.bind(rv.Relname, aliasOf(rv))
	}
	qualify := func(n *pg.Node) {
		if single == nil || n == nil {
			return
		}
		walkNodes(n.ProtoReflect(), func(m *pg.Node) bool {
			if cr := m.GetColumnRef(); cr != nil && len(cr.Fields) == 1 && cr.Fields[0].GetString_() != nil {
				cr.Fields = append([]*pg.Node{pg.MakeStrNode(inner[0].alias)}, cr.Fields...)
			}
			return true
		})
	}
	for _, t := range sel.TargetList {
		rt := t.GetResTarget()
		if rt == nil || rt.Val == nil {
			return nil, ir.Refuse("subquery %s: unsupported select-list item", alias)
		}
		if cr := rt.Val.GetColumnRef(); cr != nil && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
			if single == nil {
				return nil, ir.Refuse("subquery %s: SELECT * over a join is not supported; name the columns", alias)
			}
			for _, c := range single.Columns {
				sq.add(c.Name, pg.MakeColumnRefNode([]*pg.Node{pg.MakeStrNode(inner[0].alias), pg.MakeStrNode(c.Name)}, 0))
			}
			continue
		}
		name := rt.Name
		if name == "" {
			if cr := rt.Val.GetColumnRef(); cr != nil {
				name = cr.Fields[len(cr.Fields)-1].GetString_().GetSval()
			}
		}
		if name == "" {
			return nil, ir.Refuse("subquery %s: name the computed column %s with AS", alias, deparseExpr(rt.Val))
		}
		if sq.outputs[strings.ToLower(name)] != nil {
			return nil, ir.Refuse("subquery %s has two columns named %s; give them different names with AS", alias, name)
		}
		val := proto.Clone(rt.Val).(*pg.Node)
		qualify(val)
		sq.add(name, val)
	}
	if sel.WhereClause != nil {
		if nullable {
			return nil, ir.Refuse("subquery %s is on the optional side of an outer join and filters rows (WHERE); join the table directly and put the condition in the outer WHERE or filter before the join", alias)
		}
		sq.where = proto.Clone(sel.WhereClause).(*pg.Node)
		qualify(sq.where)
	}
	*subs = append(*subs, sq)
	*items = append(*items, fromItem{alias: alias, sub: sq})
	return from, nil
}

func (sq *subquery) add(name string, expr *pg.Node) {
	sq.names = append(sq.names, name)
	sq.outputs[strings.ToLower(name)] = expr
}

// and joins two conditions with AND.
func and(a, b *pg.Node) *pg.Node {
	if a == nil {
		return b
	}
	return pg.MakeBoolExprNode(pg.BoolExprType_AND_EXPR, []*pg.Node{a, b}, 0)
}

// listMsg wraps a list of nodes as one message, for walking.
func listMsg(nodes []*pg.Node) proto.Message {
	if len(nodes) == 0 {
		return nil
	}
	return &pg.List{Items: nodes}
}

// walkNodes calls fn on every Node of the message m, outermost first; fn
// returns false to skip a node's children.
func walkNodes(m protoreflect.Message, fn func(*pg.Node) bool) {
	if n, ok := m.Interface().(*pg.Node); ok {
		if !fn(n) {
			return
		}
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind {
			return true
		}
		if fd.IsList() {
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				walkNodes(l.Get(i).Message(), fn)
			}
			return true
		}
		if fd.IsMap() {
			return true
		}
		walkNodes(v.Message(), fn)
		return true
	})
}

// countNodes counts the Nodes of m.
func countNodes(m protoreflect.Message) int {
	n := 0
	walkNodes(m, func(*pg.Node) bool { n++; return true })
	return n
}

// deparseExpr renders an expression node as SQL, for messages.
func deparseExpr(n *pg.Node) string {
	stmt := &pg.ParseResult{Stmts: []*pg.RawStmt{{Stmt: &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: &pg.SelectStmt{
		TargetList: []*pg.Node{{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: n}}}},
	}}}}}}
	s, err := pg.Deparse(stmt)
	if err != nil {
		return "the expression"
	}
	return strings.TrimPrefix(s, "SELECT ")
}

// expandStars replaces * and alias.* in the select list by the columns they
// stand for, when they read a subquery: its outputs, each by name (they are
// then merged like any other column of the subquery). A star that reads
// only tables is left as it is.
func expandStars(s *pg.SelectStmt, items []fromItem) error {
	readsSub := false
	for _, it := range items {
		readsSub = readsSub || it.sub != nil
	}
	if !readsSub {
		return nil
	}
	var out []*pg.Node
	for _, t := range s.TargetList {
		rt := t.GetResTarget()
		cr := rt.GetVal().GetColumnRef()
		if cr == nil || cr.Fields[len(cr.Fields)-1].GetAStar() == nil {
			out = append(out, t)
			continue
		}
		qual := ""
		if len(cr.Fields) == 2 {
			qual = cr.Fields[0].GetString_().GetSval()
		}
		found := false
		for _, it := range items {
			if qual != "" && !strings.EqualFold(qual, it.alias) {
				continue
			}
			found = true
			var names []string
			switch {
			case it.sub != nil:
				names = it.sub.names
			case it.table != nil:
				for _, c := range it.table.Columns {
					names = append(names, c.Name)
				}
			default:
				return ir.Refuse("SELECT * over %s: name the columns", it.alias)
			}
			for _, n := range names {
				ref := pg.MakeColumnRefNode([]*pg.Node{pg.MakeStrNode(it.alias), pg.MakeStrNode(n)}, 0)
				out = append(out, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Name: n, Val: ref}}})
			}
		}
		if !found {
			return ir.Refuse("%s.* names no table or subquery of FROM", qual)
		}
	}
	s.TargetList = out
	return nil
}
