package parse

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

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
	if fc := n.GetFuncCall(); fc != nil && ir.IsAggregate(funcName(fc)) {
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
	case schema.Int:
		i, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return ir.Operand{}, ir.Refuse("cannot cast %q to an integer", s)
		}
		return ir.Operand{Kind: ir.Literal, Value: i}, nil
	case schema.Float:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return ir.Operand{}, ir.Refuse("cannot cast %q to a finite number", s)
		}
		return ir.Operand{Kind: ir.Literal, Value: f}, nil
	case schema.Text:
		return ir.Operand{Kind: ir.Literal, Value: s}, nil
	case schema.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return ir.Operand{}, ir.Refuse("cannot cast %q to a boolean", s)
		}
		return ir.Operand{Kind: ir.Literal, Value: b}, nil
	case schema.Date, schema.Timestamp:
		return ir.TemporalLiteral(typ, s)
	}
	return ir.Operand{}, ir.Refuse("cast to %s is not supported", name)
}

// typeKind is the type family of a column type: "number", "text", "bool",
// the temporal type itself, or "unknown".
func typeKind(t schema.Type) string {
	switch t {
	case schema.Date, schema.Timestamp:
		return string(t)
	case schema.Int, schema.Float:
		return "number"
	case schema.Text:
		return "text"
	case schema.Bool:
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

// castType maps the type a cast names to a catalog type, with the name as
// written (lower case) for messages; the type is "" for a type dpstat does
// not cast to.
func castType(tn *pg.TypeName) (schema.Type, string) {
	name := ""
	if tn != nil && len(tn.Names) > 0 {
		if s := tn.Names[len(tn.Names)-1].GetString_(); s != nil {
			name = strings.ToLower(s.Sval)
		}
	}
	switch name {
	case "int2", "int4", "int8", "int", "integer", "bigint", "smallint":
		return schema.Int, name
	case "float4", "float8", "float", "real", "double", "numeric", "decimal":
		return schema.Float, name
	case "text", "varchar":
		return schema.Text, name
	case "bool", "boolean":
		return schema.Bool, name
	case "date":
		return schema.Date, name
	case "timestamp":
		return schema.Timestamp, name
	}
	return "", name
}
