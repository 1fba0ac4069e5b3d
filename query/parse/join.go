package parse

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/query/ir"
)

// fromJoin parses FROM private [INNER|LEFT] JOIN public ON … [JOIN …]: it
// sets the parser's relation (p.table: the private table's columns and the
// public ones) and its joins.
func (p *parser) fromJoin(je *pg.JoinExpr) error {
	var tables []ir.JoinedTable
	var walk func(n *pg.Node) error
	addTable := func(rv *pg.RangeVar) (ir.JoinedTable, error) {
		if rv == nil {
			return ir.JoinedTable{}, ir.Refuse("joins are between catalog tables; subqueries and functions are not supported in FROM")
		}
		t := p.bind(rv.Relname, aliasOf(rv))
		if t == nil || rv.Schemaname != "" || rv.Catalogname != "" {
			return ir.JoinedTable{}, ir.RefuseAs(ir.KindUnknownTable, "unknown table %q; the catalog declares: %s", rv.Relname, p.tableNames())
		}
		jt := ir.JoinedTable{Table: t, Alias: t.Name}
		if rv.Alias != nil {
			if len(rv.Alias.Colnames) > 0 {
				return ir.JoinedTable{}, ir.Refuse("column aliases in FROM are not supported")
			}
			jt.Alias = rv.Alias.Aliasname
		}
		if strings.Contains(jt.Alias, ".") {
			return ir.JoinedTable{}, ir.Refuse("FROM %s %q: an alias in a join cannot contain a dot; name the table e.g. %s", rv.Relname, jt.Alias, strings.ReplaceAll(jt.Alias, ".", "_"))
		}
		for _, prev := range tables {
			if strings.EqualFold(prev.Alias, jt.Alias) {
				return ir.JoinedTable{}, ir.Refuse("FROM names %s twice; give each table its own alias", jt.Alias)
			}
		}
		tables = append(tables, jt)
		return jt, nil
	}
	walk = func(n *pg.Node) error {
		if rv := n.GetRangeVar(); rv != nil {
			_, err := addTable(rv)
			return err
		}
		j := n.GetJoinExpr()
		if j == nil {
			return ir.Refuse("joins are between catalog tables; subqueries and functions are not supported in FROM")
		}
		if err := walk(j.Larg); err != nil {
			return err
		}
		right, err := addTable(j.Rarg.GetRangeVar())
		if err != nil {
			return err
		}
		join := ir.Join{Table: right.Table.Name, Alias: right.Alias, Private: !right.Table.Public, TableEpoch: right.Table.Epoch}
		if join.Private {
			join.Unit = ir.QualifiedName(right.Alias, right.Table.PrivacyUnit)
		}
		switch j.Jointype {
		case pg.JoinType_JOIN_INNER:
		case pg.JoinType_JOIN_LEFT:
			join.Left = true
		default:
			return ir.Refuse("JOIN %s: only INNER JOIN and LEFT JOIN (the private table first) are supported", right.Table.Name)
		}
		if j.IsNatural {
			return ir.Refuse("NATURAL JOIN is not supported; write JOIN … ON a.x = b.x")
		}
		on, trunc, err := p.joinOn(j, tables, right)
		if err != nil {
			return err
		}
		join.On, join.Trunc = on, trunc
		if trunc != nil && !join.Private {
			return ir.Refuse("JOIN %s ON date_trunc(…) = date_trunc(…): a truncated equality joins two private tables with epochs (it equates their epochs); join public table %s on columns, e.g. ON a.x = %s.x", right.Table.Name, right.Table.Name, right.Alias)
		}
		if join.Private {
			if err := ir.PrivateJoin(tables[0].Table, right.Table, right.Alias, on); err != nil {
				return err
			}
		}
		p.joins = append(p.joins, join)
		return nil
	}
	if err := walk(&pg.Node{Node: &pg.Node_JoinExpr{JoinExpr: je}}); err != nil {
		return err
	}
	private := tables[0].Table
	if private.Public {
		return ir.Refuse("the first table of a join must be the private table (public tables are joined to it); %s is public", private.Name)
	}
	for _, jt := range tables[1:] {
		if jt.Table.Public && p.public[jt.Table.Name] == nil {
			return ir.Refuse("joins with public table %s need its values, which dpstat reads when it starts serving the catalog; ask through dpstat query or dpstat serve", jt.Table.Name)
		}
	}
	p.joined = tables
	rel, err := p.relationOf(tables)
	if err != nil {
		return err
	}
	p.table, p.base = rel, private
	p.alias = tables[0].Alias
	return nil
}

// relationOf builds the joined relation's columns: the first (private)
// table's under their names, and each column of every other occurrence as
// "alias.column" (ir.QualifiedName), with its occurrence's NULL-ability
// (every column of a LEFT JOIN occurrence is nullable) and, for a public
// table, its public values. Every occurrence is its own set of columns: a
// table joined twice has two. A name that could be read as two columns is
// refused.
func (p *parser) relationOf(tables []ir.JoinedTable) (*ir.Table, error) {
	rel := *tables[0].Table
	rel.Columns = append([]*ir.Column{}, tables[0].Table.Columns...)
	for _, jt := range tables[1:] {
		for _, c := range rel.Columns[:len(tables[0].Table.Columns)] {
			if len(c.Name) > len(jt.Alias) && strings.EqualFold(c.Name[:len(jt.Alias)+1], jt.Alias+".") {
				return nil, ir.Refuse("column %q of %s reads like a column of the joined %s; give %s another alias", c.Name, tables[0].Alias, jt.Alias, jt.Table.Name)
			}
		}
	}
	for i, jt := range tables[1:] {
		for _, c := range jt.Table.Columns {
			cc := *c // a private table's declaration: its bounds and value lists
			cc.Name = ir.QualifiedName(jt.Alias, c.Name)
			cc.Nullable = c.Nullable || p.joins[i].Left
			if jt.Table.Public {
				// A public table's values are read from the data.
				cc.Lower, cc.Upper, cc.Values = nil, nil, p.public[jt.Table.Name].Values[c.Name]
			}
			rel.Columns = append(rel.Columns, &cc)
		}
	}
	return &rel, nil
}

// joinOn reads a join's condition: equalities between a column of a table
// already joined and a column of the one being joined, ANDed (or USING).
// An equality may truncate both sides to one period (date_trunc('month',
// a.day) = date_trunc('month', b.day)): trunc then holds each equality's
// period ("" for a plain one), and is nil when no equality is truncated.
func (p *parser) joinOn(j *pg.JoinExpr, tables []ir.JoinedTable, right ir.JoinedTable) (on [][2]string, trunc []string, err error) {
	name := func(jt ir.JoinedTable, col string) (string, *ir.Column) {
		c := jt.Table.Column(col)
		if c == nil {
			return "", nil
		}
		if jt.Alias != tables[0].Alias {
			// A joined occurrence's columns are named alias.column.
			return ir.QualifiedName(jt.Alias, c.Name), c
		}
		return c.Name, c
	}
	pair := func(l, r string, lc, rc *ir.Column) error {
		if lc.Type != rc.Type {
			return ir.Refuse("JOIN %s ON %s = %s compares %s with %s; join columns of one type", right.Table.Name, l, r, lc.Type, rc.Type)
		}
		on = append(on, [2]string{l, r})
		return nil
	}
	if len(j.UsingClause) > 0 {
		for _, u := range j.UsingClause {
			col := u.GetString_().GetSval()
			rn, rc := name(right, col)
			var ln string
			var lc *ir.Column
			var in []string
			for _, jt := range tables[:len(tables)-1] {
				if n, c := name(jt, col); c != nil {
					ln, lc = n, c
					in = append(in, jt.Alias)
				}
			}
			if rc == nil || lc == nil {
				return nil, nil, ir.Refuse("JOIN %s USING (%s): both sides need a column %s", right.Alias, col, col)
			}
			if len(in) > 1 {
				return nil, nil, ir.Refuse("JOIN %s USING (%s): column %s is in %s; write ON with qualified columns, e.g. ON %s.%s = %s.%s", right.Alias, col, col, strings.Join(in, " and "), in[0], col, right.Alias, col)
			}
			if err := pair(ln, rn, lc, rc); err != nil {
				return nil, nil, err
			}
		}
		return on, nil, nil
	}
	var conds []*pg.Node
	var flatten func(n *pg.Node) error
	flatten = func(n *pg.Node) error {
		if b := n.GetBoolExpr(); b != nil {
			if b.Boolop != pg.BoolExprType_AND_EXPR {
				return ir.Refuse("JOIN %s ON: only equalities joined by AND are supported", right.Table.Name)
			}
			for _, a := range b.Args {
				if err := flatten(a); err != nil {
					return err
				}
			}
			return nil
		}
		conds = append(conds, n)
		return nil
	}
	if j.Quals == nil {
		return nil, nil, ir.Refuse("JOIN %s needs ON a.x = b.x or USING (x)", right.Table.Name)
	}
	if err := flatten(j.Quals); err != nil {
		return nil, nil, err
	}
	resolve := func(n *pg.Node) (ir.JoinedTable, string, *ir.Column, error) {
		cr := n.GetColumnRef()
		if cr == nil {
			return ir.JoinedTable{}, "", nil, ir.Refuse("JOIN %s ON: compare columns, e.g. v.day = d.day", right.Table.Name)
		}
		var parts []string
		for _, f := range cr.Fields {
			parts = append(parts, f.GetString_().GetSval())
		}
		if len(parts) > 2 {
			return ir.JoinedTable{}, "", nil, ir.Refuse("JOIN %s ON: unsupported column reference %s", right.Alias, strings.Join(parts, "."))
		}
		// The occurrences in scope: those joined so far and this one.
		var found ir.JoinedTable
		var nm string
		var col *ir.Column
		var in []string
		for _, jt := range tables {
			if len(parts) == 2 && !strings.EqualFold(parts[0], jt.Alias) {
				continue
			}
			if n, c := name(jt, parts[len(parts)-1]); c != nil {
				found, nm, col = jt, n, c
				in = append(in, jt.Alias)
			}
		}
		switch {
		case len(in) > 1:
			return ir.JoinedTable{}, "", nil, ir.Refuse("JOIN %s ON: column %s is in %s: qualify it, e.g. %s.%s", right.Alias, parts[len(parts)-1], strings.Join(in, " and "), in[len(in)-1], parts[len(parts)-1])
		case col == nil:
			return ir.JoinedTable{}, "", nil, ir.Refuse("JOIN %s ON: unknown column %s", right.Alias, strings.Join(parts, "."))
		}
		return found, nm, col, nil
	}
	for _, c := range conds {
		a := c.GetAExpr()
		if a == nil || opName(a) != "=" || a.Kind != pg.A_Expr_Kind_AEXPR_OP {
			return nil, nil, ir.Refuse("JOIN %s ON: only equalities joined by AND are supported", right.Table.Name)
		}
		lf, lx, rx, err := truncPair(a, right.Alias)
		if err != nil {
			return nil, nil, err
		}
		lt, ln, lc, err := resolve(lx)
		if err != nil {
			return nil, nil, err
		}
		rt, rn, rc, err := resolve(rx)
		if err != nil {
			return nil, nil, err
		}
		if lf != "" {
			if err := truncColumns(right.Alias, lf, lc, rc); err != nil {
				return nil, nil, err
			}
			if trunc == nil {
				trunc = make([]string, len(on))
			}
		}
		if trunc != nil {
			trunc = append(trunc, lf)
		}
		if lt.Alias == right.Alias {
			lt, ln, lc, rt, rn, rc = rt, rn, rc, lt, ln, lc
		}
		if rt.Alias != right.Alias || lt.Alias == right.Alias {
			return nil, nil, ir.Refuse("JOIN %s ON: each equality compares a column of %s with a column of a table joined before it", right.Table.Name, right.Alias)
		}
		if err := pair(ln, rn, lc, rc); err != nil {
			return nil, nil, err
		}
	}
	return on, trunc, nil
}

// truncPair reads both sides of a join's equality a: two columns (field
// ""), or date_trunc of both to one period; it returns their column
// references.
func truncPair(a *pg.A_Expr, right string) (field string, l, r *pg.Node, err error) {
	lf, l, err := truncArg(a.Lexpr, right)
	if err != nil {
		return "", nil, nil, err
	}
	rf, r, err := truncArg(a.Rexpr, right)
	if err != nil {
		return "", nil, nil, err
	}
	if lf != rf {
		return "", nil, nil, ir.Refuse("JOIN %s ON: an equality of dates truncates both sides to one period, e.g. date_trunc('month', a.day) = date_trunc('month', %s.day); this one compares %s with %s", right, right, truncWords(lf), truncWords(rf))
	}
	return lf, l, r, nil
}

// truncColumns refuses a truncated equality of a join's ON whose columns
// are not dates or timestamps with declared bounds.
func truncColumns(right, field string, cols ...*ir.Column) error {
	for _, c := range cols {
		if !c.Type.Temporal() || !c.Bounded() {
			return ir.Refuse("JOIN %s ON date_trunc('%s', %s): want a date or timestamp column with declared bounds", right, field, c.Name)
		}
	}
	return nil
}

// truncArg reads one side of a join's equality: a column (field "") or
// date_trunc('period', column), whose column reference it returns.
func truncArg(n *pg.Node, right string) (field string, col *pg.Node, err error) {
	fc := n.GetFuncCall()
	if fc == nil || funcName(fc) != "date_trunc" {
		return "", n, nil
	}
	bad := ir.Refuse("JOIN %s ON: write a truncated date as date_trunc('month', %s.day): a literal period of %s and a column", right, right, strings.Join(joinPeriods, ", "))
	if len(fc.Args) != 2 || fc.AggStar || fc.Over != nil || fc.AggFilter != nil || fc.Args[1].GetColumnRef() == nil {
		return "", nil, bad
	}
	sv, ok := fc.Args[0].GetAConst().GetVal().(*pg.A_Const_Sval)
	if !ok {
		return "", nil, bad
	}
	field = strings.ToLower(sv.Sval.Sval)
	for _, f := range joinPeriods {
		if f == field {
			return field, fc.Args[1], nil
		}
	}
	return "", nil, ir.Refuse("JOIN %s ON date_trunc(%q, …): want one of %s", right, sv.Sval.Sval, strings.Join(joinPeriods, ", "))
}

// joinPeriods are the periods a join's equality may truncate dates to:
// the periods of epochs.
var joinPeriods = []string{"day", "week", "month", "quarter", "year"}

// truncWords names one side of an equality for a refusal.
func truncWords(field string) string {
	if field == "" {
		return "a column"
	}
	return "date_trunc('" + field + "', …)"
}

// joinRows is the most rows one private row can become through the joins:
// the product of each join's largest multiplicity over its keys (at least 1
// for a LEFT JOIN, which keeps an unmatched row once; at least 1 in all, so
// that no sensitivity is 0).
func (p *parser) joinRows() int64 {
	m := int64(1)
	for _, j := range p.joins {
		if j.Private {
			continue // only with a privacy unit, which bounds after the join
		}
		f := p.public[j.Table]
		most := int64(0)
		for i, on := range j.On {
			// The multiplicity of this occurrence's own join column.
			col, _ := j.Column(on[1])
			if i == 0 || f.Multiplicity[col] < most {
				// Every equality must hold: the rows matching all of them
				// are at most those matching any one.
				most = f.Multiplicity[col]
			}
		}
		if j.Left {
			most = max(most, 1)
		}
		m *= max(most, 0)
		if m > ir.MaxGroups {
			return ir.MaxGroups + 1
		}
	}
	return max(m, 1)
}

// joinedColumn resolves a column of a joined relation: qualified by a
// table's alias, or unqualified when exactly one table has it.
func (p *parser) joinedColumn(parts []string) (*ir.Column, error) {
	if len(parts) > 2 {
		return nil, ir.Refuse("unsupported column reference %s", strings.Join(parts, "."))
	}
	relName := func(jt ir.JoinedTable, col string) string {
		if jt.Alias != p.joined[0].Alias {
			return ir.QualifiedName(jt.Alias, col)
		}
		return col
	}
	var found *ir.Column
	var where []string
	for _, jt := range p.joined {
		if len(parts) == 2 && !strings.EqualFold(parts[0], jt.Alias) {
			continue
		}
		c := jt.Table.Column(parts[len(parts)-1])
		if c == nil {
			continue
		}
		found = p.table.Column(relName(jt, c.Name))
		where = append(where, jt.Alias)
	}
	switch {
	case len(where) > 1:
		return nil, ir.Refuse("column %s is in %s: qualify it, e.g. %s.%s", parts[len(parts)-1], strings.Join(where, " and "), where[0], parts[len(parts)-1])
	case found == nil:
		return nil, ir.RefuseAs(ir.KindUnknownColumn, "unknown column %s in the joined tables; qualify a column with its table's alias", strings.Join(parts, "."))
	}
	return found, nil
}
