package cli

import (
	"context"
	"log/slog"
	"time"

	"github.com/dpstat/dpstat/analyst"
	"github.com/dpstat/dpstat/ledger"
)

// analystRefresh is how often a server on a shared (PostgreSQL) ledger
// reads the analysts again, so that one added, rotated or revoked through
// another replica takes effect here.
const analystRefresh = 5 * time.Second

// refreshSharedAnalysts starts refreshAnalysts when the ledger at location
// is shared (PostgreSQL), and returns what stops it.
func refreshSharedAnalysts(ctx context.Context, location string, reg *analyst.Registry, log *slog.Logger) (stop func()) {
	if !ledger.IsPostgres(location) {
		return func() {}
	}
	ctx, stop = context.WithCancel(ctx)
	go refreshAnalysts(ctx, reg, log)
	return stop
}

// refreshAnalysts reloads reg every analystRefresh until ctx ends; a
// failed reload is logged and the analysts known so far keep serving.
func refreshAnalysts(ctx context.Context, reg *analyst.Registry, log *slog.Logger) {
	t := time.NewTicker(analystRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := reg.Reload(); err != nil && ctx.Err() == nil {
				log.Error("reloading the analysts from the shared ledger failed; the analysts known so far keep serving", "error", err.Error())
			}
		}
	}
}
