package layers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/dpstat/dpstat/"

// layers ranks the module's folders from the bottom up: a package's layer
// is the one of the longest entry its path starts with. A production
// package may import a package of a lower layer, or one under its own
// entry; never one of its own layer under another entry (the stages parse
// and dpplan, the front ends server and pgwire stay apart), nor one
// above.
var layers = []struct {
	prefix string
	layer  int
}{
	{"random", 0}, {"accounting", 0}, {"catalog", 0}, {"engine", 0}, {"clients", 0},
	{"noise", 1}, {"audit", 1}, {"ledger", 1}, {"engine/postgres/pgtest", 1},
	{"mechanism", 2}, {"analyst", 2}, {"engine/duckdb", 2}, {"engine/postgres", 2}, {"engine/clickhouse", 2},
	{"ldp", 3}, {"engine/engines", 3},
	{"query/ir", 4}, {"query/internal", 4},
	{"query/parse", 5}, {"query/dpplan", 5},
	{"query/sqlgen", 6},
	{"query", 7},
	{"synth", 8}, {"suggest", 8}, {"collector", 8}, {"internal/querygen", 8}, {"answer", 8},
	{"query/enginetest", 9}, {"answer/queryanswer", 9}, {"answer/answertest", 9}, {"auditlog", 9},
	{"server", 10}, {"pgwire", 10},
	{"server/metrics", 11},
	{"internal", 12}, {"cmd", 13},
}

// entry is the longest entry of layers that path is under.
func entry(path string) (string, int, bool) {
	best, layer := "", -1
	for _, l := range layers {
		if (path == l.prefix || strings.HasPrefix(path, l.prefix+"/")) && len(l.prefix) > len(best) {
			best, layer = l.prefix, l.layer
		}
	}
	return best, layer, layer >= 0
}

// TestNoBackEdges reads the imports of every production Go file of the
// module (test files and the separate bench module aside) and checks the
// layering rule.
func TestNoBackEdges(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
				if n := d.Name(); strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules" {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		pkg := filepath.ToSlash(rel)
		if pkg == "." {
			return nil // the tools file pinning module versions
		}
		from, fromLayer, ok := entry(pkg)
		if !ok {
			t.Errorf("%s: package %s has no layer: add it to layers", p, pkg)
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if !strings.HasPrefix(path, module) {
				continue
			}
			to, toLayer, ok := entry(strings.TrimPrefix(path, module))
			switch {
			case !ok:
				t.Errorf("%s imports %s, which has no layer", p, path)
			case to == from:
			case toLayer >= fromLayer:
				t.Errorf("%s (layer %d, %s) imports %s (layer %d, %s): a package imports only lower layers", p, fromLayer, from, path, toLayer, to)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
