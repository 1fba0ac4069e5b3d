package reuse

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/query/parse"
)

// contextVersion changes whenever what identifies a measurement's context
// changes.
const contextVersion = "dpstat-reuse-v1"

// Shape is what a plan's cells are, as far as reuse needs it: the context
// every cell shares (the table's declaration, the filter left once the
// conditions on declared value lists are taken out, the contribution
// bounds) and, per cell, a box: for each column with a declared value list
// that the query restricts (by GROUP BY or by WHERE col = v / col IN (…)),
// the indices of the values the cell's rows hold.
type Shape struct {
	// Context identifies the cells' common context (a hash).
	Context string
	// Where is the filter left over, as the query spells it ("" for none).
	Where string
	// Restrict maps a column to the value indices WHERE restricts it to
	// (sorted): of its declared value list, or, for an int or date column
	// with declared bounds restricted to a range within them, the whole
	// values v − lower (ranges.go). A column absent is not restricted. A column
	// restricted to its whole declared list stays restricted: a row may
	// hold NULL or a value outside the list.
	Restrict map[string][]int
	// GroupBy lists the grouped columns, and Keys each group's value
	// indices in GroupBy order (following Plan.Keys).
	GroupBy []string
	Keys    [][]int
	// Hidden is the number of trailing Keys the answer does not show: the
	// cells of the rows outside a column's list (dpplan.Plan.MeasureRest),
	// whose key holds the list's length for that column. They are
	// measured and kept, never asked for.
	Hidden int
	// Rest maps each column with such cells to the index their keys hold
	// for it (the list's length); nil without hidden cells.
	Rest map[string]int
	// Stats identifies each release of the plan (StatID), "" for one that
	// cannot be reused.
	Stats []string
	// Bins maps a column grouped by bins (floor(col / w) * w) to each
	// bin's value indices (ranges.go), the key of a group being the bin's
	// index; nil without bins.
	Bins map[string][][]int
	// ranged marks the int and date columns whose ranges and bins can be
	// a cell's coordinates (rangeColumn).
	ranged map[string]bool
	// lists maps each column with a declared value list to its length.
	lists map[string]int
}

// ShapeOf returns the shape of a plan over the catalog table declared
// (as declared: the plan's own table has the bounds its WHERE clause
// implies) whose source resolves to source, or the reason its cells
// cannot be reused or derived: only
// queries over one table with no privacy unit (each row one person, so a
// cell's value does not depend on the other cells: no contribution
// bounding), grouped by columns with declared value lists, without joins,
// key selection, most-common values or computed keys.
func ShapeOf(plan *dpplan.Plan, declared *catalog.Table, source string) (*Shape, string) {
	q, t := plan.Query, parse.Bind(declared, "")
	switch {
	case t == nil || q == nil || plan.Table == nil:
		return nil, "no table"
	case plan.Bounded || t.HasPrivacyUnit():
		return nil, "the table has a privacy unit: bounding a person's contributions makes a cell depend on the grouping"
	case len(q.Joins) > 0 || q.Pre != nil || q.Relation != nil:
		return nil, "the query joins or pre-aggregates"
	case plan.Selection != nil || plan.TopK != nil:
		return nil, "the query selects its keys"
	}
	s := &Shape{Restrict: map[string][]int{}, lists: map[string]int{}, ranged: map[string]bool{}}
	for _, g := range q.GroupBy {
		if b, ok := q.Buckets[g]; ok {
			col, bins, why := bucketBins(b, t)
			if why != "" {
				return nil, why
			}
			if s.Bins == nil {
				s.Bins = map[string][][]int{}
			}
			if _, dup := s.Bins[col]; dup {
				return nil, "the query groups by two bins of " + col
			}
			s.Bins[col] = bins
			s.GroupBy = append(s.GroupBy, col)
			continue
		}
		if c := t.Column(g); c == nil || len(c.Values) == 0 {
			return nil, "GROUP BY " + g + " has no declared value list"
		}
		s.GroupBy = append(s.GroupBy, g)
	}
	for _, c := range t.Columns {
		if len(c.Values) > 0 {
			s.lists[c.Name] = len(c.Values)
		}
		if _, _, n, ok := rangeColumn(t, c.Name); ok {
			s.lists[c.Name], s.ranged[c.Name] = n, true
		}
		// A declared value list is never taken as complete, not
		// nullable or not: nothing in the engine drops a row whose value
		// is NULL or outside the list from a query that does not group
		// by the column, so the released cells of a GROUP BY need not
		// add up to the table's total, and a restriction to the whole
		// list stays a restriction.
	}
	var residual []string
	var rs ranges
	for _, conj := range conjuncts(q.Where) {
		if col, lo, hi, ok := rangeCondition(conj, t); ok {
			rs.add(col, lo, hi, ir.ExprString(conj, q))
			continue
		}
		col, idx, ok := keyCondition(conj, t)
		if !ok {
			residual = append(residual, ir.ExprString(conj, q))
			continue
		}
		if prev, seen := s.Restrict[col]; seen {
			idx = intersect(prev, idx)
		}
		s.Restrict[col] = idx
	}
	residual = append(residual, rs.restrict(s, t)...)
	sort.Strings(residual)
	s.Where = strings.Join(residual, " AND ")
	for _, key := range plan.Keys {
		ki := make([]int, len(key))
		for i, v := range key {
			if b, ok := q.Buckets[q.GroupBy[i]]; ok {
				if ki[i] = valueIndex(b.Values(t), v); ki[i] < 0 {
					return nil, fmt.Sprintf("group key %v of %s is not one of its bins", v, q.GroupBy[i])
				}
				continue
			}
			vals := t.Column(q.GroupBy[i]).Values
			if v == nil && plan.RestColumn(i) {
				ki[i] = len(vals) // the rest: NULL or outside the list
				if s.Rest == nil {
					s.Rest = map[string]int{}
				}
				s.Rest[q.GroupBy[i]] = len(vals)
				continue
			}
			ki[i] = valueIndex(vals, v)
			if ki[i] < 0 {
				return nil, fmt.Sprintf("group key %v of %s is not in its declared list", v, q.GroupBy[i])
			}
		}
		s.Keys = append(s.Keys, ki)
	}
	s.Hidden = plan.Hidden
	for i := range plan.Releases {
		s.Stats = append(s.Stats, StatID(plan, i))
	}
	// The table's whole declaration but for the reuse setting, which says
	// who may reuse, not what a cell is.
	whole := *declared
	whole.ReuseReleases = ""
	dj, err := json.Marshal(&whole)
	if err != nil {
		return nil, "the table's declaration cannot be spelled"
	}
	cj, _ := json.Marshal(plan.Contribution)
	h := sha256.New()
	for _, part := range []string{contextVersion, t.Name, string(dj), source, s.Where, string(cj)} {
		fmt.Fprintf(h, "%d:%s;", len(part), part)
	}
	s.Context = hex.EncodeToString(h.Sum(nil))
	return s, ""
}

// StatID identifies what release i of a plan measures, so that two
// releases with the same ID in the same context measure the same
// statistic of a cell: "rows" (COUNT(*)), "values:col" (COUNT(col)),
// "sum:col:…" and "csum:col:…" (a sum, and a sum centred on the clamping
// range's midpoint, with the summand's clamping bounds and grid). "" for a
// release that cannot be reused.
func StatID(plan *dpplan.Plan, i int) string {
	r := plan.Releases[i]
	if r.Stat < 0 || r.Stat >= len(plan.Statistics) {
		return ""
	}
	sm := plan.Statistics[r.Stat].Summand
	if _, derived := plan.Query.Derived[sm.Column]; derived || strings.HasPrefix(sm.Column, "#") {
		// A computed expression's column is named per query.
		return ""
	}
	switch {
	case r.Kind == dpplan.NoisyCount && sm.Kind == dpplan.RowCount:
		return "rows"
	case r.Kind == dpplan.NoisyCount && sm.Kind == dpplan.NonNullCount:
		return "values:" + sm.Column
	case r.Kind == dpplan.NoisySum && sm.Kind == dpplan.FixedPointSum:
		return fmt.Sprintf("sum:%s:%d:%d:%d", sm.Column, sm.Exp, sm.Lower, sm.Upper)
	case r.Kind == dpplan.NoisyCentredSum && sm.Kind == dpplan.FixedPointSum:
		return fmt.Sprintf("csum:%s:%d:%d:%d", sm.Column, sm.Exp, sm.Lower, sm.Upper)
	}
	return ""
}

// conjuncts flattens a condition's top-level ANDs.
func conjuncts(e ir.Expr) []ir.Expr {
	switch x := e.(type) {
	case nil:
		return nil
	case ir.And:
		var out []ir.Expr
		for _, a := range x.Args {
			out = append(out, conjuncts(a)...)
		}
		return out
	}
	return []ir.Expr{e}
}

// keyCondition recognizes col = v and col IN (v, …) over a column with a
// declared value list, every v in the list, and returns the values'
// sorted indices.
func keyCondition(e ir.Expr, t *ir.Table) (string, []int, bool) {
	var col ir.Operand
	var vals []ir.Operand
	switch x := e.(type) {
	case ir.Compare:
		if x.Op != "=" {
			return "", nil, false
		}
		col, vals = x.Left, []ir.Operand{x.Right}
		if col.Kind != ir.ColumnRef {
			col, vals = x.Right, []ir.Operand{x.Left}
		}
	case ir.In:
		if x.Negate {
			return "", nil, false
		}
		col, vals = x.Arg, x.Values
	default:
		return "", nil, false
	}
	if col.Kind != ir.ColumnRef {
		return "", nil, false
	}
	c := t.Column(col.Column)
	if c == nil || len(c.Values) == 0 || len(vals) == 0 {
		return "", nil, false
	}
	var idx []int
	for _, v := range vals {
		if v.Kind != ir.Literal {
			return "", nil, false
		}
		i := valueIndex(c.Values, v.Value)
		if i < 0 {
			return "", nil, false
		}
		idx = append(idx, i)
	}
	return c.Name, normalize(idx), true
}

// valueIndex returns the index of v in a declared value list, compared as
// values of one kind (numbers with numbers), or -1.
func valueIndex(list []any, v any) int {
	for i, w := range list {
		if sameKind(v, w) && ir.CompareValues(v, w) == 0 {
			return i
		}
	}
	return -1
}

func sameKind(a, b any) bool {
	_, na := ir.Number(a)
	_, nb := ir.Number(b)
	if na || nb {
		return na && nb
	}
	return fmt.Sprintf("%T", a) == fmt.Sprintf("%T", b)
}

func normalize(idx []int) []int {
	sort.Ints(idx)
	out := idx[:0]
	for i, v := range idx {
		if i == 0 || v != idx[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func intersect(a, b []int) []int {
	in := map[int]bool{}
	for _, v := range a {
		in[v] = true
	}
	var out []int
	for _, v := range b {
		if in[v] {
			out = append(out, v)
		}
	}
	return out
}

// cellBox returns the box of group g: Restrict with each grouped column
// narrowed to the group's value (nil when the WHERE excludes the value).
func (s *Shape) cellBox(g int) map[string][]int {
	box := make(map[string][]int, len(s.Restrict)+len(s.GroupBy))
	for c, idx := range s.Restrict {
		box[c] = idx
	}
	for i, c := range s.GroupBy {
		set := []int{s.Keys[g][i]}
		if bins, ok := s.Bins[c]; ok {
			set = bins[s.Keys[g][i]]
		}
		if prev, ok := box[c]; ok {
			box[c] = intersect(prev, set)
		} else {
			box[c] = set
		}
	}
	return box
}
