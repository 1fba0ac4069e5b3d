package queryanswer

import (
	"context"
	"fmt"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine/duckdb"
)

// LoadTables copies every catalog table that query.NewService exposed in
// eng as a view over its source file into an in-memory table of the same
// name, columns and types, so that a long-running server reads each source
// once instead of on every query. Changes to the files are then seen only
// after a restart. It must run after query.NewService and before serving.
func LoadTables(ctx context.Context, eng *duckdb.Engine, cat *catalog.Catalog) error {
	db := eng.DB()
	q := duckdb.Dialect.QuoteIdent
	for _, t := range cat.Tables {
		tmp := "dpstat_loaded_" + t.Name
		for _, stmt := range []string{
			fmt.Sprintf("CREATE OR REPLACE TABLE %s AS SELECT * FROM %s", q(tmp), q(t.Name)),
			fmt.Sprintf("DROP VIEW %s", q(t.Name)),
			fmt.Sprintf("ALTER TABLE %s RENAME TO %s", q(tmp), q(t.Name)),
		} {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("loading table %s into memory: %w", t.Name, err)
			}
		}
	}
	return nil
}
