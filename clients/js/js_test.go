package js

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/ldp"
)

// fixtureCase is one randomizer whose exact parameters the JavaScript tests
// check the client against.
type fixtureCase struct {
	Name   string     `json:"name"`
	Value  int        `json:"value"`
	Params ldp.Params `json:"params"`
	Range  []float64  `json:"range,omitempty"`
}

type hashCase struct {
	Seed uint32 `json:"seed"`
	V    uint32 `json:"v"`
	G    int    `json:"g"`
	Hash int    `json:"hash"`
}

type fixtures struct {
	Cases  []fixtureCase `json:"cases"`
	Hashes []hashCase    `json:"hashes"`
}

func buildFixtures(t *testing.T) []byte {
	t.Helper()
	var f fixtures
	for _, c := range []struct {
		name string
		o    ldp.Options
		v    int
	}{
		{"rr eps 1", ldp.Options{Mechanism: ldp.KindRR, Epsilon: 1, Domain: 2}, 1},
		{"krr eps 1 d 5", ldp.Options{Mechanism: ldp.KindKRR, Epsilon: 1, Domain: 5}, 2},
		{"krr eps 0.1 d 3", ldp.Options{Mechanism: ldp.KindKRR, Epsilon: 0.1, Domain: 3}, 0},
		{"oue eps 1 d 12", ldp.Options{Mechanism: ldp.KindOUE, Epsilon: 1, Domain: 12}, 5},
		{"sue eps 2 d 9", ldp.Options{Mechanism: ldp.KindSUE, Epsilon: 2, Domain: 9}, 8},
		{"olh eps 1 d 20", ldp.Options{Mechanism: ldp.KindOLH, Epsilon: 1, Domain: 20}, 7},
		{"olh eps 3 d 100", ldp.Options{Mechanism: ldp.KindOLH, Epsilon: 3, Domain: 100}, 42},
		{"hr eps 1 d 12", ldp.Options{Mechanism: ldp.KindHR, Epsilon: 1, Domain: 12}, 11},
	} {
		o, err := ldp.New(c.o)
		if err != nil {
			t.Fatal(err)
		}
		f.Cases = append(f.Cases, fixtureCase{Name: c.name, Value: c.v, Params: o.Params()})
	}
	m, err := ldp.NewMean(ldp.MeanOptions{Epsilon: 1, Lo: 10, Hi: 20})
	if err != nil {
		t.Fatal(err)
	}
	f.Cases = append(f.Cases, fixtureCase{Name: "mean eps 1 [10, 20]", Value: 13, Params: m.Params(), Range: []float64{10, 20}})
	x := uint32(12345)
	for i := range 64 {
		x = x*1664525 + 1013904223
		seed := x
		x = x*1664525 + 1013904223
		v := x % 5000
		g := []int{2, 4, 8, 21, 1 << 16}[i%5]
		f.Hashes = append(f.Hashes, hashCase{Seed: seed, V: v, G: g, Hash: ldp.Hash(seed, v, g)})
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestFixturesUpToDate checks that testdata/fixtures.json holds exactly the
// parameters and hash values the Go randomizers use now (set
// DPSTAT_UPDATE_FIXTURES=1 to rewrite it).
func TestFixturesUpToDate(t *testing.T) {
	want := buildFixtures(t)
	path := filepath.Join("testdata", "fixtures.json")
	if os.Getenv("DPSTAT_UPDATE_FIXTURES") == "1" {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is out of date with package ldp: run DPSTAT_UPDATE_FIXTURES=1 go test ./clients/js/", path)
	}
}

// TestNodeClientAgreesWithGo runs the JavaScript client's tests with Node's
// built-in runner; they check the client's output distribution against the
// exact probabilities of testdata/fixtures.json (see dpstat-ldp.test.mjs for
// the false-failure probabilities).
func TestNodeClientAgreesWithGo(t *testing.T) {
	// The Makefile sets DPSTAT_TEST_TOOLS to a fingerprint of the optional
	// tools installed; reading it makes go test's cache key depend on it,
	// so installing a tool reruns a test that skipped without it.
	os.Getenv("DPSTAT_TEST_TOOLS")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH: the JavaScript client's tests did not run (install Node.js 18 or later)")
	}
	cmd := exec.Command(node, "--test", "dpstat-ldp.test.mjs")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// TestDocsListEveryExport checks that docs/ldp.md documents every function
// the module exports, with its parameters as the module spells them.
func TestDocsListEveryExport(t *testing.T) {
	src, err := os.ReadFile("dpstat-ldp.mjs")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "ldp.md"))
	if err != nil {
		t.Fatal(err)
	}
	exports := regexp.MustCompile(`(?m)^export (?:async )?function (\w+)\(([^)]*)\)`).FindAllSubmatch(src, -1)
	if len(exports) < 10 {
		t.Fatalf("found %d exported functions", len(exports))
	}
	for _, m := range exports {
		// rng may be spelled optional (rng?) where the module defaults it.
		call := string(m[1]) + "(" + string(m[2]) + ")"
		optional := strings.Replace(call, "rng)", "rng?)", 1)
		if !bytes.Contains(doc, []byte(call)) && !bytes.Contains(doc, []byte(optional)) {
			t.Errorf("docs/ldp.md does not document %s", call)
		}
	}
}
