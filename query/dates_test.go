package query

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine/clickhouse"
	"github.com/dpstat/dpstat/engine/duckdb"
)

// TestDateAnswers checks dates and timestamps at ε = 1e20. events.csv:
// signups 2024-01-15, 2024-02-29, 2024-03-01, 2023-12-31 (clamped to
// 2024-01-01), NULL, infinity (read as NULL), 2025-06-01 (clamped to
// 2024-12-31), a malformed value (NULL) and 2024-12-31; the timestamps
// follow the same days.
func TestDateAnswers(t *testing.T) {
	svc, _, _ := newTestService(t, "testdata/dates.yaml")
	tests := []struct{ name, sql, want string }{
		{"count", "SELECT COUNT(*), COUNT(signup), COUNT(seen) FROM events", "9 6 6"},
		{"where date literal", "SELECT COUNT(*) FROM events WHERE signup >= DATE '2024-03-01'", "3"},
		{"where string", "SELECT COUNT(*) FROM events WHERE signup < '2024-02-01'", "2"},
		{"where between", "SELECT COUNT(*) FROM events WHERE signup BETWEEN '2024-02-01' AND DATE '2024-03-01'", "2"},
		{"where in", "SELECT COUNT(*) FROM events WHERE signup IN ('2024-02-29', '2024-12-31')", "2"},
		{"where timestamp", "SELECT COUNT(*) FROM events WHERE seen >= TIMESTAMP '2024-03-01 00:00:00'", "3"},
		{"where timestamp after a date's midnight", "SELECT COUNT(*) FROM events WHERE seen > DATE '2024-02-29'", "4"},
		{"group by a listed date", "SELECT visit, COUNT(*) FROM events GROUP BY visit", "2024-03-01 2; 2024-03-02 1; 2024-03-03 0"},
		{"having on a date key", "SELECT visit, COUNT(*) FROM events GROUP BY visit HAVING visit > '2024-03-01'", "2024-03-02 1; 2024-03-03 0"},
		{"date_trunc month", "SELECT date_trunc('month', signup) AS m, COUNT(*) FROM events GROUP BY m",
			"2024-01-01 2; 2024-02-01 1; 2024-03-01 1; 2024-04-01 0; 2024-05-01 0; 2024-06-01 0; 2024-07-01 0; 2024-08-01 0; 2024-09-01 0; 2024-10-01 0; 2024-11-01 0; 2024-12-01 2"},
		{"date_trunc quarter", "SELECT date_trunc('quarter', signup), SUM(amount) FROM events GROUP BY 1", "2024-01-01 100; 2024-04-01 0; 2024-07-01 0; 2024-10-01 160"},
		{"date_trunc narrowed by where", "SELECT date_trunc('week', signup) AS w, COUNT(*) FROM events WHERE signup BETWEEN '2024-02-26' AND '2024-03-10' GROUP BY w",
			"2024-02-26 2; 2024-03-04 0"},
		{"extract dow", "SELECT EXTRACT(dow FROM signup) AS d, COUNT(*) FROM events GROUP BY d", "0 0; 1 2; 2 2; 3 0; 4 1; 5 1; 6 0"},
		{"date_part quarter", "SELECT date_part('quarter', signup) AS q, COUNT(*) FROM events GROUP BY q", "1 4; 2 0; 3 0; 4 2"},
		{"extract month with a where", "SELECT EXTRACT(month FROM signup) AS m, COUNT(*) FROM events WHERE signup < '2024-03-15' GROUP BY m", "1 2; 2 1; 3 1"},
		{"timestamp day", "SELECT date_trunc('day', seen) AS d, COUNT(*) FROM events WHERE seen >= '2024-02-29' AND seen < '2024-03-02' GROUP BY d",
			"2024-02-29 00:00:00 1; 2024-03-01 00:00:00 1"},
		{"extract hour", "SELECT EXTRACT(hour FROM seen) AS h, COUNT(*) FROM events GROUP BY h HAVING COUNT(*) > 0", "0 2; 8 1; 23 3"},
		{"date_trunc hour", "SELECT date_trunc('hour', seen) AS h, COUNT(*) FROM events WHERE seen BETWEEN '2024-02-29 22:00:00' AND '2024-03-01 00:30:00' GROUP BY h",
			"2024-02-29 22:00:00 0; 2024-02-29 23:00:00 1; 2024-03-01 00:00:00 1"},
		{"sum of date differences", "SELECT SUM(signup - DATE '2024-01-01') FROM events", "863"},
		{"avg of a date part", "SELECT AVG(EXTRACT(month FROM signup)), SUM(EXTRACT(hour FROM seen)) FROM events", "5.166667 77"},
		{"year", "SELECT EXTRACT(year FROM signup), COUNT(*) FROM events GROUP BY 1", "2024 6"},
		{"extract in where", "SELECT COUNT(*) FROM events WHERE EXTRACT(dow FROM signup) IN (1, 2) OR date_trunc('month', signup) = '2024-02-01'", "5"},
		{"date_trunc in a filter", "SELECT COUNT(*) FILTER (WHERE date_trunc('quarter', seen) >= TIMESTAMP '2024-04-01 00:00:00') FROM events", "2"},
		{"date minus interval", "SELECT COUNT(*) FROM events WHERE signup >= DATE '2024-03-31' - INTERVAL '1 month'", "4"},
		{"months saturate", "SELECT COUNT(*) FROM events WHERE signup BETWEEN DATE '2024-01-31' + INTERVAL '1 month' AND DATE '2024-01-31' + INTERVAL '1 month 1 day'", "2"},
		{"timestamp plus interval", "SELECT COUNT(*) FROM events WHERE seen > TIMESTAMP '2024-02-29 00:00:00' + INTERVAL '23 hours 59 minutes'", "4"},
		{"column plus interval", "SELECT COUNT(*) FROM events WHERE signup + INTERVAL '1 week 1 day' > DATE '2024-03-09' AND '2024-03-01 00:00:00' <= seen - INTERVAL '1 hour'", "2"},
		{"interval in an aggregate", "SELECT SUM(signup - (DATE '2024-12-31' - INTERVAL '1 year')) FROM events", "869"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == "" {
				return
			}
			res, err := svc.Answer(context.Background(), tc.sql, exactOpts())
			if err != nil {
				t.Fatal(err)
			}
			if got := formatRows(res.Rows); got != tc.want {
				t.Errorf("%s\n got %s\nwant %s", tc.sql, got, tc.want)
			}
		})
	}
}

// TestDateRefusals checks that malformed dates and unsupported date
// functions are refused, naming the value and what is accepted.
func TestDateRefusals(t *testing.T) {
	svc, _, _ := newTestService(t, "testdata/dates.yaml")
	for _, tc := range []struct{ sql, want string }{
		{"SELECT COUNT(*) FROM events WHERE signup > '2024-02-30'", "cannot read '2024-02-30' as a date: want YYYY-MM-DD"},
		{"SELECT COUNT(*) FROM events WHERE signup > DATE 'soon'", "cannot read 'soon' as a date"},
		{"SELECT COUNT(*) FROM events WHERE signup > 3", "cannot compare column signup (date) with number 3"},
		{"SELECT COUNT(*) FROM events WHERE signup > TIMESTAMP '2024-01-01 10:00:00'", "compare it with a DATE literal, e.g. DATE '2024-01-01'"},
		{"SELECT date_trunc('hour', signup), COUNT(*) FROM events GROUP BY 1", `date_trunc unit "hour" over date column signup is not supported; want one of year, quarter, month, week, day`},
		{"SELECT EXTRACT(epoch FROM seen), COUNT(*) FROM events GROUP BY 1", `EXTRACT field "epoch" over timestamp column seen is not supported`},
		{"SELECT date_trunc('month', visit), COUNT(*) FROM events GROUP BY 1", "needs declared bounds for visit"},
		{"SELECT date_trunc('minute', seen), city, COUNT(*) FROM events GROUP BY 1, 2", "GROUP BY date_trunc('minute', seen), city gives more than 1000000 groups"},
		{"SELECT SUM(signup) FROM events", "column signup is date"},
		{"SELECT SUM(seen - seen) FROM events", "column seen is a timestamp"},
		{"SELECT EXTRACT(month FROM city), COUNT(*) FROM events GROUP BY 1", "over column city (text): want a date or timestamp column"},
		{"SELECT COUNT(*) FROM events WHERE signup > DATE '2024-01-01' + INTERVAL '1 fortnight'", "cannot read INTERVAL '1 fortnight': want a whole number and a unit"},
		{"SELECT COUNT(*) FROM events WHERE signup > DATE '2024-01-01' + INTERVAL '3 hours'", "a date moves by whole days"},
		{"SELECT COUNT(*) FROM events WHERE EXTRACT(month FROM signup) LIKE '1%'", "LIKE needs text; EXTRACT(month FROM signup) is number"},
		{"SELECT COUNT(*) FROM events WHERE date_trunc('month', signup) = 3", "cannot compare date_trunc('month', signup) (date) with number 3"},
		{"SELECT COUNT(*) FROM events WHERE EXTRACT(month FROM visit) = 3", "needs declared bounds for visit"},
		{"SELECT COUNT(*) FROM events WHERE signup + INTERVAL '1 month' > DATE '2024-01-01'", "signup + INTERVAL '1 month': a column shifted by months or years is not supported"},
		{"SELECT COUNT(*) FROM events WHERE amount + INTERVAL '1 day' > DATE '2024-01-01'", "INTERVAL is added to dates and timestamps; amount is not one"},
		{"SELECT COUNT(*) FROM events WHERE signup + INTERVAL '1 day' > seen", "compare signup + INTERVAL '1 day' with a date literal"},
		{"SELECT SUM(amount + INTERVAL '1 day') FROM events", "INTERVAL is added to dates and timestamps; column amount is int"},
	} {
		_, err := svc.Answer(context.Background(), tc.sql, exactOpts())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want one containing %q", tc.sql, err, tc.want)
		}
	}
}

// TestColumnTypes checks the types clients give the answer's columns:
// every column is typed.
func TestColumnTypes(t *testing.T) {
	cat := loadCatalog(t, "testdata/dates.yaml")
	for _, tc := range []struct{ sql, want string }{
		{"SELECT visit AS v, date_trunc('month', seen) AS m, EXTRACT(dow FROM signup) AS d, lower(city) AS c, COUNT(*) FROM events GROUP BY visit, m, d, c", "date,timestamp,int,text,int"},
		{"SELECT COUNT(*) AS n, MIN(signup), MEDIAN(seen), COUNT(*) * 2 AS twice FROM events", "int,date,timestamp,float"},
	} {
		p, err := Prepare(cat, duckdb.Dialect, tc.sql, exactOpts())
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(p.Plan.ColumnTypes()); got != "["+strings.ReplaceAll(tc.want, ",", " ")+"]" {
			t.Errorf("%s: column types = %s, want %s", tc.sql, got, tc.want)
		}
	}
}

// TestDateQuantiles checks MIN, MAX, MEDIAN and percentile_cont of dates
// and timestamps at ε = 1e20: released over the declared range of days
// (microseconds) and spelled as dates (timestamps). The clamped signups
// are 2024-01-01, 2024-01-15, 2024-02-29, 2024-03-01 and 2024-12-31
// twice (ids 9 and 7).
func TestDateQuantiles(t *testing.T) {
	svc, _, _ := newTestService(t, "testdata/dates.yaml")
	checkAnswers(t, svc, []answerCase{
		{"min max", "SELECT MIN(signup), MAX(signup) FROM events", "2024-01-01 2024-12-31"},
		{"timestamp min max", "SELECT MIN(seen), MAX(seen) FROM events", "2024-01-01 00:00:00 2024-12-31 23:59:59"},
		{"median", "SELECT MEDIAN(signup) FROM events WHERE id <> 9", "2024-02-29"},
		{"percentile", "SELECT percentile_cont(0.25) WITHIN GROUP (ORDER BY signup) FROM events", "2024-01-15"},
		{"narrowed by where", "SELECT MIN(signup) FROM events WHERE signup > '2024-02-01'", "2024-02-29"},
		{"grouped, having, order", "SELECT city, MIN(signup) AS first FROM events GROUP BY city HAVING MIN(signup) < '2024-02-01' ORDER BY first",
			"Nice 2024-01-01; Paris 2024-01-15"},
		{"having a date literal", "SELECT city, MAX(signup) FROM events GROUP BY city HAVING MAX(signup) >= DATE '2024-12-31'", "Lyon 2024-12-31; Nice 2024-12-31"},
		{"filter", "SELECT MAX(signup) FILTER (WHERE city = 'Paris'), COUNT(*) FROM events", "2024-03-01 9"},
		{"shifted by days", "SELECT MIN(signup + INTERVAL '7 days'), MAX(signup - INTERVAL '1 week') FROM events", "2024-01-08 2024-12-24"},
		{"shifted percentile", "SELECT percentile_cont(0.25) WITHIN GROUP (ORDER BY signup + INTERVAL '1 day') FROM events", "2024-01-16"},
		{"shifted timestamp", "SELECT MIN(seen + INTERVAL '1 hour 30 minutes'), MAX(seen - INTERVAL '1 day') FROM events", "2024-01-01 01:30:00 2024-12-30 23:59:59"},
		{"case of dates", "SELECT MAX(CASE WHEN city = 'Paris' THEN signup ELSE DATE '2024-01-02' END) FROM events", "2024-03-01"},
		{"days are still numbers", "SELECT MIN(signup - DATE '2024-01-01'), MAX(EXTRACT(month FROM signup)) FROM events", "0 12"},
		{"shift inside arithmetic", "SELECT SUM((signup + INTERVAL '1 day') - DATE '2024-01-01') FROM events", "869"},
	})
	res, err := svc.Answer(context.Background(), "EXPLAIN SELECT MIN(signup), MEDIAN(seen + INTERVAL '1 hour') FROM events", exactOpts())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"366 candidates in [2024-01-01, 2024-12-31]", "1025 candidates in [2024-01-01 01:00:00, 2025-01-01 00:59:59]"} {
		if got := formatRows(res.Rows); !strings.Contains(got, want) {
			t.Errorf("EXPLAIN lacks %q:\n%s", want, got)
		}
	}
	checkRefusals(t, svc, []struct{ sql, want string }{
		{"SELECT MIN(visit) FROM events", "MIN(visit) needs declared bounds"}, {"SELECT MIN(visit) FILTER (WHERE amount > 3) FROM events", "MIN, MAX and quantiles of visit need declared bounds"},
		{"SELECT MIN(signup + INTERVAL '1 month') FROM events", "signup + INTERVAL '1 month': a column shifted by months or years is not supported"},
		{"SELECT MIN(signup + INTERVAL '2 hours') FROM events", "signup + INTERVAL '2 hours': a date moves by whole days"},
		{"SELECT MIN(signup + INTERVAL '900000 weeks') FROM events", "leaves the dates dpstat reads (0001-01-01 to 9999-12-31)"},
		{"SELECT SUM(seen + INTERVAL '1 hour') FROM events", "a shifted timestamp is supported as the whole argument of MIN, MAX, MEDIAN or percentile_cont only"},
		{"SELECT MIN(amount + INTERVAL '1 day') FROM events", "amount + INTERVAL '1 day': INTERVAL is added to dates and timestamps; column amount is int"},
		{"SELECT MAX(signup) - MIN(signup) FROM events", "MAX(signup) is a date: select it as a column of its own"},
		{"SELECT SUM(signup) FROM events", "SUM needs an int or float column (MIN, MAX and MEDIAN also take date and timestamp columns)"},
		{"SELECT AVG(signup + INTERVAL '1 day') FROM events", "AVG((signup + 1)): the expression is a date, which is not summed or averaged"},
		{"SELECT SUM(date_trunc('month', signup)) FROM events", "SUM(date_trunc('month', signup)): the expression is a date"},
		{"SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY city) FROM events", "want an int, float, date or timestamp column"},
		{"SELECT date_trunc('month', signup + INTERVAL '1 month') AS m, COUNT(*) FROM events GROUP BY m", "date_trunc('month', signup + INTERVAL '1 month'): a column shifted by months or years is not supported in a date function; shift it by days or weeks"},
	})
}

// TestShiftedDateParts checks date_trunc and EXTRACT of a column shifted
// by an INTERVAL at ε = 1e20: as GROUP BY keys, whose values are computed
// from the declared bounds moved by the interval, and in conditions and
// aggregates. The clamped signups are 2024-01-01, 2024-01-15, 2024-02-29,
// 2024-03-01 and 2024-12-31 twice; the clamped timestamps are 2024-01-01
// 00:00:00, 2024-01-15 08:30:00, 2024-02-29 23:59:59, 2024-03-01 00:00:00
// and 2024-12-31 23:59:59 twice.
func TestShiftedDateParts(t *testing.T) {
	svc, _, _ := newTestService(t, "testdata/dates.yaml")
	checkAnswers(t, svc, []answerCase{
		{"date_trunc month of a shifted date", "SELECT date_trunc('month', signup + INTERVAL '2 days') AS m, COUNT(*) FROM events GROUP BY m",
			"2024-01-01 2; 2024-02-01 0; 2024-03-01 2; 2024-04-01 0; 2024-05-01 0; 2024-06-01 0; 2024-07-01 0; 2024-08-01 0; 2024-09-01 0; 2024-10-01 0; 2024-11-01 0; 2024-12-01 0; 2025-01-01 2"},
		{"shifted back", "SELECT date_trunc('quarter', signup - INTERVAL '1 week') AS q, COUNT(*) FROM events GROUP BY q",
			"2023-10-01 1; 2024-01-01 3; 2024-04-01 0; 2024-07-01 0; 2024-10-01 2"},
		{"extract year", "SELECT EXTRACT(year FROM signup + INTERVAL '1 day') AS y, SUM(amount) FROM events GROUP BY y", "2024 100; 2025 160"},
		{"extract dow by whole weeks", "SELECT EXTRACT(dow FROM signup - INTERVAL '2 weeks') AS d, COUNT(*) FROM events GROUP BY d", "0 0; 1 2; 2 2; 3 0; 4 1; 5 1; 6 0"},
		{"timestamp hour", "SELECT EXTRACT(hour FROM seen + INTERVAL '1 hour') AS h, COUNT(*) FROM events GROUP BY h HAVING COUNT(*) > 0", "0 3; 1 2; 9 1"},
		{"timestamp day by a second, narrowed", "SELECT date_trunc('day', seen + INTERVAL '1 second') AS d, COUNT(*) FROM events WHERE seen >= '2024-02-29' AND seen <= '2024-03-01 23:00:00' GROUP BY d",
			"2024-02-29 00:00:00 0; 2024-03-01 00:00:00 2"},
		{"in where", "SELECT COUNT(*) FROM events WHERE EXTRACT(month FROM signup + INTERVAL '3 days') = 1", "4"},
		{"in a filter", "SELECT COUNT(*) FILTER (WHERE date_trunc('month', signup + INTERVAL '1 day') = '2024-03-01') FROM events", "2"},
		{"in an aggregate", "SELECT SUM(EXTRACT(day FROM signup + INTERVAL '1 day')), MAX(EXTRACT(minute FROM seen - INTERVAL '30 minutes')) FROM events", "23 30"},
		{"grouped by the same expression", "SELECT date_trunc('year', seen + INTERVAL '1 second'), COUNT(*) FROM events GROUP BY date_trunc('year', seen + INTERVAL '1 second')",
			"2024-01-01 00:00:00 4; 2025-01-01 00:00:00 2"},
		{"having and order by on a shifted key", "SELECT date_trunc('month', signup + INTERVAL '2 days') AS m, COUNT(*) FROM events GROUP BY m HAVING m >= '2024-12-01' ORDER BY m DESC",
			"2025-01-01 2; 2024-12-01 0"},
		{"date_part of a shifted date", "SELECT date_part('doy', signup - INTERVAL '1 day') AS d, COUNT(*) FROM events WHERE signup <= '2024-01-02' GROUP BY d", "1 0; 365 1"},
		{"with another key", "SELECT city, EXTRACT(month FROM signup - INTERVAL '1 day') AS m, COUNT(*) FROM events WHERE signup <= '2024-01-31' GROUP BY city, m",
			"Paris 1 1; Paris 12 0; Lyon 1 0; Lyon 12 0; Nice 1 0; Nice 12 1"},
	})
	checkRefusals(t, svc, []struct{ sql, want string }{
		{"SELECT EXTRACT(year FROM signup + INTERVAL '1 year'), COUNT(*) FROM events GROUP BY 1", "EXTRACT(year FROM signup + INTERVAL '1 year'): a column shifted by months or years is not supported in a date function; shift it by days or weeks, e.g. INTERVAL '30 days'"},
		{"SELECT COUNT(*) FROM events WHERE EXTRACT(day FROM signup + INTERVAL '3 hours') = 1", "EXTRACT(day FROM signup + INTERVAL '3 hours'): a date moves by whole days"},
		{"SELECT date_trunc('month', signup + INTERVAL '1000000 weeks'), COUNT(*) FROM events GROUP BY 1", "leaves the dates dpstat reads (0001-01-01 to 9999-12-31) over the declared range of signup"},
		{"SELECT date_trunc('month', amount + INTERVAL '1 day'), COUNT(*) FROM events GROUP BY 1", "DATE_TRUNC over column amount (int): want a date or timestamp column"},
		{"SELECT date_trunc('month', visit + INTERVAL '1 day'), COUNT(*) FROM events GROUP BY 1", "needs declared bounds for visit"},
		{"SELECT date_trunc('month', signup + INTERVAL '1 fortnight'), COUNT(*) FROM events GROUP BY 1", "cannot read INTERVAL '1 fortnight'"},
		{"SELECT date_trunc('minute', seen + INTERVAL '1 hour'), city, COUNT(*) FROM events GROUP BY 1, 2", "GROUP BY date_trunc('minute', seen + INTERVAL '1 hour'), city gives more than 1000000 groups"},
		{"SELECT date_trunc('month', signup + INTERVAL '1 day'), COUNT(*) FROM events GROUP BY date_trunc('month', signup)", "the select-list expression date_trunc('month', signup + INTERVAL '1 day') is not in GROUP BY"},
		{"SELECT date_trunc('month', signup * INTERVAL '1 day'), COUNT(*) FROM events GROUP BY 1", "the second argument must be a date or timestamp column, or one shifted by an INTERVAL"},
	})
}

// TestShiftedDatePartsOnClickHouse checks that a shift moving values
// ClickHouse holds out of the days its date functions compute (1970-01-01
// to 2105-12-31) is refused when the query is prepared, before its charge,
// while DuckDB answers it; hours and minutes, integer arithmetic on every
// engine, are not limited.
func TestShiftedDatePartsOnClickHouse(t *testing.T) {
	cat := loadCatalog(t, "testdata/dates.yaml")
	for _, tc := range []struct{ sql, want string }{
		{"SELECT date_trunc('year', signup - INTERVAL '3000 weeks'), COUNT(*) FROM events GROUP BY 1",
			"date_trunc('year', signup - INTERVAL '3000 weeks'): this engine's date functions compute from 1970-01-01 to 2105-12-31 only, and the shift moves values of signup it holds (from 2024-01-01 to 2024-12-31) outside that range"},
		{"SELECT COUNT(*) FROM events WHERE EXTRACT(doy FROM seen + INTERVAL '5000 weeks') > 3", "EXTRACT(doy FROM seen + INTERVAL '5000 weeks'): this engine's date functions compute from 1970-01-01"},
		{"SELECT EXTRACT(hour FROM seen - INTERVAL '3000 weeks'), date_trunc('month', signup + INTERVAL '2 days'), COUNT(*) FROM events GROUP BY 1, 2", ""},
	} {
		if _, err := Prepare(cat, duckdb.Dialect, tc.sql, exactOpts()); err != nil {
			t.Errorf("%s on DuckDB: %v", tc.sql, err)
		}
		_, err := Prepare(cat, clickhouse.Dialect, tc.sql, exactOpts())
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s on ClickHouse: %v", tc.sql, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s on ClickHouse: error = %v, want one containing %q", tc.sql, err, tc.want)
		}
	}
}

// TestPerPersonDates checks that a person's MIN or MAX of a date, in a
// per-person pre-aggregation, is a date to the outer query: compared with
// date literals, truncated, and released as a date.
func TestPerPersonDates(t *testing.T) {
	svc := neighbours(t).services["people"]["D"]
	checkAnswers(t, svc, []answerCase{
		{"where and max", "WITH s AS (SELECT pid, MIN(dt) AS first FROM people GROUP BY pid) SELECT MAX(first), COUNT(*) FROM s WHERE first > '2024-03-01'", "2024-12-31 2"},
		{"days", "WITH s AS (SELECT pid, MAX(dt) AS last FROM people GROUP BY pid) SELECT SUM(last - DATE '2024-01-01') FROM s", "1214"},
		{"shifted truncation", "WITH s AS (SELECT pid, MAX(dt) AS last FROM people GROUP BY pid) SELECT date_trunc('year', last + INTERVAL '1 day') AS y, COUNT(*) FROM s GROUP BY y", "2024-01-01 3; 2025-01-01 3"},
	})
}

// TestDateRangeOutsideClickHouse checks that a date function over a column
// declared wholly outside ClickHouse's dates is refused when prepared on
// ClickHouse, before any charge, and answered elsewhere.
func TestDateRangeOutsideClickHouse(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "old.csv"), []byte("id,born\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Parse([]byte(`
budget: {epsilon: 10, delta: 1e-6}
tables:
  old:
    source: old.csv
    columns:
      id:   {type: int}
      born: {type: date, lower: "1900-01-01", upper: "1960-12-31"}
`), dir)
	if err != nil {
		t.Fatal(err)
	}
	sql := "SELECT date_trunc('year', born), COUNT(*) FROM old GROUP BY 1"
	if _, err := Prepare(cat, duckdb.Dialect, sql, exactOpts()); err != nil {
		t.Errorf("on DuckDB: %v", err)
	}
	want := "the declared range of born (from 1900-01-01 to 1960-12-31) lies outside it"
	if _, err := Prepare(cat, clickhouse.Dialect, sql, exactOpts()); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("on ClickHouse: error = %v, want one containing %q", err, want)
	}
}
