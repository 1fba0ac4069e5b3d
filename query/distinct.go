package query

// COUNT(DISTINCT col) of a column other than the privacy unit: the number
// of distinct non-NULL values of col among a group's bounded rows. A person
// keeps at most RowsPerGroup rows in each of at most Groups groups, so
// adding or removing one changes a group's distinct count by at most
// RowsPerGroup (the values only that person had there), and all of them by
// at most Groups·RowsPerGroup: the sensitivity of COUNT(*), which
// Contribution.L1 derives. Without a privacy unit each row is a person.
//
// A distinct count is not a sum of per-person parts, so the main statement
// cannot compute it; it has its own statement (HistogramSQL with a
// Distinct histogram), which bounds rows as the main statement does, with
// its own random choices, and counts the distinct values of the kept rows.

// planDistinctValues plans COUNT(DISTINCT col) of a column other than the
// privacy unit: one noisy count of its own statistic.
func (p *Plan) planDistinctValues(ap *AggregatePlan, share float64) {
	st := p.statistic(Summand{Kind: DistinctValues, Column: ap.Aggregate.Column})
	p.Histograms = append(p.Histograms, Histogram{Column: ap.Aggregate.Column, Distinct: true, Stat: st, Step: 1})
	ap.Releases = []int{p.release(NoisyCount, st, -1, 1, share)}
}
