package sqlgen

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/ir"
)

// textSQL renders the function for the engine.
func (g *sqlGen) textSQL(f *ir.TextFn) (string, error) {
	switch f.Func {
	case "column":
		return g.colRef(f.Column), nil
	case "literal":
		return engine.Literal(g.d, f.Value)
	case "null":
		return "CAST(NULL AS " + g.d.TypeName(engine.Text) + ")", nil
	}
	args := make([]string, len(f.Args))
	for i, a := range f.Args {
		s, err := g.textSQL(a)
		if err != nil {
			return "", err
		}
		args[i] = s
	}
	if err := g.require(engine.Construct(f.Func)); err != nil {
		return "", err
	}
	if f.Func == "substr" {
		args = append(args, strconv.FormatInt(f.From, 10))
		if f.For >= 0 {
			args = append(args, strconv.FormatInt(f.For, 10))
		}
	}
	if sql, ok := engine.TextFunc(g.d, f.Func, args); ok {
		return sql, nil
	}
	return "", fmt.Errorf("query: unknown text function %s", f.Func)
}

// textKeySQL renders a text key: with a public image, a value outside it
// (a value of the data that no listed value gives) is NULL, so that the
// engine returns only the plan's groups.
func (g *sqlGen) textKeySQL(b *ir.Bucket) (string, error) {
	e, err := g.textSQL(b.Fn)
	if err != nil {
		return "", err
	}
	vals := b.Values(g.p.Table)
	if vals == nil {
		return e, nil
	}
	if len(vals) == 0 {
		return "CAST(NULL AS " + g.d.TypeName(map[string]engine.Type{"text": engine.Text, "number": engine.Integer, "bool": engine.Boolean}[b.Fn.ValueKind()]) + ")", nil
	}
	lits := make([]string, len(vals))
	for i, v := range vals {
		l, err := engine.Literal(g.d, v)
		if err != nil {
			return "", err
		}
		lits[i] = l
	}
	return "CASE WHEN " + e + " IN (" + strings.Join(lits, ", ") + ") THEN " + e + " END", nil
}

// textLengthSQL renders length(f) as a double, clamped to its bounds.
func (g *sqlGen) textLengthSQL(x ir.TextLength) (string, error) {
	e, err := g.textSQL(x.Fn)
	if err != nil {
		return "", err
	}
	dbl := g.d.TypeName(engine.Double)
	e = "CAST(" + e + " AS " + dbl + ")"
	sp := ir.TextLengthRange(x, g.p.Table)
	if math.IsInf(sp.Hi, 1) {
		return e, nil
	}
	// The bounds are the dialect's double literals (ClickHouse's are not
	// Nullable constants, which its least and greatest refuse).
	lo, err := engine.Literal(g.d, sp.Lo)
	if err != nil {
		return "", err
	}
	hi, err := engine.Literal(g.d, sp.Hi)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("CASE WHEN %s IS NULL THEN NULL ELSE least(greatest(%s, %s), %s) END", e, e, lo, hi), nil
}

// ilike spells l [NOT] ILIKE 'pattern' as lower(l) [NOT] LIKE 'pattern'
// with the pattern's ASCII letters lowered, on every engine: ILIKE folds
// the ASCII letters only, as lower and upper do. The engines' own ILIKE
// fold other letters each its own way (DuckDB folds Ÿ to ÿ, PostgreSQL by
// its locale), and ClickHouse 18.16 has none.
func (g *sqlGen) ilike(x ir.Compare, l string) (string, error) {
	if err := g.require(engine.ILike); err != nil {
		return "", err
	}
	pat, ok := x.Right.Value.(string)
	if x.Right.Kind != ir.Literal || !ok {
		return "", fmt.Errorf("query: ILIKE needs a literal pattern")
	}
	folded, ok := engine.TextFunc(g.d, "lower", []string{l})
	if !ok {
		return "", fmt.Errorf("query: the %s dialect cannot spell lower", g.d.Name())
	}
	lit, err := engine.Literal(g.d, ir.ASCIILower(pat))
	if err != nil {
		return "", err
	}
	return folded + " " + strings.TrimSuffix(x.Op, "ILIKE") + "LIKE " + lit, nil
}

// require refuses, before the charge, a construct the dialect declines
// (engine.Declining), naming it, the engine and what would be accepted.
func (g *sqlGen) require(c engine.Construct) error {
	if instead, declined := engine.Declined(g.d, c); declined {
		return ir.Refuse("%s is not supported on the %s engine: %s", c, g.d.Name(), instead)
	}
	return nil
}
