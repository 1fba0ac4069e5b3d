package parse

import (
	"context"
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/query/ir"
)

// Parse parses one SQL statement and checks it against the catalog,
// returning dpstat's model of it or a *RefusedError.
func Parse(sql string, cat *catalog.Catalog) (*ir.Query, error) {
	return ParseWith(sql, cat, nil)
}

// ParseWith is Parse with the facts of the catalog's public tables, which
// joins need.
func ParseWith(sql string, cat *catalog.Catalog, public map[string]*ir.PublicFacts) (*ir.Query, error) {
	return ParseContext(context.Background(), sql, cat, public)
}

// ParseContext is ParseWith within ctx: once ctx is done (the query
// timeout of the service answering has passed, or the request has ended),
// parsing stops with a refusal. The node and item limits bound parsing
// whatever the context; the context bounds its time on a busy machine too.
func ParseContext(ctx context.Context, sql string, cat *catalog.Catalog, public map[string]*ir.PublicFacts) (*ir.Query, error) {
	if err := refuseNUL(sql); err != nil {
		return nil, err
	}
	if strings.TrimSpace(sql) == "" {
		return nil, ir.Refuse("empty query; write e.g. SELECT COUNT(*) FROM t")
	}
	tree, err := pg.Parse(sql)
	if err != nil {
		return nil, ir.RefuseAs(ir.KindSyntax, "syntax error: %v", err)
	}
	if len(tree.Stmts) != 1 {
		return nil, ir.Refuse("one statement at a time, got %d", len(tree.Stmts))
	}
	sel := tree.Stmts[0].Stmt.GetSelectStmt()
	if sel == nil {
		return nil, ir.Refuse("only SELECT queries are answered, got %s", statementKind(tree.Stmts[0].Stmt))
	}
	p := &parser{ctx: ctx, cat: cat, public: public, cteSize: map[*pg.SelectStmt]int{}}
	q, err := p.selectStmt(sel)
	if err != nil {
		return nil, err
	}
	text, err := pg.Deparse(tree)
	if err != nil {
		text = strings.TrimSpace(sql)
	}
	q.Text = text
	return q, nil
}

func statementKind(n *pg.Node) string {
	name := fmt.Sprintf("%T", n.GetNode())
	name = strings.TrimPrefix(name, "*pg_query.Node_")
	name = strings.TrimSuffix(name, "Stmt")
	switch name {
	case "Insert", "Update", "Delete", "Create", "Drop", "Copy", "Explain", "Transaction", "Merge":
		return strings.ToUpper(name)
	}
	return "a " + name + " statement"
}

// MaxAggregates is the most aggregates one query may release.
const MaxAggregates = 64

type parser struct {
	cat   *catalog.Catalog
	table *ir.Table
	// base is the bound occurrence of the declared table the query reads
	// (ir.Query.Base).
	base  *ir.Table
	alias string
	q     *ir.Query
	// depth is the nesting of the condition being parsed.
	depth int
	// public holds the facts of public tables (nil: joins are refused);
	// joins and joined are the query's joins and its FROM tables.
	public map[string]*ir.PublicFacts
	joins  []ir.Join
	joined []ir.JoinedTable
	// pre is the per-person pre-aggregation the query reads, if any.
	pre *ir.PreAggregate

	// ctx bounds the time parsing may take (nil: unbounded).
	ctx context.Context
	// copied counts the syntax nodes merging has copied (MaxMergedCopies);
	// cteSize holds the size of each merged common table expression.
	copied  int
	cteSize map[*pg.SelectStmt]int
}

func (p *parser) selectStmt(s *pg.SelectStmt) (*ir.Query, error) {
	switch {
	case s.Op != pg.SetOperation_SETOP_NONE && s.Op != pg.SetOperation_SET_OPERATION_UNDEFINED:
		return nil, ir.Refuse("UNION, INTERSECT and EXCEPT are not supported yet; ask one aggregate query at a time")
	case s.IntoClause != nil:
		return nil, ir.Refuse("SELECT INTO is not allowed: dpstat only answers queries")
	case len(s.ValuesLists) > 0:
		return nil, ir.Refuse("VALUES lists are not queries over a catalog table")
	case len(s.LockingClause) > 0:
		return nil, ir.Refuse("FOR UPDATE/SHARE is not allowed")
	case len(s.DistinctClause) > 0 && !plainDistinct(s):
		return nil, ir.Refuse("SELECT DISTINCT ON and SELECT DISTINCT with GROUP BY or aggregates are not supported; SELECT DISTINCT a, b releases the keys as GROUP BY a, b does")
	case len(s.WindowClause) > 0:
		return nil, ir.Refuse("window functions are not supported")
	}
	if len(s.DistinctClause) > 0 {
		// SELECT DISTINCT a, b is the keys alone: GROUP BY a, b.
		s.GroupClause, s.DistinctClause = distinctKeys(s.TargetList), nil
	}
	if err := p.mergeSubqueries(s, true, nil); err != nil {
		return nil, err
	}
	if err := p.from(s.FromClause); err != nil {
		return nil, err
	}
	p.q = &ir.Query{Table: p.table.Name, Base: p.base, Limit: -1}
	if p.pre != nil {
		p.q.Pre, p.q.Relation = p.pre, p.table
	}
	if len(p.joins) > 0 {
		p.q.Joins, p.q.Relation = p.joins, p.table
		p.q.JoinRows = p.joinRows()
	}
	if s.GroupDistinct {
		return nil, ir.Refuse("GROUP BY DISTINCT is not supported")
	}
	for _, g := range s.GroupClause {
		col, err := p.groupKey(g, s.TargetList)
		if err != nil {
			return nil, err
		}
		for _, prev := range p.q.GroupBy {
			if prev == col {
				return nil, ir.Refuse("GROUP BY lists column %s twice", col)
			}
		}
		p.q.GroupBy = append(p.q.GroupBy, col)
	}
	if len(s.TargetList) == 0 {
		return nil, ir.Refuse("empty select list; select at least one aggregate (COUNT, SUM or AVG)")
	}
	if len(s.TargetList) > MaxSelectItems {
		return nil, ir.Refuse("the select list has %d items: want at most %d", len(s.TargetList), MaxSelectItems)
	}
	for i, t := range s.TargetList {
		if err := p.checkTime(); err != nil {
			return nil, err
		}
		if err := p.target(t); err != nil {
			return nil, err
		}
		// Counted as the list is read: a longer list is refused at the
		// first aggregate too many, not after building them all.
		if n := len(p.q.Aggregates()); n > MaxAggregates {
			return nil, ir.Refuse("%d aggregates in one query by the select list's item %d (of %d): want at most %d (each takes a share of ε)", n, i+1, len(s.TargetList), MaxAggregates)
		}
	}
	if n := len(p.q.Aggregates()); n > MaxAggregates {
		return nil, ir.Refuse("%d aggregates in one query: want at most %d (each takes a share of ε)", n, MaxAggregates)
	}
	topK, err := p.topKForm(s)
	if err != nil {
		return nil, err
	}
	keysOnly := len(p.q.GroupBy) > 0
	for _, o := range p.q.Outputs {
		keysOnly = keysOnly && o.IsKey()
	}
	if len(p.q.Aggregates()) == 0 && topK == 0 && !keysOnly {
		return nil, ir.Refuse("the select list has no aggregate; dpstat releases aggregates only (COUNT, SUM, AVG), or the most common values: SELECT col FROM t GROUP BY col ORDER BY COUNT(*) DESC LIMIT k")
	}
	names := map[string]bool{}
	for _, o := range p.q.Outputs {
		if o.Hidden {
			continue
		}
		if names[strings.ToLower(o.Name)] {
			return nil, ir.Refuse("two outputs are named %q; give them different aliases with AS", o.Name)
		}
		names[strings.ToLower(o.Name)] = true
	}
	if s.WhereClause != nil {
		e, err := p.expr(s.WhereClause, false)
		if err != nil {
			return nil, err
		}
		p.q.Where = e
	}
	if s.HavingClause != nil {
		e, err := p.expr(s.HavingClause, true)
		if err != nil {
			return nil, err
		}
		p.q.Having = e
	}
	if topK > 0 {
		// ORDER BY COUNT(*) DESC LIMIT k is answered by selecting the k
		// most common keys (see TopK).
		p.q.TopK = topK
		if len(p.q.Aggregates()) > 0 {
			// Its released COUNT(*) sorts the rows, as ORDER BY asks
			// (free: the counts are released); keys alone come in the
			// order the selection chose them.
			t, err := p.orderTerm(s.SortClause[0])
			if err != nil {
				return nil, err
			}
			p.q.OrderBy = []ir.OrderTerm{t}
		}
		return p.q, nil
	}
	for _, n := range s.SortClause {
		t, err := p.orderTerm(n)
		if err != nil {
			return nil, err
		}
		p.q.OrderBy = append(p.q.OrderBy, t)
	}
	if s.LimitOption == pg.LimitOption_LIMIT_OPTION_WITH_TIES {
		return nil, ir.Refuse("FETCH ... WITH TIES is not supported; use LIMIT")
	}
	if s.LimitCount != nil {
		n, null, err := nonNegativeInt(s.LimitCount, "LIMIT")
		if err != nil {
			return nil, err
		}
		if !null {
			p.q.Limit = n
		}
	}
	if s.LimitOffset != nil {
		n, _, err := nonNegativeInt(s.LimitOffset, "OFFSET")
		if err != nil {
			return nil, err
		}
		p.q.Offset = n
	}
	return p.q, nil
}

func nonNegativeInt(n *pg.Node, what string) (int64, bool, error) {
	c := n.GetAConst()
	if c == nil {
		return 0, false, ir.Refuse("%s takes a whole number, not an expression", what)
	}
	if c.Isnull {
		return 0, true, nil
	}
	if iv, ok := c.Val.(*pg.A_Const_Ival); ok && iv.Ival.Ival >= 0 {
		return int64(iv.Ival.Ival), false, nil
	}
	return 0, false, ir.Refuse("%s takes a whole number >= 0", what)
}

func (p *parser) from(from []*pg.Node) error {
	if p.pre != nil {
		return nil // the relation is the pre-aggregation's
	}
	if len(from) == 0 {
		return ir.Refuse("no FROM clause; query one of the catalog's tables: %s", p.tableNames())
	}
	if len(from) > 1 {
		return ir.Refuse("FROM a, b is not supported: write a JOIN with ON or USING; join a public table, or a private table of the same id space on the privacy unit")
	}
	n := from[0]
	switch {
	case n.GetJoinExpr() != nil:
		return p.fromJoin(n.GetJoinExpr())
	case n.GetRangeSubselect() != nil:
		return ir.Refuse("unsupported subquery in FROM")
	case n.GetRangeFunction() != nil, n.GetRangeTableFunc() != nil:
		return ir.Refuse("table functions are not allowed in FROM; query one of the catalog's tables: %s", p.tableNames())
	}
	rv := n.GetRangeVar()
	if rv == nil {
		return ir.Refuse("unsupported FROM clause; query one of the catalog's tables: %s", p.tableNames())
	}
	if rv.Catalogname != "" || rv.Schemaname != "" {
		return ir.Refuse("qualified table name %s: query one of the catalog's tables by its name: %s",
			strings.Trim(rv.Catalogname+"."+rv.Schemaname+"."+rv.Relname, "."), p.tableNames())
	}
	t := p.bind(rv.Relname, aliasOf(rv))
	if t == nil {
		hint := ""
		if strings.ContainsAny(rv.Relname, "/\\.") {
			hint = " (file paths are not allowed in FROM)"
		}
		return ir.RefuseAs(ir.KindUnknownTable, "unknown table %q%s; the catalog declares: %s", rv.Relname, hint, p.tableNames())
	}
	if t.Public {
		return ir.Refuse("table %s is public (it is about no one): query a private table, joining %s to it", t.Name, t.Name)
	}
	p.table, p.base = t, t
	if rv.Alias != nil {
		if len(rv.Alias.Colnames) > 0 {
			return ir.Refuse("column aliases in FROM are not supported")
		}
		p.alias = rv.Alias.Aliasname
	}
	return nil
}

func (p *parser) tableNames() string {
	var names []string
	for _, t := range p.cat.Tables {
		names = append(names, t.Name)
	}
	return strings.Join(names, ", ")
}

func (p *parser) columnNames() string {
	var names []string
	for _, c := range p.table.Columns {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

// columnRef resolves a column reference to a declared column.
func (p *parser) columnRef(cr *pg.ColumnRef) (*ir.Column, error) {
	var parts []string
	for _, f := range cr.Fields {
		if f.GetAStar() != nil {
			return nil, ir.Refuse("SELECT * is not supported; name the aggregates to release, e.g. COUNT(*)")
		}
		s := f.GetString_()
		if s == nil {
			return nil, ir.Refuse("unsupported column reference")
		}
		parts = append(parts, s.Sval)
	}
	if len(p.joined) > 0 {
		return p.joinedColumn(parts)
	}
	switch len(parts) {
	case 1:
	case 2:
		q := parts[0]
		if !(q == p.alias || (p.alias == "" && strings.EqualFold(q, p.table.Name))) {
			return nil, ir.RefuseAs(ir.KindUnknownTable, "unknown table or alias %q in %s; the query reads only %s", q, strings.Join(parts, "."), p.table.Name)
		}
		parts = parts[1:]
	default:
		return nil, ir.Refuse("unsupported column reference %s", strings.Join(parts, "."))
	}
	col := p.table.Column(parts[0])
	if col == nil {
		var names []string
		for _, c := range p.table.Columns {
			names = append(names, c.Name)
		}
		if near := catalog.Nearest(parts[0], names); near != "" {
			return nil, ir.RefuseAs(ir.KindUnknownColumn, "unknown column %q in table %s (did you mean %s?); declared columns: %s", parts[0], p.table.Name, near, p.columnNames())
		}
		return nil, ir.RefuseAs(ir.KindUnknownColumn, "unknown column %q in table %s; declared columns: %s", parts[0], p.table.Name, p.columnNames())
	}
	return col, nil
}
