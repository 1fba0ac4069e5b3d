// Package sqlgentest checks, on a running engine, what the SQL generator
// assumes of the engine's arithmetic: that every scalar expression's value
// lies in the range the IR derived for it. The cases are spelled by the SQL
// generator's tests (which see its internals) and evaluated here, so that
// an engine whose test cannot import the generator's internals (ClickHouse,
// whose test server lives above the query stages) runs the same check.
package sqlgentest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/query/ir"
)

// RangeCase is one scalar expression as the generator spells it, with the
// range the IR derived for it.
type RangeCase struct {
	// Expr is the expression as an analyst writes it.
	Expr string `json:"expr"`
	// Raw is the expression as the engine computes it, before the
	// generator maps it into its derived range.
	Raw string `json:"raw"`
	// Clamped is the value the generated SQL uses: Raw mapped into
	// [Lo, Hi].
	Clamped string `json:"clamped"`
	// Lo and Hi are the derived range; Nullable says whether the IR lets
	// the value be NULL.
	Lo       float64 `json:"lo"`
	Hi       float64 `json:"hi"`
	Nullable bool    `json:"nullable"`
	// Key, when set, is the group key the generator makes of a
	// whole-number expression; it must lie in [KeyLo, KeyHi] or be NULL.
	Key   string `json:"key,omitempty"`
	KeyLo int64  `json:"key_lo,omitempty"`
	KeyHi int64  `json:"key_hi,omitempty"`
}

// Columns are the input columns the cases compute over, in the order
// Inputs spells them: b a large float, s a small float, h a float just
// below 2^53, n a small int, a a nullable int, g an int spanning
// ±(2^53 − 1), d a date and ts a timestamp (as the engines' raw views
// expose them: days and microseconds since 1970-01-01), w a text.
var Columns = []string{"b", "s", "h", "n", "a", "g", "d", "ts", "w"}

// Floats and Ints are the inputs: every extreme value a double or a
// BIGINT can hold, the integers around 2^53, and the values that made the
// double arithmetic of % and ROUND leave their range.
var (
	Floats = []string{"NULL", "'NaN'", "'Infinity'", "'-Infinity'", "0", "'-0.0'", "0.5", "-0.5", "1.5", "-1.5", "10", "-10",
		"9007199254740991", "9007199254740993", "-9007199254740993", "9000000000000001", "9007199254740977", "9007199254740988",
		"1e-320", "5e-324", "1.7976931348623157e308", "-1.7976931348623157e308", "9.2233720368547758e18"}
	Ints = []string{"NULL", "0", "-1", "1", "7", "999", "-1000", "9007199254740991", "9007199254740992", "9007199254740993",
		"-9007199254740993", "9223372036854775807", "-9223372036854775808"}
	// Days and Micros are dates and timestamps: the declared bounds'
	// neighbours, the first and last days of the years 1 and 9999, and
	// the 64-bit extremes.
	Days = []string{"NULL", "0", "18262", "18261", "20088", "20089", "-719162", "2932896", "-1",
		"9223372036854775807", "-9223372036854775808", "19000"}
	Micros = []string{"NULL", "0", "1577836800000000", "1577836799999999", "1735689599999999", "1735689600000000",
		"-62135596800000000", "253402300799999999", "9223372036854775807", "-9223372036854775808", "1640995200123456"}
	// Texts are strings: empty, listed and unlisted, with one-, two-,
	// three- and four-byte UTF-8 and characters whose case mapping
	// changes their length.
	Texts = []string{"NULL", "''", "'a'", "'bb'", "'é'", "'😀x'", "' Ab '", "'😀😀😀😀😀😀😀😀'", "'ß'", "'İ'", "'ﬃ'", "'x\ty'", "'€'"}
)

// Inputs spells the inputs as a derived table t over Columns in dialect
// d: one SELECT of constants per row, joined by UNION ALL (a form every
// engine takes, unlike a VALUES list).
func Inputs(d engine.Dialect) string {
	nf, ni := len(Floats), len(Ints)
	dbl, big := d.TypeName(engine.Double), d.TypeName(engine.Integer)
	// Floats are cast from text: ClickHouse's parser refuses a
	// subnormal literal such as 1e-320.
	f := func(i int) string {
		v := Floats[i%nf]
		if v != "NULL" && !strings.HasPrefix(v, "'") {
			v = "'" + v + "'"
		}
		return "CAST(" + v + " AS " + dbl + ")"
	}
	n := func(i int) string { return "CAST(" + Ints[i%ni] + " AS " + big + ")" }
	day := func(i int) string { return "CAST(" + Days[i%len(Days)] + " AS " + big + ")" }
	micro := func(i int) string { return "CAST(" + Micros[i%len(Micros)] + " AS " + big + ")" }
	text := func(i int) string { return "CAST(" + Texts[i%len(Texts)] + " AS " + d.TypeName(engine.Text) + ")" }
	var rows []string
	for i := range nf {
		for j := range ni {
			vals := []string{f(i), f(i + j), f(7*i + j), n(j), n(i + j), n(3*j + i), day(i + 2*j), micro(2*i + j), text(i*j + i)}
			for k := range vals {
				vals[k] += " AS " + d.QuoteIdent(Columns[k])
			}
			rows = append(rows, "SELECT "+strings.Join(vals, ", "))
		}
	}
	return "(" + strings.Join(rows, " UNION ALL ") + ") AS t"
}

// LoadRangeCases reads the cases a generator test wrote as JSON.
func LoadRangeCases(path string) ([]RangeCase, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cs []RangeCase
	if err := json.Unmarshal(b, &cs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cs, nil
}

// CheckRanges evaluates every case over the inputs on eng and fails t
// where a value leaves its derived range, is NULL where the IR says it
// cannot be, or where a group key is not one of the planned keys. The
// cases run as one statement (a server parses the inputs once); where it
// fails, each case runs alone to say which one the engine refuses.
func CheckRanges(t *testing.T, eng engine.Engine, cases []RangeCase) {
	d := eng.Dialect()
	from := Inputs(d)
	quoted := make([]string, len(Columns))
	for i, c := range Columns {
		quoted[i] = d.QuoteIdent(c)
	}
	var items []string
	first := make([]int, len(cases))
	for i, c := range cases {
		first[i] = len(items)
		items = append(items, caseItems(c)...)
	}
	rows, err := eng.Query(context.Background(), "SELECT "+strings.Join(items, ", ")+", "+strings.Join(quoted, ", ")+" FROM "+from)
	if err != nil {
		for _, c := range cases {
			if _, err := eng.Query(context.Background(), "SELECT "+strings.Join(caseItems(c), ", ")+" FROM "+from); err != nil {
				t.Errorf("%s: the engine failed: %v", c.Expr, err)
			}
		}
		t.Fatalf("the engine failed on the cases together: %v", err)
	}
	if want := len(Floats) * len(Ints); len(rows.Rows) != want {
		t.Fatalf("the inputs gave %d rows, want %d", len(rows.Rows), want)
	}
	for i, c := range cases {
		t.Run(c.Expr, func(t *testing.T) {
			n := len(caseItems(c))
			for _, row := range rows.Rows {
				if t.Failed() && testing.Short() {
					break
				}
				checkRow(t, c, row[first[i]:first[i]+n], fmt.Sprint(row[len(items):]))
			}
		})
	}
}

// caseItems are the select items of a case: the expression, its clamped
// value and, for a range key, the key.
func caseItems(c RangeCase) []string {
	if c.Key != "" {
		return []string{c.Raw, c.Clamped, c.Key}
	}
	return []string{c.Raw, c.Clamped}
}

// checkRow checks one row of a case's results; in spells its inputs.
func checkRow(t *testing.T, c RangeCase, row []any, in string) {
	t.Helper()
	for i, what := range []string{"the expression", "the clamped value"} {
		v := row[i]
		if v == nil {
			if !c.Nullable {
				t.Errorf("%s is NULL for %s, but the IR says it cannot be", what, in)
			}
			continue
		}
		x, ok := ir.Number(v)
		if !ok || !(x >= c.Lo && x <= c.Hi) {
			t.Errorf("%s is %v for %s, outside the derived range [%s, %s]", what, v,
				in, strconv.FormatFloat(c.Lo, 'g', -1, 64), strconv.FormatFloat(c.Hi, 'g', -1, 64))
		}
	}
	if c.Key != "" && row[2] != nil {
		k, ok := row[2].(int64)
		if !ok || k < c.KeyLo || k > c.KeyHi {
			t.Errorf("the key is %v (%T) for %s, not one of [%d, %d]", row[2], row[2], in, c.KeyLo, c.KeyHi)
		}
	}
}
