package parse

import (
	"strings"

	"github.com/dpstat/dpstat/query/ir"
)

// Planning is bounded while it is built: every limit below is checked as
// the count it bounds grows (or before the work it would take is done),
// never after, so that refusing a query costs no more than the limit
// allows, whatever the query.

// MaxMergedCopies is the most syntax nodes merging a query's subqueries
// and common table expressions may copy in all: a common table expression
// read several times, and a column of a subquery used several times, are
// copied each time. Each copy is counted before it is made.
const MaxMergedCopies = 5 * MaxMergedNodes

// MaxSelectItems is the most items a select list may have (after SELECT *
// of a subquery is expanded): keys, aggregates and expressions over them.
const MaxSelectItems = 256

// refuseNUL refuses SQL text holding a NUL byte: the grammar would read the
// text only up to it, so that what follows would be silently ignored.
func refuseNUL(sql string) error {
	if i := strings.IndexByte(sql, 0); i >= 0 {
		return ir.Refuse("the SQL text holds a NUL byte at byte %d (of %d); remove it: SQL text is read whole or not at all", i+1, len(sql))
	}
	return nil
}

// checkTime refuses once the parser's context is done. It is called in the
// parser's loops (often: it costs one atomic read).
func (p *parser) checkTime() error {
	if p.ctx == nil {
		return nil
	}
	if err := p.ctx.Err(); err != nil {
		return TimeRefusal(err)
	}
	return nil
}

// TimeRefusal is the refusal of a query whose planning did not end within
// its context (the query timeout of the service answering it).
func TimeRefusal(err error) error {
	return ir.Refuse("planning the query did not finish within its time limit (%v): nothing was read or charged; simplify the query (fewer subqueries, expressions or values)", err)
}

// copying counts n syntax nodes that merging is about to copy for what,
// and refuses, before the copy, once the query's copies pass
// MaxMergedCopies.
func (p *parser) copying(n int, what string) error {
	if err := p.checkTime(); err != nil {
		return err
	}
	p.copied += n
	if p.copied > MaxMergedCopies {
		return ir.Refuse("merging the subqueries and common table expressions would copy %d syntax nodes (%s is copied again): want at most %d; a subquery read many times, or a column of one used many times, is copied each time", p.copied, what, MaxMergedCopies)
	}
	return nil
}
