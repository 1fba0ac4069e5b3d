package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/engine/enginetest"
)

// TestPostgresCatalogCLI runs `dpstat catalog check` and `dpstat query`
// over a catalog whose engine is a PostgreSQL server started for the test:
// a catalog that matches the server is checked and answered; one that
// does not is refused with every mismatch named.
func TestPostgresCatalogCLI(t *testing.T) {
	pg, err := enginetest.StartPostgres()
	if err != nil {
		enginetest.Unavailable(t, "PostgreSQL test server: %v", err)
	}
	t.Cleanup(pg.Stop)
	people := enginetest.Tables[0]
	if err := pg.LoadTable(context.Background(), "people_t", people); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	head := fmt.Sprintf("budget: {epsilon: 1e30}\nengine: {kind: postgres, dsn: %q}\ntables:\n  people:\n    source: public.people_t\n", pg.ReaderDSN())
	good := write("good.yaml", head+people.Declaration)
	bad := write("bad.yaml", head+`    columns:
      age:  {type: bool}
      town: {type: text}
`)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{"check a matching catalog", []string{"catalog", "check", good}, 0,
			[]string{"ok", "engine: postgres at postgres://dpstat_reader@127.0.0.1", "table people: public.people_t (relation on postgres)"}},
		{"check names every mismatch", []string{"catalog", "check", bad}, 1,
			[]string{"column age of public.people_t is bigint: declared bool: want boolean", "column town does not exist in public.people_t; it has: id, age, score, city, flag"}},
		{"query", []string{"query", "--catalog", good, "--ledger", filepath.Join(dir, "l.db"), "--epsilon", "1e20", "--format", "csv",
			"SELECT city, COUNT(*) FROM people GROUP BY city"}, 0,
			[]string{"A,3,", "B,1,", "D,0,"}},
		{"dry run needs no server", []string{"query", "--catalog", good, "--dry-run", "SELECT COUNT(*) FROM people"}, 0,
			[]string{"engine SQL:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runQueryCLI(tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d: %s%s", code, tt.wantCode, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("output lacks %q:\n%s%s", w, out, errOut)
				}
			}
		})
	}
}
