package query

import (
	"context"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/query/parse"
	"github.com/dpstat/dpstat/query/sqlgen"
)

// Prepared is a checked query ready to run: its plan, its noise and its
// engine SQL. Nothing has run and nothing has been charged.
type Prepared struct {
	Plan  *dpplan.Plan
	Noise *dpplan.Noise
	// SQL is the statement of the plan's first form (see Form); FormSQL
	// spells the later ones, which run only when the data needs them.
	SQL  string
	Opts Options
	// HistogramSQL holds one engine statement per Plan.Histograms entry,
	// run after SQL.
	HistogramSQL []string
	// ExplainOnly is true when the statement was EXPLAIN <query>: Run
	// returns the plan's description and neither reads data nor charges.
	ExplainOnly bool
	// EngineNotes says how the engine reads the table (engine.Describer),
	// for EXPLAIN.
	EngineNotes []string
	// Accuracy is set when the query asked for an accuracy: how its ε
	// (Opts.Epsilon) was chosen.
	Accuracy *AccuracyPlan
	// Dropped and DroppedSQL are the estimate of the rows contribution
	// bounding drops and its statement, when Opts.Dropped asked for it
	// and the plan bounds contributions; the estimate's ε is part of
	// Noise.Cost.
	Dropped    *dpplan.Dropped
	DroppedSQL string

	acc *accuracySearch
	// decl is the declaration of the table the query reads (the private
	// table of a join, the table under a pre-aggregation): its budgets,
	// source and reuse setting, which the stages do not read.
	decl *catalog.Table

	dialect engine.Dialect
	// ranges are the ranges of the privacy unit SQL runs in, one
	// statement each (sqlgen.UnitRanges); nil runs SQL once.
	ranges []sqlgen.UnitRange
}

// RangeSQL is the engine statement of the prepared query in form f for
// the persons whose unit lies in r (one of Ranges).
func (p *Prepared) RangeSQL(f dpplan.Form, r sqlgen.UnitRange) (string, error) {
	return sqlgen.RangeSQL(p.Plan, p.dialect, f, r)
}

// Ranges returns the ranges of the privacy unit that the statement runs
// in, one statement each, on a table declared clustered_by_unit
// (sqlgen.UnitRanges); nil when it runs once.
func (p *Prepared) Ranges() []sqlgen.UnitRange { return p.ranges }

// FormSQL is the engine statement of the prepared query in form f: SQL for
// the first form, generated on demand for the later ones. Empty when SQL is.
func (p *Prepared) FormSQL(f dpplan.Form) (string, error) {
	if p.SQL == "" || f == p.Plan.FirstForm() {
		return p.SQL, nil
	}
	return sqlgen.FormSQL(p.Plan, p.dialect, f)
}

// Prepare parses, checks and plans a query against a catalog for an
// engine dialect, and calibrates its noise.
//
// Joins with public tables need those tables' values, which a Service reads
// when it starts: Prepare refuses them, Service.Prepare plans them.
func Prepare(cat *catalog.Catalog, d engine.Dialect, sql string, opts Options) (*Prepared, error) {
	return prepareWith(context.Background(), cat, d, sql, opts, nil)
}

func prepareWith(ctx context.Context, cat *catalog.Catalog, d engine.Dialect, sql string, opts Options, public map[string]*ir.PublicFacts) (*Prepared, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	sql, explain, err := explainStatement(sql)
	if err != nil {
		return nil, err
	}
	q, err := parse.ParseContext(ctx, sql, cat, public)
	if err != nil {
		return nil, err
	}
	if err := recordable(q); err != nil {
		return nil, err
	}
	epochs, err := epochsOf(q, q.Base)
	if err != nil {
		return nil, err
	}
	table := q.Base
	if q.Relation != nil {
		table = q.Relation
	}
	var accPlan *AccuracyPlan
	var acc *accuracySearch
	if opts.Accuracy != nil {
		if accPlan, acc, err = planAccuracy(ctx, q, table, opts); err != nil {
			return nil, err
		}
		opts.Epsilon, opts.Delta = accPlan.Epsilon, accPlan.Delta
	}
	plan, err := dpplan.NewPlanDelta(q, table, opts.Epsilon, opts.Delta)
	if err != nil {
		return nil, err
	}
	if epochs != nil && opts.Dropped && plan.Bounded {
		// The estimate's statement counts each person's rows over the
		// whole table; on a table with epochs the unit is (person,
		// epoch), and the rows of other epochs are not charged.
		return nil, ir.Refuse("the dropped-rows estimate is not available on table %s, which declares epochs (its unit is a person's rows of one %s): ask without the estimate", q.Table, q.Base.Epoch.Every)
	}
	droppedEps, err := droppedEpsilon(q, plan, opts)
	if err != nil {
		return nil, err
	}
	if droppedEps > 0 {
		// The estimate's share comes out of the query's ε.
		if plan, err = dpplan.NewPlanDelta(q, table, opts.Epsilon-droppedEps, opts.Delta); err != nil {
			return nil, err
		}
	}
	if epochs != nil {
		base := q.Base
		plan.Epochs, plan.EpochColumn, plan.EpochEvery = epochs, base.Epoch.Column, base.Epoch.Every
		plan.DeclaredEpochs, _ = base.Epochs()
	}
	if err := ctx.Err(); err != nil {
		return nil, parse.TimeRefusal(err)
	}
	if decl := cat.Table(q.Table); decl != nil {
		measureRest(plan, decl)
	}
	nz, err := plan.NewNoise(opts.Source)
	if err != nil {
		return nil, err
	}
	nz = plan.ChooseNoise(nz, opts.Source, opts.Delta, opts.Confidence)
	text := ""
	if !plan.OnlyHistograms() && !plan.PublicKeysOnly() {
		// Quantiles alone need only their histograms; public keys alone
		// need nothing.
		if text, err = sqlgen.SQL(plan, d); err != nil {
			return nil, err
		}
	}
	prep := &Prepared{Plan: plan, Noise: nz, SQL: text, Opts: opts, ExplainOnly: explain, dialect: d, Accuracy: accPlan, acc: acc, decl: cat.Table(q.Table)}
	if droppedEps > 0 {
		if err := prep.planDropped(droppedEps); err != nil {
			return nil, err
		}
	}
	if text != "" {
		prep.ranges = sqlgen.UnitRanges(plan, d)
	}
	for h := range plan.Histograms {
		if err := ctx.Err(); err != nil {
			return nil, parse.TimeRefusal(err)
		}
		hs, err := sqlgen.HistogramSQL(plan, d, h)
		if err != nil {
			return nil, err
		}
		prep.HistogramSQL = append(prep.HistogramSQL, hs)
	}
	if err := statementsFit(prep); err != nil {
		return nil, err
	}
	return prep, nil
}

// statementsFit refuses, before the charge, a query any of whose
// statements (every form the data may need, and the histograms) is longer
// than an engine takes (engine.MaxStatementBytes): its length is a
// function of the query and the catalog alone, and a statement the engine
// refuses for its length would fail after the charge.
func statementsFit(p *Prepared) error {
	check := func(s string) error {
		if len(s) > engine.MaxStatementBytes {
			return ir.Refuse("the statement dpstat would run for this query is %d bytes, over the %d an engine takes: simplify nested expressions (a LEAST, GREATEST or CASE over a computed value repeats it in the statement)", len(s), engine.MaxStatementBytes)
		}
		return nil
	}
	if err := check(p.SQL); err != nil {
		return err
	}
	if p.SQL != "" {
		for f := p.Plan.FirstForm() + 1; f <= dpplan.IntegerForm; f++ {
			s, err := p.FormSQL(f)
			if err != nil {
				return err
			}
			if err := check(s); err != nil {
				return err
			}
		}
	}
	// The ranged statements differ only in their range's bounds: the
	// ranges nearest each end hold the longest numbers.
	if n := len(p.ranges); n > 0 {
		for _, r := range []sqlgen.UnitRange{p.ranges[min(1, n-1)], p.ranges[max(n-2, 0)]} {
			for f := p.Plan.FirstForm(); f <= dpplan.IntegerForm; f++ {
				s, err := p.RangeSQL(f, r)
				if err != nil {
					return err
				}
				if err := check(s); err != nil {
					return err
				}
			}
		}
	}
	for _, hs := range p.HistogramSQL {
		if err := check(hs); err != nil {
			return err
		}
	}
	return check(p.DroppedSQL)
}
