package query

import (
	"github.com/dpstat/dpstat/epoch"
	"github.com/dpstat/dpstat/query/ir"
)

// epochJoins checks the joins of private tables of query q on base, a
// table that declares an epoch, and marks each private occurrence's epoch
// column (ir.Join.Epoch), by which the statement bounds its rows per
// (person, epoch) before the join and keeps only its rows of the epochs
// read (sqlgen).
//
// A joined row is one (person, epoch)'s only when both of its sides are
// rows of that person (the join equates the privacy units: ir.PrivateJoin)
// and of that epoch. So every joined private table must declare an epoch
// of the same period, and the join must equate its epoch with the first
// table's: its epoch column equal to the first table's (or to that of a
// private occurrence already equated with it), or both truncated by
// date_trunc to the period or to one that lies within it
// (date_trunc('month', a.day) = date_trunc('month', b.day) on monthly
// epochs). Anything else is refused, before any charge, naming the
// equality that would be accepted.
func epochJoins(q *ir.Query, base *ir.Table) error {
	e := base.Epoch
	// The relation's names of the epoch columns equated with the first
	// table's.
	same := map[string]bool{e.Column: true}
	for i := range q.Joins {
		j := &q.Joins[i]
		if !j.Private {
			continue
		}
		te := j.TableEpoch
		if te == nil || te.Every != e.Every {
			what := "declares no epoch"
			if te != nil {
				what = "declares epochs by " + te.Every
			}
			return ir.Refuse("JOIN %s: table %s declares epochs by %s of %s, and the private table %s %s: a joined row would mix units of two kinds; join private tables that declare the same epoch (every: %s), or query each table on its own",
				j.Alias, base.Name, e.Every, e.Column, j.Table, what, e.Every)
		}
		col := ir.QualifiedName(j.Alias, te.Column)
		equated := false
		for k, on := range j.On {
			f := j.OnTrunc(k)
			if on[1] == col && same[on[0]] && (f == "" || epoch.Nests(f, e.Every)) {
				equated = true
			}
		}
		if !equated {
			first := ir.QualifiedName(base.Alias, e.Column)
			return ir.Refuse("JOIN %s: tables %s and %s protect each person's rows of one %s apart (by %s and %s.%s), and this join would pair a person's rows of different %ss; equate the epochs in the join: ON … AND date_trunc('%s', %s) = date_trunc('%s', %s) (or %s = %s, the same date)",
				j.Alias, base.Name, j.Table, e.Every, e.Column, j.Alias, te.Column, e.Every,
				e.Every, first, e.Every, col, first, col)
		}
		same[col] = true
		j.Epoch = col
	}
	return nil
}
