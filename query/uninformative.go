package query

import (
	"fmt"
	"strings"

	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
)

// maxNamedGroups is how many groups a note on uninformative intervals names
// before it counts the rest.
const maxNamedGroups = 5

// uninformativeNotes says which released values have an interval that
// covers everything their declared bounds allow (dpplan's FeasibleRange):
// a value so noisy, or a group so small, that the answer says nothing
// about the data, though a number is printed (a standard deviation of 0,
// an average at its range's midpoint). A quantile's interval is always its
// declared range: the exponential mechanism that chooses it gives no
// narrower interval, which the note says once. The notes read only released
// intervals: free.
func uninformativeNotes(plan *dpplan.Plan, res *Result) []string {
	q := plan.Query
	var notes []string
	for _, ap := range plan.Aggregates {
		o := q.Outputs[ap.Output]
		full, ok := ap.FeasibleRange()
		if !ok || o.Hidden {
			continue
		}
		if ap.Aggregate.Func == ir.Quantile {
			notes = append(notes, fmt.Sprintf("%s (%s): its interval is the declared range: the exponential mechanism that chooses the value gives no narrower one, so the interval says nothing about the data (EXPLAIN says how close to the asked rank the value's rank lands)", o.Name, ap.Aggregate))
			continue
		}
		var groups []string
		for i, row := range res.Rows {
			iv := res.CI[i][ap.Output]
			if iv == nil || iv.Low > full.Low || iv.High < full.High {
				continue
			}
			groups = append(groups, groupLabel(q, row))
		}
		if len(groups) == 0 {
			continue
		}
		which := "its interval"
		if len(q.GroupBy) > 0 {
			named := groups
			if len(named) > maxNamedGroups {
				named = append(named[:maxNamedGroups:maxNamedGroups], fmt.Sprintf("%d more", len(groups)-maxNamedGroups))
			}
			which = "the interval of group(s) " + strings.Join(named, "; ")
		}
		notes = append(notes, fmt.Sprintf("%s: %s covers everything the declared bounds allow (%s): there the released value says nothing about the data, as the noise or the group's size leaves it; a larger ε or larger groups narrow it", o.Name, which, rangeWords(ap)))
	}
	return notes
}

// groupLabel spells a row's group keys for a note.
func groupLabel(q *ir.Query, row []any) string {
	var keys []string
	for i, o := range q.Outputs {
		if o.IsKey() && !o.Hidden {
			keys = append(keys, fmt.Sprint(row[i]))
		}
	}
	return strings.Join(keys, ", ")
}

// rangeWords says what the feasible range of ap is.
func rangeWords(ap dpplan.AggregatePlan) string {
	switch ap.Aggregate.Func {
	case ir.VarPop, ir.VarSamp:
		return "from 0 to the largest variance of values in the declared range"
	case ir.StddevPop, ir.StddevSamp:
		return "from 0 to half the declared range"
	}
	return "the declared range"
}
