package parse

import (
	"context"
	"fmt"
	"math"
	"strconv"
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
	table *catalog.Table
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
	p.q = &ir.Query{Table: p.table.Name, Limit: -1}
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
	t := p.cat.Table(rv.Relname)
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
	p.table = t
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
func (p *parser) columnRef(cr *pg.ColumnRef) (*catalog.Column, error) {
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

func (p *parser) groupKey(n *pg.Node, targets []*pg.Node) (string, error) {
	if c := n.GetAConst(); c != nil {
		// GROUP BY 1 refers to the first select-list item.
		iv, ok := c.Val.(*pg.A_Const_Ival)
		if !ok || iv.Ival.Ival < 1 || int(iv.Ival.Ival) > len(targets) {
			return "", ir.Refuse("GROUP BY position must be a select-list position from 1 to %d", len(targets))
		}
		rt := targets[iv.Ival.Ival-1].GetResTarget()
		if rt == nil || (rt.Val.GetColumnRef() == nil && !isBucketExpr(rt.Val)) {
			return "", ir.Refuse("GROUP BY %d does not refer to a column or a computed bin", iv.Ival.Ival)
		}
		n = rt.Val
	}
	if cr := n.GetColumnRef(); cr != nil && len(cr.Fields) == 1 && cr.Fields[0].GetString_() != nil {
		// GROUP BY alias of a computed bin in the select list.
		name := cr.Fields[0].GetString_().Sval
		if p.table.Column(name) == nil {
			for _, t := range targets {
				if rt := t.GetResTarget(); rt != nil && rt.Name == name && isBucketExpr(rt.Val) {
					n = rt.Val
				}
			}
		}
	}
	if isBucketExpr(n) {
		b, err := p.bucket(n)
		if err != nil {
			return "", err
		}
		return p.addBucket(b)
	}
	cr := n.GetColumnRef()
	if cr == nil {
		if n.GetGroupingSet() != nil {
			return "", ir.Refuse("GROUPING SETS, ROLLUP and CUBE are not supported yet")
		}
		return "", ir.Refuse("GROUP BY expressions other than width_bucket(col, lo, hi, n), floor(col / w) * w and CASE bins are not supported")
	}
	col, err := p.columnRef(cr)
	if err != nil {
		return "", err
	}
	// A column without a public value list is grouped by DP key selection
	// (planned with the query's δ).
	return col.Name, nil
}

func (p *parser) target(n *pg.Node) error {
	rt := n.GetResTarget()
	if rt == nil || rt.Val == nil {
		return ir.Refuse("unsupported select-list item")
	}
	if cr := rt.Val.GetColumnRef(); cr != nil {
		col, err := p.columnRef(cr)
		if err != nil {
			return err
		}
		grouped := false
		for _, g := range p.q.GroupBy {
			grouped = grouped || g == col.Name
		}
		if !grouped {
			return ir.Refuse("column %s is neither aggregated nor in GROUP BY; dpstat releases aggregates only", col.Name)
		}
		name := rt.Name
		if name == "" {
			name = col.Name
		}
		p.q.Outputs = append(p.q.Outputs, ir.Output{Name: name, Key: col.Name})
		return nil
	}
	if fc := rt.Val.GetFuncCall(); (containsAggregate(rt.Val) && (fc == nil || !aggregateNames[funcName(fc)])) || isConstantItem(rt.Val) {
		// An expression over released values: post-processing.
		e, err := p.post(rt.Val)
		if err != nil {
			return err
		}
		name := rt.Name
		if name == "" {
			name = "?column?"
			if fc != nil {
				name = funcName(fc)
			}
			base := name
			for i := 2; p.outputNamed(name); i++ {
				name = base + "_" + strconv.Itoa(i)
			}
		}
		p.q.Outputs = append(p.q.Outputs, ir.Output{Name: name, Post: e})
		return nil
	}
	if isBucketExpr(rt.Val) {
		key, err := p.bucketOutput(rt.Val)
		if err != nil {
			return err
		}
		name := rt.Name
		if name == "" {
			name = "bin"
			if fc := rt.Val.GetFuncCall(); fc != nil && (ir.IsDateFunc(funcName(fc)) || isTextFunc(rt.Val)) {
				name = funcName(fc)
				for i := 2; p.outputNamed(name); i++ {
					name = funcName(fc) + "_" + strconv.Itoa(i)
				}
			}
		}
		p.q.Outputs = append(p.q.Outputs, ir.Output{Name: name, Key: key})
		return nil
	}
	fc := rt.Val.GetFuncCall()
	if fc == nil {
		if rt.Val.GetSubLink() != nil {
			return ir.Refuse("a subquery in WHERE or in the select list is not supported: subqueries are read in FROM or WITH, e.g. WITH s AS (SELECT … FROM t WHERE …) SELECT COUNT(*) FROM s")
		}
		return ir.Refuse("select-list expression at position %d is not supported; select COUNT, SUM or AVG of a column, or a grouped column", rt.Location+1)
	}
	agg, err := p.aggregate(fc)
	if err != nil {
		return err
	}
	name := rt.Name
	if name == "" {
		name = strings.ToLower(agg.Func.String())
		switch {
		case agg.Func == ir.CountDistinct:
			name = "count_distinct"
		case funcName(fc) == "median", funcName(fc) == "min", funcName(fc) == "max":
			name = funcName(fc)
		}
		if agg.Column != "" && agg.Expr == "" {
			name += "_" + agg.Column
		}
		// Unnamed outputs of the same name are numbered: sum, sum_2, …
		base := name
		for i := 2; p.outputNamed(name); i++ {
			name = base + "_" + strconv.Itoa(i)
		}
	}
	p.q.Outputs = append(p.q.Outputs, ir.Output{Name: name, Agg: &agg})
	return nil
}

func funcName(fc *pg.FuncCall) string {
	var parts []string
	for _, n := range fc.Funcname {
		if s := n.GetString_(); s != nil {
			parts = append(parts, s.Sval)
		}
	}
	if len(parts) == 2 && parts[0] == "pg_catalog" {
		parts = parts[1:]
	}
	return strings.ToLower(strings.Join(parts, "."))
}

var laterAggregates = map[string]string{
	"percentile_cont": "write percentile_cont(q) WITHIN GROUP (ORDER BY col)",
	"percentile_disc": "use percentile_cont(q) WITHIN GROUP (ORDER BY col)",
	"quantile":        "use percentile_cont(q) WITHIN GROUP (ORDER BY col) or MEDIAN(col)",
}

func (p *parser) aggregate(fc *pg.FuncCall) (ir.Aggregate, error) {
	name := funcName(fc)
	switch {
	case fc.Over != nil:
		return ir.Aggregate{}, ir.Refuse("window functions (%s ... OVER) are not supported", strings.ToUpper(name))
	case fc.AggDistinct && name == "count" && fc.AggFilter == nil:
		return p.countDistinct(fc)
	case fc.AggDistinct && name == "count":
		return ir.Aggregate{}, ir.Refuse("COUNT(DISTINCT ...) FILTER (WHERE ...) is not supported; filter with WHERE")
	case fc.AggDistinct:
		return ir.Aggregate{}, ir.Refuse("%s(DISTINCT ...) is not supported; the only DISTINCT aggregate is COUNT(DISTINCT %s)", strings.ToUpper(name), p.unitName())
	case fc.AggWithinGroup && name == "percentile_cont":
		return p.percentile(fc)
	case len(fc.AggOrder) > 0 || fc.AggWithinGroup:
		return ir.Aggregate{}, ir.Refuse("ordered aggregates other than percentile_cont(q) WITHIN GROUP (ORDER BY col) are not supported")
	case fc.FuncVariadic:
		return ir.Aggregate{}, ir.Refuse("VARIADIC arguments are not supported")
	}
	var f ir.AggFunc
	extreme := 0
	switch name {
	case "count":
		f = ir.Count
		if fc.AggStar {
			if fc.AggFilter != nil {
				// COUNT(*) FILTER (WHERE c) counts CASE WHEN c THEN 1 END.
				return p.filtered(fc, ir.Count, ir.Constant{Value: 1, Int: true}, 0)
			}
			return ir.Aggregate{Func: ir.CountStar}, nil
		}
	case "sum":
		f = ir.Sum
	case "avg":
		f = ir.Avg
	case "var_pop":
		f = ir.VarPop
	case "var_samp", "variance":
		f = ir.VarSamp
	case "stddev_pop":
		f = ir.StddevPop
	case "stddev_samp", "stddev":
		f = ir.StddevSamp
	case "median":
		f = ir.Quantile
	case "min":
		f, extreme = ir.Quantile, -1
	case "max":
		f, extreme = ir.Quantile, 1
	default:
		if why, ok := laterAggregates[name]; ok {
			return ir.Aggregate{}, ir.Refuse("%s is not supported: %s; supported: COUNT, SUM, AVG, MIN, MAX, VAR_POP, VAR_SAMP, STDDEV_POP, STDDEV_SAMP, MEDIAN, percentile_cont", strings.ToUpper(name), why)
		}
		return ir.Aggregate{}, ir.Refuse("function %s is not supported in the select list; supported aggregates: COUNT, SUM, AVG, MIN, MAX, VAR_POP, VAR_SAMP, STDDEV_POP, STDDEV_SAMP, MEDIAN, percentile_cont", name)
	}
	if fc.AggStar {
		return ir.Aggregate{}, ir.Refuse("%s(*) is not valid; name a column", strings.ToUpper(name))
	}
	if len(fc.Args) != 1 {
		return ir.Aggregate{}, ir.Refuse("%s takes exactly one column or expression, got %d arguments", strings.ToUpper(name), len(fc.Args))
	}
	arg := fc.Args[0]
	if c := arg.GetAConst(); c != nil && f == ir.Count && !c.Isnull {
		// COUNT(1) counts rows, as COUNT(*) does.
		if fc.AggFilter != nil {
			return p.filtered(fc, ir.Count, ir.Constant{Value: 1, Int: true}, 0)
		}
		return ir.Aggregate{Func: ir.CountStar}, nil
	}
	cr := arg.GetColumnRef()
	if f == ir.Quantile && (cr == nil || fc.AggFilter != nil) {
		// A date or timestamp, or one shifted by an INTERVAL (dates.go).
		if s, ok, err := p.quantileArg(arg); ok {
			if err != nil {
				return ir.Aggregate{}, err
			}
			return p.filtered(fc, f, s, extreme)
		}
	}
	if cr == nil || fc.AggFilter != nil {
		// An expression, or a column under FILTER: a derived column.
		if f == ir.Count && cr != nil {
			col, err := p.columnRef(cr)
			if err != nil {
				return ir.Aggregate{}, err
			}
			if col.Type != catalog.Int && col.Type != catalog.Float {
				// COUNT(text) FILTER (WHERE c) counts the rows where c
				// holds and the column is not NULL.
				return p.filteredWhen(fc, ir.Count, ir.Constant{Value: 1, Int: true}, 0,
					ir.IsNull{Arg: ir.Operand{Kind: ir.ColumnRef, Column: col.Name}, Negate: true})
			}
		}
		s, err := p.scalar(arg)
		if err != nil {
			return ir.Aggregate{}, err
		}
		if err := p.checkTemporalArg(f, name, s); err != nil {
			return ir.Aggregate{}, err
		}
		return p.filtered(fc, f, s, extreme)
	}
	col, err := p.columnRef(cr)
	if err != nil {
		return ir.Aggregate{}, err
	}
	if f != ir.Count {
		if col.Type != catalog.Int && col.Type != catalog.Float && !(f == ir.Quantile && col.Type.Temporal()) {
			return ir.Aggregate{}, ir.Refuse("%s(%s): column %s is %s; %s needs an int or float column (MIN, MAX and MEDIAN also take date and timestamp columns)", strings.ToUpper(name), col.Name, col.Name, col.Type, strings.ToUpper(name))
		}
		if !col.Bounded() {
			return ir.Aggregate{}, ir.Refuse("%s(%s) needs declared bounds: declare `lower:` and `upper:` for column %s in the catalog, or clamp it: %s(LEAST(GREATEST(%s, low), high))", strings.ToUpper(name), col.Name, col.Name, strings.ToUpper(name), col.Name)
		}
	}
	a := ir.Aggregate{Func: f, Column: col.Name, Extreme: extreme}
	if f == ir.Quantile {
		a.Q = 0.5
	}
	return a, nil
}

// filtered builds the aggregate f of the expression s, under the call's
// FILTER (WHERE …) clause if it has one: AGG(x) FILTER (WHERE c) aggregates
// CASE WHEN c THEN x END, whose NULLs every aggregate skips.
func (p *parser) filtered(fc *pg.FuncCall, f ir.AggFunc, s ir.Scalar, extreme int) (ir.Aggregate, error) {
	return p.filteredWhen(fc, f, s, extreme, nil)
}

// filteredWhen is filtered with an extra condition ANDed to the filter.
func (p *parser) filteredWhen(fc *pg.FuncCall, f ir.AggFunc, s ir.Scalar, extreme int, extra ir.Expr) (ir.Aggregate, error) {
	var conds []ir.Expr
	if fc.AggFilter != nil {
		c, err := p.expr(fc.AggFilter, false)
		if err != nil {
			return ir.Aggregate{}, err
		}
		conds = append(conds, c)
	}
	if extra != nil {
		conds = append(conds, extra)
	}
	switch len(conds) {
	case 0:
	case 1:
		s = ir.Cond{Whens: conds, Thens: []ir.Scalar{s}}
	default:
		s = ir.Cond{Whens: []ir.Expr{ir.And{Args: conds}}, Thens: []ir.Scalar{s}}
	}
	name := p.derive(s)
	a := ir.Aggregate{Func: f, Column: name, Extreme: extreme, Expr: p.q.Derived[name].Text}
	if fc.AggFilter != nil {
		a.Expr = scalarStringFiltered(s)
	}
	if f == ir.Quantile && extreme == 0 {
		a.Q = 0.5
	}
	return a, nil
}

// scalarStringFiltered spells a filtered argument the way it was written:
// x FILTER (WHERE c) for CASE WHEN c THEN x END.
func scalarStringFiltered(s ir.Scalar) string {
	if c, ok := s.(ir.Cond); ok && len(c.Whens) == 1 && c.Else == nil {
		return ir.ScalarString(c.Thens[0]) + ") FILTER (WHERE " + ir.ExprString(c.Whens[0], nil)
	}
	return ir.ScalarString(s)
}

var compareOps = map[string]string{"=": "=", "<>": "<>", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

// expr converts a boolean expression; having selects output references
// (HAVING) instead of column references (WHERE).
func (p *parser) expr(n *pg.Node, having bool) (ir.Expr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > ir.MaxExprDepth {
		return nil, ir.Refuse("condition nested too deeply: more than %d levels of AND, OR and NOT; want at most %d", ir.MaxExprDepth, ir.MaxExprDepth)
	}
	switch {
	case n.GetBoolExpr() != nil:
		b := n.GetBoolExpr()
		args := make([]ir.Expr, len(b.Args))
		for i, a := range b.Args {
			e, err := p.expr(a, having)
			if err != nil {
				return nil, err
			}
			args[i] = e
		}
		switch b.Boolop {
		case pg.BoolExprType_AND_EXPR:
			return ir.And{Args: args}, nil
		case pg.BoolExprType_OR_EXPR:
			return ir.Or{Args: args}, nil
		case pg.BoolExprType_NOT_EXPR:
			if len(args) != 1 {
				return nil, ir.Refuse("malformed NOT")
			}
			return ir.Not{Arg: args[0]}, nil
		}
		return nil, ir.Refuse("unsupported boolean operator")
	case n.GetNullTest() != nil:
		nt := n.GetNullTest()
		arg, err := p.operand(nt.Arg, having)
		if err != nil {
			return nil, err
		}
		return ir.IsNull{Arg: arg, Negate: nt.Nulltesttype == pg.NullTestType_IS_NOT_NULL}, nil
	case n.GetAExpr() != nil:
		return p.aexpr(n.GetAExpr(), having)
	case n.GetSubLink() != nil:
		return nil, ir.Refuse("a subquery in WHERE or in the select list is not supported: subqueries are read in FROM or WITH, e.g. WITH s AS (SELECT … FROM t WHERE …) SELECT COUNT(*) FROM s")
	case n.GetColumnRef() != nil && !having:
		col, err := p.columnRef(n.GetColumnRef())
		if err != nil {
			return nil, err
		}
		if col.Type != catalog.Bool {
			return nil, ir.Refuse("column %s is %s, not a condition; compare it with a value", col.Name, col.Type)
		}
		return ir.Compare{Op: "=", Left: ir.Operand{Kind: ir.ColumnRef, Column: col.Name}, Right: ir.Operand{Kind: ir.Literal, Value: true}}, nil
	case n.GetAConst() != nil:
		if b, ok := n.GetAConst().Val.(*pg.A_Const_Boolval); ok {
			v := b.Boolval.Boolval
			return ir.Compare{Op: "=", Left: ir.Operand{Kind: ir.Literal, Value: v}, Right: ir.Operand{Kind: ir.Literal, Value: true}}, nil
		}
	case n.GetFuncCall() != nil && !having && funcName(n.GetFuncCall()) == "starts_with":
		f, err := p.textFn(n, 0)
		if err != nil {
			return nil, err
		}
		return ir.Compare{Op: "=", Left: ir.Operand{Kind: ir.Computed, Fn: f}, Right: ir.Operand{Kind: ir.Literal, Value: true}}, nil
	case n.GetFuncCall() != nil && !having:
		fc := n.GetFuncCall()
		if _, ok := aggregateNames[funcName(fc)]; ok {
			return nil, ir.Refuse("aggregates are not allowed in WHERE; use HAVING to filter the noisy results")
		}
		return nil, ir.Refuse("function %s is not supported in WHERE; use comparisons, AND, OR, NOT, IN, BETWEEN and IS NULL", funcName(fc))
	}
	where := "WHERE"
	if having {
		where = "HAVING"
	}
	return nil, ir.Refuse("unsupported condition in %s; use comparisons, AND, OR, NOT, IN, BETWEEN and IS NULL over %s",
		where, map[bool]string{false: "columns and literals", true: "outputs and literals"}[having])
}

var aggregateNames = map[string]bool{"count": true, "sum": true, "avg": true, "min": true, "max": true, "median": true,
	"var_pop": true, "var_samp": true, "variance": true, "stddev": true, "stddev_pop": true, "stddev_samp": true, "percentile_cont": true}

func (p *parser) aexpr(a *pg.A_Expr, having bool) (ir.Expr, error) {
	op := ""
	if len(a.Name) == 1 && a.Name[0].GetString_() != nil {
		op = a.Name[0].GetString_().Sval
	}
	switch a.Kind {
	case pg.A_Expr_Kind_AEXPR_OP:
		norm, ok := compareOps[op]
		if !ok {
			return nil, ir.Refuse("operator %s is not supported in conditions; use =, <>, <, <=, >, >=", op)
		}
		if !having {
			if e, ok, err := p.shiftedCompare(a, norm); ok {
				return e, err
			}
		}
		l, err := p.operand(a.Lexpr, having)
		if err != nil {
			return nil, err
		}
		r, err := p.operand(a.Rexpr, having)
		if err != nil {
			return nil, err
		}
		if l, r, err = p.temporalOperands(l, r); err != nil {
			return nil, err
		}
		if err := p.comparable(l, r); err != nil {
			return nil, err
		}
		if norm == "=" && !having {
			if err := p.inPublicList(l, r); err != nil {
				return nil, err
			}
		}
		return ir.Compare{Op: norm, Left: l, Right: r}, nil
	case pg.A_Expr_Kind_AEXPR_IN:
		arg, err := p.operand(a.Lexpr, having)
		if err != nil {
			return nil, err
		}
		list := a.Rexpr.GetList()
		if list == nil {
			return nil, ir.Refuse("IN takes a list of values")
		}
		in := ir.In{Arg: arg, Negate: op == "<>"}
		for _, item := range list.Items {
			v, err := p.operand(item, having)
			if err != nil {
				return nil, err
			}
			if v.Kind != ir.Literal {
				return nil, ir.Refuse("IN lists may hold only literal values")
			}
			if _, v, err = p.temporalOperands(arg, v); err != nil {
				return nil, err
			}
			if err := p.comparable(arg, v); err != nil {
				return nil, err
			}
			if !in.Negate && !having {
				if err := p.inPublicList(arg, v); err != nil {
					return nil, err
				}
			}
			in.Values = append(in.Values, v)
		}
		return in, nil
	case pg.A_Expr_Kind_AEXPR_BETWEEN, pg.A_Expr_Kind_AEXPR_NOT_BETWEEN:
		arg, err := p.operand(a.Lexpr, having)
		if err != nil {
			return nil, err
		}
		list := a.Rexpr.GetList()
		if list == nil || len(list.Items) != 2 {
			return nil, ir.Refuse("BETWEEN takes two bounds")
		}
		lo, err := p.operand(list.Items[0], having)
		if err != nil {
			return nil, err
		}
		hi, err := p.operand(list.Items[1], having)
		if err != nil {
			return nil, err
		}
		if _, lo, err = p.temporalOperands(arg, lo); err != nil {
			return nil, err
		}
		if _, hi, err = p.temporalOperands(arg, hi); err != nil {
			return nil, err
		}
		if err := p.comparable(arg, lo); err != nil {
			return nil, err
		}
		if err := p.comparable(arg, hi); err != nil {
			return nil, err
		}
		return ir.Between{Arg: arg, Low: lo, High: hi, Negate: a.Kind == pg.A_Expr_Kind_AEXPR_NOT_BETWEEN}, nil
	case pg.A_Expr_Kind_AEXPR_LIKE, pg.A_Expr_Kind_AEXPR_ILIKE:
		return p.like(a, op, having)
	case pg.A_Expr_Kind_AEXPR_SIMILAR:
		return nil, ir.Refuse("SIMILAR TO is not supported; use LIKE or ILIKE")
	}
	return nil, ir.Refuse("unsupported operator in a condition; use =, <>, <, <=, >, >=, IN, BETWEEN, IS NULL")
}

// operand converts a leaf: a column (WHERE), an output (HAVING) or a literal.
func (p *parser) operand(n *pg.Node, having bool) (ir.Operand, error) {
	if n == nil {
		return ir.Operand{}, ir.Refuse("missing operand")
	}
	if c := n.GetAConst(); c != nil {
		return constOperand(c)
	}
	if tc := n.GetTypeCast(); tc != nil {
		if c := tc.Arg.GetAConst(); c != nil {
			return castConst(c, tc.TypeName)
		}
		// A cast of a column is a numeric expression (below).
	}
	if having {
		return p.outputRef(n)
	}
	if cr := n.GetColumnRef(); cr != nil {
		col, err := p.columnRef(cr)
		if err != nil {
			return ir.Operand{}, err
		}
		return ir.Operand{Kind: ir.ColumnRef, Column: col.Name}, nil
	}
	if isTextFunc(n) {
		f, err := p.textFn(n, 0)
		if err != nil {
			return ir.Operand{}, err
		}
		return ir.Operand{Kind: ir.Computed, Fn: f}, nil
	}
	if a := n.GetAExpr(); a != nil {
		if o, ok, err := p.foldInterval(a); ok {
			return o, err
		}
	}
	if fc := n.GetFuncCall(); fc != nil && ir.IsDateFunc(funcName(fc)) {
		part, _, err := p.dateArgs(fc)
		if err != nil {
			return ir.Operand{}, err
		}
		return ir.Operand{Kind: ir.Computed, Part: &part}, nil
	}
	if fc := n.GetFuncCall(); fc != nil && aggregateNames[funcName(fc)] {
		return ir.Operand{}, ir.Refuse("aggregates are not allowed in WHERE; use HAVING to filter the noisy results")
	}
	if isNumericExpr(n) {
		// Arithmetic over the row's values, as inside an aggregate: its
		// inputs are clamped to their declared bounds, so it is total.
		s, err := p.scalar(n)
		if err != nil {
			return ir.Operand{}, err
		}
		if _, err := ir.ScalarRange(s, p.table); err != nil {
			return ir.Operand{}, err
		}
		return ir.Operand{Kind: ir.Computed, Num: s}, nil
	}
	if fc := n.GetFuncCall(); fc != nil {
		return ir.Operand{}, ir.Refuse("function %s is not supported in WHERE", funcName(fc))
	}
	if n.GetSubLink() != nil {
		return ir.Operand{}, ir.Refuse("a subquery in WHERE or in the select list is not supported: subqueries are read in FROM or WITH, e.g. WITH s AS (SELECT … FROM t WHERE …) SELECT COUNT(*) FROM s")
	}
	return ir.Operand{}, ir.Refuse("expressions are not supported in conditions; compare columns with literals")
}

// outputRef resolves a HAVING or ORDER BY operand to an output: an alias, a
// grouped column in the select list, or an aggregate that the select list
// computes.
func (p *parser) outputRef(n *pg.Node) (ir.Operand, error) {
	if cr := n.GetColumnRef(); cr != nil && len(cr.Fields) == 1 && cr.Fields[0].GetString_() != nil {
		name := cr.Fields[0].GetString_().Sval
		for i, o := range p.q.Outputs {
			if o.Name == name {
				return ir.Operand{Kind: ir.OutputRef, Output: i}, nil
			}
		}
		for i, o := range p.q.Outputs {
			if strings.EqualFold(o.Name, name) || (o.IsKey() && strings.EqualFold(o.Key, name)) {
				return ir.Operand{Kind: ir.OutputRef, Output: i}, nil
			}
		}
	}
	if cr := n.GetColumnRef(); cr != nil {
		col, err := p.columnRef(cr)
		if err != nil {
			return ir.Operand{}, err
		}
		for i, o := range p.q.Outputs {
			if o.IsKey() && o.Key == col.Name {
				return ir.Operand{Kind: ir.OutputRef, Output: i}, nil
			}
		}
		return ir.Operand{}, ir.Refuse("column %s is not an output of the query; HAVING and ORDER BY apply to the outputs", col.Name)
	}
	if fc := n.GetFuncCall(); fc != nil {
		agg, err := p.aggregate(fc)
		if err != nil {
			return ir.Operand{}, err
		}
		for i, o := range p.q.Outputs {
			if o.Agg != nil && *o.Agg == agg {
				return ir.Operand{Kind: ir.OutputRef, Output: i}, nil
			}
		}
		return ir.Operand{}, ir.Refuse("%s is not in the select list; HAVING and ORDER BY may use only aggregates that the query releases", agg)
	}
	return ir.Operand{}, ir.Refuse("HAVING and ORDER BY may refer only to outputs of the query and literals")
}

func (p *parser) orderTerm(n *pg.Node) (ir.OrderTerm, error) {
	sb := n.GetSortBy()
	if sb == nil {
		return ir.OrderTerm{}, ir.Refuse("unsupported ORDER BY item")
	}
	if sb.SortbyDir == pg.SortByDir_SORTBY_USING {
		return ir.OrderTerm{}, ir.Refuse("ORDER BY ... USING is not supported")
	}
	if sb.SortbyNulls != pg.SortByNulls_SORTBY_NULLS_DEFAULT && sb.SortbyNulls != pg.SortByNulls_SORT_BY_NULLS_UNDEFINED {
		return ir.OrderTerm{}, ir.Refuse("NULLS FIRST/LAST is not supported: released values are never NULL")
	}
	desc := sb.SortbyDir == pg.SortByDir_SORTBY_DESC
	if c := sb.Node.GetAConst(); c != nil {
		iv, ok := c.Val.(*pg.A_Const_Ival)
		if !ok || iv.Ival.Ival < 1 || int(iv.Ival.Ival) > len(p.q.Outputs) {
			return ir.OrderTerm{}, ir.Refuse("ORDER BY position must be from 1 to %d", len(p.q.Outputs))
		}
		return ir.OrderTerm{Output: int(iv.Ival.Ival) - 1, Desc: desc}, nil
	}
	op, err := p.outputRef(sb.Node)
	if err != nil {
		return ir.OrderTerm{}, err
	}
	return ir.OrderTerm{Output: op.Output, Desc: desc}, nil
}

func constOperand(c *pg.A_Const) (ir.Operand, error) {
	if c.Isnull {
		return ir.Operand{}, ir.Refuse("comparisons with NULL are never true; use IS NULL or IS NOT NULL")
	}
	switch v := c.Val.(type) {
	case *pg.A_Const_Ival:
		return ir.Operand{Kind: ir.Literal, Value: int64(v.Ival.Ival)}, nil
	case *pg.A_Const_Fval:
		s := v.Fval.Fval
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return ir.Operand{Kind: ir.Literal, Value: i}, nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) {
			return ir.Operand{}, ir.Refuse("number %s is out of range", s)
		}
		return ir.Operand{Kind: ir.Literal, Value: f}, nil
	case *pg.A_Const_Sval:
		if strings.ContainsRune(v.Sval.Sval, 0) {
			return ir.Operand{}, ir.Refuse("string literals may not contain NUL characters")
		}
		return ir.Operand{Kind: ir.Literal, Value: v.Sval.Sval}, nil
	case *pg.A_Const_Boolval:
		return ir.Operand{Kind: ir.Literal, Value: v.Boolval.Boolval}, nil
	}
	return ir.Operand{}, ir.Refuse("unsupported literal")
}

func castConst(c *pg.A_Const, tn *pg.TypeName) (ir.Operand, error) {
	o, err := constOperand(c)
	if err != nil {
		return o, err
	}
	typ, name := castType(tn)
	s := fmt.Sprint(o.Value)
	switch typ {
	case catalog.Int:
		i, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return ir.Operand{}, ir.Refuse("cannot cast %q to an integer", s)
		}
		return ir.Operand{Kind: ir.Literal, Value: i}, nil
	case catalog.Float:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return ir.Operand{}, ir.Refuse("cannot cast %q to a finite number", s)
		}
		return ir.Operand{Kind: ir.Literal, Value: f}, nil
	case catalog.Text:
		return ir.Operand{Kind: ir.Literal, Value: s}, nil
	case catalog.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return ir.Operand{}, ir.Refuse("cannot cast %q to a boolean", s)
		}
		return ir.Operand{Kind: ir.Literal, Value: b}, nil
	case catalog.Date, catalog.Timestamp:
		return ir.TemporalLiteral(typ, s)
	}
	return ir.Operand{}, ir.Refuse("cast to %s is not supported", name)
}

// typeKind is the type family of a column type: "number", "text", "bool",
// the temporal type itself, or "unknown".
func typeKind(t catalog.Type) string {
	switch t {
	case catalog.Date, catalog.Timestamp:
		return string(t)
	case catalog.Int, catalog.Float:
		return "number"
	case catalog.Text:
		return "text"
	case catalog.Bool:
		return "bool"
	}
	return "unknown"
}

// kindOf returns the type family of an operand: "number", "text", "bool".
func (p *parser) kindOf(o ir.Operand) string {
	switch o.Kind {
	case ir.ColumnRef:
		return typeKind(p.table.Column(o.Column).Type)
	case ir.Computed:
		if o.Part != nil {
			if o.Part.Trunc {
				return string(p.table.Column(o.Part.Column).Type)
			}
			return "number"
		}
		if o.Num != nil {
			return "number"
		}
		return o.Fn.ValueKind()
	case ir.OutputRef:
		out := p.q.Outputs[o.Output]
		if out.Agg != nil || out.Post != nil {
			if t := ir.AggTemporal(out.Agg, p.q.Derived, p.table); t != "" && out.Post == nil {
				return string(t)
			}
			return "number"
		}
		if b := p.q.Buckets[out.Key]; b != nil {
			return b.ValueKind()
		}
		return typeKind(p.table.Column(out.Key).Type)
	case ir.Literal:
		if o.Type.Temporal() {
			return string(o.Type)
		}
		switch o.Value.(type) {
		case int64, float64:
			return "number"
		case string:
			return "text"
		case bool:
			return "bool"
		}
	}
	return "unknown"
}

func (p *parser) describe(o ir.Operand) string {
	switch o.Kind {
	case ir.ColumnRef:
		c := p.table.Column(o.Column)
		return fmt.Sprintf("column %s (%s)", c.Name, c.Type)
	case ir.OutputRef:
		return "output " + p.q.Outputs[o.Output].Name
	case ir.Computed:
		return fmt.Sprintf("%s (%s)", ir.OperandString(o, nil), p.kindOf(o))
	}
	if s, ok := o.Value.(string); ok {
		return fmt.Sprintf("text '%s'", s)
	}
	if o.Type.Temporal() {
		return ir.OperandString(o, nil)
	}
	return fmt.Sprintf("%s %v", p.kindOf(o), o.Value)
}

func (p *parser) comparable(a, b ir.Operand) error {
	ka, kb := p.kindOf(a), p.kindOf(b)
	if ka != kb {
		return ir.Refuse("cannot compare %s with %s", p.describe(a), p.describe(b))
	}
	// An int column compared with a fractional literal is fine (age < 30.5);
	// nothing else needs checking.
	return nil
}

// outputNamed reports whether an output of the query has the name
// (compared without case).
func (p *parser) outputNamed(name string) bool {
	for _, o := range p.q.Outputs {
		if strings.EqualFold(o.Name, name) {
			return true
		}
	}
	return false
}

// containsAggregate reports whether an expression of the select list
// calls an aggregate function anywhere.
func containsAggregate(n *pg.Node) bool {
	if n == nil {
		return false
	}
	any := func(nodes []*pg.Node) bool {
		for _, x := range nodes {
			if containsAggregate(x) {
				return true
			}
		}
		return false
	}
	switch {
	case n.GetFuncCall() != nil:
		fc := n.GetFuncCall()
		return aggregateNames[funcName(fc)] || any(fc.Args)
	case n.GetAExpr() != nil:
		return containsAggregate(n.GetAExpr().Lexpr) || containsAggregate(n.GetAExpr().Rexpr)
	case n.GetTypeCast() != nil:
		return containsAggregate(n.GetTypeCast().Arg)
	case n.GetMinMaxExpr() != nil:
		return any(n.GetMinMaxExpr().Args)
	case n.GetCoalesceExpr() != nil:
		return any(n.GetCoalesceExpr().Args)
	case n.GetCaseExpr() != nil:
		ce := n.GetCaseExpr()
		if containsAggregate(ce.Defresult) {
			return true
		}
		for _, a := range ce.Args {
			if w := a.GetCaseWhen(); w != nil && (containsAggregate(w.Expr) || containsAggregate(w.Result)) {
				return true
			}
		}
	}
	return false
}

// inPublicList refuses col = 'x' (or col IN (…, 'x', …)) where the text
// column has a public value list without x but with a value x nearly
// spells: the comparison can match no row, and is almost always a
// misspelling (sex = 'female' against Female, Male). The list is public,
// so the refusal is free and says nothing of the data; it names the
// closest listed value.
func (p *parser) inPublicList(a, b ir.Operand) error {
	if a.Kind != ir.ColumnRef {
		a, b = b, a
	}
	if a.Kind != ir.ColumnRef || b.Kind != ir.Literal {
		return nil
	}
	col := p.table.Column(a.Column)
	s, ok := b.Value.(string)
	if col == nil || col.Type != catalog.Text || col.Values == nil || !ok {
		return nil
	}
	best, bestDist := "", -1
	for _, v := range col.Values {
		w, _ := v.(string)
		if w == s {
			return nil
		}
		if len(s) > 256 || len(w) > 256 {
			// Too long to be a misspelling worth the distance's cost.
			if strings.EqualFold(s, w) {
				best, bestDist = w, 0
			}
			continue
		}
		// Both strings are bounded: the SQL text's length and the
		// catalog's values.
		d := catalog.EditDistance(strings.ToLower(s), strings.ToLower(w))
		if bestDist < 0 || d < bestDist {
			best, bestDist = w, d
		}
	}
	// Only a near miss is refused: the same letters in another case, or a
	// few letters off. A literal like no listed value is answered (its
	// rows are simply none).
	if !strings.EqualFold(s, best) && bestDist > max(1, len([]rune(s))/4) {
		return nil
	}
	return ir.Refuse("%s = '%s' can match no row: '%s' is not in the public value list of %s (%s); did you mean '%s'?",
		col.Name, s, s, col.Name, formatList(col.Values, 8), best)
}

// formatList spells at most n values of a list.
func formatList(vs []any, n int) string {
	parts := make([]string, 0, n+1)
	for i, v := range vs {
		if i == n {
			parts = append(parts, fmt.Sprintf("… %d more", len(vs)-n))
			break
		}
		parts = append(parts, fmt.Sprint(v))
	}
	return strings.Join(parts, ", ")
}

// isConstantItem reports whether a select-list item is a constant
// expression: a number, PI(), or arithmetic of those.
func isConstantItem(n *pg.Node) bool {
	switch {
	case n == nil:
		return false
	case n.GetAConst() != nil:
		c := n.GetAConst()
		_, i := c.Val.(*pg.A_Const_Ival)
		_, f := c.Val.(*pg.A_Const_Fval)
		return i || f
	case n.GetFuncCall() != nil:
		fc := n.GetFuncCall()
		return funcName(fc) == "pi" && len(fc.Args) == 0
	case n.GetAExpr() != nil:
		a := n.GetAExpr()
		return a.Kind == pg.A_Expr_Kind_AEXPR_OP && (a.Lexpr == nil || isConstantItem(a.Lexpr)) && isConstantItem(a.Rexpr)
	}
	return false
}

// likeOps maps the grammar's LIKE operators to the model's.
var likeOps = map[string]string{"~~": "LIKE", "!~~": "NOT LIKE", "~~*": "ILIKE", "!~~*": "NOT ILIKE"}

// like parses col [NOT] LIKE|ILIKE 'pattern' over a text column. The
// pattern is a literal without backslashes (engines disagree on LIKE's
// default escape character); % and _ are its wildcards. A LIKE over a
// NULL is NULL, as any comparison: it never fails.
func (p *parser) like(a *pg.A_Expr, op string, having bool) (ir.Expr, error) {
	norm, ok := likeOps[op]
	if !ok || having {
		return nil, ir.Refuse("LIKE and ILIKE are supported in WHERE, CASE and FILTER conditions over text columns")
	}
	l, err := p.operand(a.Lexpr, false)
	if err != nil {
		return nil, err
	}
	r, err := p.operand(a.Rexpr, false)
	if err != nil {
		return nil, err
	}
	pat, isText := r.Value.(string)
	if (l.Kind != ir.ColumnRef && l.Kind != ir.Computed) || r.Kind != ir.Literal || !isText {
		return nil, ir.Refuse("write column LIKE 'pattern', with a text column (or a text function of one) and a literal pattern")
	}
	if l.Kind == ir.Computed && p.kindOf(l) != "text" {
		return nil, ir.Refuse("LIKE needs text; %s is %s", ir.OperandString(l, nil), p.kindOf(l))
	}
	if col := p.table.Column(l.Column); l.Kind == ir.ColumnRef && (col == nil || col.Type != catalog.Text) {
		return nil, ir.Refuse("LIKE needs a text column; %s is not one", l.Column)
	}
	if strings.Contains(pat, "\\") {
		return nil, ir.Refuse("LIKE pattern %q: backslashes are not accepted (engines disagree on LIKE's escape character); use _ for any one character", pat)
	}
	return ir.Compare{Op: norm, Left: l, Right: r}, nil
}

// castType maps the type a cast names to a catalog type, with the name as
// written (lower case) for messages; the type is "" for a type dpstat does
// not cast to.
func castType(tn *pg.TypeName) (catalog.Type, string) {
	name := ""
	if tn != nil && len(tn.Names) > 0 {
		if s := tn.Names[len(tn.Names)-1].GetString_(); s != nil {
			name = strings.ToLower(s.Sval)
		}
	}
	switch name {
	case "int2", "int4", "int8", "int", "integer", "bigint", "smallint":
		return catalog.Int, name
	case "float4", "float8", "float", "real", "double", "numeric", "decimal":
		return catalog.Float, name
	case "text", "varchar":
		return catalog.Text, name
	case "bool", "boolean":
		return catalog.Bool, name
	case "date":
		return catalog.Date, name
	case "timestamp":
		return catalog.Timestamp, name
	}
	return "", name
}

// plainDistinct reports whether s is SELECT DISTINCT over expressions
// without aggregates or GROUP BY (not DISTINCT ON): the keys alone.
func plainDistinct(s *pg.SelectStmt) bool {
	if len(s.DistinctClause) != 1 || s.DistinctClause[0].GetNode() != nil || len(s.GroupClause) > 0 || s.HavingClause != nil {
		return false
	}
	for _, t := range s.TargetList {
		rt := t.GetResTarget()
		if rt == nil || rt.Val == nil || containsAggregate(rt.Val) {
			return false
		}
		if cr := rt.Val.GetColumnRef(); cr != nil && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
			return false
		}
	}
	return true
}

// distinctKeys is the GROUP BY of SELECT DISTINCT: the positions of its
// select-list items.
func distinctKeys(targets []*pg.Node) []*pg.Node {
	out := make([]*pg.Node, len(targets))
	for i := range targets {
		out[i] = pg.MakeAConstIntNode(int64(i+1), 0)
	}
	return out
}
