package querygen

import (
	"errors"
	"math"
	"strings"

	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
)

// Outcome is what an analyst sees of one run of a query, less the noise,
// with the plan it ran under.
type Outcome struct {
	// Err is the error of preparing or running the query; nil when it was
	// answered.
	Err error
	// Engine is, when Err is a failure of the engine after the charge
	// (query.EngineError), the engine's own error; nil otherwise.
	Engine error
	// Plan and Noise are the prepared query's, when it was planned.
	Plan  *dpplan.Plan
	Noise *dpplan.Noise
	// Columns and Rows are the answer's, when it was answered.
	Columns []string
	Rows    [][]any
}

// Reporter receives the oracle's failures (a *testing.T).
type Reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// Check is the neighbouring-table oracle: it compares the outcome of sql
// on D with its outcome on variant (D minus one person) at an ε so large
// that the noise vanishes, and reports to r every way they differ beyond
// what the charged ε covers:
//   - the engine failed after the charge, or an error is not a refusal;
//   - a non-finite number was released;
//   - one was answered and not the other, or their refusals differ;
//   - their columns or (where every public group is released) their
//     groups differ;
//   - a count or sum moved by more than its sensitivity over all groups
//     (plus one step of its release grid per group a person changes).
//
// Values are not compared where noise chooses the rows (key selection,
// the most common values, HAVING, LIMIT and OFFSET), nor where the bounds
// bind (BoundsNotBinding): which rows and groups a person keeps is drawn
// at random on each run, so the other people's contributions can differ
// between the two runs too. The wide table's bounds bind for no one, and
// the rows table has no privacy unit: values are compared there.
func Check(r Reporter, sql, variant string, d, n Outcome) {
	r.Helper()
	for _, o := range []struct {
		name string
		out  Outcome
	}{{"D", d}, {variant, n}} {
		var re *ir.RefusedError
		switch {
		case o.out.Engine != nil:
			r.Errorf("%s on %s: the engine failed after the charge: %v (%v)", sql, o.name, o.out.Err, o.out.Engine)
		case o.out.Err != nil && !errors.As(o.out.Err, &re):
			r.Errorf("%s on %s: an error that is not a refusal: %v", sql, o.name, o.out.Err)
		}
		for _, row := range o.out.Rows {
			for _, v := range row {
				if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
					r.Errorf("%s on %s: released a non-finite value %v in row %v", sql, o.name, f, row)
				}
			}
		}
	}
	if (d.Err == nil) != (n.Err == nil) {
		r.Errorf("%s: answered on one table and not the other:\n  D: %v\n  %s: %v", sql, d.Err, variant, n.Err)
		return
	}
	if d.Err != nil {
		if d.Err.Error() != n.Err.Error() {
			r.Errorf("%s: refusals differ:\n  D: %v\n  %s: %v", sql, d.Err, variant, n.Err)
		}
		return
	}
	plan, q := d.Plan, d.Plan.Query
	if strings.Join(d.Columns, ",") != strings.Join(n.Columns, ",") {
		r.Errorf("%s: columns differ: %v and %v", sql, d.Columns, n.Columns)
		return
	}
	// Key selection, the most common values and answer filters choose
	// rows with noise (that is what their cost pays for); other answers
	// release every public group, so the groups must be the same.
	if plan.Selection != nil || plan.TopK != nil || q.Having != nil || q.Limit >= 0 || q.Offset > 0 {
		return
	}
	// Rows are matched by their keys: ORDER BY a noisy value may order
	// them differently.
	// col maps an output to its column in the result (hidden outputs feed
	// computed columns only and have none).
	col := map[int]int{}
	for i, o := range q.Outputs {
		if !o.Hidden {
			col[i] = len(col)
		}
	}
	var keyCols []int
	for i, o := range q.Outputs {
		if o.IsKey() {
			keyCols = append(keyCols, col[i])
		}
	}
	byKey := func(rows [][]any) map[string][]any {
		m := map[string][]any{}
		for i, row := range rows {
			k := make([]any, len(keyCols))
			for j, c := range keyCols {
				k[j] = row[c]
			}
			if len(keyCols) < len(q.GroupBy) {
				// Not every key is selected: rows are in the public
				// lists' order, unless ORDER BY sorts them by noise.
				if len(q.OrderBy) > 0 {
					return nil
				}
				k = append(k, int64(i))
			}
			m[ir.KeyID(k)] = row
		}
		return m
	}
	if byKey(d.Rows) == nil {
		return
	}
	dRows, nRows := byKey(d.Rows), byKey(n.Rows)
	if len(dRows) != len(d.Rows) || len(dRows) != len(nRows) {
		r.Errorf("%s: %d groups on D, %d on %s (or a group released twice)", sql, len(d.Rows), len(n.Rows), variant)
		return
	}
	for k := range dRows {
		if nRows[k] == nil {
			r.Errorf("%s: group %s released on D and not on %s", sql, k, variant)
			return
		}
	}
	// Counts and sums move by at most their sensitivity over all groups.
	// Where a join may give a person more rows or groups than the bounds
	// keep, which ones are kept is drawn at random on each run: only the
	// outcome is compared there. Where the bounds exceed every person's
	// joined rows (the wide table), every row is kept, the answers are
	// functions of the data, and the values are compared (the rows table
	// checks the joins' multiplicity without a privacy unit).
	// The same holds without a join: which of a person's rows and groups
	// the bounds keep is drawn at random, and the draws of the other
	// people shift when one person's rows are gone (a seeded engine's
	// sequence meets other rows), so their kept rows can differ between
	// the runs: values are compared where the bounds do not bind.
	if plan.Bounded && !BoundsNotBinding(plan) {
		return
	}
	for _, ap := range plan.Aggregates {
		switch ap.Aggregate.Func {
		case ir.CountStar, ir.Count, ir.CountDistinct, ir.Sum:
		default:
			continue
		}
		c, shown := col[ap.Output]
		if !shown {
			continue
		}
		sens := plan.Releases[ap.Releases[0]].Sensitivity
		// A sum is released on its noise grid: each of the at most
		// Groups groups one person changes may round by one more step.
		if d.Noise != nil {
			if m, ok := d.Noise.Sums[ap.Releases[0]]; ok {
				sens += float64(plan.Contribution.Groups*plan.Contribution.People()) * m.Granularity()
			}
		}
		// On a table with epochs the sensitivity is one (person, epoch)'s;
		// the variant drops a whole person, several units.
		if plan.Epochs != nil {
			sens *= float64(max(min(plan.Epochs.Len(), int64(EpochsPerPerson())), 1))
		}
		var moved float64
		for k, row := range dRows {
			a, _ := ir.Number(row[c])
			b, _ := ir.Number(nRows[k][c])
			moved += math.Abs(a - b)
		}
		if moved > sens*(1+1e-9)+1e-9 {
			r.Errorf("%s: %s moved by %g in all between D and %s: more than its sensitivity %g", sql, ap.Aggregate, moved, variant, sens)
		}
	}
}
