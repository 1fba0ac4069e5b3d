package query

import (
	"context"
	"strings"
	"testing"
)

// TestTextAnswers checks text functions at ε = 1e20 over people.csv
// (cities A, B, A, A, C; the public list is A, B, D) and the dates
// fixture (cities Paris, Lyon, Paris, Nice, Paris, Lyon, Nice, Paris,
// Lyon).
func TestTextAnswers(t *testing.T) {
	svc, _, _ := newTestService(t, "testdata/catalog.yaml")
	dates, _, _ := newTestService(t, "testdata/dates.yaml")
	tests := []struct {
		svc             *Service
		name, sql, want string
	}{
		{svc, "lower in where", "SELECT COUNT(*) FROM people WHERE lower(city) = 'a'", "3"},
		{svc, "group by lower", "SELECT lower(city) AS c, COUNT(*) FROM people GROUP BY c", "a 3; b 1; d 0"},
		{svc, "group by concat", "SELECT city || '-' || upper(city) AS c, COUNT(*) FROM people GROUP BY 1", "A-A 3; B-B 1; D-D 0"},
		{svc, "group by concat skips NULL", "SELECT concat(city, 'x') AS c, COUNT(*) FROM people GROUP BY c", "Ax 3; Bx 1; Dx 0; x 0"},
		{svc, "group by starts_with", "SELECT starts_with(city, 'A') AS a, COUNT(*) FROM people GROUP BY a", "false 2; true 3"},
		{svc, "group by length", "SELECT length(city) AS n, COUNT(*) FROM people GROUP BY n", "1 5"},
		{svc, "starts_with condition", "SELECT COUNT(*) FROM people WHERE starts_with(city, 'A') OR city = 'B'", "4"},
		{svc, "like over lower", "SELECT COUNT(*) FROM people WHERE lower(city) LIKE 'c%'", "1"},
		{svc, "case over text", "SELECT SUM(CASE WHEN trim(city) IN ('A', 'C') THEN age ELSE 0 END) FROM people", "160"},
		{dates, "substr key", "SELECT substr(city, 1, 2) AS c, COUNT(*) FROM events GROUP BY c", "Ly 3; Ni 2; Pa 4"},
		{dates, "length with a public list", "SELECT SUM(length(city)), AVG(length(city)) FROM events", "40 4.444444"},
		{dates, "trim and friends", "SELECT COUNT(*) FROM events WHERE ltrim(city) = rtrim(city) AND length(substr(city, 2)) = 4", "4"},
		{dates, "clamped length", "SELECT SUM(LEAST(length(trim(note)), 3)) FROM events", "21"}, // LEAST skips NULL: a NULL note counts 3
		{dates, "trimmed and lowered", "SELECT COUNT(*) FROM events WHERE lower(trim(note)) = 'hello'", "3"},
		{dates, "case without else", "SELECT CASE WHEN amount < 30 THEN 'low' WHEN amount > 80 THEN 'high' END AS band, COUNT(*) FROM events GROUP BY band", "low 2; high 1"},
		{dates, "case band", "SELECT CASE WHEN amount < 50 THEN 'low' ELSE 'high' END AS band, COUNT(*) FROM events GROUP BY band", "low 4; high 5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.svc.Answer(context.Background(), tc.sql, exactOpts())
			if err != nil {
				t.Fatal(err)
			}
			if got := formatRows(res.Rows); got != tc.want {
				t.Errorf("%s\n got %s\nwant %s", tc.sql, got, tc.want)
			}
		})
	}
}

// TestTextRefusals checks the refusals of text functions: each names the
// value and what is accepted.
func TestTextRefusals(t *testing.T) {
	svc, _, _ := newTestService(t, "testdata/catalog.yaml")
	dates, _, _ := newTestService(t, "testdata/dates.yaml")
	for _, tc := range []struct{ sql, want string }{
		{"SELECT SUM(length(note)) FROM events", "length(note) has no upper bound: note has no public value list; clamp it, e.g. LEAST(length(note), 100)"},
		{"SELECT lower(note), COUNT(*) FROM events GROUP BY 1", "needs δ > 0"},

		{"SELECT COUNT(*) FROM people WHERE substr(city, 0, 2) = 'A'", "SUBSTR(text, start, length) takes a literal start from 1"},
		{"SELECT COUNT(*) FROM people WHERE lower(age) = 'a'", "column age is int: text functions take text columns"},
		{"SELECT COUNT(*) FROM people WHERE lower(city) = 3", "cannot compare lower(city) (text) with number 3"},
		{"SELECT COUNT(*) FROM people WHERE upper(length(city)) = 'A'", "length(city) is number, not text"},
		{"SELECT COUNT(*) FROM people WHERE starts_with(city, city)", "STARTS_WITH(text, prefix) takes a literal prefix"},
	} {
		if tc.want == "" {
			continue
		}
		s := svc
		if strings.Contains(tc.sql, "events") {
			s = dates
		}
		_, err := s.Answer(context.Background(), tc.sql, exactOpts())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want one containing %q", tc.sql, err, tc.want)
		}
	}
}
