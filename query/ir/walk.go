package ir

// WalkColumns calls fn for every column a row predicate reads. It returns
// false for an expression it does not know.
func WalkColumns(e Expr, fn func(string)) bool {
	op := func(o Operand) {
		if o.Kind == ColumnRef {
			fn(o.Column)
		}
		if o.Kind == Computed && o.Part != nil {
			fn(o.Part.Column)
		} else if o.Kind == Computed && o.Num != nil {
			for _, c := range scalarColumns(o.Num) {
				fn(c)
			}
		} else if o.Kind == Computed {
			for _, c := range o.Fn.columns() {
				fn(c)
			}
		}
	}
	switch x := e.(type) {
	case Compare:
		op(x.Left)
		op(x.Right)
	case And:
		for _, a := range x.Args {
			if !WalkColumns(a, fn) {
				return false
			}
		}
	case Or:
		for _, a := range x.Args {
			if !WalkColumns(a, fn) {
				return false
			}
		}
	case Not:
		return WalkColumns(x.Arg, fn)
	case In:
		op(x.Arg)
		for _, v := range x.Values {
			op(v)
		}
	case IsNull:
		op(x.Arg)
	case Between:
		op(x.Arg)
		op(x.Low)
		op(x.High)
	case nil:
	default:
		return false
	}
	return true
}
