package queryanswer_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/answer/queryanswer"
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine/duckdb"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query"
)

// TestTablesListPublicTables checks that the tables an analyst is shown
// include every public table, marked public (analysts may join them
// without a budget), and the private tables with a budget only.
func TestTablesListPublicTables(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"p.csv": "pid,code,day\n1,a,2024-03-01\n",
		"c.csv": "code,label\na,alpha\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := catalog.Parse([]byte(`budget: {epsilon: 1}
tables:
  patients:
    source: p.csv
    privacy_unit: pid
    max_groups_per_unit: 1
    max_rows_per_group: 1
    columns:
      pid: {type: int}
      code: {type: text}
      day: {type: date, lower: "2024-01-01", upper: "2024-12-31"}
  codes:
    source: c.csv
    public: true
    columns:
      code: {type: text}
      label: {type: text}
`), dir)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := duckdb.Open(duckdb.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	l, err := ledger.Open(filepath.Join(dir, "ledger.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Grant(ledger.Key{Dataset: "patients", Analyst: "alice"}, accounting.EpsDelta{Epsilon: 1}, accounting.Basic); err != nil {
		t.Fatal(err)
	}
	svc, err := query.NewService(context.Background(), cat, eng, l)
	if err != nil {
		t.Fatal(err)
	}
	ans, err := queryanswer.New(svc, cat, l)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		analyst string
		want    []string
	}{{"alice", []string{"patients", "codes (public)"}}, {"bob", []string{"codes (public)"}}, {"", []string{"patients", "codes (public)"}}} {
		var got []string
		for _, ti := range ans.Tables(tc.analyst) {
			name := ti.Name
			if ti.Public {
				name += " (public)"
			}
			got = append(got, name)
			if ti.Name == "patients" && (len(ti.Columns) != 3 || len(ti.Columns[2].Range) != 2 || ti.Columns[2].Range[0] != "2024-01-01") {
				t.Errorf("patients' columns %+v: want the date bounds spelt as dates", ti.Columns)
			}
		}
		if len(got) != len(tc.want) || got[0] != tc.want[0] || got[len(got)-1] != tc.want[len(tc.want)-1] {
			t.Errorf("Tables(%q) = %v, want %v", tc.analyst, got, tc.want)
		}
	}
}
