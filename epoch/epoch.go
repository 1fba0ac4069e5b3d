// Package epoch is the calendar of declared epochs: the periods (days,
// ISO weeks, months, quarters, years) into which a table's epoch column
// divides its rows, so that each (person, epoch) is protected on its own
// and has budgets of its own.
//
// An epoch is numbered by an index: the day number since 1970-01-01 for
// days, the ISO week counted from the week of 1970-01-05, and year·12 +
// month − 1, year·4 + quarter − 1 and the year for the others. A Range is
// a run of consecutive epochs of one kind, which is how the ledger records
// the epochs a release touched: two numbers, however many epochs.
package epoch

import (
	"fmt"
	"strings"
	"time"
)

// The kinds of epoch a catalog may declare.
const (
	Day     = "day"
	Week    = "week"
	Month   = "month"
	Quarter = "quarter"
	Year    = "year"
)

// Kinds lists the accepted kinds, for messages.
var Kinds = []string{Day, Week, Month, Quarter, Year}

// Valid reports whether every names a kind of epoch.
func Valid(every string) bool {
	for _, k := range Kinds {
		if k == every {
			return true
		}
	}
	return false
}

// MaxRange is the most epochs one Range may hold: 10,000 years of days.
const MaxRange = 3_652_500

var unixDay0 = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func civil(day int64) (int64, int64) {
	t := unixDay0.AddDate(0, 0, int(day))
	return int64(t.Year()), int64(t.Month())
}

func dayOf(y, m int64) int64 {
	return floorDiv(time.Date(int(y), time.Month(m), 1, 0, 0, 0, 0, time.UTC).Unix(), 86400)
}

// firstMonday is 1970-01-05, the first Monday on or after 1970-01-01.
const firstMonday = 4

// Of is the index of the epoch holding day (days since 1970-01-01).
func Of(every string, day int64) int64 {
	switch every {
	case Week:
		return floorDiv(day-firstMonday, 7)
	case Month:
		y, m := civil(day)
		return y*12 + m - 1
	case Quarter:
		y, m := civil(day)
		return y*4 + (m-1)/3
	case Year:
		y, _ := civil(day)
		return y
	}
	return day
}

// Start is the first day (since 1970-01-01) of epoch i.
func Start(every string, i int64) int64 {
	switch every {
	case Week:
		return i*7 + firstMonday
	case Month:
		return dayOf(floorDiv(i, 12), i-floorDiv(i, 12)*12+1)
	case Quarter:
		return dayOf(floorDiv(i, 4), (i-floorDiv(i, 4)*4)*3+1)
	case Year:
		return dayOf(i, 1)
	}
	return i
}

// End is the last day (since 1970-01-01) of epoch i.
func End(every string, i int64) int64 { return Start(every, i+1) - 1 }

// Label spells epoch i: 2024-03-15 (day), 2024-W11 (ISO week), 2024-03
// (month), 2024-Q1 (quarter), 2024 (year).
func Label(every string, i int64) string {
	switch every {
	case Week:
		y, w := unixDay0.AddDate(0, 0, int(Start(every, i))).ISOWeek()
		return fmt.Sprintf("%04d-W%02d", y, w)
	case Month:
		return fmt.Sprintf("%04d-%02d", floorDiv(i, 12), i-floorDiv(i, 12)*12+1)
	case Quarter:
		return fmt.Sprintf("%04d-Q%d", floorDiv(i, 4), i-floorDiv(i, 4)*4+1)
	case Year:
		return fmt.Sprintf("%04d", i)
	}
	return unixDay0.AddDate(0, 0, int(i)).Format("2006-01-02")
}

// Range is the consecutive epochs From..To (indices, both included) of
// one kind.
type Range struct {
	Every string `json:"every"`
	From  int64  `json:"from"`
	To    int64  `json:"to"`
}

// Len is the number of epochs in r.
func (r Range) Len() int64 { return r.To - r.From + 1 }

// Validate reports whether r is a range the ledger accepts: a known kind,
// From ≤ To, at most MaxRange epochs.
func (r Range) Validate() error {
	if !Valid(r.Every) {
		return fmt.Errorf("epoch kind %q: want one of %s", r.Every, strings.Join(Kinds, ", "))
	}
	if r.From > r.To {
		return fmt.Errorf("epoch range %d..%d is empty: want from ≤ to", r.From, r.To)
	}
	if r.To-r.From >= MaxRange {
		return fmt.Errorf("epoch range %s holds %d epochs: want at most %d", r, r.To-r.From+1, MaxRange)
	}
	return nil
}

// Labels lists the labels of r's epochs in order.
func (r Range) Labels() []string {
	out := make([]string, 0, r.Len())
	for i := r.From; i <= r.To; i++ {
		out = append(out, Label(r.Every, i))
	}
	return out
}

// String spells r: "2024-03" for one epoch, "2024-01..2024-12" for more.
func (r Range) String() string {
	if r.From == r.To {
		return Label(r.Every, r.From)
	}
	return Label(r.Every, r.From) + ".." + Label(r.Every, r.To)
}

// Nests reports whether every epoch of kind every lies within one epoch
// of kind outer (a day within a month; a month within a quarter or a
// year; a week within a week only).
func Nests(every, outer string) bool {
	if every == outer || every == Day {
		return true
	}
	switch outer {
	case Quarter:
		return every == Month
	case Year:
		return every == Month || every == Quarter
	}
	return false
}

// Compact spells sorted epoch labels of one kind as runs of consecutive
// epochs ("2024-01..2024-03, 2024-06"), given their indices.
func Compact(every string, idx []int64) string {
	var parts []string
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		parts = append(parts, Range{Every: every, From: idx[i], To: idx[j]}.String())
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// Within is the range of every epoch of kind every that holds a day from
// first to last (days since 1970-01-01): the epochs a table declares by
// its epoch column's bounds.
func Within(every string, first, last int64) Range {
	return Range{Every: every, From: Of(every, first), To: Of(every, last)}
}
