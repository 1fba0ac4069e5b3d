package ir

import (
	"testing"
	"time"

	"github.com/dpstat/dpstat/schema"
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
		d, err := schema.ParseDate(tc.from)
		if err != nil {
			t.Fatal(err)
		}
		if got := schema.FormatDate(AddMonths(d, tc.months)); got != tc.want {
			t.Errorf("%s + %d months = %s, want %s", tc.from, tc.months, got, tc.want)
		}
	}
}

// TestShiftedDates checks the spelling of a shift and that a shifted
// key's values are the unshifted function's over the shifted bounds, and
// that every shifted value of the bounds lands among them.
func TestShiftedDates(t *testing.T) {
	for _, tc := range []struct {
		shift int64
		want  string
	}{
		{0, "signup"}, {14 * schema.MicrosPerDay, "signup + INTERVAL '2 weeks'"}, {-schema.MicrosPerDay, "signup - INTERVAL '1 day'"},
		{-90 * MicrosPerMinute, "signup - INTERVAL '90 minutes'"}, {3 * MicrosPerHour, "signup + INTERVAL '3 hours'"}, {61_000_000, "signup + INTERVAL '61 seconds'"},
	} {
		if got := ShiftString("signup", tc.shift); got != tc.want {
			t.Errorf("ShiftString(%d) = %q, want %q", tc.shift, got, tc.want)
		}
	}
	lo, hi := float64(schema.DaysOf(2024, 1, 1)), float64(schema.DaysOf(2024, 12, 31))
	tab := &Table{Name: "events", Columns: []*Column{{Name: "signup", Type: schema.Date, Lower: &lo, Upper: &hi}}}
	for _, field := range []string{"year", "quarter", "month", "week", "day"} {
		for _, trunc := range []bool{true, false} {
			for _, days := range []int64{-400, -10, 3, 45} {
				b := &Bucket{Kind: DateBucket, Column: "signup", Field: field, Trunc: trunc, Type: schema.Date, Shift: days * schema.MicrosPerDay}
				vals := map[int64]bool{}
				for _, v := range b.Values(tab) {
					vals[v.(int64)] = true
				}
				for d := int64(lo); d <= int64(hi); d++ {
					if k := b.dateValue(d + days); !vals[k] {
						t.Fatalf("%s: the key %d of %s is not listed", b, k, schema.FormatDate(d))
					}
				}
			}
		}
	}
}
