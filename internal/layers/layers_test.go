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
	{"random", 0}, {"epoch", 0}, {"schema", 0}, {"accounting", 1}, {"catalog", 1}, {"engine", 1}, {"clients", 1},
	{"noise", 2}, {"audit", 2}, {"ledger", 2}, {"engine/postgres/pgtest", 2},
	{"mechanism", 3}, {"analyst", 3}, {"engine/duckdb", 3}, {"engine/postgres", 3}, {"engine/clickhouse", 3},
	{"ldp", 4}, {"engine/engines", 4},
	{"query/ir", 5}, {"query/internal", 5},
	{"query/parse", 6}, {"query/dpplan", 6},
	{"query/sqlgen", 7},
	{"query", 8},
	{"synth", 9}, {"suggest", 9}, {"collector", 9}, {"internal/querygen", 9}, {"answer", 9},
	{"query/enginetest", 10}, {"answer/queryanswer", 10}, {"answer/answertest", 10}, {"auditlog", 10},
	{"server", 11}, {"pgwire", 11},
	{"server/metrics", 12},
	{"internal", 13}, {"cmd", 14},
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

// schemaOwners are the query stages that read tables only as the IR binds
// them (ir.Table, parse.Bind), never the catalog's declaration; with
// their subfolders.
var schemaOwners = []string{"query/ir", "query/dpplan", "query/sqlgen"}

// TestStagesDoNotImportCatalog checks that no production file of the
// stages in schemaOwners imports package catalog (or a package under
// it): the parser binds the catalog once into the IR, and the planner and
// the SQL generator read the IR's tables.
func TestStagesDoNotImportCatalog(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	for _, stage := range schemaOwners {
		dir := filepath.Join(root, filepath.FromSlash(stage))
		files := 0
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if n := d.Name(); p != dir && (strings.HasPrefix(n, ".") || n == "testdata") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			files++
			f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, im := range f.Imports {
				path, _ := strconv.Unquote(im.Path.Value)
				if path == module+"catalog" || strings.HasPrefix(path, module+"catalog/") {
					t.Errorf("%s imports %s: the stage %s reads tables as the IR binds them (ir.Table, built by parse.Bind), not the catalog", p, path, stage)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if files == 0 {
			t.Errorf("stage %s has no production Go file: update schemaOwners", stage)
		}
	}
}
