package pgwire

import (
	"strings"
	"testing"
)

func TestSplitStatements(t *testing.T) {
	tests := []struct {
		name, sql string
		want      []string
		err       bool
	}{
		{"one", "SELECT 1", []string{"SELECT 1"}, false},
		{"trailing semicolon", "SELECT 1;", []string{"SELECT 1"}, false},
		{"two", "SET a = 1; SELECT 2", []string{"SET a = 1", "SELECT 2"}, false},
		{"semicolon in string", "SELECT ';' ; SELECT 2", []string{"SELECT ';'", "SELECT 2"}, false},
		{"doubled quote", "SELECT 'it''s;'", []string{"SELECT 'it''s;'"}, false},
		{"escape string with backslash quote", `SELECT E'it\'s; here'; SELECT 2`, []string{`SELECT E'it\'s; here'`, "SELECT 2"}, false},
		{"semicolon in identifier", `SELECT "a;b"`, []string{`SELECT "a;b"`}, false},
		{"line comment", "SELECT 1 -- ; DROP\n", []string{"SELECT 1 -- ; DROP"}, false},
		{"block comment", "SELECT /* ; /* nested ; */ */ 1", []string{"SELECT /* ; /* nested ; */ */ 1"}, false},
		{"dollar quote", "SELECT $x$;$x$", []string{"SELECT $x$;$x$"}, false},
		{"only comments", "-- hi\n/* x */ ;", nil, false},
		{"not SQL is kept for the parser to refuse", "SELEKT 1; DROP x", []string{"SELEKT 1", "DROP x"}, false},
		{"multibyte text", "SELECT 'ü;'; SELECT 2", []string{"SELECT 'ü;'", "SELECT 2"}, false},
		{"unterminated string", "SELECT 'x", nil, true},
		{"unterminated comment", "SELECT /* x", nil, true},
		{"unterminated dollar", "SELECT $q$ x", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := splitStatements(tc.sql)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestBindKeepsParametersValues(t *testing.T) {
	tests := []struct {
		name  string
		sql   string
		value string
		oid   uint32
		want  string
	}{
		{"number", "SELECT COUNT(*) FROM t WHERE a > $1", "5", 0, "SELECT count(*) FROM t WHERE a > 5"},
		{"negative number after a minus", "SELECT COUNT(*) FROM t WHERE a >-$1", "-5", 0, "SELECT count(*) FROM t WHERE a > (- -5)"},
		{"decimal", "SELECT COUNT(*) FROM t WHERE a > $1", "2.5", oidFloat8, "SELECT count(*) FROM t WHERE a > 2.5"},
		{"large integer", "SELECT COUNT(*) FROM t WHERE a > $1", "12345678901", oidInt8, "SELECT count(*) FROM t WHERE a > 12345678901"},
		{"string", "SELECT COUNT(*) FROM t WHERE s = $1", "Male", 0, "SELECT count(*) FROM t WHERE s = 'Male'"},
		{"quote injection", "SELECT COUNT(*) FROM t WHERE s = $1", "x'; DROP TABLE t; --", 0, "SELECT count(*) FROM t WHERE s = 'x''; DROP TABLE t; --'"},
		{"number-looking injection", "SELECT COUNT(*) FROM t WHERE a > $1", "1) OR (1=1", 0, "SELECT count(*) FROM t WHERE a > '1) OR (1=1'"},
		{"text type keeps digits a string", "SELECT COUNT(*) FROM t WHERE s = $1", "42", oidText, "SELECT count(*) FROM t WHERE s = '42'"},
		{"placeholder inside a string is not one", "SELECT COUNT(*) FROM t WHERE s = '$1' AND a > $1", "3", 0, "SELECT count(*) FROM t WHERE s = '$1' AND a > 3"},
		{"backslash stays a character", "SELECT COUNT(*) FROM t WHERE s = $1", `\'`, 0, `SELECT count(*) FROM t WHERE s = E'\\'''`},
		{"boolean", "SELECT COUNT(*) FROM t WHERE b = $1", "t", oidBool, "SELECT count(*) FROM t WHERE b = true"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			si, err := readStatement(tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			c, err := constant([]byte(tc.value), tc.oid, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := boundSQL(tc.sql, si, []*pgNode{c})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
			st, err := splitStatements(got)
			if err != nil || len(st) != 1 {
				t.Fatalf("bound text splits into %d statements (%v)", len(st), err)
			}
		})
	}
	for _, bad := range []struct {
		name  string
		value string
		oid   uint32
	}{
		{"NUL byte", "a\x00b", 0},
		{"invalid UTF-8", "\xff", 0},
		{"not a number for int8", "1; DROP", oidInt8},
		{"NaN for float8", "NaN", oidFloat8},
		{"not a boolean", "maybe", oidBool},
	} {
		t.Run(bad.name, func(t *testing.T) {
			if _, err := constant([]byte(bad.value), bad.oid, 0); err == nil {
				t.Fatalf("constant(%q) accepted", bad.value)
			}
		})
	}
	si, _ := readStatement("SELECT $2")
	if _, err := boundSQL("SELECT $2", si, []*pgNode{intConst(1)}); err == nil {
		t.Fatal("$2 with one parameter accepted")
	}
	if _, err := readStatement("SELECT $0"); err == nil {
		t.Fatal("$0 accepted")
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		sql  string
		want stmtKind
	}{
		{"", kindEmpty}, {"-- ping", kindEmpty}, {"BEGIN", kindTxn}, {"commit", kindTxn}, {"ROLLBACK", kindTxn},
		{"SET dpstat.epsilon = 1", kindSet}, {"RESET ALL", kindSet}, {"DISCARD ALL", kindSet}, {"SHOW dpstat.delta", kindShow},
		{"SHOW TRANSACTION ISOLATION LEVEL", kindShow},
		{"SELECT version()", kindCatalog}, {"SELECT 1", kindCatalog}, {"SELECT * FROM pg_catalog.pg_class", kindCatalog},
		{"SELECT c.relname FROM pg_class c", kindCatalog}, {"SELECT table_name FROM information_schema.tables", kindCatalog},
		{"SELECT COUNT(*) FROM adult", kindDP},
		{"SELECT COUNT(*) FROM adult WHERE s = 'pg_catalog'", kindDP},
		{"SELECT COUNT(*) FROM generate_series(1, 10)", kindDP},
		{"DROP TABLE adult", kindDP},
		{"SELEKT 1", kindDP},
	}
	for _, tc := range tests {
		t.Run(tc.sql, func(t *testing.T) {
			if got := classify(tc.sql); got != tc.want {
				t.Fatalf("classify(%q) = %v, want %v", tc.sql, got, tc.want)
			}
		})
	}
}

// TestCatalogCacheSharesAndCloses checks that sessions with the same key
// share one catalog database, built once, and that the last to let go of it
// closes it.
func TestCatalogCacheSharesAndCloses(t *testing.T) {
	var cc catalogCache
	builds := 0
	build := func() (*catalogDB, error) { builds++; return &catalogDB{}, nil }
	held := map[string]*catalogDB{}
	acquire := func(session, key string) func() {
		return func() { held[session], _ = cc.acquire(key, build) }
	}
	release := func(session string) func() { return func() { cc.release(held[session]) } }
	steps := []struct {
		name             string
		do               func()
		wantBuilds, open int
	}{
		{"first session of alice builds", acquire("a1", "alice"), 1, 1},
		{"second session of alice shares", acquire("a2", "alice"), 1, 1},
		{"bob gets his own", acquire("b", "bob"), 2, 2},
		{"one alice session leaves", release("a1"), 2, 2},
		{"the last alice session leaves", release("a2"), 2, 1},
		{"alice comes back: built again", acquire("a3", "alice"), 3, 2},
	}
	for _, st := range steps {
		st.do()
		if builds != st.wantBuilds || len(cc.dbs) != st.open {
			t.Fatalf("%s: %d builds and %d open, want %d and %d", st.name, builds, len(cc.dbs), st.wantBuilds, st.open)
		}
	}
	if held["a1"] != held["a2"] || held["a1"] == held["b"] {
		t.Fatal("alice's sessions do not share one database, or bob shares hers")
	}
}
