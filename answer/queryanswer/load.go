package queryanswer

import (
	"context"

	"fmt"

	"github.com/dpstat/dpstat/engine"
)

// LoadTables copies every catalog table that query.NewService exposed in
// eng as a view over its source file (and the view of it that keeps NaN)
// into memory, so that a long-running server reads each source once
// instead of on every query. Changes to the files are then seen only after
// a restart. It must run after query.NewService and before serving. The
// engine must read files (engine.Loader); a server engine reads its tables
// where they live and has nothing to load.
func LoadTables(ctx context.Context, eng engine.Engine) error {
	loader, ok := eng.(engine.Loader)
	if !ok {
		return fmt.Errorf("queryanswer: engine %s reads its tables where they live and cannot load them into memory", eng.Dialect().Name())
	}
	return loader.Load(ctx)
}
