package enginetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query"
	"github.com/dpstat/dpstat/query/dpplan"
)

// runRestCells checks, on the backend's engine, the hidden cells a GROUP
// BY over value lists measures for the rows outside the lists
// (dpplan.Plan.MeasureRest): people holds a city outside [A, B, D] and a
// NULL flag. The engine's statement returns every row in exactly one
// cell, so the cells' counts add up to the table's; the answer shows the
// listed groups only.
func runRestCells(t *testing.T, b Backend, svc *query.Service, eng engine.Engine) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := query.Options{Epsilon: 1e20, Confidence: 0.95, Analyst: "conformance"}
	sql := "SELECT city, flag, COUNT(*) AS n FROM people WHERE age > 0 OR age IS NULL GROUP BY city, flag"
	p, err := svc.Prepare(sql, opts)
	if err != nil {
		t.Fatal(err)
	}
	if p.Plan.Hidden != 6 { // (3 + 1) × (2 + 1) cells, 6 of them listed
		t.Fatalf("on %s: %d hidden cells, want 6", b.Name, p.Plan.Hidden)
	}
	rows, err := eng.Query(ctx, p.SQL)
	if err != nil {
		t.Fatalf("on %s: %v", b.Name, err)
	}
	ex, err := p.Plan.ReadExact(rows)
	if err != nil {
		t.Fatalf("on %s: %v", b.Name, err)
	}
	if p.Plan.Statistics[0].Summand.Kind != dpplan.RowCount {
		t.Fatalf("statistic 0 is %v, want the row count", p.Plan.Statistics[0].Summand.Kind)
	}
	var all, hidden int64
	for g, st := range ex.Stats {
		all += st[0].Int64()
		if g >= len(p.Plan.Released()) {
			hidden += st[0].Int64()
		}
	}
	total, err := svc.Answer(ctx, "SELECT COUNT(*) FROM people WHERE age > 0 OR age IS NULL", opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(all); got != Format(total.Rows) {
		t.Errorf("on %s: the cells count %s rows, the table %s", b.Name, got, Format(total.Rows))
	}
	if hidden == 0 {
		t.Errorf("on %s: the hidden cells hold no row; people has a city outside the list and a NULL flag", b.Name)
	}
	res, err := svc.Answer(ctx, sql, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 6 {
		t.Errorf("on %s: the answer shows %d groups, want the 6 listed: %s", b.Name, len(res.Rows), Format(res.Rows))
	}
}
