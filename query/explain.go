package query

import (
	"fmt"
	"math"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
)

// Explanation describes what a query would cost and release, without
// reading any data or charging anything: the preview that `EXPLAIN <query>`
// and `dpstat query --dry-run` print.
type Explanation struct {
	// Query is the normalized query text.
	Query string `json:"query"`
	// Table is the table read and the budget charged.
	Table string `json:"table"`
	// Cost is exactly what running the query charges.
	Cost accounting.Cost `json:"cost"`
	// Confidence is the level of the intervals.
	Confidence float64 `json:"confidence"`
	// Split says how ε is divided among the aggregates.
	Split []dpplan.Share `json:"split"`
	// Columns describes every output column.
	Columns []ColumnExplanation `json:"columns"`
	// Keys says how the released groups are chosen.
	Keys string `json:"keys"`
	// Groups is the number of groups released before HAVING and LIMIT, or
	// -1 when it depends on the data (key selection).
	Groups int `json:"groups"`
	// SQL is the engine statement that running the query executes (its
	// first form; see Form).
	SQL string `json:"sql"`
	// Form names SQL's form ("fast" or "clean", see query.Form) when the
	// query sums float values or squares; the engine may run a later form
	// when the data needs it.
	Form string `json:"form,omitempty"`
	// HistogramSQL are the further statements computing quantiles'
	// histograms.
	HistogramSQL []string `json:"histogram_sql,omitempty"`
	// DroppedSQL is the statement of the dropped-rows estimate, when asked.
	DroppedSQL string `json:"dropped_sql,omitempty"`
	// Notes state how the answer is computed.
	Notes []string `json:"notes,omitempty"`
	// Accuracy is set when the query asked for an accuracy instead of an
	// ε: the targets, the half-widths planned and the ε chosen (Cost).
	Accuracy *AccuracyPlan `json:"accuracy,omitempty"`
	// Epochs, on a table that declares epochs, are the epochs the query
	// reads and is charged in (e.g. "2024-01..2024-03"), and EpochCount
	// how many; empty otherwise.
	Epochs     string `json:"epochs,omitempty"`
	EpochCount int64  `json:"epoch_count,omitempty"`
}

// ColumnExplanation describes one output column of a query.
type ColumnExplanation struct {
	Name string `json:"name"`
	// Kind is "key" for a group key, "computed" for an expression over
	// released values (free), and "aggregate" otherwise; an aggregate only
	// a computed column reads is named "#" and its SQL.
	Kind string `json:"kind"`
	// Aggregate is the aggregate's SQL, e.g. "AVG(age)"; empty for keys.
	Aggregate string `json:"aggregate,omitempty"`
	// Epsilon is the aggregate's share of ε.
	Epsilon float64 `json:"epsilon,omitempty"`
	// Mechanisms are the noisy releases the aggregate is computed from.
	Mechanisms []dpplan.MechanismInfo `json:"mechanisms,omitempty"`
	// HalfWidth is the half-width of the (1 − α) interval of the released
	// value when it does not depend on the data; for AVG it is the
	// half-width for a group of Reference rows (see HalfWidthNote).
	HalfWidth float64 `json:"half_width,omitempty"`
	// HalfWidthNote explains a half-width that depends on the data.
	HalfWidthNote string `json:"half_width_note,omitempty"`
}

// LooksLikeExplain reports whether sql starts with EXPLAIN, the cheap
// test before it is parsed as one: a front end that needs no budget for a
// preview can tell before the query is planned.
func LooksLikeExplain(sql string) bool {
	trimmed := strings.TrimSpace(sql)
	return len(trimmed) >= 7 && strings.EqualFold(trimmed[:7], "explain")
}

// explainStatement recognizes EXPLAIN <query>: it returns the inner query's
// text and true, or the text unchanged and false. EXPLAIN ANALYZE (which
// would read data) and other options are refused.
func explainStatement(sql string) (string, bool, error) {
	if !LooksLikeExplain(sql) {
		return sql, false, nil
	}
	tree, err := pg.Parse(sql)
	if err != nil {
		return "", false, ir.RefuseAs(ir.KindSyntax, "syntax error: %v", err)
	}
	if len(tree.Stmts) != 1 {
		return "", false, ir.Refuse("one statement at a time, got %d", len(tree.Stmts))
	}
	ex := tree.Stmts[0].Stmt.GetExplainStmt()
	if ex == nil {
		return sql, false, nil
	}
	for _, o := range ex.Options {
		name := "an option"
		if d := o.GetDefElem(); d != nil {
			name = strings.ToUpper(d.Defname)
		}
		return "", false, ir.Refuse("EXPLAIN %s is not supported: EXPLAIN never reads data; write EXPLAIN followed by the query", name)
	}
	inner, err := pg.Deparse(&pg.ParseResult{Version: tree.Version, Stmts: []*pg.RawStmt{{Stmt: ex.Query}}})
	if err != nil {
		return "", false, ir.Refuse("cannot read the query after EXPLAIN: %v", err)
	}
	return inner, true, nil
}

// formName names the form of p.SQL when the plan sums floats or squares
// on a grid (the forms differ in how), else "".
func formName(p *Prepared) string {
	if p.SQL == "" {
		return ""
	}
	for i := range p.Plan.Statistics {
		if p.Plan.GridSummed(i) {
			return p.Plan.FirstForm().String()
		}
	}
	return ""
}

// Explain describes the prepared query: cost, split, mechanisms, interval
// half-widths, how keys are chosen and the engine SQL. It reads no data.
func (p *Prepared) Explain() *Explanation {
	plan, q := p.Plan, p.Plan.Query
	e := &Explanation{
		Query:        q.Text,
		Table:        plan.Table.Name,
		Cost:         p.Noise.Cost,
		Confidence:   p.Opts.Confidence,
		Split:        p.Noise.Split(),
		SQL:          p.SQL,
		HistogramSQL: p.HistogramSQL,
		DroppedSQL:   p.DroppedSQL,
		Form:         formName(p),
		Notes:        append(append(plan.Notes(), nonEmpty(p.Noise.Choice)...), p.EngineNotes...),
		Groups:       len(plan.Released()),
		Accuracy:     p.Accuracy,
	}
	if plan.Epochs != nil {
		e.Epochs, e.EpochCount = plan.Epochs.String(), plan.Epochs.Len()
		e.Notes = append(e.Notes, epochWords(plan.Epochs, plan.DeclaredEpochs, plan.EpochColumn, p.Noise.Cost.Epsilon, p.decl)+
			fmt.Sprintf("; the statement reads only rows of these %ss (%s between their first and last day)", plan.Epochs.Every, plan.EpochColumn))
	}
	if d := p.Dropped; d != nil {
		e.Split = append(e.Split, d.Share())
		e.Notes = append(e.Notes, fmt.Sprintf("the share of rows contribution bounding drops is estimated at ε=%s of the query's: noisy counts of each person's rows kept (at most %d) and dropped (counted up to %d per person), from a statement of its own", accounting.Note(d.Epsilon), d.KeptMax, d.Cap))
	} else if p.Opts.Dropped && !plan.Bounded {
		e.Notes = append(e.Notes, NoBoundingNote)
	}
	if n := len(p.ranges); n > 0 {
		e.Notes = append(e.Notes, fmt.Sprintf("the table is declared clustered_by_unit: the statement runs once per range of %s, %d ranges cut from its declared bounds (the SQL shown is the whole table's; each range adds its bounds on %s to the row filter)", plan.Table.PrivacyUnit, n, plan.Table.PrivacyUnit))
	}
	e.Keys = plan.DescribeKeys()
	if plan.Selection != nil {
		e.Keys = p.Noise.DescribeSelection()
		e.Groups = -1
	}
	if plan.TopK != nil {
		e.Keys = p.Noise.DescribeTopK(plan.Candidates())
		if plan.Selection != nil {
			e.Keys += "; " + p.Noise.DescribeSelection()
		}
		e.Groups = int(plan.TopK.K)
	}
	aggOf := map[int]int{}
	for j, a := range plan.Aggregates {
		aggOf[a.Output] = j
	}
	for i, o := range q.Outputs {
		if o.IsKey() {
			e.Columns = append(e.Columns, ColumnExplanation{Name: o.Name, Kind: "key"})
			continue
		}
		if o.Post != nil {
			e.Columns = append(e.Columns, ColumnExplanation{Name: o.Name, Kind: "computed", Aggregate: ir.PostString(o.Post, q),
				HalfWidth: math.NaN(), HalfWidthNote: dpplan.DescribePost(o, q, p.Opts.Confidence)})
			continue
		}
		j := aggOf[i]
		a := plan.Aggregates[j]
		c := ColumnExplanation{Name: o.Name, Kind: "aggregate", Aggregate: a.Aggregate.String(),
			Epsilon: a.Epsilon, Mechanisms: e.Split[j].Mechanisms}
		c.HalfWidth, c.HalfWidthNote = p.Noise.HalfWidth(j, p.Opts.Confidence)
		e.Columns = append(e.Columns, c)
	}
	return e
}

// Lines renders the explanation as text, one line per item, the way
// EXPLAIN shows it.
func (e *Explanation) Lines() []string {
	var l []string
	l = append(l, "query: "+e.Query)
	if e.Epochs != "" {
		l = append(l, fmt.Sprintf("cost: ε=%s δ=%s, charged in each of the %d epoch(s) it reads (%s) to the budgets on table %s (nothing is charged by EXPLAIN)", accounting.Num(e.Cost.Epsilon), accounting.Num(e.Cost.Delta), e.EpochCount, e.Epochs, e.Table))
	} else {
		l = append(l, fmt.Sprintf("cost: ε=%s δ=%s, charged to the budget on table %s (nothing is charged by EXPLAIN)", accounting.Num(e.Cost.Epsilon), accounting.Num(e.Cost.Delta), e.Table))
	}
	if e.Accuracy != nil {
		l = append(l, e.Accuracy.Lines()...)
	}
	l = append(l, "groups: "+e.Keys)
	for _, c := range e.Columns {
		if c.Kind == "key" {
			l = append(l, fmt.Sprintf("column %s: group key", c.Name))
			continue
		}
		if c.Kind == "computed" {
			l = append(l, "column "+c.HalfWidthNote)
			continue
		}
		var mech []string
		for _, m := range c.Mechanisms {
			mech = append(mech, fmt.Sprintf("%s(ε=%s, sensitivity=%s, scale=%s)", m.Name, accounting.Note(m.Epsilon), accounting.Note(m.Sensitivity), accounting.Note(m.Scale)))
		}
		line := fmt.Sprintf("column %s: %s, ε=%s: %s", c.Name, c.Aggregate, accounting.Note(c.Epsilon), strings.Join(mech, " + "))
		if c.HalfWidthNote != "" {
			line += fmt.Sprintf("; %s%% interval %s", accounting.Num(e.Confidence*100), c.HalfWidthNote)
		} else if !math.IsNaN(c.HalfWidth) {
			line += fmt.Sprintf("; %s%% interval ±%s", accounting.Num(e.Confidence*100), accounting.Note(c.HalfWidth))
		}
		l = append(l, line)
	}
	for _, n := range e.Notes {
		l = append(l, "note: "+n)
	}
	if e.SQL != "" {
		switch e.Form {
		case "fast":
			l = append(l, "sums: exact double sums on the fixed-point grid, over the table with NaN kept when the engine finds no NaN in it (else over the table where NaN is NULL); 128-bit integer sums when a group is too large for exact double sums")
		case "clean":
			l = append(l, "sums: exact double sums on the fixed-point grid; 128-bit integer sums when a group is too large for exact double sums")
		}
		l = append(l, "engine SQL:")
		for _, s := range strings.Split(e.SQL, "\n") {
			l = append(l, "  "+s)
		}
	}
	for i, hs := range e.HistogramSQL {
		l = append(l, fmt.Sprintf("engine SQL, histogram %d:", i+1))
		for _, s := range strings.Split(hs, "\n") {
			l = append(l, "  "+s)
		}
	}
	if e.DroppedSQL != "" {
		l = append(l, "engine SQL, rows dropped by bounding:")
		for _, s := range strings.Split(e.DroppedSQL, "\n") {
			l = append(l, "  "+s)
		}
	}
	return l
}

// explainResult is the Result of running an EXPLAIN statement: one text
// column of plan lines, no cost.
func explainResult(p *Prepared) *Result {
	e := p.Explain()
	res := &Result{Columns: []string{"QUERY PLAN"}, Confidence: p.Opts.Confidence, Explanation: e, Split: e.Split}
	for _, line := range e.Lines() {
		res.Rows = append(res.Rows, []any{line})
		res.CI = append(res.CI, []*dpplan.Interval{nil})
	}
	res.Notes = []string{"EXPLAIN: nothing was read or charged"}
	return res
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
