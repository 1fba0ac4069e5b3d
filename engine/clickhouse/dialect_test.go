package clickhouse

import (
	"strings"
	"testing"

	"github.com/dpstat/dpstat/engine"
)

// TestDialectSpellings: the spellings the generator relies on.
func TestDialectSpellings(t *testing.T) {
	d := Dialect
	lit := func(v any) string {
		s, err := engine.Literal(d, v)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct{ name, got, want string }{
		{"string with quotes and a backslash", lit(`a'b"c\d`), `'a\'b\x22c\\d'`},
		{"identifier", d.QuoteIdent(`we"ird\`), `"we\"ird\\"`},
		{"true", lit(true), "1"},
		{"false", lit(false), "0"},
		{"float", lit(1.5), "toFloat64(1.5)"},
		{"int clamp skips NULL", engine.Least(d, engine.Greatest(d, `"v"`, "0"), "10"), `least(coalesce(greatest(coalesce("v", 0), 0), 10), 10)`},
		{"float clamp converts the column", engine.Greatest(d, `"i"`, lit(-5.0)), `greatest(coalesce(toFloat64("i"), toFloat64(-5.0)), toFloat64(-5.0))`},
		{"two columns", engine.Least(d, `"a"`, `"b"`), `least(coalesce("a", "b"), coalesce("b", "a"))`},
		{"rounding cast", engine.CastInt(d, "x", engine.Integer32), "CAST(round(x) AS Nullable(Int32))"},
		{"row key", d.(engine.LimitBy).RowKey(7, []string{"u"}), "cityHash64(toUInt64(7), isNull(u), assumeNotNull(u))"},
		{"keep first", d.(engine.LimitBy).KeepFirst("h", []string{"u", "k0"}, 2), "ORDER BY h LIMIT 2 BY u, k0"},
		{"exact sum", d.ExactSum("x"), "sum(toDecimal128(x, 0))"},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, c.got, c.want)
		}
	}
	if strings.Contains(d.QuoteString(`"x"`), `"`) {
		t.Errorf("a string literal holds a double quote: %s", d.QuoteString(`"x"`))
	}
}

// TestBindingsInStatements: a bound table's reads are replaced by its
// projection (as a subquery when the statement joins or the table cannot be
// inlined), and nothing else is touched.
func TestBindingsInStatements(t *testing.T) {
	e := &Engine{bound: map[string]*Table{
		"visits": {Relation: `"db"."visits_all"`, projection: `SELECT "pid" AS "pid", "v" AS "v" FROM "db"."visits_all"`,
			columns: map[string]string{"pid": `"pid"`, "v": `if(isNaN("v"), NULL, "v" + toFloat64(0))`}},
		"regions": {Relation: `"db"."regions"`, projection: `SELECT "r" AS "r" FROM "db"."regions"`},
	}}
	for _, c := range []struct{ name, sql, want string }{
		{"inlined", `SELECT "pid" AS u, sum(("v")) AS s0 FROM "visits" WHERE "v" > 0 GROUP BY u`,
			`SELECT ("pid") AS u, sum(((if(isNaN("v"), NULL, "v" + toFloat64(0))))) AS s0 FROM "db"."visits_all" WHERE (if(isNaN("v"), NULL, "v" + toFloat64(0))) > 0 GROUP BY u`},
		{"a literal is not a name", `SELECT count(*) FROM "visits" WHERE "pid" = 'visits'`,
			`SELECT count(*) FROM "db"."visits_all" WHERE ("pid") = 'visits'`},
		{"joined: subqueries", `SELECT count(*) FROM "visits" AS "t0" JOIN "regions" AS "t1" ON "t0"."v" = "t1"."r"`,
			`SELECT count(*) FROM (SELECT "pid" AS "pid", "v" AS "v" FROM "db"."visits_all") AS "t0" JOIN (SELECT "r" AS "r" FROM "db"."regions") AS "t1" ON "t0"."v" = "t1"."r"`},
		{"not inlinable: subquery with its name", `SELECT count(*) FROM "regions"`,
			`SELECT count(*) FROM (SELECT "r" AS "r" FROM "db"."regions") AS "regions"`},
		{"a longer name is another table", `SELECT count(*) FROM "regions""x"`, `SELECT count(*) FROM "regions""x"`},
		{"only the stage that reads the table, not its aliases", `SELECT count(*), max("v") FROM (SELECT "pid" AS "pid", max("v") AS "v" FROM "visits" WHERE "v" > 0 AND "pid" != ')' GROUP BY "pid") AS "t0" WHERE "v" IS NOT NULL`,
			`SELECT count(*), max("v") FROM (SELECT ("pid") AS "pid", max((if(isNaN("v"), NULL, "v" + toFloat64(0)))) AS "v" FROM "db"."visits_all" WHERE (if(isNaN("v"), NULL, "v" + toFloat64(0))) > 0 AND ("pid") != ')' GROUP BY ("pid")) AS "t0" WHERE "v" IS NOT NULL`},
		{"a stage written twice is read through the projection", `SELECT 1 FROM (SELECT "v" FROM "visits") AS a JOIN (SELECT "v" FROM "visits") AS b USING v`,
			`SELECT 1 FROM (SELECT "v" FROM (SELECT "pid" AS "pid", "v" AS "v" FROM "db"."visits_all") AS "visits") AS a JOIN (SELECT "v" FROM (SELECT "pid" AS "pid", "v" AS "v" FROM "db"."visits_all") AS "visits") AS b USING v`},
		{"a stage written twice is inlined twice", `SELECT count(*) FROM (SELECT "pid" AS u FROM "visits") AS a WHERE u IN (SELECT "pid" AS u FROM "visits" WHERE "pid" > 0)`,
			`SELECT count(*) FROM (SELECT ("pid") AS u FROM "db"."visits_all") AS a WHERE u IN (SELECT ("pid") AS u FROM "db"."visits_all" WHERE ("pid") > 0)`},
	} {
		if got := e.withBindings(c.sql); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

// TestDateAndTextSpellings: the date and text functions are ClickHouse's,
// over days clamped to the range of a Date.
func TestDateAndTextSpellings(t *testing.T) {
	d := Dialect
	day := "CAST(least(greatest(x, 0), 49672) AS Nullable(Int64))"
	date := "toDate(CAST(" + day + " AS Nullable(UInt16)))"
	for _, c := range []struct{ name, got, want string }{
		{"month", engine.TruncDay(d, "month", "x"), "CAST(toStartOfMonth(" + date + ") AS Nullable(Int64))"},
		{"week", engine.TruncDay(d, "week", "x"), "(" + day + " - (toDayOfWeek(" + date + ") - 1))"},
		{"day", engine.TruncDay(d, "day", "x"), day},
		{"dow", engine.DatePart(d, "dow", "x"), "CAST((toDayOfWeek(" + date + ") % 7) AS Nullable(Int64))"},
		{"year", engine.DatePart(d, "year", "x"), "CAST(toYear(" + date + ") AS Nullable(Int64))"},
		{"lower changes ASCII letters only", mustText(t, d, "lower", "s"), "lower(s)"},
		{"length in code points", mustText(t, d, "length", "s"), "CAST(lengthUTF8(s) AS Nullable(Int64))"},
		{"trim spaces", mustText(t, d, "trim", "s"), "replaceRegexpOne(replaceRegexpOne(s, '^ +', ''), ' +$', '')"},
		{"concat skips NULL", mustText(t, d, "concat", "a", "b"), "concat(coalesce(a, ''), coalesce(b, ''))"},
		{"concat of one", mustText(t, d, "concat", "a"), "concat(coalesce(a, ''), '')"},
		{"starts_with", mustText(t, d, "starts_with", "s", "'p'"), "(substring(s, 1, length('p')) = 'p')"},
		{"substr by code points", mustText(t, d, "substr", "s", "2", "3"), "if(isNull(s), NULL, arrayStringConcat(arraySlice(extractAll(assumeNotNull(s), '(?s).'), 2, 3)))"},
		{"substr to the end", mustText(t, d, "substr", "s", "2"), "if(isNull(s), NULL, arrayStringConcat(arraySlice(extractAll(assumeNotNull(s), '(?s).'), 2)))"},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, c.got, c.want)
		}
	}
	if _, ok := engine.TextFunc(d, "reverse", []string{"s"}); ok {
		t.Error("an unknown text function was spelled")
	}
}

func mustText(t *testing.T, d engine.Dialect, name string, args ...string) string {
	t.Helper()
	s, ok := engine.TextFunc(d, name, args)
	if !ok {
		t.Fatalf("%s is not spelled", name)
	}
	return s
}

// TestEnumText: an Enum reads as text through its numbers, never through
// toString (which fails on the value stored under a NULL).
func TestEnumText(t *testing.T) {
	for _, c := range []struct{ typ, want string }{
		{"Enum8('a' = 1, 'b' = 2)", `multiIf(CAST("e" AS Nullable(Int16)) = 1, 'a', CAST("e" AS Nullable(Int16)) = 2, 'b', CAST(NULL AS Nullable(String)))`},
		{`Enum16('it\'s' = -3, 'x, y' = 300)`, `multiIf(CAST("e" AS Nullable(Int16)) = -3, 'it\'s', CAST("e" AS Nullable(Int16)) = 300, 'x, y', CAST(NULL AS Nullable(String)))`},
	} {
		got, err := enumText(`"e"`, c.typ)
		if err != nil || got != c.want {
			t.Errorf("%s: got %s (%v), want %s", c.typ, got, err, c.want)
		}
	}
	for _, typ := range []string{"Enum8()", "Enum8('a' = x)", "Enum8('a)"} {
		if _, err := enumText(`"e"`, typ); err == nil {
			t.Errorf("%s: read", typ)
		}
	}
}
