package catalog

import (
	"strings"
	"testing"
)

func epochCatalog(epochLine string, extra string) string {
	return "budget: {epsilon: 1}\ntables:\n  v:\n    source: d.csv\n    privacy_unit: pid\n    max_groups_per_unit: 1\n    max_rows_per_group: 1\n" + epochLine +
		"    columns:\n      pid: {type: int}\n      day: {type: date, lower: 2024-01-15, upper: 2024-12-31}\n      ts: {type: timestamp, lower: '2024-01-01 00:00:00', upper: '2024-03-31 23:59:59'}\n      open: {type: date}\n      n: {type: int, lower: 0, upper: 9}\n" + extra
}

func TestParseEpoch(t *testing.T) {
	tests := []struct {
		name, epoch, extra string
		want               string // epoch range, or the error's words
		ok                 bool
	}{
		{"month of a date", "    epoch: {column: day, every: month}\n", "", "2024-01..2024-12", true},
		{"day of a date", "    epoch: {column: day, every: day}\n", "", "2024-01-15..2024-12-31", true},
		{"quarter of a timestamp", "    epoch: {column: ts, every: quarter}\n", "", "2024-Q1", true},
		{"iso week", "    epoch: {column: day, every: week}\n", "", "2024-W03..2025-W01", true},
		{"unknown kind", "    epoch: {column: day, every: fortnight}\n", "", `every = "fortnight": want one of day, week, month, quarter, year`, false},
		{"not a date", "    epoch: {column: n, every: month}\n", "", "column n is int: want a date or timestamp column (bounded ones: day, ts)", false},
		{"no bounds", "    epoch: {column: open, every: month}\n", "", "column open declares no lower and upper", false},
		{"missing column", "    epoch: {every: month}\n", "", "column: missing", false},
		{"unknown column", "    epoch: {column: dy, every: month}\n", "", `column "dy" is not a declared column; bounded date or timestamp columns: day, ts`, false},
		{"unknown key", "    epoch: {column: day, every: month, start: 1}\n", "", `unknown key "start"`, false},
		{"id space with another epoch", "    epoch: {column: day, every: month}\n    id_space: people\n",
			"  w:\n    source: d.csv\n    privacy_unit: pid\n    max_groups_per_unit: 1\n    max_rows_per_group: 1\n    id_space: people\n    columns:\n      pid: {type: int}\n",
			"tables v and w share budgets but declare different epochs (every month and none)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(epochCatalog(tt.epoch, tt.extra)), writeSource(t))
			if !tt.ok {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %v; want one saying %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r, ok := c.Table("v").Epochs()
			if !ok || r.String() != tt.want {
				t.Errorf("epochs %v (%v); want %s", r, ok, tt.want)
			}
			if !strings.Contains(c.Summary(), "epochs by "+c.Table("v").Epoch.Every+" of ") {
				t.Errorf("summary says nothing of epochs:\n%s", c.Summary())
			}
		})
	}
}
