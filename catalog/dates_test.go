package catalog

import (
	"strings"
	"testing"

	"github.com/dpstat/dpstat/schema"
)

func TestDateColumns(t *testing.T) {
	dir := writeSource(t)
	c, err := Parse([]byte(`budget: {epsilon: 1}
tables:
  people:
    source: d.csv
    columns:
      signup: {type: date, lower: "2024-01-01", upper: 2024-12-31}
      seen:   {type: timestamp, lower: "2024-01-01 00:00:00", upper: "2024-12-31 23:59:59.5"}
      day:    {type: date, values: ["2024-03-01", 2024-03-02]}
`), dir)
	if err != nil {
		t.Fatal(err)
	}
	tb := c.Table("people")
	s := tb.Column("signup")
	if *s.Lower != 19723 || *s.Upper != 19723+365 {
		t.Errorf("signup bounds = %v, %v; want 19723 (2024-01-01) and 20088", *s.Lower, *s.Upper)
	}
	ts := tb.Column("seen")
	if *ts.Lower != 19723*schema.MicrosPerDay || *ts.Upper != (19723+366)*schema.MicrosPerDay-500_000 {
		t.Errorf("seen bounds = %v, %v", *ts.Lower, *ts.Upper)
	}
	if v := tb.Column("day").Values; len(v) != 2 || v[0] != int64(19783) || v[1] != int64(19784) {
		t.Errorf("day values = %v", v)
	}
	if got := schema.FormatDate(19783); got != "2024-03-01" {
		t.Errorf("FormatDate = %s", got)
	}
	if got := schema.FormatTimestamp(19723*schema.MicrosPerDay - 1); got != "2023-12-31 23:59:59.999999" {
		t.Errorf("FormatTimestamp = %s", got)
	}
	if !strings.Contains(c.Summary(), "signup date [2024-01-01, 2024-12-31] (COUNT, GROUP BY date_trunc/EXTRACT)") ||
		!strings.Contains(c.Summary(), "day date values [2024-03-01, 2024-03-02] (COUNT, GROUP BY)") {
		t.Errorf("summary:\n%s", c.Summary())
	}
	for _, tc := range []struct{ col, want string }{
		{`{type: date, lower: 2024-02-30, upper: "2024-12-31"}`, `lower: "2024-02-30" is not a date: want YYYY-MM-DD`},
		{`{type: date, lower: 3, upper: "2024-12-31"}`, `lower = 3: a date column wants a date bound, e.g. "2024-01-01"`},
		{`{type: date, lower: "2024-12-31", upper: "2024-01-01"}`, `lower = 2024-12-31 is after upper = 2024-01-01`},
		{`{type: timestamp, lower: "1500-01-01", upper: "2024-01-01"}`, `want a timestamp from 1684 to 2255`},
		{`{type: date, values: [2024-01-01, nope]}`, `values[1] = "nope": "nope" is not a date`},
		{`{type: int, lower: "a", upper: 3}`, `lower = "a": want a number`},
	} {
		_, err := Parse([]byte("budget: {epsilon: 1}\ntables:\n  t:\n    source: d.csv\n    columns:\n      a: "+tc.col+"\n"), dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want one containing %q", tc.col, err, tc.want)
		}
	}
}
