package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// joinCatalog declares the tables of docs/sql.md's join examples: visits
// (several rows per person), the public days, and payments of the same
// people.
const joinCatalog = `budget: {epsilon: 10, delta: 1e-5}
tables:
  visits:
    source: visits.csv
    privacy_unit: pid
    id_space: people
    max_groups_per_unit: 2
    max_rows_per_group: 2
    columns:
      pid: {type: int}
      day: {type: int, values: [1, 2, 3, 4, 5, 6, 7]}
      next_day: {type: int, values: [1, 2, 3, 4, 5, 6, 7]}
      euros: {type: float, lower: 0, upper: 50}
  payments:
    source: payments.csv
    privacy_unit: pid
    id_space: people
    max_groups_per_unit: 2
    max_rows_per_group: 2
    columns:
      pid: {type: int}
      amount: {type: float, lower: 0, upper: 100}
  days:
    source: days.csv
    public: true
    columns: {day: {type: int}, name: {type: text}, weekend: {type: bool}}
`

// TestQueryCLIJoins runs the join shapes docs/sql.md shows through
// dpstat query: answered, previewed with --dry-run and explained, each as
// the service plans it (the public table's facts read at start).
func TestQueryCLIJoins(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"catalog.yaml": joinCatalog,
		"visits.csv":   "pid,day,next_day,euros\n1,1,2,10\n1,6,7,20\n2,7,1,5\n3,3,4,40\n",
		"payments.csv": "pid,amount\n1,30\n2,10\n3,70\n",
		"days.csv":     "day,name,weekend\n1,Mon,false\n2,Tue,false\n3,Wed,false\n4,Thu,false\n5,Fri,false\n6,Sat,true\n7,Sun,true\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat := filepath.Join(dir, "catalog.yaml")
	led := filepath.Join(dir, "l.db")
	queries := []struct {
		name, sql string
		want      []string
	}{
		{"public join", "SELECT d.weekend, COUNT(*), SUM(v.euros) FROM visits v JOIN days d ON v.day = d.day GROUP BY d.weekend", []string{"weekend", "false", "true"}},
		{"public join using", "SELECT d.name, COUNT(*) FROM visits v JOIN days d USING (day) GROUP BY d.name", []string{"Mon", "Sun"}},
		{"left public join", "SELECT COUNT(*) FROM visits v LEFT JOIN days d ON v.day = d.day WHERE d.weekend", []string{"count"}},
		{"a public table twice", "SELECT d1.weekend, d2.weekend, COUNT(*) FROM visits v JOIN days d1 ON v.day = d1.day JOIN days d2 ON v.next_day = d2.day GROUP BY d1.weekend, d2.weekend", []string{"weekend"}},
		{"private tables of one id space", "SELECT COUNT(*), SUM(p.amount) FROM visits v JOIN payments p ON v.pid = p.pid", []string{"sum"}},
	}
	for _, q := range queries {
		t.Run(q.name, func(t *testing.T) {
			for _, mode := range []struct {
				name string
				args []string
				want []string
			}{
				{"answer", nil, q.want},
				{"dry run", []string{"--dry-run"}, []string{"engine SQL:"}},
			} {
				args := append([]string{"query", "--catalog", cat, "--ledger", led, "--analyst", "ana", "--epsilon", "0.1"}, mode.args...)
				out, errOut, code := runQueryCLI(append(args, q.sql)...)
				if code != 0 {
					t.Fatalf("%s: exit %d: %s%s", mode.name, code, errOut, out)
				}
				for _, w := range mode.want {
					if !strings.Contains(out, w) {
						t.Errorf("%s: output lacks %q:\n%s", mode.name, w, out)
					}
				}
			}
			out, errOut, code := runQueryCLI("query", "--catalog", cat, "--ledger", led, "--analyst", "ana", "EXPLAIN "+q.sql)
			if code != 0 || !strings.Contains(out, "engine SQL:") {
				t.Fatalf("EXPLAIN: exit %d: %s%s", code, errOut, out)
			}
		})
	}
}
