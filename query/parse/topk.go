package parse

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/dpstat/dpstat/query/ir"
)

// topKForm recognizes SELECT keys [, COUNT(*)] … GROUP BY keys ORDER BY
// COUNT(*) DESC LIMIT k and returns k, or 0 for any other query.
func (p *parser) topKForm(s *pg.SelectStmt) (int64, error) {
	if len(s.SortClause) != 1 || s.LimitCount == nil || s.LimitOffset != nil || s.HavingClause != nil || len(p.q.GroupBy) == 0 {
		return 0, nil
	}
	counts := 0
	for _, o := range p.q.Outputs {
		if o.Post != nil {
			return 0, nil
		}
		if o.Agg != nil {
			if o.Agg.Func != ir.CountStar {
				return 0, nil
			}
			counts++
		}
	}
	if counts > 1 {
		return 0, nil
	}
	sb := s.SortClause[0].GetSortBy()
	if sb == nil || sb.SortbyDir != pg.SortByDir_SORTBY_DESC {
		return 0, nil
	}
	isCount := false
	if fc := sb.Node.GetFuncCall(); fc != nil && funcName(fc) == "count" && fc.AggFilter == nil && !fc.AggDistinct && fc.Over == nil {
		if fc.AggStar {
			isCount = true
		} else if len(fc.Args) == 1 {
			if c := fc.Args[0].GetAConst(); c != nil && !c.Isnull {
				isCount = true
			}
		}
	} else if counts == 1 {
		if t, err := p.orderTerm(s.SortClause[0]); err == nil {
			o := p.q.Outputs[t.Output]
			isCount = o.Agg != nil && o.Agg.Func == ir.CountStar
		}
	}
	if !isCount {
		return 0, nil
	}
	k, null, err := nonNegativeInt(s.LimitCount, "LIMIT")
	if err != nil || null {
		return 0, err
	}
	if k < 1 {
		return 0, ir.Refuse("LIMIT 0 asks for no most common values; use LIMIT k with k ≥ 1")
	}
	if k > ir.MaxTopK {
		return 0, ir.Refuse("LIMIT %d: the most common values are chosen one round at a time, each with a share of ε; want at most %d", k, ir.MaxTopK)
	}
	return k, nil
}
