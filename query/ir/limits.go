package ir

import (
	"fmt"
)

// RefusedError reports a query that dpstat will not answer. It is returned
// before any engine runs and before anything is charged.
type RefusedError struct {
	// Reason says what is wrong and, where there is one, what would be
	// accepted.
	Reason string
	// Kind says what sort of refusal it is, for front ends that report
	// it as a code (an HTTP error code, a SQLSTATE); KindRefused unless
	// said otherwise.
	Kind RefusalKind
}

// RefusalKind sorts refusals for the front ends' codes.
type RefusalKind int

// The kinds of refusal.
const (
	// KindRefused is a query dpstat does not answer as it stands.
	KindRefused RefusalKind = iota
	// KindSyntax is SQL that does not parse.
	KindSyntax
	// KindUnknownTable names a table the catalog does not declare.
	KindUnknownTable
	// KindUnknownColumn names a column the table does not declare.
	KindUnknownColumn
)

// Error says that the query is refused, and why.
func (e *RefusedError) Error() string { return "query refused: " + e.Reason }

// Refuse returns a RefusedError with the formatted reason.
func Refuse(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// RefuseAs returns a RefusedError of the kind with the formatted reason.
func RefuseAs(kind RefusalKind, format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...), Kind: kind}
}

// MaxExprDepth is the deepest nesting of conditions (AND, OR, NOT) a query
// may have. A deeper one is refused when it is parsed, free and with the
// same message whatever the data, rather than left to fail in the engine.
const MaxExprDepth = 64

// MaxGroups caps the number of groups a query may release, so that a cross
// product of value lists cannot exhaust memory.
const MaxGroups = 1_000_000

// MaxTopK is the most keys a most-common-values query may choose.
const MaxTopK = 1000
