package cli

import (
	"context"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/dpstat/dpstat/answer/queryanswer"
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/engines"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query"
	"github.com/dpstat/dpstat/server"
	"github.com/dpstat/dpstat/server/metrics"
)

// catalogServer holds the catalog dpstat serve answers on, and replaces it
// on reload: the new catalog is loaded and checked, its engine opened and
// its tables registered (public tables' facts read again) before the
// answerer switches to it; anything that fails leaves the old one serving.
type catalogServer struct {
	// base is the server's context: engines live as long as it.
	base context.Context
	cfg  serveConfig
	led  *ledger.Ledger
	// qled is what the query service charges: led, timed when metrics
	// are on.
	qled query.Ledger
	m    *metrics.Metrics
	log  *slog.Logger
	sw   *server.SwitchAnswerer

	reloading sync.Mutex // one reload at a time
	mu        sync.Mutex // guards the fields below
	cat       *catalog.Catalog
	eng       engine.Engine
	gen       *server.Generation
}

// start builds the first generation from cat.
func (cs *catalogServer) start(cat *catalog.Catalog) error {
	gen, eng, err := cs.build(cat)
	if err != nil {
		return err
	}
	cs.cat, cs.eng, cs.gen = cat, eng, gen
	cs.sw = server.NewSwitchAnswerer(gen)
	if cs.m != nil {
		cs.m.SetTables(len(cat.Tables))
	}
	return nil
}

// build opens an engine for cat and an answerer over it.
func (cs *catalogServer) build(cat *catalog.Catalog) (*server.Generation, engine.Engine, error) {
	ctx := cs.base
	spec := engines.Spec(cat)
	spec.Threads, spec.MemoryLimit = cs.cfg.threads, cs.cfg.memoryLimit
	eng, err := engine.Open(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	ok := false
	defer func() {
		if !ok {
			eng.Close()
		}
	}()
	svc, err := query.NewService(ctx, cat, eng, cs.qled)
	if err != nil {
		return nil, nil, err
	}
	svc.SetLogger(cs.log)
	svc.SetRepeatWait(cs.cfg.repeatWait)
	if cs.m != nil {
		svc.SetObserver(cs.m)
	}
	// A server engine reads its tables where they live: only an engine
	// over files loads them.
	if _, isLoader := eng.(engine.Loader); isLoader && cs.cfg.loadTables {
		if err := queryanswer.LoadTables(ctx, eng); err != nil {
			return nil, nil, err
		}
	}
	// For the data owner: a table declaring nan_free that holds NaN is
	// logged (which form queries run depends on the declaration alone).
	nan, err := query.DeclaredNaN(ctx, cat, eng)
	if err != nil {
		return nil, nil, err
	}
	for _, line := range nan {
		cs.log.Warn(line)
	}
	ans, err := queryanswer.New(svc, cat, cs.led)
	if err != nil {
		return nil, nil, err
	}
	ok = true
	gen := &server.Generation{Answerer: ans, Close: func() {
		if err := eng.Close(); err != nil {
			cs.log.Warn("closing the engine of a replaced catalog", "error", err.Error())
		}
	}}
	return gen, eng, nil
}

// reload re-reads the catalog file and switches to it, or returns why it
// was refused (the old catalog keeps serving).
func (cs *catalogServer) reload(context.Context) (server.ReloadReport, error) {
	cs.reloading.Lock()
	defer cs.reloading.Unlock()
	start := time.Now()
	rep, err := cs.reloadLocked()
	if cs.m != nil {
		cs.m.Reloaded(err == nil, len(rep.Tables))
	}
	if err != nil {
		cs.log.Error("catalog reload refused; the old catalog keeps serving", "catalog", cs.cfg.catalog, "error", err.Error())
		return rep, err
	}
	cs.log.Info("catalog reloaded", "catalog", cs.cfg.catalog, "tables", len(rep.Tables), "added", rep.Added, "removed", rep.Removed,
		"duration_ms", time.Since(start).Milliseconds())
	return rep, nil
}

func (cs *catalogServer) reloadLocked() (server.ReloadReport, error) {
	if _, err := os.Stat(cs.cfg.catalog); err != nil {
		return server.ReloadReport{}, err
	}
	cat, err := catalog.Load(cs.cfg.catalog)
	if err != nil {
		return server.ReloadReport{}, err
	}
	gen, eng, err := cs.build(cat)
	if err != nil {
		return server.ReloadReport{}, err
	}
	cs.mu.Lock()
	old := cs.cat
	cs.cat, cs.eng, cs.gen = cat, eng, gen
	cs.mu.Unlock()
	// The old generation closes once its requests in flight finish.
	cs.sw.Swap(gen)
	return reloadReport(old, cat), nil
}

// reloadReport lists the tables of cat and those added and removed since
// old.
func reloadReport(old, cat *catalog.Catalog) server.ReloadReport {
	rep := server.ReloadReport{Tables: []string{}, Added: []string{}, Removed: []string{}}
	was := map[string]bool{}
	for _, t := range old.Tables {
		was[t.Name] = true
	}
	is := map[string]bool{}
	for _, t := range cat.Tables {
		is[t.Name] = true
		rep.Tables = append(rep.Tables, t.Name)
		if !was[t.Name] {
			rep.Added = append(rep.Added, t.Name)
		}
	}
	for _, t := range old.Tables {
		if !is[t.Name] {
			rep.Removed = append(rep.Removed, t.Name)
		}
	}
	sort.Strings(rep.Tables)
	return rep
}

// engineCheck probes the current engine, if it can be pinged (an engine
// over files is always there).
func (cs *catalogServer) engineCheck() server.Check {
	return server.Check{Name: "engine", Probe: func(ctx context.Context) error {
		cs.mu.Lock()
		eng := cs.eng
		cs.mu.Unlock()
		if p, ok := eng.(engine.Pinger); ok {
			return p.Ping(ctx)
		}
		return nil
	}}
}

// close closes the current generation's engine, once the servers have
// stopped.
func (cs *catalogServer) close() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.eng != nil {
		cs.eng.Close()
		cs.eng = nil
	}
}

// timedLedger is the ledger with its charges timed for the metrics; every
// other method is the ledger's own.
type timedLedger struct {
	*ledger.Ledger
	m *metrics.Metrics
}

// Charge times the ledger's Charge.
func (t timedLedger) Charge(ctx context.Context, c ledger.Charge) (ledger.Receipt, error) {
	start := time.Now()
	r, err := t.Ledger.Charge(ctx, c)
	t.m.LedgerDone("charge", time.Since(start))
	return r, err
}
