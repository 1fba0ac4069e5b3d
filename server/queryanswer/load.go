package queryanswer

import (
	"context"

	"github.com/dpstat/dpstat/engine/duckdb"
)

// LoadTables copies every catalog table that query.NewService exposed in
// eng as a view over its source file (and the view of it that keeps NaN)
// into memory, so that a long-running server reads each source once
// instead of on every query. Changes to the files are then seen only after
// a restart. It must run after query.NewService and before serving.
func LoadTables(ctx context.Context, eng *duckdb.Engine) error {
	return eng.Load(ctx)
}
