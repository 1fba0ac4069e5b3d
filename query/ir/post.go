package ir

import (
	"strings"
)

// OutputValue reads the released value of output Output (Query.Outputs) in
// a post-processing expression.
type OutputValue struct{ Output int }

func (OutputValue) scalarNode() {}

// PostFuncs are the functions of a post-processing expression, with their
// least and most arguments.
var PostFuncs = map[string][2]int{
	"abs": {1, 1}, "round": {1, 2}, "floor": {1, 1}, "ceil": {1, 1}, "ceiling": {1, 1},
	"sqrt": {1, 1}, "power": {2, 2}, "pow": {2, 2}, "exp": {1, 1}, "ln": {1, 1}, "log10": {1, 1},
	"pi": {0, 0}, "sign": {1, 1},
}

// PostString spells a post-processing expression with the outputs' names.
func PostString(s Scalar, q *Query) string {
	switch x := s.(type) {
	case OutputValue:
		o := q.Outputs[x.Output]
		if o.Agg != nil {
			return o.Agg.String()
		}
		return o.Name
	case Negate:
		return "-" + PostString(x.Arg, q)
	case Arith:
		return "(" + PostString(x.L, q) + " " + x.Op + " " + PostString(x.R, q) + ")"
	case Call:
		parts := make([]string, len(x.Args))
		for i, a := range x.Args {
			parts[i] = PostString(a, q)
		}
		return strings.ToUpper(x.Func) + "(" + strings.Join(parts, ", ") + ")"
	}
	return ScalarString(s)
}

// PostInputs counts the released aggregates a post-processing expression
// reads, for the coverage of its interval.
func PostInputs(s Scalar) int {
	switch x := s.(type) {
	case OutputValue:
		return 1
	case Negate:
		return PostInputs(x.Arg)
	case Arith:
		return PostInputs(x.L) + PostInputs(x.R)
	case Call:
		n := 0
		for _, a := range x.Args {
			n += PostInputs(a)
		}
		return n
	}
	return 0
}
