//go:build tools

// Package dpstat pins, through this build-tagged file, the versions of the
// modules that dpstat's packages use, so that go.mod lists them all.
package dpstat

import (
	_ "github.com/chromedp/chromedp"
	_ "github.com/duckdb/duckdb-go/v2"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/pgproto3"
	_ "github.com/pganalyze/pg_query_go/v6"
	_ "go.etcd.io/bbolt"
	_ "gonum.org/v1/gonum/stat/distuv"
	_ "gopkg.in/yaml.v3"
)
