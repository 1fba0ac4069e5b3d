// Package engines registers every engine dpstat ships with, so that a
// program chooses one from its catalog's `engine:` section through
// engine.Open. Import it once, for its side effect, in a program's main
// package or command layer:
//
//	import _ "github.com/dpstat/dpstat/engine/engines"
package engines

import (
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"

	// Each engine registers itself under its kind.
	_ "github.com/dpstat/dpstat/engine/clickhouse"
	_ "github.com/dpstat/dpstat/engine/duckdb"
	_ "github.com/dpstat/dpstat/engine/postgres"
)

// Spec is the engine specification of a catalog's `engine:` section.
func Spec(cat *catalog.Catalog) engine.Spec {
	e := cat.Engine
	return engine.Spec{
		Kind:             e.Kind,
		DSN:              e.DSN,
		PasswordEnv:      e.PasswordEnv,
		StatementTimeout: e.StatementTimeout,
		MaxConns:         e.MaxConnections,
	}
}
