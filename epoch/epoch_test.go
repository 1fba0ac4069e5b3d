package epoch

import (
	"testing"
	"time"
)

func day(s string) int64 {
	t, _ := time.Parse("2006-01-02", s)
	return floorDiv(t.Unix(), 86400)
}

func TestCalendar(t *testing.T) {
	cases := []struct {
		every, date, label, start, end string
	}{
		{Day, "2024-03-15", "2024-03-15", "2024-03-15", "2024-03-15"},
		{Week, "2024-03-15", "2024-W11", "2024-03-11", "2024-03-17"},
		{Week, "1970-01-01", "1970-W01", "1969-12-29", "1970-01-04"},
		{Week, "2021-01-03", "2020-W53", "2020-12-28", "2021-01-03"},
		{Month, "2024-02-29", "2024-02", "2024-02-01", "2024-02-29"},
		{Month, "1969-12-31", "1969-12", "1969-12-01", "1969-12-31"},
		{Quarter, "2024-05-01", "2024-Q2", "2024-04-01", "2024-06-30"},
		{Year, "2023-07-04", "2023", "2023-01-01", "2023-12-31"},
		{Month, "0001-01-01", "0001-01", "0001-01-01", "0001-01-31"},
	}
	for _, c := range cases {
		i := Of(c.every, day(c.date))
		if got := Label(c.every, i); got != c.label {
			t.Errorf("%s of %s: label %s, want %s", c.every, c.date, got, c.label)
		}
		if got := Start(c.every, i); got != day(c.start) {
			t.Errorf("%s of %s: start %d, want %s (%d)", c.every, c.date, got, c.start, day(c.start))
		}
		if got := End(c.every, i); got != day(c.end) {
			t.Errorf("%s of %s: end %d, want %s", c.every, c.date, got, c.end)
		}
		if Of(c.every, Start(c.every, i)) != i || Of(c.every, End(c.every, i)) != i || Of(c.every, End(c.every, i)+1) != i+1 {
			t.Errorf("%s of %s: start/end not in epoch %d", c.every, c.date, i)
		}
	}
}

func TestRange(t *testing.T) {
	r := Range{Every: Month, From: Of(Month, day("2024-01-10")), To: Of(Month, day("2024-12-01"))}
	if r.Len() != 12 || r.String() != "2024-01..2024-12" || len(r.Labels()) != 12 || r.Validate() != nil {
		t.Fatalf("range %v: len %d, labels %v", r, r.Len(), r.Labels())
	}
	for _, bad := range []Range{{Every: "fortnight"}, {Every: Day, From: 2, To: 1}, {Every: Day, From: 0, To: MaxRange}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
	if got := Compact(Month, []int64{r.From, r.From + 1, r.From + 2, r.From + 5}); got != "2024-01..2024-03, 2024-06" {
		t.Errorf("Compact = %q", got)
	}
	for _, c := range []struct {
		in, out string
		ok      bool
	}{{Day, Month, true}, {Month, Year, true}, {Week, Month, false}, {Month, Week, false}, {Quarter, Year, true}, {Year, Quarter, false}} {
		if Nests(c.in, c.out) != c.ok {
			t.Errorf("Nests(%s, %s) != %v", c.in, c.out, c.ok)
		}
	}
}

func TestWithin(t *testing.T) {
	// 2024-01-01 is day 19723, 2024-03-31 day 19813.
	r := Within(Month, 19723, 19813)
	if r.Every != Month || r.From != Of(Month, 19723) || r.To != Of(Month, 19813) || r.To-r.From != 2 {
		t.Errorf("Within(month, 2024-01-01, 2024-03-31) = %+v; want three months", r)
	}
}
