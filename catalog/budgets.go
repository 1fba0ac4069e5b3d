package catalog

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// checkBudget checks one declared budget; where names it in messages.
func checkBudget(where string, rb *rawBudget) (Budget, []error) {
	var errs []error
	if rb.Epsilon == nil {
		return Budget{}, []error{fmt.Errorf("%s: epsilon missing; declare e.g. `%s: {epsilon: 2, delta: 1e-5}`", where, where)}
	}
	b := Budget{Epsilon: *rb.Epsilon}
	if rb.Delta != nil {
		b.Delta = *rb.Delta
	}
	if e := b.Epsilon; math.IsNaN(e) || math.IsInf(e, 0) || e <= 0 {
		errs = append(errs, fmt.Errorf("%s: epsilon = %v: want a finite number > 0", where, e))
	}
	if d := b.Delta; math.IsNaN(d) || d < 0 || d >= 1 {
		errs = append(errs, fmt.Errorf("%s: delta = %v: want a number in [0, 1)", where, d))
	}
	return b, errs
}

// checkBudgets fills each table's budgets (its own declarations, else the
// catalog's) and id space, and checks that the tables of one id space
// agree on them and that no id space takes the name of a table outside it.
func checkBudgets(c *Catalog, raw *rawCatalog) []error {
	var errs []error
	if raw.TotalBudget != nil {
		b, berrs := checkBudget("total_budget", raw.TotalBudget)
		errs = append(errs, berrs...)
		c.TotalBudget = &b
	}
	for _, t := range c.Tables {
		rt := raw.Tables[t.Name]
		if rt == nil {
			continue
		}
		t.Budget, t.TotalBudget = c.Budget, c.TotalBudget
		if rt.Budget != nil {
			b, berrs := checkBudget("table "+t.Name+": budget", rt.Budget)
			errs = append(errs, berrs...)
			t.Budget = b
		}
		if rt.TotalBudget != nil {
			b, berrs := checkBudget("table "+t.Name+": total_budget", rt.TotalBudget)
			errs = append(errs, berrs...)
			t.TotalBudget = &b
		}
		if rt.IDSpace != "" && !validName(rt.IDSpace) {
			errs = append(errs, fmt.Errorf("table %s: id_space %q: want letters, digits and underscores, starting with a letter or underscore", t.Name, rt.IDSpace))
		}
		t.IDSpace = rt.IDSpace
	}
	spaces := map[string][]*Table{}
	for _, t := range c.Tables {
		if t.IDSpace != "" {
			spaces[t.IDSpace] = append(spaces[t.IDSpace], t)
		}
	}
	names := make([]string, 0, len(spaces))
	for s := range spaces {
		names = append(names, s)
	}
	sort.Strings(names)
	fmtTotal := func(b *Budget) string {
		if b == nil {
			return "none"
		}
		return fmt.Sprintf("{epsilon: %g, delta: %g}", b.Epsilon, b.Delta)
	}
	for _, s := range names {
		ts := spaces[s]
		first := ts[0]
		for _, t := range ts[1:] {
			if err := checkEpochSpace(s, first, t); err != nil {
				errs = append(errs, err)
			}
			if t.Budget != first.Budget {
				errs = append(errs, fmt.Errorf("id_space %s: tables %s and %s share budgets but declare different per-analyst budgets ({epsilon: %g, delta: %g} and {epsilon: %g, delta: %g}): declare one budget for the id space's tables",
					s, first.Name, t.Name, first.Budget.Epsilon, first.Budget.Delta, t.Budget.Epsilon, t.Budget.Delta))
			}
			if (t.TotalBudget == nil) != (first.TotalBudget == nil) || (t.TotalBudget != nil && *t.TotalBudget != *first.TotalBudget) {
				errs = append(errs, fmt.Errorf("id_space %s: tables %s and %s share budgets but declare different total budgets (%s and %s): declare one total_budget for the id space's tables",
					s, first.Name, t.Name, fmtTotal(first.TotalBudget), fmtTotal(t.TotalBudget)))
			}
		}
		for _, t := range c.Tables {
			if t.Name == s && t.IDSpace != s {
				var in []string
				for _, u := range ts {
					in = append(in, u.Name)
				}
				errs = append(errs, fmt.Errorf("id_space %s (tables %s) has the name of table %s, which is not in it: their budgets would be one; name the id space differently", s, strings.Join(in, ", "), t.Name))
			}
		}
	}
	return errs
}
