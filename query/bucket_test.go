package query

import (
	"context"
	"testing"
)

// TestExactBuckets checks computed histogram keys at ε = 1e20 on
// people.csv (ages 20, 30, NULL, 150, 40; declared bounds [18, 100]): every
// bin is released, empty ones included, with no key selection and no δ.
func TestExactBuckets(t *testing.T) {
	svc, _, _ := newTestService(t, "testdata/catalog.yaml")
	tests := []struct {
		name, sql, want string
	}{
		{"width_bucket", "SELECT width_bucket(age, 20, 60, 2) AS b, COUNT(*) FROM people GROUP BY 1",
			"0 0; 1 2; 2 1; 3 1"},
		{"width_bucket by alias", "SELECT width_bucket(age, 20, 60, 2) AS b, COUNT(*) FROM people GROUP BY b",
			"0 0; 1 2; 2 1; 3 1"},
		{"width_bucket repeated expression", "SELECT width_bucket(age, 20, 60, 2), COUNT(*) FROM people GROUP BY width_bucket(age, 20, 60, 2)",
			"0 0; 1 2; 2 1; 3 1"},
		{"floor bins clamp to the declared range", "SELECT floor(age / 25) * 25 AS decade, COUNT(*) FROM people GROUP BY 1",
			"0 1; 25 2; 50 0; 75 0; 100 1"},
		{"case bins", "SELECT CASE WHEN age < 30 THEN 'young' WHEN age < 60 THEN 'middle' ELSE 'old' END AS band, COUNT(*) FROM people GROUP BY band",
			"young 1; middle 2; old 2"},
		{"case bins with a public key", "SELECT city, CASE WHEN score >= 2 THEN 1 ELSE 0 END AS high, COUNT(*) FROM people GROUP BY city, high",
			"A 1 1; A 0 2; B 1 0; B 0 1; D 1 0; D 0 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := svc.Answer(context.Background(), tt.sql, exactOpts())
			if err != nil {
				t.Fatal(err)
			}
			if got := formatRows(res.Rows); got != tt.want {
				t.Errorf("%s\n got %s\nwant %s", tt.sql, got, tt.want)
			}
		})
	}
}

// TestBucketRefusals checks that malformed computed keys are refused.
func TestBucketRefusals(t *testing.T) {
	svc, eng, led := newTestService(t, "testdata/catalog.yaml")
	tests := []struct{ name, sql, want string }{
		{"width_bucket bad range", "SELECT COUNT(*) FROM people GROUP BY width_bucket(age, 60, 20, 2)", "low < high"},
		{"width_bucket text", "SELECT COUNT(*) FROM people GROUP BY width_bucket(city, 0, 1, 2)", "want an int or float column"},
		{"floor different widths", "SELECT COUNT(*) FROM people GROUP BY floor(age / 10) * 5", "same literal width"},
		{"floor unbounded", "SELECT COUNT(*) FROM people GROUP BY floor(id / 10) * 10", "needs declared bounds"},
		{"case mixed types", "SELECT COUNT(*) FROM people GROUP BY CASE WHEN age < 30 THEN 'a' ELSE 1 END", "mix"},
		{"case column value", "SELECT COUNT(*) FROM people GROUP BY CASE WHEN age < 30 THEN city ELSE 'x' END", "literal values"},
		{"select expression not grouped", "SELECT width_bucket(age, 0, 10, 2), COUNT(*) FROM people", "not in GROUP BY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := svc.Answer(context.Background(), tt.sql, exactOpts())
			if err == nil || !contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a refusal mentioning %q", err, tt.want)
			}
		})
	}
	if eng.calls() != 0 || led.count() != 0 {
		t.Fatalf("refusals ran %d statements and %d charges", eng.calls(), led.count())
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
