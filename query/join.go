package query

import (
	"context"
	"fmt"
	"sort"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
)

// Joins with public tables. A public table (catalog `public: true`) is
// about no one: its values may be read from the data, so the service reads
// each column's distinct values and the most rows that share one value
// when it starts (PublicFacts). A query joins one private table with public
// tables on equalities (INNER or LEFT JOIN, the private table first). The
// joined relation is the private table's columns plus each public
// column, named "table.column", whose public value set is its distinct
// values: GROUP BY a public column needs no key selection.
//
// Every joined row belongs to the person of its private row. With a
// privacy unit, contribution bounding runs on the joined rows, per person,
// so the bounds hold however many public rows a private row matches. Without
// one (each row a person), a row that matches m public rows becomes m rows:
// the plan bounds a person by m rows in each of at most m groups, m the
// product of the join keys' largest multiplicities.

// PublicFacts is what the service reads from a public table.
type PublicFacts struct {
	// Values maps each column to its distinct non-NULL values, sorted; a
	// column with more than MaxGroups of them has none.
	Values map[string][]any
	// Multiplicity maps each column to the most rows that share one value.
	Multiplicity map[string]int64
}

// Join is one table joined to the query's private table: a public table,
// or a private table of the same id space joined on the privacy unit.
type Join struct {
	// Table is the joined table's catalog name.
	Table string
	// Private is true for a private table of the private table's id space.
	Private bool
	// Left is true for LEFT JOIN: private rows without a match are kept,
	// with NULL public columns.
	Left bool
	// On lists the equalities, as pairs of relation column names (the
	// already joined side first, then "table.column").
	On [][2]string
}

// readPublicFacts reads the facts of every public table of the catalog.
func readPublicFacts(ctx context.Context, cat *catalog.Catalog, eng engine.Engine) (map[string]*PublicFacts, error) {
	out := map[string]*PublicFacts{}
	d := eng.Dialect()
	for _, t := range cat.Tables {
		if !t.Public {
			continue
		}
		f := &PublicFacts{Values: map[string][]any{}, Multiplicity: map[string]int64{}}
		for _, c := range t.Columns {
			col := d.QuoteIdent(c.Name)
			rows, err := eng.Query(ctx, "SELECT "+col+", count(*) FROM "+d.QuoteIdent(t.Name)+" GROUP BY "+col)
			if err != nil {
				return nil, fmt.Errorf("reading public table %s, column %s: %w", t.Name, c.Name, err)
			}
			var vals []any
			var most int64
			for _, r := range rows.Rows {
				n, err := toBig(r[1])
				if err != nil || !n.IsInt64() {
					return nil, fmt.Errorf("reading public table %s, column %s: bad count %v", t.Name, c.Name, r[1])
				}
				most = max(most, n.Int64())
				if v := canonicalValue(r[0]); v != nil {
					vals = append(vals, v)
				}
			}
			sort.SliceStable(vals, func(i, j int) bool { return compareKeys(vals[i], vals[j]) < 0 })
			if len(vals) <= MaxGroups {
				f.Values[c.Name] = vals
			}
			f.Multiplicity[c.Name] = most
		}
		out[t.Name] = f
	}
	return out, nil
}

// joinedTable is one table of a FROM clause, with the name its columns are
// referred to by.
type joinedTable struct {
	table *catalog.Table
	alias string // the alias, or the table's name
}

// fromJoin parses FROM private [INNER|LEFT] JOIN public ON … [JOIN …]: it
// sets the parser's relation (p.table: the private table's columns and the
// public ones) and its joins.
func (p *parser) fromJoin(je *pg.JoinExpr) error {
	var tables []joinedTable
	var walk func(n *pg.Node) error
	addTable := func(rv *pg.RangeVar) (joinedTable, error) {
		if rv == nil {
			return joinedTable{}, refuse("joins are between catalog tables; subqueries and functions are not supported in FROM")
		}
		t := p.cat.Table(rv.Relname)
		if t == nil || rv.Schemaname != "" || rv.Catalogname != "" {
			return joinedTable{}, refuse("unknown table %q; the catalog declares: %s", rv.Relname, p.tableNames())
		}
		jt := joinedTable{table: t, alias: t.Name}
		if rv.Alias != nil {
			if len(rv.Alias.Colnames) > 0 {
				return joinedTable{}, refuse("column aliases in FROM are not supported")
			}
			jt.alias = rv.Alias.Aliasname
		}
		for _, prev := range tables {
			if strings.EqualFold(prev.alias, jt.alias) {
				return joinedTable{}, refuse("FROM names %s twice; give each table its own alias", jt.alias)
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
			return refuse("joins are between catalog tables; subqueries and functions are not supported in FROM")
		}
		if err := walk(j.Larg); err != nil {
			return err
		}
		right, err := addTable(j.Rarg.GetRangeVar())
		if err != nil {
			return err
		}
		join := Join{Table: right.table.Name, Private: !right.table.Public}
		switch j.Jointype {
		case pg.JoinType_JOIN_INNER:
		case pg.JoinType_JOIN_LEFT:
			join.Left = true
		default:
			return refuse("JOIN %s: only INNER JOIN and LEFT JOIN (the private table first) are supported", right.table.Name)
		}
		if j.IsNatural {
			return refuse("NATURAL JOIN is not supported; write JOIN … ON a.x = b.x")
		}
		on, err := p.joinOn(j, tables, right)
		if err != nil {
			return err
		}
		join.On = on
		if join.Private {
			if err := privateJoin(tables[0].table, right.table, on); err != nil {
				return err
			}
		}
		p.joins = append(p.joins, join)
		return nil
	}
	if err := walk(&pg.Node{Node: &pg.Node_JoinExpr{JoinExpr: je}}); err != nil {
		return err
	}
	private := tables[0].table
	if private.Public {
		return refuse("the first table of a join must be the private table (public tables are joined to it); %s is public", private.Name)
	}
	for _, jt := range tables[1:] {
		if jt.table.Public && p.public[jt.table.Name] == nil {
			return refuse("joins with public table %s need its values, which dpstat reads when it starts serving the catalog; ask through dpstat query or dpstat serve", jt.table.Name)
		}
	}
	p.joined = tables
	p.table = p.relationOf(tables)
	p.alias = tables[0].alias
	return nil
}

// relationOf builds the joined relation's columns: the private table's, and
// each public column as "table.column" with its public values.
func (p *parser) relationOf(tables []joinedTable) *catalog.Table {
	rel := *tables[0].table
	rel.Columns = append([]*catalog.Column{}, tables[0].table.Columns...)
	for i, jt := range tables[1:] {
		for _, c := range jt.table.Columns {
			cc := *c // a private table's declaration: its bounds and value lists
			cc.Name = jt.table.Name + "." + c.Name
			cc.Nullable = c.Nullable || p.joins[i].Left
			if jt.table.Public {
				// A public table's values are read from the data.
				cc.Lower, cc.Upper, cc.Values = nil, nil, p.public[jt.table.Name].Values[c.Name]
			}
			rel.Columns = append(rel.Columns, &cc)
		}
	}
	return &rel
}

// joinOn reads a join's condition: equalities between a column of a table
// already joined and a column of the one being joined, ANDed (or USING).
func (p *parser) joinOn(j *pg.JoinExpr, tables []joinedTable, right joinedTable) ([][2]string, error) {
	name := func(jt joinedTable, col string) (string, *catalog.Column) {
		c := jt.table.Column(col)
		if c == nil {
			return "", nil
		}
		if jt.alias != tables[0].alias {
			// A joined table's columns are named table.column.
			return jt.table.Name + "." + c.Name, c
		}
		return c.Name, c
	}
	var on [][2]string
	pair := func(l, r string, lc, rc *catalog.Column) error {
		if lc.Type != rc.Type {
			return refuse("JOIN %s ON %s = %s compares %s with %s; join columns of one type", right.table.Name, l, r, lc.Type, rc.Type)
		}
		on = append(on, [2]string{l, r})
		return nil
	}
	if len(j.UsingClause) > 0 {
		for _, u := range j.UsingClause {
			col := u.GetString_().GetSval()
			rn, rc := name(right, col)
			var ln string
			var lc *catalog.Column
			for _, jt := range tables[:len(tables)-1] {
				if n, c := name(jt, col); c != nil && ln == "" {
					ln, lc = n, c
				}
			}
			if rc == nil || lc == nil {
				return nil, refuse("JOIN %s USING (%s): both sides need a column %s", right.table.Name, col, col)
			}
			if err := pair(ln, rn, lc, rc); err != nil {
				return nil, err
			}
		}
		return on, nil
	}
	var conds []*pg.Node
	var flatten func(n *pg.Node) error
	flatten = func(n *pg.Node) error {
		if b := n.GetBoolExpr(); b != nil {
			if b.Boolop != pg.BoolExprType_AND_EXPR {
				return refuse("JOIN %s ON: only equalities joined by AND are supported", right.table.Name)
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
		return nil, refuse("JOIN %s needs ON a.x = b.x or USING (x)", right.table.Name)
	}
	if err := flatten(j.Quals); err != nil {
		return nil, err
	}
	resolve := func(n *pg.Node) (joinedTable, string, *catalog.Column, error) {
		cr := n.GetColumnRef()
		if cr == nil {
			return joinedTable{}, "", nil, refuse("JOIN %s ON: compare columns, e.g. v.day = d.day", right.table.Name)
		}
		var parts []string
		for _, f := range cr.Fields {
			parts = append(parts, f.GetString_().GetSval())
		}
		for _, jt := range tables {
			if len(parts) == 2 && !strings.EqualFold(parts[0], jt.alias) {
				continue
			}
			if nm, c := name(jt, parts[len(parts)-1]); c != nil {
				return jt, nm, c, nil
			}
		}
		return joinedTable{}, "", nil, refuse("JOIN %s ON: unknown column %s", right.table.Name, strings.Join(parts, "."))
	}
	for _, c := range conds {
		a := c.GetAExpr()
		if a == nil || opName(a) != "=" || a.Kind != pg.A_Expr_Kind_AEXPR_OP {
			return nil, refuse("JOIN %s ON: only equalities joined by AND are supported", right.table.Name)
		}
		lt, ln, lc, err := resolve(a.Lexpr)
		if err != nil {
			return nil, err
		}
		rt, rn, rc, err := resolve(a.Rexpr)
		if err != nil {
			return nil, err
		}
		if lt.alias == right.alias {
			lt, ln, lc, rt, rn, rc = rt, rn, rc, lt, ln, lc
		}
		if rt.alias != right.alias || lt.alias == right.alias {
			return nil, refuse("JOIN %s ON: each equality compares a column of %s with a column of a table joined before it", right.table.Name, right.alias)
		}
		if err := pair(ln, rn, lc, rc); err != nil {
			return nil, err
		}
	}
	return on, nil
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
			col := strings.TrimPrefix(on[1], j.Table+".")
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
		if m > MaxGroups {
			return MaxGroups + 1
		}
	}
	return max(m, 1)
}

// joinedColumn resolves a column of a joined relation: qualified by a
// table's alias, or unqualified when exactly one table has it.
func (p *parser) joinedColumn(parts []string) (*catalog.Column, error) {
	if len(parts) > 2 {
		return nil, refuse("unsupported column reference %s", strings.Join(parts, "."))
	}
	relName := func(jt joinedTable, col string) string {
		if jt.alias != p.joined[0].alias {
			return jt.table.Name + "." + col
		}
		return col
	}
	var found *catalog.Column
	var where []string
	for _, jt := range p.joined {
		if len(parts) == 2 && !strings.EqualFold(parts[0], jt.alias) {
			continue
		}
		if jt.table.Column(parts[len(parts)-1]) == nil {
			continue
		}
		found = p.table.Column(relName(jt, parts[len(parts)-1]))
		where = append(where, jt.alias)
	}
	switch {
	case len(where) > 1:
		return nil, refuse("column %s is in %s: qualify it, e.g. %s.%s", parts[len(parts)-1], strings.Join(where, " and "), where[0], parts[len(parts)-1])
	case found == nil:
		return nil, refuse("unknown column %s in the joined tables; qualify a column with its table's alias", strings.Join(parts, "."))
	}
	return found, nil
}

// fromClause renders the plan's FROM: the private table (or view) alone,
// joined with its public tables under the aliases t0, t1, …, or the
// per-person pre-aggregation it reads.
func (g *sqlGen) fromClause(view string) (string, error) {
	q := g.p.Query
	if q.Pre != nil {
		// A per-person pre-aggregation is read as a subquery.
		inner, err := g.preSQL(q.Pre)
		if err != nil {
			return "", err
		}
		return "(" + inner + ") AS " + g.ident("t0"), nil
	}
	if len(q.Joins) == 0 {
		return g.ident(view), nil
	}
	var b strings.Builder
	b.WriteString(g.ident(view) + " AS " + g.ident("t0"))
	for i, j := range q.Joins {
		kind := " JOIN "
		if j.Left {
			kind = " LEFT JOIN "
		}
		alias := fmt.Sprintf("t%d", i+1)
		b.WriteString(kind + g.ident(j.Table) + " AS " + g.ident(alias) + " ON ")
		for k, on := range j.On {
			if k > 0 {
				b.WriteString(" AND ")
			}
			b.WriteString(g.colRef(on[0]) + " = " + g.colRef(on[1]))
		}
	}
	return b.String(), nil
}

// colRef renders a column of the relation: its quoted name, qualified by
// its table's alias when the query joins tables.
func (g *sqlGen) colRef(name string) string {
	q := g.p.Query
	if len(q.Joins) == 0 {
		return g.ident(name)
	}
	for i, j := range q.Joins {
		if rest, ok := strings.CutPrefix(name, j.Table+"."); ok {
			return g.ident(fmt.Sprintf("t%d", i+1)) + "." + g.ident(rest)
		}
	}
	return g.ident("t0") + "." + g.ident(name)
}

// privateJoin checks a join of two private tables: both name the same
// people (one id space) and the join matches a person's rows with that
// person's rows only (the privacy units are equal), so every joined row
// still belongs to one person and bounding after the join, per person,
// bounds the sensitivity. The bounds that apply are the first table's.
func privateJoin(left, right *catalog.Table, on [][2]string) error {
	if !left.HasPrivacyUnit() || !right.HasPrivacyUnit() {
		return refuse("JOIN %s: joining two private tables needs a privacy unit in both, so that each joined row belongs to one person", right.Name)
	}
	if left.IDSpace == "" || left.IDSpace != right.IDSpace {
		return refuse("JOIN %s: %s and %s are not declared in one id_space; a join of private tables is only private when both privacy units name the same people (declare `id_space:` on both)", right.Name, left.Name, right.Name)
	}
	unitJoined := false
	for _, e := range on {
		unitJoined = unitJoined || (e[0] == left.PrivacyUnit && e[1] == right.Name+"."+right.PrivacyUnit)
	}
	if !unitJoined {
		return refuse("JOIN %s: private tables join on their privacy units (ON a.%s = b.%s); any other join mixes people's rows", right.Name, left.PrivacyUnit, right.PrivacyUnit)
	}
	return nil
}
