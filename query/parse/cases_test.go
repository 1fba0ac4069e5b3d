package parse

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/query/ir"
)

var update = flag.Bool("update", false, "rewrite the expected outcomes of testdata/*_cases.json from what the parser gives")

// parseCase is one case of a case file: a query and either what it binds
// to or the refusal it gets (exactly one of Bound and Refusal).
type parseCase struct {
	Comment string      `json:"comment"`
	Query   string      `json:"query"`
	Bound   *boundQuery `json:"bound,omitempty"`
	Refusal string      `json:"refusal,omitempty"`
	// Kind is the refusal's kind when it is not a plain refusal.
	Kind string `json:"kind,omitempty"`
}

// TestCases reads every testdata/*_cases.json, parses each case's query
// against testdata/catalog.yaml and compares the outcome, rendered by
// renderQuery, with the expected one. With -update it rewrites the
// expected outcomes instead; review the diff.
func TestCases(t *testing.T) {
	cat := casesCatalog(t)
	files, err := filepath.Glob(filepath.Join("testdata", "*_cases.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no case files in testdata (%v)", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), "_cases.json"), func(t *testing.T) {
			runCaseFile(t, file, cat)
		})
	}
}

func runCaseFile(t *testing.T, file string, cat *catalog.Catalog) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cases []parseCase
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cases); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	seen := map[string]bool{}
	for i := range cases {
		c := &cases[i]
		if c.Comment == "" || c.Query == "" {
			t.Errorf("%s case %d: want a comment and a query, got %q and %q", file, i, c.Comment, c.Query)
			continue
		}
		if seen[c.Query] {
			t.Errorf("%s case %d: the query %q is already a case of this file", file, i, c.Query)
		}
		seen[c.Query] = true
		got := outcome(c.Query, cat, publicFacts)
		got.Comment, got.Query = c.Comment, c.Query
		if strings.Contains(got.Refusal, notRefusal) {
			t.Errorf("%s case %d (%s): %s: every error of the parser is a refusal (ir.RefusedError)", file, i, c.Comment, got.Refusal)
		}
		if *update {
			*c = got
			continue
		}
		if (c.Bound == nil) == (c.Refusal == "") {
			t.Errorf("%s case %d (%s): want exactly one of \"bound\" and \"refusal\"; run with -update", file, i, c.Comment)
			continue
		}
		want, have := marshal(t, c), marshal(t, got)
		if !bytes.Equal(want, have) {
			t.Errorf("%s case %d (%s):\n%s\n got %s\nwant %s", file, i, c.Comment, c.Query, have, want)
		}
	}
	if *update {
		if err := os.WriteFile(file, marshal(t, cases), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// marshal spells v as the case files do: indented, with <, > and &
// as they are.
func marshal(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// notRefusal marks an outcome that is an error other than a refusal, or
// a panic: TestCases fails on it whatever the case file says.
const notRefusal = "not a refusal: "

// outcome parses sql and renders what it binds to or the refusal; a
// refusal of ir.Relation (the relation a plan aggregates) is prefixed
// "relation: ".
func outcome(sql string, cat *catalog.Catalog, public map[string]*ir.PublicFacts) (out parseCase) {
	defer func() {
		if r := recover(); r != nil {
			out = parseCase{Refusal: notRefusal + fmt.Sprintf("panic: %v", r)}
		}
	}()
	q, err := ParseWith(sql, cat, public)
	if err != nil {
		return refusal("", err)
	}
	b, err := renderQuery(q, cat)
	if err != nil {
		return refusal("relation: ", err)
	}
	return parseCase{Bound: b}
}

// refusal renders err, after prefix.
func refusal(prefix string, err error) parseCase {
	var re *ir.RefusedError
	if !errors.As(err, &re) {
		return parseCase{Refusal: prefix + notRefusal + err.Error()}
	}
	return parseCase{Refusal: prefix + re.Reason, Kind: kindNames[re.Kind]}
}

// kindNames spells the refusal kinds other than a plain refusal.
var kindNames = map[ir.RefusalKind]string{
	ir.KindSyntax:        "syntax",
	ir.KindUnknownTable:  "unknown table",
	ir.KindUnknownColumn: "unknown column",
}

// publicFacts are the facts of the public table days that the engine
// would read: each day once, two days of the weekend.
var publicFacts = map[string]*ir.PublicFacts{
	"days": {
		Values: map[string][]any{
			"day":     {int64(1), int64(2), int64(3), int64(4), int64(5), int64(6), int64(7)},
			"name":    {"Fri", "Mon", "Sat", "Sun", "Thu", "Tue", "Wed"},
			"weekend": {false, true},
		},
		Multiplicity: map[string]int64{"day": 1, "name": 1, "weekend": 5},
	},
}

// casesCatalog reads testdata/catalog.yaml with an empty file for every
// source (no stage before the engine reads data).
func casesCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"visits", "payments", "days", "events", "rows"} {
		if err := os.WriteFile(filepath.Join(dir, name+".csv"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := catalog.Parse(data, dir)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// columnFact spells what the relation says of one column: its type, its
// bounds and whether it can be NULL, e.g. "#e1: float [0, 120] nullable".
func columnFact(name, typ string, lo, hi *float64, nullable bool) string {
	s := name + ": " + typ
	if lo != nil && hi != nil {
		s += " [" + strconv.FormatFloat(*lo, 'f', -1, 64) + ", " + strconv.FormatFloat(*hi, 'f', -1, 64) + "]"
	}
	if nullable {
		s += " nullable"
	}
	return s
}

func sameBound(a, b *float64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
