package engine

import (
	"strings"
	"testing"
)

// TestServerColumn: a declared column reads the server column spelled
// the same, else the only one equal ignoring case; none or several is an
// error naming the columns there are.
func TestServerColumn(t *testing.T) {
	names := []string{"pid", "Age", "city", "CITY", "City", "Day", "day2"}
	tests := []struct {
		src  string
		want int
		err  string
	}{
		{"pid", 0, ""},
		{"PID", 0, ""},
		{"age", 1, ""},
		{"City", 4, ""},
		{"city", 2, ""},
		{"cItY", -1, "column cItY does not exist in public.t; it has: pid, Age, city, CITY, City, Day, day2"},
		{"day", 5, ""},
		{"nope", -1, "t: table x: column nope does not exist"},
	}
	for _, tt := range tests {
		got, err := ServerColumn(names, tt.src, "t: table x", "public.t")
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ServerColumn(%q) = %d, %v: want an error containing %q", tt.src, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ServerColumn(%q) = %d, %v: want %d", tt.src, got, err, tt.want)
		}
	}
	if got := (Column{Name: "n", Source: "Name"}).SourceName(); got != "Name" {
		t.Errorf("SourceName with a source = %q, want Name", got)
	}
	if got := (Column{Name: "n"}).SourceName(); got != "n" {
		t.Errorf("SourceName without a source = %q, want n", got)
	}
}
