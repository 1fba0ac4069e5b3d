package engine

// Construct names a construct of dpstat's SQL whose meaning dpstat defines
// for every engine (docs/engines.md, "What each engine supports"): an
// engine runs it with that meaning, spelled by its dialect, or declares
// that it cannot (Declining), and the query generator refuses it there,
// before the charge.
type Construct string

// The constructs a dialect may decline. A text function is named by its
// name in dpstat's SQL (TextFunc): Construct("trim").
const (
	// ILike is x [NOT] ILIKE 'pattern', which folds the ASCII letters of
	// both sides only.
	ILike Construct = "ILIKE"
	// Like is x [NOT] LIKE 'pattern', whose _ matches one code point.
	Like Construct = "LIKE"
	// Substr is substr(x, from[, count]), which counts code points.
	Substr Construct = "substr"
)

// Declining is implemented by dialects that cannot run some constructs of
// dpstat's SQL as dpstat means them (an engine without the function, or
// whose function answers otherwise for some values). The query generator
// consults it for every construct it spells and refuses a declined one
// before the charge, free, naming the construct, the engine and what the
// analyst may write instead: an error after the charge, or an answer that
// depends on the engine, would be worse.
type Declining interface {
	// Declines returns, for a construct the dialect cannot run as
	// dpstat means it, what the analyst may write instead, and true;
	// "" and false for a construct it runs.
	Declines(c Construct) (instead string, declined bool)
}

// Declined reports whether d declines c (see Declining), and what to
// write instead.
func Declined(d Dialect, c Construct) (instead string, declined bool) {
	if dd, ok := d.(Declining); ok {
		return dd.Declines(c)
	}
	return "", false
}
