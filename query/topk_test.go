package query

import (
	"context"
	"math/big"
	"testing"

	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/query/dpplan"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/random"
)

// TestTopKExact checks the most common values at ε = 1e20 against DuckDB.
func TestTopKExact(t *testing.T) {
	svc, eng, led := newTestService(t, "../examples/catalog.yaml")
	ctx := context.Background()
	opts := exactOpts()
	res, err := svc.Answer(ctx, "SELECT race FROM adult GROUP BY race ORDER BY COUNT(*) DESC LIMIT 2", opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := formatRows(res.Rows); got != "White; Black" {
		t.Errorf("top 2 races = %s, want White; Black", got)
	}
	opts.Delta = 1e-6
	res, err = svc.Answer(ctx, "SELECT education, COUNT(*) AS n FROM adult GROUP BY education ORDER BY n DESC LIMIT 3", opts)
	if err != nil {
		t.Fatal(err)
	}
	truth, err := eng.Engine.Query(ctx, "SELECT education, count(*) FROM adult GROUP BY education ORDER BY 2 DESC LIMIT 3")
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res.Rows {
		want, _ := ir.ToBig(truth.Rows[i][1])
		if r[0] != truth.Rows[i][0] || r[1].(int64) != want.Int64() {
			t.Errorf("row %d = %v, want %v", i, r, truth.Rows[i])
		}
	}
	// The charge is the query's ε and δ, split among key selection, the
	// choice of the most common values and their counts.
	c := led.charges[len(led.charges)-1].Cost
	if c.Epsilon != opts.Epsilon || c.Delta != 1e-6 {
		t.Errorf("charged %v", c)
	}
	var names []string
	for _, s := range res.Split {
		names = append(names, s.Column)
	}
	if len(names) != 3 || names[1] != "(most common values)" {
		t.Errorf("split = %v", names)
	}
}

// TestTopKUtility checks top-1 on a skewed table: counts 100, 60, 50, 10,
// 0 at ε = 0.5. Permute-and-flip picks a key whose count is within
// UtilityBound(5, 0.05) of the mode with probability ≥ 0.95, and that bound
// (about 18) is below the gap of 40, so the mode is picked in ≥ 95% of
// runs. Over 2000 runs the misses are Binomial(2000, ≤ 0.05): more than 200
// has probability below 1e-14 (Chernoff), the test's false-failure
// probability. Peeling with k = 3 returns three different keys.
func TestTopKUtility(t *testing.T) {
	cat := loadCatalog(t, "../examples/catalog.yaml")
	opts := Options{Epsilon: 0.5, Confidence: 0.95, Analyst: "a", Source: random.NewInsecureSeeded(5)}
	p, err := Prepare(cat, duckdb.Dialect, "SELECT race FROM adult GROUP BY race ORDER BY COUNT(*) DESC LIMIT 1", opts)
	if err != nil {
		t.Fatal(err)
	}
	counts := []int64{60, 100, 50, 10, 0} // the mode is the second key
	ex := &dpplan.Exact{}
	for _, c := range counts {
		st := make([]*big.Int, len(p.Plan.Statistics))
		for j := range st {
			st[j] = new(big.Int)
		}
		st[p.Plan.TopK.Stat].SetInt64(c)
		ex.Stats = append(ex.Stats, st)
	}
	if b := p.Noise.Topk.UtilityBound(len(counts), 0.05); b >= 40 {
		t.Fatalf("utility bound %v is not below the gap", b)
	}
	misses := 0
	for range 2000 {
		res, err := p.Release(ex)
		if err != nil {
			t.Fatal(err)
		}
		if res.Rows[0][0] != p.Plan.Keys[1][0] {
			misses++
		}
	}
	if misses > 200 {
		t.Fatalf("mode missed in %d of 2000 runs", misses)
	}
	p3, err := Prepare(cat, duckdb.Dialect, "SELECT race FROM adult GROUP BY race ORDER BY COUNT(*) DESC LIMIT 3", opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p3.Release(ex)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[any]bool{}
	for _, r := range res.Rows {
		seen[r[0]] = true
	}
	if len(res.Rows) != 3 || len(seen) != 3 {
		t.Errorf("peeling returned %v", res.Rows)
	}
	if p3.Plan.TopK.Round*3 > p3.Plan.TopK.Epsilon {
		t.Errorf("rounds of ε=%v exceed the share %v", p3.Plan.TopK.Round, p3.Plan.TopK.Epsilon)
	}
}

// TestTopKRefusals checks the limits of the most-common-values form.
func TestTopKRefusals(t *testing.T) {
	svc, _, _ := newTestService(t, "../examples/catalog.yaml")
	tests := []struct{ name, sql, want string }{
		{"limit 0", "SELECT race FROM adult GROUP BY race ORDER BY COUNT(*) DESC LIMIT 0", "LIMIT 0"},
		{"huge limit", "SELECT race FROM adult GROUP BY race ORDER BY COUNT(*) DESC LIMIT 5000", "at most 1000"},
		{"ascending is not top-k", "SELECT race FROM adult GROUP BY race ORDER BY COUNT(*) LIMIT 1", "is not in the select list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := svc.Answer(context.Background(), tt.sql, exactOpts())
			if err == nil || !contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a refusal mentioning %q", err, tt.want)
			}
		})
	}
}
