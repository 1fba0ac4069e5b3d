package query

import (
	"context"
	"fmt"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/query/sqlgen"
)

// NoBoundingNote is the note of a query that asked for the dropped-rows
// estimate over a table without a privacy unit: nothing to estimate, free.
const NoBoundingNote = "contribution bounding dropped no row: the table has no privacy unit, so each row is one person and is kept whole (the dropped-rows estimate cost nothing)"

// droppedEpsilon is the ε the dropped-rows estimate takes from the query's,
// or 0 when it was not asked or costs nothing (no bounding, or no data
// read). A query whose rows are not one person's rows before bounding (a
// per-person pre-aggregation, a join of private tables) is refused with it,
// before the charge.
func droppedEpsilon(q *ir.Query, plan *dpplan.Plan, opts Options) (float64, error) {
	if !opts.Dropped || !plan.Bounded || plan.PublicKeysOnly() {
		return 0, nil
	}
	if q.Pre != nil {
		return 0, ir.Refuse("the dropped-rows estimate counts the rows a person has in the table, and this query reads a per-person pre-aggregation: ask it of the query without the subquery, or ask this one without the estimate")
	}
	for _, j := range q.Joins {
		if j.Private {
			return 0, ir.Refuse("the dropped-rows estimate counts the rows a person has in one table, and this query joins the private table %s: ask it of the tables one at a time, or ask this one without the estimate", j.Table)
		}
	}
	return opts.Epsilon * dpplan.DroppedShare, nil
}

// planDropped calibrates the dropped-rows estimate at ε = eps, adds its cost
// to the query's and spells its statement.
func (p *Prepared) planDropped(eps float64) error {
	d, err := p.Plan.NewDropped(eps, p.Opts.Source)
	if err != nil {
		// Before the charge, from the query's parameters alone.
		return ir.Refuse("the dropped-rows estimate at ε=%s (%g%% of the query's) cannot be planned: %v; ask with a larger ε, or without the estimate", accounting.Note(eps), 100*dpplan.DroppedShare, err)
	}
	cost, err := d.Cost()
	if err != nil {
		return err
	}
	if p.Noise.Cost, err = accounting.Sequential(p.Noise.Cost, cost); err != nil {
		return err
	}
	if p.DroppedSQL, err = sqlgen.DroppedSQL(p.Plan, d, p.dialect); err != nil {
		return err
	}
	p.Dropped = d
	return nil
}

// releaseDropped runs the dropped-rows statement of a charged query and
// adds the noisy estimate to res: its share of the split, a note, and
// Result.Dropped. A query that asked for it over a table without bounding
// gets the note alone.
func (s *Service) releaseDropped(ctx context.Context, p *Prepared, res *Result) error {
	if p.Dropped == nil {
		if p.Opts.Dropped && !p.Plan.Bounded {
			res.Notes = append(res.Notes, NoBoundingNote)
		}
		return nil
	}
	rows, err := s.eng.Query(ctx, p.DroppedSQL)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	if len(rows.Rows) != 1 || len(rows.Rows[0]) != 2 {
		return fmt.Errorf("query: the dropped-rows statement returned %d rows, want one of two values", len(rows.Rows))
	}
	kept, err := ir.ToBig(rows.Rows[0][0])
	if err != nil {
		return fmt.Errorf("query: rows kept: %w", err)
	}
	dropped, err := ir.ToBig(rows.Rows[0][1])
	if err != nil {
		return fmt.Errorf("query: rows dropped: %w", err)
	}
	est := p.Dropped.Release(kept, dropped, p.Opts.Confidence)
	res.Dropped = &est
	res.Split = append(res.Split, p.Dropped.Share())
	res.Notes = append(res.Notes, est.Note())
	return nil
}
