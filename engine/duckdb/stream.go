//go:build duckdb_arrow

package duckdb

import (
	"context"
	"database/sql/driver"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	duckdb "github.com/duckdb/duckdb-go/v2"
)

// StreamBatches runs one statement and hands its result to fn as Apache
// Arrow record batches (DuckDB's chunks, about 2,048 rows each), in the
// order of the result: a scan with a filter and a projection keeps the
// order of the table's rows. fn must not keep a batch after it returns;
// an error from fn stops the read and is returned.
//
// It is built with the duckdb_arrow build tag (duckdb-go's Arrow
// interface); without it the engine has no StreamBatches and callers use
// Query.
func (e *Engine) StreamBatches(ctx context.Context, query string, fn func(arrow.RecordBatch) error) error {
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c, ok := dc.(driver.Conn)
		if !ok {
			return fmt.Errorf("duckdb: connection of type %T is not a driver connection", dc)
		}
		a, err := duckdb.NewArrowFromConn(c)
		if err != nil {
			return err
		}
		rr, err := a.QueryContext(ctx, query)
		if err != nil {
			return err
		}
		defer rr.Release()
		for rr.Next() {
			if err := fn(rr.RecordBatch()); err != nil {
				return err
			}
		}
		return rr.Err()
	})
}
