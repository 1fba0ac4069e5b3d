package schema

import (
	"testing"
	"time"
)

func TestDates(t *testing.T) {
	for _, c := range []struct {
		date string
		days int64
	}{
		{"1970-01-01", 0}, {"1969-12-31", -1}, {"2024-03-01", 19783}, {"0001-01-01", MinDate}, {"9999-12-31", MaxDate},
	} {
		d, err := ParseDate(c.date)
		if err != nil || d != c.days {
			t.Errorf("ParseDate(%q) = %d, %v; want %d", c.date, d, err, c.days)
		}
		if s := FormatDate(c.days); s != c.date {
			t.Errorf("FormatDate(%d) = %q, want %q", c.days, s, c.date)
		}
		y, m, dd := DateOf(c.days)
		if got := DaysOf(y, m, dd); got != c.days {
			t.Errorf("DaysOf(DateOf(%d)) = %d", c.days, got)
		}
	}
	if got := DaysOf(2024, time.February, 30); got != 19783 {
		t.Errorf("DaysOf(2024-02-30) = %d, want 19783 (normalized to 2024-03-01)", got)
	}
	if _, err := ParseDate("2024-13-01"); err == nil {
		t.Error("ParseDate accepted month 13")
	}
}

func TestTimestamps(t *testing.T) {
	for _, c := range []struct {
		in, out string
		us      int64
	}{
		{"1970-01-01 00:00:00", "1970-01-01 00:00:00", 0},
		{"1969-12-31 23:59:59.5", "1969-12-31 23:59:59.5", -500_000},
		{"2024-03-01", "2024-03-01 00:00:00", 19783 * MicrosPerDay},
		{"2024-03-01T13:45:00", "2024-03-01 13:45:00", 19783*MicrosPerDay + (13*3600+45*60)*1_000_000},
	} {
		us, err := ParseTimestamp(c.in)
		if err != nil || us != c.us {
			t.Errorf("ParseTimestamp(%q) = %d, %v; want %d", c.in, us, err, c.us)
		}
		if s := FormatTimestamp(c.us); s != c.out {
			t.Errorf("FormatTimestamp(%d) = %q, want %q", c.us, s, c.out)
		}
	}
	if _, err := ParseTimestamp("3000-01-01"); err == nil {
		t.Error("ParseTimestamp accepted a timestamp beyond 2^53 microseconds")
	}
}

func TestDayAndFormatValue(t *testing.T) {
	for _, c := range []struct {
		typ  Type
		v    any
		day  int64
		text string
	}{
		{Date, int64(19783), 19783, "2024-03-01"},
		{Timestamp, int64(-1), -1, "1969-12-31 23:59:59.999999"},
		{Timestamp, int64(19783 * MicrosPerDay), 19783, "2024-03-01 00:00:00"},
		{Int, int64(7), 7, "7"},
		{Text, "a", 0, "a"},
	} {
		if n, ok := c.v.(int64); ok && Day(c.typ, n) != c.day {
			t.Errorf("Day(%s, %d) = %d, want %d", c.typ, n, Day(c.typ, n), c.day)
		}
		if s := FormatValue(c.typ, c.v); s != c.text {
			t.Errorf("FormatValue(%s, %v) = %q, want %q", c.typ, c.v, s, c.text)
		}
	}
	if !Date.Temporal() || !Timestamp.Temporal() || Int.Temporal() {
		t.Error("Temporal: want date and timestamp only")
	}
}

func TestReserved(t *testing.T) {
	for name, want := range map[string]bool{"_dp_u": true, "_DP_k0": true, "_dp": false, "dp_u": false, "": false} {
		if Reserved(name) != want {
			t.Errorf("Reserved(%q) = %v, want %v", name, !want, want)
		}
	}
}

func TestNamed(t *testing.T) {
	names := []string{"Age", "age", "Sex"}
	id := func(s string) string { return s }
	for _, c := range []struct{ want, got string }{
		{"age", "age"}, {"Age", "Age"}, {"AGE", "Age"}, {"sex", "Sex"}, {"income", ""},
	} {
		if got := Named(names, id, c.want); got != c.got {
			t.Errorf("Named(%q) = %q; want %q", c.want, got, c.got)
		}
	}
}
