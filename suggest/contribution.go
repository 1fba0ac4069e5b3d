package suggest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
)

// checkGroupBy checks the groupings of o: each column exists, is not the
// privacy unit, and appears once in its grouping; groupings need a
// privacy unit (without one, each row is a person and the catalog has no
// contribution bounds).
func checkGroupBy(o Options) error {
	if len(o.GroupBy) == 0 {
		return nil
	}
	if o.PrivacyUnit == "" {
		return fmt.Errorf("--group-by %s: contribution bounds need --privacy-unit (without one, each row is one person and the catalog has no max_groups_per_unit or max_rows_per_group)", groupingsString(o.GroupBy))
	}
	var names []string
	for _, c := range o.Columns {
		if c.Name != o.PrivacyUnit {
			names = append(names, c.Name)
		}
	}
	for _, g := range o.GroupBy {
		if len(g) == 0 {
			return fmt.Errorf("--group-by %s: an empty grouping; want columns separated by commas (a grouping of several columns joined by +), from %s", groupingsString(o.GroupBy), strings.Join(names, ", "))
		}
		for i, c := range g {
			switch {
			case c == o.PrivacyUnit:
				return fmt.Errorf("--group-by: %q is the privacy unit, which bounding groups within; want columns of %s", c, strings.Join(names, ", "))
			case !slices.Contains(names, c):
				return fmt.Errorf("--group-by: no column %q; want one of %s", c, strings.Join(names, ", "))
			case slices.Contains(g[:i], c):
				return fmt.Errorf("--group-by: %q appears twice in the grouping %s", c, strings.Join(g, "+"))
			}
		}
	}
	return nil
}

// ParseGroupBy reads the --group-by flag: groupings separated by commas,
// the columns of one grouping joined by + (diagnosis,diagnosis+visit_date).
func ParseGroupBy(s string) [][]string {
	var out [][]string
	if strings.TrimSpace(s) == "" {
		return nil
	}
	for _, g := range strings.Split(s, ",") {
		var cols []string
		for _, c := range strings.Split(g, "+") {
			if c = strings.TrimSpace(c); c != "" {
				cols = append(cols, c)
			}
		}
		out = append(out, cols)
	}
	return out
}

func groupingsString(gs [][]string) string {
	var parts []string
	for _, g := range gs {
		parts = append(parts, strings.Join(g, "+"))
	}
	return strings.Join(parts, ",")
}

// contribution estimates max_groups_per_unit and max_rows_per_group: for
// each grouping, the ContributionQ quantiles, over people, of the number of
// groups a person has rows in and of the most rows they have in one group
// (one number per person: sensitivity 1); each bound is the largest over
// the groupings, and the note says which grouping it came from. Without
// --group-by the grouping is groupCol, the first text column with a value
// list, and without one a person's rows are one group.
func (p *Plan) contribution(ctx context.Context, eng Engine, s *Suggestion, groupCol, unitFilter string) error {
	d := eng.Dialect()
	u := d.QuoteIdent(p.Opts.PrivacyUnit)
	grid := contributionGrid()
	groupings := p.Opts.GroupBy
	chosen := groupings != nil
	if !chosen && groupCol != "" {
		groupings = [][]string{{groupCol}}
	}
	type bounds struct {
		name         string
		groups, rows float64
	}
	var found []bounds
	for _, g := range groupings {
		var cols []string
		for _, c := range g {
			cols = append(cols, d.QuoteIdent(c))
		}
		base := fmt.Sprintf("SELECT %s AS u, count(*) AS n FROM %s WHERE %s TRUE GROUP BY %s, %s", u, view, unitFilter, u, strings.Join(cols, ", "))
		b := bounds{name: strings.Join(g, "+")}
		var err error
		if b.groups, err = p.quantile(ctx, eng, fmt.Sprintf("SELECT count(*) AS x FROM (%s) GROUP BY u", base), grid, ContributionQ, p.Share/2); err != nil {
			return fmt.Errorf("contribution bounds of %s: %w", b.name, err)
		}
		if b.rows, err = p.quantile(ctx, eng, fmt.Sprintf("SELECT max(n) AS x FROM (%s) GROUP BY u", base), grid, ContributionQ, p.Share/2); err != nil {
			return fmt.Errorf("contribution bounds of %s: %w", b.name, err)
		}
		found = append(found, b)
	}
	var over string
	switch {
	case len(found) == 0:
		// One group: a person's rows.
		base := fmt.Sprintf("SELECT %s AS u, count(*) AS n FROM %s WHERE %s TRUE GROUP BY %s", u, view, unitFilter, u)
		rows, err := p.quantile(ctx, eng, fmt.Sprintf("SELECT max(n) AS x FROM (%s) GROUP BY u", base), grid, ContributionQ, p.Share/2)
		if err != nil {
			return fmt.Errorf("contribution bounds: %w", err)
		}
		s.MaxGroups, s.MaxRows = 1, int64(rows)
		over = "no column got a value list, so one group: name the columns analysts group by with --group-by, or set max_groups_per_unit to the groups a person appears in"
	case !chosen:
		s.MaxGroups, s.MaxRows = int64(found[0].groups), int64(found[0].rows)
		over = "groups: the values of " + groupCol + ", the first text column with a value list; name the columns analysts group by with --group-by"
	default:
		gi, ri := 0, 0
		for i, b := range found {
			if b.groups > found[gi].groups {
				gi = i
			}
			if b.rows > found[ri].rows {
				ri = i
			}
		}
		s.MaxGroups, s.MaxRows = int64(found[gi].groups), int64(found[ri].rows)
		over = fmt.Sprintf("groups of --group-by %s: max_groups_per_unit from %s, max_rows_per_group from %s", groupingsString(groupings), found[gi].name, found[ri].name)
		if len(found) > 1 {
			var each []string
			for _, b := range found {
				each = append(each, fmt.Sprintf("%s %d and %d", b.name, int64(b.groups), int64(b.rows)))
			}
			over += " (each grouping's groups and rows: " + strings.Join(each, "; ") + ")"
		}
	}
	s.BoundsFrom = over
	l1 := s.MaxGroups * s.MaxRows
	s.UnitNote = fmt.Sprintf(`DP 90th percentiles over people of the groups they have rows in and of their most rows in one group (%s), exponential mechanism over %d candidates, ε=%s each.
    # Trade-off: about 90%% of people keep all their rows; a COUNT's L1 sensitivity is
    # max_groups_per_unit × max_rows_per_group = %d, so at ε = 1 its noise has a standard
    # deviation of about %.3g. Lower them for less noise (more rows dropped), raise them to drop fewer rows.`,
		over, len(grid), fmtG(p.Share/2), l1, math.Sqrt2*float64(l1))
	return nil
}
