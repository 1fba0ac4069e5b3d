package ir

import (
	"testing"
	"time"

	"github.com/dpstat/dpstat/catalog"
)

// TestCalendar checks dpstat's calendar arithmetic against the time
// package over days before and after 1970.
func TestCalendar(t *testing.T) {
	for d := int64(-800); d <= 800; d++ {
		tm := time.Unix(d*86400, 0).UTC()
		if got, want := isoDow(d), int64((int(tm.Weekday())+6)%7+1); got != want {
			t.Fatalf("isoDow(%d) = %d, want %d", d, got, want)
		}
		if got := truncDay("week", d); time.Unix(got*86400, 0).UTC().Weekday() != time.Monday || d-got < 0 || d-got > 6 {
			t.Fatalf("truncDay(week, %d) = %d", d, got)
		}
	}
	for _, tc := range []struct {
		from   string
		months int64
		want   string
	}{
		{"2024-01-31", 1, "2024-02-29"}, {"2023-01-31", 1, "2023-02-28"}, {"2024-03-31", -1, "2024-02-29"},
		{"2024-05-31", 1, "2024-06-30"}, {"2024-12-15", 1, "2025-01-15"}, {"2024-01-15", -13, "2022-12-15"},
		{"1969-12-31", 2, "1970-02-28"},
	} {
		d, err := catalog.ParseDate(tc.from)
		if err != nil {
			t.Fatal(err)
		}
		if got := catalog.FormatDate(AddMonths(d, tc.months)); got != tc.want {
			t.Errorf("%s + %d months = %s, want %s", tc.from, tc.months, got, tc.want)
		}
	}
}
