package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/ledger"
)

func runQueryCLI(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = Execute(args, &out, &errb)
	return out.String(), errb.String(), code
}

const exampleCatalog = "../../examples/catalog.yaml"

func TestQueryCLITable(t *testing.T) {
	led := filepath.Join(t.TempDir(), "l.db")
	out, errOut, code := runQueryCLI("query", "--catalog", exampleCatalog, "--ledger", led, "--analyst", "ana",
		"SELECT sex, COUNT(*), AVG(hours_per_week) FROM adult GROUP BY sex")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"sex", "count", "±", "avg_hours_per_week", "Female", "Male",
		"ε split: count ε=0.5, avg_hours_per_week ε=0.5", "cost ε=1 δ=0; budget of ana on adult: spent ε=1 δ=0, left ε=9 δ=1e-05"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestQueryCLIJSONAndBudget(t *testing.T) {
	led := filepath.Join(t.TempDir(), "l.db")
	var last map[string]any
	for i := 0; i < 2; i++ {
		out, errOut, code := runQueryCLI("query", "--catalog", exampleCatalog, "--ledger", led, "--analyst", "ana",
			"--format", "json", "--epsilon", "0.5", "--confidence", "0.9",
			"SELECT day, COUNT(*) AS n, SUM(euros_spent) FROM visits GROUP BY day ORDER BY day LIMIT 3")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		last = nil
		if err := json.Unmarshal([]byte(out), &last); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
	}
	if cols := last["columns"].([]any); len(cols) != 3 || cols[1] != "n" {
		t.Errorf("columns = %v", cols)
	}
	rows := last["rows"].([]any)
	ci := last["ci"].([]any)
	if len(rows) != 3 || len(ci) != 3 {
		t.Fatalf("rows = %v, ci = %v", rows, ci)
	}
	first := ci[0].([]any)
	if first[0] != nil || len(first[1].([]any)) != 2 {
		t.Errorf("ci row = %v, want null for the key and [low, high] for values", first)
	}
	if rows[0].([]any)[0].(float64) != 1 {
		t.Errorf("first day = %v", rows[0])
	}
	// The second, identical query returned the stored answer at no cost.
	budget := last["budget"].(map[string]any)
	if spent := budget["spent"].(map[string]any)["epsilon"].(float64); spent != 0.5 {
		t.Errorf("spent after an identical query asked twice at ε = 0.5: %v, want 0.5", spent)
	}
	if rem := budget["remaining"].(map[string]any)["epsilon"].(float64); rem != 9.5 {
		t.Errorf("remaining = %v", rem)
	}
	if c := last["cost"].(map[string]any); c["epsilon"].(float64) != 0 || c["delta"].(float64) != 0 {
		t.Errorf("cost of the repeated query = %v, want 0", c)
	}
	if last["repeated"] != true {
		t.Errorf("repeated = %v, want true", last["repeated"])
	}
}

func TestQueryCLICSV(t *testing.T) {
	led := filepath.Join(t.TempDir(), "l.db")
	out, errOut, code := runQueryCLI("query", "--catalog", exampleCatalog, "--ledger", led, "--format", "csv",
		"SELECT income, COUNT(*) FROM adult GROUP BY income")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || lines[0] != "income,count,count_low,count_high" {
		t.Errorf("csv = %q", out)
	}
	if !strings.Contains(errOut, "cost ε=1 δ=0; budget of") {
		t.Errorf("the cost line is not on standard error: %q", errOut)
	}
}

func TestFmtNum(t *testing.T) {
	tests := []struct {
		x    float64
		want string
	}{{4.1000000000000005, "4.1"}, {0.3333333330228925, "0.333333333023"}, {1e-6, "1e-06"}, {10, "10"}, {0, "0"}}
	for _, tc := range tests {
		if got := fmtNum(tc.x); got != tc.want {
			t.Errorf("fmtNum(%v) = %q, want %q", tc.x, got, tc.want)
		}
	}
}

// TestQueryCLIRefusalsChargeNothing: refused queries, bad flags and an
// exhausted budget exit non-zero with a message and charge nothing.
func TestQueryCLIRefusalsChargeNothing(t *testing.T) {
	dir := t.TempDir()
	led := filepath.Join(dir, "l.db")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"select star", []string{"SELECT * FROM adult"}, "SELECT * is not supported"},
		{"key selection", []string{"SELECT education, COUNT(*) FROM adult GROUP BY education"}, "needs δ > 0"},
		{"epsilon zero", []string{"--epsilon", "0", "SELECT COUNT(*) FROM adult"}, "epsilon = 0"},
		{"delta one", []string{"--delta", "1", "SELECT COUNT(*) FROM adult"}, "delta = 1"},
		{"bad format", []string{"--format", "xml", "SELECT COUNT(*) FROM adult"}, "--format"},
		{"over budget", []string{"--epsilon", "11", "SELECT COUNT(*) FROM adult"}, "privacy budget exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"query", "--catalog", exampleCatalog, "--ledger", led, "--analyst", "bob"}, tt.args...)
			out, errOut, code := runQueryCLI(args...)
			if code == 0 || !strings.Contains(errOut, tt.want) || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want a failure mentioning %q", code, out, errOut, tt.want)
			}
		})
	}
	if _, err := os.Stat(led); err == nil {
		l, err := ledger.Open(led, ledger.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		hist, err := l.History(ledger.Key{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(hist) != 0 {
			t.Errorf("refused queries were charged: %v", hist)
		}
	}
	_, errOut, code := runQueryCLI("query", "SELECT COUNT(*) FROM adult")
	if code == 0 || !strings.Contains(errOut, "--catalog is required") {
		t.Errorf("missing catalog: exit %d, %s", code, errOut)
	}
}

func TestCatalogCLI(t *testing.T) {
	out, errOut, code := runQueryCLI("catalog", "check", exampleCatalog)
	if code != 0 || !strings.HasPrefix(out, "ok\n") || !strings.Contains(out, "table visits") {
		t.Errorf("check: exit %d, %s %s", code, out, errOut)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("budget: {epsilon: 1}\ntables:\n  t:\n    source: none.csv\n    columns:\n      a: {type: int, lower: 3, upper: 1}\n"), 0o644)
	_, errOut, code = runQueryCLI("catalog", "check", bad)
	if code == 0 || !strings.Contains(errOut, "lower = 3 is above upper = 1") || !strings.Contains(errOut, "file not found") {
		t.Errorf("check bad: exit %d, %s", code, errOut)
	}
	// A table declaring nan_free is checked against its data: NaN in a
	// float column is reported, with how many, and the check fails.
	os.WriteFile(filepath.Join(dir, "nan.csv"), []byte("x,y\n1,nan\n2,3\nNaN,NaN\n"), 0o644)
	nanCat := filepath.Join(dir, "nan.yaml")
	for _, tt := range []struct {
		decl string
		ok   bool
	}{{"", true}, {"    nan_free: true\n", false}} {
		os.WriteFile(nanCat, []byte("budget: {epsilon: 1}\ntables:\n  t:\n    source: nan.csv\n"+tt.decl+"    columns:\n      x: {type: float}\n      y: {type: float}\n"), 0o644)
		out, errOut, code = runQueryCLI("catalog", "check", nanCat)
		if tt.ok && code != 0 {
			t.Errorf("check without nan_free: exit %d, %s %s", code, out, errOut)
		}
		if !tt.ok && (code == 0 || !strings.Contains(errOut, "table t declares nan_free, but its column x holds 1 NaN") ||
			!strings.Contains(errOut, "column y holds 2 NaN")) {
			t.Errorf("check with nan_free over NaN: exit %d, %s %s", code, out, errOut)
		}
	}
	// init writes a skeleton without bounds, and the owner's completed
	// skeleton passes check.
	data := filepath.Join(dir, "my data.csv")
	os.WriteFile(data, []byte("id,age,name,ok,Hours per week\n1,30,x,true,40\n2,40,y,false,38\n"), 0o644)
	skel := filepath.Join(dir, "catalog.yaml")
	_, errOut, code = runQueryCLI("catalog", "init", "-o", skel, data)
	if code != 0 {
		t.Fatalf("init: exit %d, %s", code, errOut)
	}
	b, _ := os.ReadFile(skel)
	s := string(b)
	for _, want := range []string{"my_data:", `source: "my data.csv"`, "id: {type: int}", "age: {type: int}", "name: {type: text}", "ok: {type: bool}",
		`hours_per_week: {from: "Hours per week", type: int}`, "budget: {epsilon: 10, delta: 1e-5}"} {
		if !strings.Contains(s, want) {
			t.Errorf("skeleton lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "lower: 30") || strings.Contains(s, "upper: 40") {
		t.Errorf("skeleton filled bounds from the data:\n%s", s)
	}
	// A text column's hint does not claim GROUP BY needs values: key
	// selection with a δ > 0 groups by it as the skeleton stands.
	if strings.Contains(s, "to allow GROUP BY") || !strings.Contains(s, "GROUP BY works as is with a δ > 0") {
		t.Errorf("skeleton's text hint:\n%s", s)
	}
	out, errOut, code = runQueryCLI("query", "--catalog", skel, "--ledger", filepath.Join(dir, "k.db"), "--epsilon", "1", "--delta", "1e-5",
		"SELECT name, COUNT(*) FROM my_data GROUP BY name")
	if code != 0 || !strings.Contains(out, "DP key selection") {
		t.Errorf("GROUP BY a text column of the skeleton: exit %d, %s %s", code, out, errOut)
	}
	out, errOut, code = runQueryCLI("catalog", "check", skel)
	if code != 0 || !strings.HasPrefix(out, "ok") {
		t.Errorf("check skeleton: exit %d, %s %s", code, out, errOut)
	}
	if _, errOut, code = runQueryCLI("catalog", "init", "-o", skel, data); code == 0 || !strings.Contains(errOut, "does not overwrite") {
		t.Errorf("init overwrote: %s", errOut)
	}
	// The column read through from: answers under its declared name.
	os.WriteFile(skel, []byte(strings.Replace(s, `type: int}`, `type: int, lower: 0, upper: 99}`, -1)), 0o644)
	out, errOut, code = runQueryCLI("query", "--catalog", skel, "--ledger", filepath.Join(dir, "l.db"), "--epsilon", "1",
		"SELECT COUNT(*), SUM(hours_per_week) FROM my_data")
	if code != 0 || !strings.Contains(out, "sum_hours_per_week") {
		t.Errorf("query through from: exit %d, %s %s", code, out, errOut)
	}
}

func TestColumnNames(t *testing.T) {
	tests := []struct {
		headers, want []string
	}{
		{[]string{"age", "Sex"}, []string{"age", "Sex"}},
		{[]string{"Hours per week", "Capital-gain ($)"}, []string{"hours_per_week", "capital_gain"}},
		{[]string{"2nd job", "%", "é"}, []string{"c_2nd_job", "column_2", "column_3"}},
		{[]string{"a b", "a_b", "A-B"}, []string{"a_b", "a_b_2", "a_b_3"}},
		{[]string{"_dp_u", "_DP_k0", "dp_u", "_x"}, []string{"dp_u", "dp_k0", "dp_u_2", "_x"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.headers, ","), func(t *testing.T) {
			cols := make([]engine.Column, len(tc.headers))
			for i, h := range tc.headers {
				cols[i] = engine.Column{Name: h}
			}
			if got := columnNames(cols); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("columnNames(%q) = %q, want %q", tc.headers, got, tc.want)
			}
		})
	}
}

// TestQueryCLIPreview checks that --dry-run and EXPLAIN print the plan and
// neither open the ledger nor charge.
func TestQueryCLIPreview(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"dry run", []string{"--dry-run", "SELECT sex, COUNT(*), AVG(age) FROM adult GROUP BY sex"}, "engine SQL:"},
		{"explain", []string{"EXPLAIN SELECT day, COUNT(DISTINCT visitor_id) FROM visits GROUP BY day"}, "cost: ε=1 δ=0"},
		{"dry run json", []string{"--dry-run", "--format", "json", "SELECT COUNT(*) FROM adult"}, `"dry_run": true`},
		{"key selection", []string{"--dry-run", "--delta", "1e-6", "SELECT education, COUNT(*) FROM adult GROUP BY education"}, "DP key selection on education"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			led := filepath.Join(t.TempDir(), "l.db")
			args := append([]string{"query", "--catalog", exampleCatalog, "--ledger", led}, tt.args...)
			out, errOut, code := runQueryCLI(args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("output lacks %q:\n%s", tt.want, out)
			}
			if _, err := os.Stat(led); !os.IsNotExist(err) {
				t.Errorf("a preview opened the ledger (%v)", err)
			}
		})
	}
}

// TestArgumentMessages checks that malformed flags and arguments are
// explained with the value given and what is accepted, not the parser's
// words.
func TestArgumentMessages(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"epsilon not a number", []string{"query", "--catalog", exampleCatalog, "--epsilon", "abc", "SELECT COUNT(*) FROM adult"}, `--epsilon "abc": want a number such as 0.5`},
		{"duration", []string{"serve", "--catalog", exampleCatalog, "--query-timeout", "3"}, `--query-timeout "3": want a duration such as 30s or 2m`},
		{"whole number", []string{"serve", "--catalog", exampleCatalog, "--max-conns", "1.5"}, `--max-conns "1.5": want a whole number such as 10`},
		{"unknown flag", []string{"query", "--catalog", exampleCatalog, "--epsilom", "1", "SELECT COUNT(*) FROM adult"}, "unknown flag: --epsilom; dpstat query --help lists the flags"},
		{"unquoted query", []string{"query", "--catalog", exampleCatalog, "SELECT", "sex,", "COUNT(*)", "FROM", "adult"}, `the query arrived as 5 arguments ("SELECT", ...): quote it as one, e.g. dpstat query --catalog FILE "SELECT sex, COUNT(*) FROM adult"`},
		{"no query", []string{"query", "--catalog", exampleCatalog}, "no query given"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runQueryCLI(tc.args...)
			if code == 0 || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "strconv") {
				t.Fatalf("exit %d, stderr %q\nwant one containing %q", code, errOut, tc.want)
			}
		})
	}
}

// TestQueryCLIQuantileInterval checks that a column whose intervals are not
// symmetric (a quantile's) is shown as [low, high], not as a ±.
func TestQueryCLIQuantileInterval(t *testing.T) {
	led := filepath.Join(t.TempDir(), "l.db")
	out, errOut, code := runQueryCLI("query", "--catalog", exampleCatalog, "--ledger", led,
		"SELECT sex, MEDIAN(age) AS m, COUNT(*) AS n FROM adult GROUP BY sex")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
	if strings.Join(header, " ") != "sex m interval n ±" || !strings.Contains(out, "[17, 90]") {
		t.Fatalf("table:\n%s", out)
	}
	// The table says the interval is uninformative, as notes do.
	if !strings.Contains(out, "note: m (PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY age)): its interval is the declared range") {
		t.Fatalf("no note on the quantile's interval:\n%s", out)
	}
}

// TestTemporalInterval checks that the interval of a released date or
// timestamp is shown as dates or timestamps, and that of a number is not.
func TestTemporalInterval(t *testing.T) {
	for _, tc := range []struct {
		v    any
		iv   [2]float64
		want string
		ok   bool
	}{
		{"2024-03-01", [2]float64{19723, 20088}, "[2024-01-01, 2024-12-31]", true},
		{"2024-03-01 12:00:00", [2]float64{1704067200e6, 1735689599e6}, "[2024-01-01 00:00:00, 2024-12-31 23:59:59]", true},
		{3.5, [2]float64{1, 5}, "", false},
		{"Paris", [2]float64{1, 5}, "", false},
	} {
		got, ok := temporalInterval(tc.v, &tc.iv)
		if got != tc.want || ok != tc.ok {
			t.Errorf("temporalInterval(%v, %v) = %q, %v; want %q, %v", tc.v, tc.iv, got, ok, tc.want, tc.ok)
		}
	}
}

// TestQueryCLIAccuracy: --accuracy chooses and charges the smallest ε that
// meets it, says so, and is refused with --epsilon.
func TestQueryCLIAccuracy(t *testing.T) {
	led := filepath.Join(t.TempDir(), "l.db")
	sql := "SELECT sex, COUNT(*) AS n, SUM(hours_per_week) AS hours FROM adult GROUP BY sex"
	out, errOut, code := runQueryCLI("query", "--catalog", exampleCatalog, "--ledger", led, "--analyst", "ana",
		"--accuracy", "n=20,hours=5000", "--dry-run", sql)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"cost: ε=0.2921 δ=0", "accuracy: asked at 95%: n (COUNT(*)) ±20, planned ±20, hours (SUM(hours_per_week)) ±5000, planned ±2031; ε=0.2921 is the smallest"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	out, errOut, code = runQueryCLI("query", "--catalog", exampleCatalog, "--ledger", led, "--analyst", "ana",
		"--accuracy", "n=20,hours=5000", "--format", "json", sql)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if c := res["cost"].(map[string]any)["epsilon"].(float64); c != 0.2921 {
		t.Errorf("charged ε=%v, want the ε the dry run showed, 0.2921", c)
	}
	for _, row := range res["ci"].([]any) {
		if iv := row.([]any)[1].([]any); iv[1].(float64)-iv[0].(float64) > 40 {
			t.Errorf("count interval %v wider than ±20", iv)
		}
	}
	_, errOut, code = runQueryCLI("query", "--catalog", exampleCatalog, "--ledger", led, "--analyst", "ana",
		"--accuracy", "20", "--epsilon", "1", sql)
	if code == 0 || !strings.Contains(errOut, "--accuracy and --epsilon were both given: keep one") {
		t.Errorf("--accuracy with --epsilon: exit %d, %s", code, errOut)
	}
	_, errOut, code = runQueryCLI("query", "--catalog", exampleCatalog, "--ledger", led, "--analyst", "ana",
		"--accuracy", "total=5", sql)
	if code == 0 || !strings.Contains(errOut, "the columns that accept an accuracy are n, hours") {
		t.Errorf("unknown column: exit %d, %s", code, errOut)
	}
}

// TestQueryCLIDerived: a slice of an earlier release is derived at no cost
// and says so (JSON "derived", the note); --fresh pays.
func TestQueryCLIDerived(t *testing.T) {
	led := filepath.Join(t.TempDir(), "l.db")
	ask := func(extra ...string) (map[string]any, string) {
		t.Helper()
		sql := "SELECT race, COUNT(*) AS n FROM adult WHERE sex = 'Female' GROUP BY race"
		if len(extra) > 0 && extra[0] == "first" {
			sql, extra = "SELECT sex, race, COUNT(*) AS n FROM adult GROUP BY sex, race", extra[1:]
		}
		args := append([]string{"query", "--catalog", exampleCatalog, "--ledger", led, "--analyst", "ana", "--accuracy", "40", "--format", "json"}, extra...)
		out, errOut, code := runQueryCLI(append(args, sql)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var res map[string]any
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		return res, out
	}
	ask("first")
	res, out := ask()
	if res["derived"] == nil || res["cost"].(map[string]any)["epsilon"].(float64) != 0 || !strings.Contains(out, "derived from releases 1, cost 0") {
		t.Fatalf("not derived at no cost:\n%s", out)
	}
	res, out = ask("--fresh")
	if res["derived"] != nil || res["cost"].(map[string]any)["epsilon"].(float64) == 0 {
		t.Fatalf("--fresh was not answered afresh:\n%s", out)
	}
}
