package query

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/engines"
	"github.com/dpstat/dpstat/engine/postgres/pgtest"
)

// variantService opens a service over a catalog (decl, whose tables read
// NAME.csv) and the given rows of each table, on the engine kind:
// "duckdb" reads the rows as files, "postgres" loads them into a test
// server's tables named prefix_variant_NAME, with the statement timeout
// given. keep reports which rows of a table the variant holds (nil: all).
func variantService(t *testing.T, kind, prefix, variant, decl string, timeout time.Duration,
	data map[string][]string, columns map[string][]pgtest.Column, keep func(table, row string) bool) *Service {
	t.Helper()
	dir := t.TempDir()
	var pg *pgtest.Server
	if kind == "postgres" {
		pg = pgtest.Shared(t)
		decl = strings.Replace(decl, "tables:", fmt.Sprintf("engine: {kind: postgres, dsn: %q, statement_timeout: %s, max_connections: 1}\ntables:", pg.ReaderDSN(), timeout), 1)
	}
	for table, rows := range data {
		var kept []string
		for _, r := range rows {
			if keep == nil || keep(table, r) {
				kept = append(kept, r)
			}
		}
		var names []string
		for _, c := range columns[table] {
			names = append(names, c.Name)
		}
		csv := strings.Join(names, ",") + "\n" + strings.Join(kept, "\n") + "\n"
		if pg != nil {
			name := prefix + "_" + variant + "_" + table
			if err := pg.LoadTable(context.Background(), name, columns[table], []byte(csv)); err != nil {
				t.Fatal(err)
			}
			decl = strings.Replace(decl, "source: "+table+".csv", "source: public."+name, 1)
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, table+".csv"), []byte(csv), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(path, []byte(decl), 0o644); err != nil {
		t.Fatal(err)
	}
	if pg == nil {
		svc, _, _ := newTestService(t, path)
		return svc
	}
	cat := loadCatalog(t, path)
	eng, err := engine.Open(context.Background(), engines.Spec(cat))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	svc, err := NewService(context.Background(), cat, eng, &fakeLedger{})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}
