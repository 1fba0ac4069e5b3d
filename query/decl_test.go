package query

import (
	"encoding/json"
	"testing"
)

// TestRelationDecl checks what the answer key and the reuse context hash:
// a query that narrows no bound and derives no column spells the table's
// declaration itself, byte for byte (so the keys of stored answers do not
// depend on how the stages carry the table), and a narrowing WHERE or a
// derived column changes only the columns.
func TestRelationDecl(t *testing.T) {
	svc, _, _ := newTestService(t, "testdata/catalog.yaml")
	for _, tt := range []struct {
		sql  string
		same bool
	}{
		{"SELECT COUNT(*) FROM people", true},
		{"SELECT city, COUNT(*), SUM(score) FROM people GROUP BY city", true},
		{"SELECT COUNT(*) FROM people p WHERE p.city = 'A'", true},
		{"SELECT SUM(age) FROM people WHERE age > 30", false},
		{"SELECT SUM(age * 2) FROM people", false},
	} {
		p, err := svc.Prepare(tt.sql, Options{Epsilon: 1, Confidence: 0.95, Analyst: "a"})
		if err != nil {
			t.Fatalf("%s: %v", tt.sql, err)
		}
		want, _ := json.Marshal(p.Decl())
		rel := relationDecl(p.Decl(), p.Plan.Table)
		got, _ := json.Marshal(rel)
		if (string(got) == string(want)) != tt.same {
			t.Errorf("%s: relation spelled %s; the declaration is %s (want equal: %v)", tt.sql, got, want, tt.same)
		}
		cols := *rel
		cols.Columns = p.Decl().Columns
		if got, _ := json.Marshal(&cols); string(got) != string(want) {
			t.Errorf("%s: the relation's spelling differs from the declaration outside its columns: %s, want %s", tt.sql, got, want)
		}
	}
}
