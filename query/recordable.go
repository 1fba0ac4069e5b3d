package query

import (
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query/ir"
)

// recordable refuses a query whose text, as the ledger records it with its
// charge (subqueries merged, every literal written out), is longer than
// the ledger keeps: the charge would fail after planning, as an error
// rather than a refusal. Merging can make a text within the service's
// limit on SQL text longer than the ledger's, and so can a long IN list
// (the text is written out with a space after each comma).
func recordable(q *ir.Query) error {
	if n := len(q.Text); n > ledger.MaxDescriptionLen {
		return ir.Refuse("the query is %d bytes long as the ledger records it (its subqueries merged, its IN lists written out): want at most %d; use fewer values in IN lists, or fewer copies of subquery columns", n, ledger.MaxDescriptionLen)
	}
	return nil
}
