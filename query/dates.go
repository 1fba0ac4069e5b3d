package query

import (
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// renderTemporalKeys spells the released keys of date and timestamp
// columns, and of their truncations, as dates and timestamps.
func renderTemporalKeys(p *dpplan.Plan, res *Result) {
	q := p.Query
	for i, o := range q.Outputs {
		if !o.IsKey() {
			continue
		}
		var t schema.Type
		if b := q.Buckets[o.Key]; b != nil {
			if b.Kind == ir.DateBucket && b.Trunc {
				t = b.Type
			}
		} else if c := p.Table.Column(o.Key); c != nil {
			t = c.Type
		}
		if !t.Temporal() {
			continue
		}
		for _, row := range res.Rows {
			if v, ok := row[i].(int64); ok {
				row[i] = schema.FormatValue(t, v)
			}
		}
	}
}

// renderTemporalAggregates spells the released MIN, MAX and quantiles of
// dates and timestamps (days or microseconds since 1970-01-01) as dates
// and timestamps, once HAVING and ORDER BY have compared them as numbers.
func renderTemporalAggregates(p *dpplan.Plan, res *Result) {
	q := p.Query
	for i, o := range q.Outputs {
		if t := ir.AggTemporal(o.Agg, q.Derived, p.Table); t != "" && o.Post == nil {
			for _, row := range res.Rows {
				if v, ok := row[i].(float64); ok {
					row[i] = ir.TemporalValue(t, v)
				}
			}
		}
	}
}
