package engine

import (
	"fmt"
	"strings"
)

// SourceName is the name of the server's column that c reads: its Source
// when the catalog declares one (from:), else its own name.
func (c Column) SourceName() string {
	if c.Source != "" {
		return c.Source
	}
	return c.Name
}

// ServerColumn finds, among the names of a server table's columns, the
// one a declared column reads under the name src: the column spelled src
// exactly, else the only one equal to src ignoring case. It returns its
// index in names, or an error naming the columns there are when there is
// none or several (the message begins with prefix, e.g. "postgres: table
// visits", and names the table as qualified).
func ServerColumn(names []string, src, prefix, qualified string) (int, error) {
	folded := -1
	for i, n := range names {
		if n == src {
			return i, nil
		}
		if strings.EqualFold(n, src) {
			if folded == -1 {
				folded = i
			} else {
				folded = -2
			}
		}
	}
	if folded >= 0 {
		return folded, nil
	}
	return -1, fmt.Errorf("%s: column %s does not exist in %s; it has: %s", prefix, src, qualified, strings.Join(names, ", "))
}
