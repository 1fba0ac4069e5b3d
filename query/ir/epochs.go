package ir

import (
	"math"

	"github.com/dpstat/dpstat/epoch"
	"github.com/dpstat/dpstat/schema"
)

// Epochs. On a table that declares an epoch (Epoch), the epochs a
// query reads follow from its WHERE conditions on the epoch column (a
// comparison with a literal, BETWEEN, IN, date_trunc of the column
// compared with a literal, under AND and OR), intersected with the
// column's declared bounds; never from the data. A condition not
// understood here reads every declared epoch. EpochFilter is the
// condition that enforces the range in the statement the engine runs, so
// that a row outside the epochs charged is never read.

// span is a set of values of the epoch column (in its units: days or
// microseconds), kept as one interval [lo, hi]; empty when lo > hi.
type span struct{ lo, hi int64 }

func (s span) meet(o span) span { return span{max(s.lo, o.lo), min(s.hi, o.hi)} }

func (s span) join(o span) span {
	switch {
	case s.lo > s.hi:
		return o
	case o.lo > o.hi:
		return s
	}
	return span{min(s.lo, o.lo), max(s.hi, o.hi)}
}

// epochScan derives the span of the epoch column that a condition allows.
type epochScan struct {
	col   *Column
	every string
	full  span
}

// literal returns the column-unit value of a literal operand compared with
// the epoch column.
func (s *epochScan) literal(o Operand) (int64, bool) {
	if o.Kind != Literal {
		return 0, false
	}
	x, ok := Number(o.Value)
	if !ok || math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > schema.MaxIntBound {
		return 0, false
	}
	return int64(math.Floor(x)), x == math.Floor(x)
}

// unitEnd is the last value (in the column's units) of the date_trunc
// unit that starts at or holds v.
func (s *epochScan) unitEnd(field string, v int64) int64 {
	if s.col.Type == schema.Timestamp {
		d := schema.Day(schema.Timestamp, v)
		return (epoch.End(field, epoch.Of(field, d))+1)*schema.MicrosPerDay - 1
	}
	return epoch.End(field, epoch.Of(field, v))
}

// cmp is the span of values v with v op x (isTrunc: date_trunc(field, v)
// op x), or the full span when it cannot be told.
func (s *epochScan) cmp(op string, x int64, exact bool, trunc string) span {
	const lo, hi = math.MinInt64 / 4, math.MaxInt64 / 4
	if trunc != "" {
		// date_trunc(f, v) ≤ v < the next unit's start: v ≥ x when the
		// unit's start is ≥ x, and v ≤ the end of x's unit when it is ≤ x.
		switch op {
		case "=":
			return span{x, s.unitEnd(trunc, x)}
		case ">=", ">":
			return span{x, hi}
		case "<=":
			return span{lo, s.unitEnd(trunc, x)}
		case "<":
			return span{lo, s.unitEnd(trunc, x)}
		}
		return s.full
	}
	switch op {
	case "=":
		if !exact {
			return span{1, 0}
		}
		return span{x, x}
	case ">=":
		if !exact {
			return span{x + 1, hi}
		}
		return span{x, hi}
	case ">":
		return span{x + 1, hi}
	case "<=":
		return span{lo, x}
	case "<":
		if !exact {
			return span{lo, x}
		}
		return span{lo, x - 1}
	}
	return s.full
}

// operand tells whether o is the epoch column (trunc "") or a date_trunc
// of it by a unit this scan knows (trunc the unit).
func (s *epochScan) operand(o Operand) (trunc string, ok bool) {
	switch {
	case o.Kind == ColumnRef && o.Column == s.col.Name:
		return "", true
	case o.Kind == Computed && o.Part != nil && o.Part.Trunc && o.Part.Shift == 0 && o.Part.Column == s.col.Name && epoch.Valid(o.Part.Field):
		return o.Part.Field, true
	}
	return "", false
}

var flipOp = map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "<>": "<>"}

func (s *epochScan) expr(e Expr) span {
	switch x := e.(type) {
	case And:
		out := s.full
		for _, a := range x.Args {
			out = out.meet(s.expr(a))
		}
		return out
	case Or:
		out := span{1, 0}
		for _, a := range x.Args {
			out = out.join(s.expr(a))
		}
		return out
	case Compare:
		if tr, ok := s.operand(x.Left); ok {
			if v, exact := s.literal(x.Right); x.Right.Kind == Literal && (exact || tr == "") {
				if _, isNum := Number(x.Right.Value); isNum {
					return s.cmp(x.Op, v, exact, tr)
				}
			}
		}
		if tr, ok := s.operand(x.Right); ok {
			if v, exact := s.literal(x.Left); x.Left.Kind == Literal && (exact || tr == "") {
				if _, isNum := Number(x.Left.Value); isNum {
					return s.cmp(flipOp[x.Op], v, exact, tr)
				}
			}
		}
	case Between:
		if tr, ok := s.operand(x.Arg); ok && !x.Negate {
			l, le := s.literal(x.Low)
			h, he := s.literal(x.High)
			_, ln := Number(x.Low.Value)
			_, hn := Number(x.High.Value)
			if x.Low.Kind == Literal && x.High.Kind == Literal && ln && hn && (tr == "" || (le && he)) {
				return s.cmp(">=", l, le, tr).meet(s.cmp("<=", h, he, tr))
			}
		}
	case In:
		if tr, ok := s.operand(x.Arg); ok && !x.Negate {
			out := span{1, 0}
			for _, v := range x.Values {
				n, exact := s.literal(v)
				if _, isNum := Number(v.Value); v.Kind != Literal || !isNum || (!exact && tr != "") {
					return s.full
				}
				out = out.join(s.cmp("=", n, exact, tr))
			}
			return out
		}
	case IsNull:
		if tr, ok := s.operand(x.Arg); ok && tr == "" && !x.Negate {
			return span{1, 0} // a row without a date is in no epoch
		}
	}
	return s.full
}

// EpochRange returns the epochs of table t that a query with condition
// where reads, and the values of the epoch column they hold (within the
// declared bounds); ok is false when t declares no epoch, and empty true
// when the condition leaves no declared epoch.
func EpochRange(t *Table, where Expr) (r epoch.Range, lo, hi int64, empty, ok bool) {
	declared, ok := t.Epochs()
	if !ok {
		return epoch.Range{}, 0, 0, false, false
	}
	c := t.Column(t.Epoch.Column)
	s := &epochScan{col: c, every: t.Epoch.Every, full: span{int64(*c.Lower), int64(*c.Upper)}}
	sp := s.full
	if where != nil {
		sp = sp.meet(s.expr(where))
	}
	if sp.lo > sp.hi {
		return declared, 0, 0, true, true
	}
	r = epoch.Range{Every: declared.Every, From: epoch.Of(declared.Every, schema.Day(c.Type, sp.lo)), To: epoch.Of(declared.Every, schema.Day(c.Type, sp.hi))}
	// The whole of each epoch read, within the declared bounds.
	lo, hi = epoch.Start(r.Every, r.From), epoch.End(r.Every, r.To)
	if c.Type == schema.Timestamp {
		lo, hi = lo*schema.MicrosPerDay, (hi+1)*schema.MicrosPerDay-1
	}
	return r, max(lo, int64(*c.Lower)), min(hi, int64(*c.Upper)), false, true
}

// EpochFilter is the condition that keeps the rows of the epochs read:
// the epoch column between lo and hi (in its units).
func EpochFilter(t *Table, lo, hi int64) Expr {
	c := t.Column(t.Epoch.Column)
	return Between{
		Arg:  Operand{Kind: ColumnRef, Column: c.Name},
		Low:  Operand{Kind: Literal, Value: lo, Type: c.Type},
		High: Operand{Kind: Literal, Value: hi, Type: c.Type},
	}
}
