package query

import pg "github.com/pganalyze/pg_query_go/v6"

// preaggregate answers a query over a per-person pre-aggregation.
func (p *parser) preaggregate(s *pg.SelectStmt, sq *subquery) error {
	return refuse("subquery %s aggregates: only per-person pre-aggregation (GROUP BY the privacy unit) is supported", sq.alias)
}
