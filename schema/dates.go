package schema

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Dates and timestamps are whole numbers: a date is the number of days since
// 1970-01-01, a timestamp the number of microseconds since 1970-01-01
// 00:00:00 (without time zone). Bounds, value lists and keys of date and
// timestamp columns are kept in these units, so that every rule for int
// columns (clamping, interval arithmetic, exact keys) applies to them; the
// engines expose the columns in these units and answers spell them back as
// dates.

// MicrosPerDay is the number of microseconds in a day.
const MicrosPerDay = 86_400_000_000

// MinDate and MaxDate are the first and last dates a catalog may declare
// (0001-01-01 and 9999-12-31), in days since 1970-01-01.
const (
	MinDate = -719162
	MaxDate = 2932896
)

// MinTimestamp and MaxTimestamp are the first and last timestamps a
// catalog may declare, in microseconds since 1970-01-01: ±2^53, where
// whole numbers stop being exact doubles (about the years 1684 to 2255).
const (
	MinTimestamp = -MaxIntBound
	MaxTimestamp = MaxIntBound
)

var epoch = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)

// ParseDate reads a date spelled YYYY-MM-DD and returns its number of days
// since 1970-01-01.
func ParseDate(s string) (int64, error) {
	t, err := time.Parse("2006-01-02", strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a date: want YYYY-MM-DD, e.g. 2024-03-01", s)
	}
	return FloorDiv(t.Unix(), 86400), nil
}

// ParseTimestamp reads a timestamp spelled YYYY-MM-DD HH:MM:SS[.ffffff]
// (or with a T between date and time, or a date alone, meaning midnight)
// and returns its number of microseconds since 1970-01-01 00:00:00. It
// refuses a time zone and a timestamp beyond MinTimestamp..MaxTimestamp.
func ParseTimestamp(s string) (int64, error) {
	in := strings.TrimSpace(s)
	var t time.Time
	var err error = errors.New("no layout")
	for _, layout := range []string{"2006-01-02 15:04:05.999999", "2006-01-02T15:04:05.999999", "2006-01-02"} {
		if t, err = time.Parse(layout, in); err == nil {
			break
		}
	}
	if err != nil {
		return 0, fmt.Errorf("%q is not a timestamp: want YYYY-MM-DD HH:MM:SS (optionally with up to 6 decimals of seconds), e.g. 2024-03-01 13:45:00", s)
	}
	if t.Year() < 1684 || t.Year() > 2255 {
		return 0, fmt.Errorf("%q: want a timestamp from 1684 to 2255 (within ±2^53 microseconds of 1970, where they are exact numbers)", s)
	}
	us := t.Sub(epoch).Microseconds()
	if us < MinTimestamp || us > MaxTimestamp {
		return 0, fmt.Errorf("%q: want a timestamp within ±2^53 microseconds of 1970-01-01", s)
	}
	return us, nil
}

// FormatDate spells a number of days since 1970-01-01 as YYYY-MM-DD.
func FormatDate(days int64) string {
	if days < MinDate || days > MaxDate {
		return fmt.Sprintf("day %d", days)
	}
	return epoch.AddDate(0, 0, int(days)).Format("2006-01-02")
}

// FormatTimestamp spells a number of microseconds since 1970-01-01 as
// YYYY-MM-DD HH:MM:SS, with the fraction of a second only when there is
// one.
func FormatTimestamp(us int64) string {
	if us < MinTimestamp || us > MaxTimestamp {
		return fmt.Sprintf("microsecond %d", us)
	}
	t := epoch.Add(time.Duration(FloorDiv(us, 1_000_000)) * time.Second).Add(time.Duration(us-FloorDiv(us, 1_000_000)*1_000_000) * time.Microsecond)
	if t.Nanosecond() != 0 {
		return t.Format("2006-01-02 15:04:05.999999")
	}
	return t.Format("2006-01-02 15:04:05")
}

// DateOf returns the civil date of a number of days since 1970-01-01.
func DateOf(days int64) (year int, month time.Month, day int) {
	return epoch.AddDate(0, 0, int(days)).Date()
}

// DaysOf returns the number of days since 1970-01-01 of a civil date;
// month and day may be out of their ranges and are normalized, as
// time.Date does.
func DaysOf(year int, month time.Month, day int) int64 {
	return FloorDiv(time.Date(year, month, day, 0, 0, 0, 0, time.UTC).Unix(), 86400)
}

// FloorDiv is a / b rounded down (b > 0).
func FloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// Day is the day (since 1970-01-01) of a value of a date or timestamp
// column, kept in the column's units.
func Day(t Type, v int64) int64 {
	if t == Timestamp {
		return FloorDiv(v, MicrosPerDay)
	}
	return v
}
