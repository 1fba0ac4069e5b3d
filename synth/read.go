package synth

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/schema"
)

// Data is the table as counts of each combination of discretized values
// (after contribution bounding). Rows whose value is outside a column's
// domain (a text value not in its public list, or NULL in a column not
// declared nullable) are left out.
type Data struct {
	// Cells holds one combination per entry: Cells[i][j] is the index of
	// column j's value.
	Cells [][]int32
	// Counts[i] is how many rows have combination i.
	Counts []int64
}

// SQL returns the statement that reads the table: each person's rows
// bounded to RowsPerPerson chosen at random, each column replaced by the
// index of its value in the column's domain (−1 when it has none), grouped
// into counts. Every expression is a comparison or a constant, so no value
// in the data can make it fail.
func (p *Plan) SQL(d engine.Dialect) (string, error) {
	var cols []string
	for _, a := range p.Attrs {
		e, err := indexExpr(d, a)
		if err != nil {
			return "", err
		}
		cols = append(cols, e)
	}
	src := d.QuoteIdent(p.Table.Name)
	if p.Table.HasPrivacyUnit() {
		u := d.QuoteIdent(p.Table.PrivacyUnit)
		known := "(SELECT * FROM " + src + " WHERE " + u + " IS NOT NULL) AS known"
		part := u
		if c := p.Table.Column(p.Table.PrivacyUnit); c != nil && c.Type == schema.Float {
			// -0 and 0 are one person: IEEE 754 gives -0 + 0 = +0.
			zero, err := engine.Literal(d, 0.0)
			if err != nil {
				return "", err
			}
			part = "(" + u + " + " + zero + ")"
		}
		rn := "row_number() OVER (PARTITION BY " + part + " ORDER BY " + d.Random() + ")"
		limit := strconv.FormatInt(p.RowsPerPerson, 10)
		// Which rows of a person are kept must depend only on that
		// person's rows and fresh randomness: a random order, never the
		// engine's physical one.
		if d.SupportsQualify() {
			src = "(SELECT * FROM " + known + " QUALIFY " + rn + " <= " + limit + ") AS bounded"
		} else {
			src = "(SELECT * FROM (SELECT *, " + rn + " AS rn FROM " + known + ") AS numbered WHERE rn <= " + limit + ") AS bounded"
		}
	}
	var b strings.Builder
	b.WriteString("SELECT ")
	var keys []string
	for i, c := range cols {
		k := "c" + strconv.Itoa(i)
		keys = append(keys, k)
		b.WriteString(c + " AS " + k + ", ")
	}
	b.WriteString("count(*) AS n FROM " + src + " GROUP BY " + strings.Join(keys, ", "))
	return b.String(), nil
}

// indexExpr spells the index of a column's value in its domain.
func indexExpr(d engine.Dialect, a *Attr) (string, error) {
	col := d.QuoteIdent(a.Name)
	null := "-1"
	if a.Nullable {
		null = strconv.Itoa(a.Size() - 1)
	}
	var b strings.Builder
	b.WriteString("CASE WHEN " + col + " IS NULL THEN " + null)
	switch a.Kind {
	case Listed:
		for i, v := range a.Values {
			lit, err := engine.Literal(d, v)
			if err != nil {
				return "", fmt.Errorf("column %s: value %v: %w", a.Name, v, err)
			}
			b.WriteString(" WHEN " + col + " = " + lit + " THEN " + strconv.Itoa(i))
		}
		b.WriteString(" ELSE -1 END")
	case Boolean:
		b.WriteString(" WHEN " + col + " THEN 1 ELSE 0 END")
	case Binned:
		for i := 1; i < len(a.Edges); i++ {
			var lit string
			if a.integral() {
				// Dates and timestamps are exposed as days and
				// microseconds (64-bit integers).
				lit = strconv.FormatInt(int64(a.Edges[i]), 10)
			} else {
				var err error
				if lit, err = engine.Literal(d, a.Edges[i]); err != nil {
					return "", fmt.Errorf("column %s: %w", a.Name, err)
				}
			}
			b.WriteString(" WHEN " + col + " < " + lit + " THEN " + strconv.Itoa(i-1))
		}
		b.WriteString(" ELSE " + strconv.Itoa(len(a.Edges)-1) + " END")
	}
	return b.String(), nil
}

// Read runs the plan's SQL on the engine, where the table must be exposed
// under its name (query.Register does that), and returns the counts.
func (p *Plan) Read(ctx context.Context, eng engine.Engine) (*Data, error) {
	sql, err := p.SQL(eng.Dialect())
	if err != nil {
		return nil, err
	}
	rows, err := eng.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	data := &Data{}
	k := len(p.Attrs)
	for _, r := range rows.Rows {
		if len(r) != k+1 {
			return nil, fmt.Errorf("synth: the engine returned %d columns, want %d", len(r), k+1)
		}
		cells := make([]int32, k)
		ok := true
		for j := 0; j < k; j++ {
			v, good := asInt(r[j])
			if !good || v < 0 || v >= int64(p.Attrs[j].Size()) {
				ok = false
				break
			}
			cells[j] = int32(v)
		}
		n, good := asInt(r[k])
		if !ok || !good || n <= 0 {
			continue
		}
		data.Cells = append(data.Cells, cells)
		data.Counts = append(data.Counts, n)
	}
	return data, nil
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case int:
		return int64(x), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<62 {
			return int64(x), true
		}
	case uint64:
		if x < 1<<62 {
			return int64(x), true
		}
	}
	if s, ok := v.(fmt.Stringer); ok {
		if n, err := strconv.ParseInt(s.String(), 10, 64); err == nil {
			return n, true
		}
	}
	return 0, false
}
