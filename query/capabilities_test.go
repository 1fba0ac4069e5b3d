package query

import (
	"context"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/duckdb"
)

// decliningDialect is DuckDB's dialect declining some constructs, as an
// engine without them would (engine.Declining).
type decliningDialect struct {
	engine.Dialect
	declined map[engine.Construct]string
}

func (d decliningDialect) Declines(c engine.Construct) (string, bool) {
	instead, ok := d.declined[c]
	return instead, ok
}

// decliningEngine is DuckDB speaking a declining dialect.
type decliningEngine struct {
	*recordingEngine
	d engine.Dialect
}

func (e decliningEngine) Dialect() engine.Dialect { return e.d }

// TestDeclinedConstructsRefusedFree: a construct the engine's dialect
// declines is refused before the charge (nothing charged, nothing run),
// with the same text on a table and on the table without one person,
// naming the construct, the engine and what would be accepted; the rest
// runs.
func TestDeclinedConstructsRefusedFree(t *testing.T) {
	const decl = "budget: {epsilon: 1e30, delta: 1e-6}\ntables:\n  t:\n    source: data.csv\n    columns:\n      id: {type: int}\n      w: {type: text}\n"
	declined := map[engine.Construct]string{
		engine.ILike:  "write lower(x) LIKE 'pattern', the pattern in lower case",
		engine.Substr: "compare with starts_with",
	}
	cases := []struct{ sql, refusal string }{
		{"SELECT COUNT(*) FROM t WHERE w ILIKE 'a%'", "ILIKE is not supported on the duckdb engine: write lower(x) LIKE 'pattern', the pattern in lower case"},
		{"SELECT COUNT(*) FILTER (WHERE w NOT ILIKE '%B%') FROM t", "ILIKE is not supported on the duckdb engine"},
		{"SELECT COUNT(*) FROM t WHERE substr(w, 1, 1) = 'a'", "substr is not supported on the duckdb engine: compare with starts_with"},
		{"SELECT COUNT(*) FROM t WHERE lower(w) LIKE 'a%'", ""},
	}
	var refusals [2][]string
	for i, rows := range []string{"id,w\n1,Abc\n2,ábc\n3,b\n", "id,w\n1,Abc\n3,b\n"} {
		cat := loadCatalog(t, writeTable(t, decl, rows))
		eng, err := duckdb.Open(duckdb.Options{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { eng.Close() })
		rec := &recordingEngine{Engine: eng}
		led := &fakeLedger{}
		svc, err := NewService(context.Background(), cat, decliningEngine{rec, decliningDialect{duckdb.Dialect, declined}}, led)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			before, calls := led.count(), rec.calls()
			_, err := svc.Answer(context.Background(), c.sql, exactOpts())
			if c.refusal == "" {
				if err != nil {
					t.Errorf("%s: %v, want an answer", c.sql, err)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), c.refusal) {
				t.Errorf("%s: got %v, want a refusal saying %q", c.sql, err, c.refusal)
				continue
			}
			if led.count() != before || rec.calls() != calls {
				t.Errorf("%s: refused after %d charges and %d statements, want none", c.sql, led.count()-before, rec.calls()-calls)
			}
			refusals[i] = append(refusals[i], err.Error())
		}
	}
	if strings.Join(refusals[0], "\n") != strings.Join(refusals[1], "\n") {
		t.Errorf("the refusals differ between the table and the table without one person:\n%s\n---\n%s", strings.Join(refusals[0], "\n"), strings.Join(refusals[1], "\n"))
	}
}
