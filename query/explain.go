package query

import (
	"fmt"
	"math"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/accounting"
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
	Split []Share `json:"split"`
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
	// Notes state how the answer is computed.
	Notes []string `json:"notes,omitempty"`
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
	Mechanisms []MechanismInfo `json:"mechanisms,omitempty"`
	// HalfWidth is the half-width of the (1 − α) interval of the released
	// value when it does not depend on the data; for AVG it is the
	// half-width for a group of Reference rows (see HalfWidthNote).
	HalfWidth float64 `json:"half_width,omitempty"`
	// HalfWidthNote explains a half-width that depends on the data.
	HalfWidthNote string `json:"half_width_note,omitempty"`
}

// explainStatement recognizes EXPLAIN <query>: it returns the inner query's
// text and true, or the text unchanged and false. EXPLAIN ANALYZE (which
// would read data) and other options are refused.
func explainStatement(sql string) (string, bool, error) {
	trimmed := strings.TrimSpace(sql)
	if len(trimmed) < 7 || !strings.EqualFold(trimmed[:7], "explain") {
		return sql, false, nil
	}
	tree, err := pg.Parse(sql)
	if err != nil {
		return "", false, refuse("syntax error: %v", err)
	}
	if len(tree.Stmts) != 1 {
		return "", false, refuse("one statement at a time, got %d", len(tree.Stmts))
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
		return "", false, refuse("EXPLAIN %s is not supported: EXPLAIN never reads data; write EXPLAIN followed by the query", name)
	}
	inner, err := pg.Deparse(&pg.ParseResult{Version: tree.Version, Stmts: []*pg.RawStmt{{Stmt: ex.Query}}})
	if err != nil {
		return "", false, refuse("cannot read the query after EXPLAIN: %v", err)
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
		if p.Plan.gridSummed(i) {
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
		Split:        p.Noise.split(),
		SQL:          p.SQL,
		HistogramSQL: p.HistogramSQL,
		Form:         formName(p),
		Notes:        append(append(plan.notes(), nonEmpty(p.Noise.Choice)...), p.EngineNotes...),
		Groups:       len(plan.Keys),
	}
	e.Keys = plan.describeKeys()
	if plan.Selection != nil {
		e.Keys = p.Noise.describeSelection()
		e.Groups = -1
	}
	if plan.TopK != nil {
		e.Keys = p.Noise.describeTopK(plan.candidates())
		if plan.Selection != nil {
			e.Keys += "; " + p.Noise.describeSelection()
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
			e.Columns = append(e.Columns, ColumnExplanation{Name: o.Name, Kind: "computed", Aggregate: postString(o.Post, q),
				HalfWidth: math.NaN(), HalfWidthNote: describePost(o, q, p.Opts.Confidence)})
			continue
		}
		j := aggOf[i]
		a := plan.Aggregates[j]
		c := ColumnExplanation{Name: o.Name, Kind: "aggregate", Aggregate: a.Aggregate.String(),
			Epsilon: a.Epsilon, Mechanisms: e.Split[j].Mechanisms}
		c.HalfWidth, c.HalfWidthNote = p.Noise.halfWidth(j, p.Opts.Confidence)
		e.Columns = append(e.Columns, c)
	}
	return e
}

// split lists each aggregate's share and mechanisms.
func (n *Noise) split() []Share {
	var out []Share
	mi := 0
	for _, a := range n.plan.Aggregates {
		sh := Share{Column: n.plan.Query.Outputs[a.Output].Name, Epsilon: a.Epsilon}
		for range a.Releases {
			sh.Mechanisms = append(sh.Mechanisms, n.Mechanisms[mi])
			mi++
		}
		out = append(out, sh)
	}
	if n.topk != nil {
		t := n.plan.TopK
		out = append(out, Share{Column: "(most common values)", Epsilon: t.Epsilon,
			Mechanisms: []MechanismInfo{{"permute-and-flip", t.Round, t.Sensitivity, 2 * t.Sensitivity / t.Round}}})
	}
	if n.sel != nil {
		ks := n.plan.Selection
		if ks.Release >= 0 {
			// The count's noisy value selects: its ε is the count's share.
			out = append(out, Share{Column: "(key selection)", Delta: ks.Delta,
				Mechanisms: []MechanismInfo{{"threshold on the query's count", 0, n.plan.Releases[ks.Release].Sensitivity, n.sel.m.Scale()}}})
		} else {
			out = append(out, Share{Column: "(key selection)", Epsilon: ks.Epsilon, Delta: ks.Delta,
				Mechanisms: []MechanismInfo{{"geometric threshold", ks.Epsilon, float64(ks.Sensitivity), n.sel.m.Scale()}}})
		}
	}
	return out
}

// halfWidth returns the data-independent interval half-width of aggregate
// j, or a note on how it depends on the data.
func (n *Noise) halfWidth(j int, confidence float64) (float64, string) {
	a := n.plan.Aggregates[j]
	switch a.Aggregate.Func {
	case CountStar, Count, CountDistinct:
		return n.counts[a.Releases[0]].Interval(confidence), ""
	case Sum:
		return n.sums[a.Releases[0]].Interval(confidence), ""
	case Avg:
		selected := n.plan.Selection != nil && n.plan.Selection.Release == a.Releases[1]
		if b, g, bn, ok := n.exactAverageNoise(a.Releases[0], a.Releases[1]); ok && !selected {
			r := (a.Upper - a.Lower) / 2
			h0 := averageQuantile(0, b, bn, 1-confidence) + 2*g
			h1 := averageQuantile(r, b, bn, 1-confidence) + 2*g
			return h0, fmt.Sprintf("for a group of n rows about ±h/n, h from %s (a mean at the midpoint) to %s (a mean at an end of the range): the test-inversion interval of the noisy sum over the noisy count, never wider than [%g, %g]; half_width is h at the midpoint",
				fmtG(h0), fmtG(h1), a.Lower, a.Upper)
		}
		tail := 1 - (1-confidence)/2
		hs := n.sums[a.Releases[0]].Interval(tail)
		hc := n.counts[a.Releases[1]].Interval(tail)
		return hs, fmt.Sprintf("for a group of n rows about ±(%s + %s·%s)/n, never wider than [%g, %g]; half_width is the centred sum's",
			fmtG(hs), fmtG((a.Upper-a.Lower)/2), fmtG(hc), a.Lower, a.Upper)
	case VarPop, VarSamp, StddevPop, StddevSamp:
		t3 := 1 - (1-confidence)/3
		hs := n.sums[a.Releases[0]].Interval(t3)
		hq := n.sums[a.Releases[1]].Interval(t3)
		hc := n.counts[a.Releases[2]].Interval(t3)
		return 0, fmt.Sprintf("depends on the group's size n: centred sum ±%s, centred sum of squares ±%s, count ±%s (each at 1 − α/3), combined and clamped to the feasible range",
			fmtG(hs), fmtG(hq), fmtG(hc))
	case Quantile:
		r := n.plan.Releases[a.Releases[0]]
		h := n.plan.Histograms[r.Stat]
		if a.Aggregate.Extreme != 0 {
			rank := n.extremeRank(a, h)
			end, side := "smallest", "bottom"
			if a.Aggregate.Extreme > 0 {
				end, side = "largest", "top"
			}
			return 0, fmt.Sprintf("never the exact value: the exponential mechanism aims at the value of rank %s from the %s, so with probability %g the released value lies between the %s value and the value of rank %s from the %s, on a grid of %d candidates in [%s, %s]; the interval shown is the declared range",
				fmtG(rank), side, ExtremeConfidence, end, fmtG(2*rank), side, h.Bins+1, n.plan.gridValue(a.Aggregate, h.Lower), n.plan.gridValue(a.Aggregate, h.Upper))
		}
		t := n.selects[a.Releases[0]].UtilityBound(h.Bins+1, 1-confidence)
		return 0, fmt.Sprintf("the released value's rank is within ±%s of q·n (n values in the group) on a grid of %d candidates in [%s, %s]; the interval shown is the declared range",
			fmtG(t), h.Bins+1, n.plan.gridValue(a.Aggregate, h.Lower), n.plan.gridValue(a.Aggregate, h.Upper))
	}
	return 0, "depends on the data"
}

func fmtG(x float64) string { return fmt.Sprintf("%.4g", x) }

// describeKeys says how the answer's groups are chosen.
func (p *Plan) describeKeys() string {
	if len(p.Query.GroupBy) == 0 {
		return "no GROUP BY: one group, the whole table"
	}
	source := "declared in the catalog"
	for _, b := range p.Query.Buckets {
		if b.Kind == DateBucket || b.Kind == TextBucket {
			source = "computed from the query and the catalog's bounds and value lists"
		}
	}
	return fmt.Sprintf("public value lists of %s (%s): %d group(s), all released, including empty ones; no data decides which",
		p.Query.keyNames(), source, len(p.Keys))
}

// Lines renders the explanation as text, one line per item, the way
// EXPLAIN shows it.
func (e *Explanation) Lines() []string {
	var l []string
	l = append(l, "query: "+e.Query)
	l = append(l, fmt.Sprintf("cost: ε=%g δ=%g, charged to the budget on table %s (nothing is charged by EXPLAIN)", e.Cost.Epsilon, e.Cost.Delta, e.Table))
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
			mech = append(mech, fmt.Sprintf("%s(ε=%g, sensitivity=%g, scale=%.4g)", m.Name, m.Epsilon, m.Sensitivity, m.Scale))
		}
		line := fmt.Sprintf("column %s: %s, ε=%g: %s", c.Name, c.Aggregate, c.Epsilon, strings.Join(mech, " + "))
		if c.HalfWidthNote != "" {
			line += fmt.Sprintf("; %g%% interval %s", e.Confidence*100, c.HalfWidthNote)
		} else if !math.IsNaN(c.HalfWidth) {
			line += fmt.Sprintf("; %g%% interval ±%.4g", e.Confidence*100, c.HalfWidth)
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
	return l
}

// explainResult is the Result of running an EXPLAIN statement: one text
// column of plan lines, no cost.
func explainResult(p *Prepared) *Result {
	e := p.Explain()
	res := &Result{Columns: []string{"QUERY PLAN"}, Confidence: p.Opts.Confidence, Explanation: e, Split: e.Split}
	for _, line := range e.Lines() {
		res.Rows = append(res.Rows, []any{line})
		res.CI = append(res.CI, []*Interval{nil})
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
