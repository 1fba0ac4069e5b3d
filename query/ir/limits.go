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
}

// Error says that the query is refused, and why.
func (e *RefusedError) Error() string { return "query refused: " + e.Reason }

// Refuse returns a RefusedError with the formatted reason.
func Refuse(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
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
