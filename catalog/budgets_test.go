package catalog

import (
	"strings"
	"testing"
)

// budgetCatalog declares three tables; head replaces the catalog's budget
// lines, and a, b, c are added to the declarations of tables a, b and c.
func budgetCatalog(head, a, b, c string) string {
	table := func(name, extra string) string {
		return "  " + name + ":\n    source: d.csv\n    privacy_unit: pid\n    max_groups_per_unit: 1\n    max_rows_per_group: 1\n" + extra +
			"    columns:\n      pid: {type: int}\n      age: {type: int, lower: 0, upper: 100}\n"
	}
	return head + "\ntables:\n" + table("a", a) + table("b", b) + table("c", c)
}

func TestParseBudgets(t *testing.T) {
	const std = "budget: {epsilon: 1.5, delta: 1e-6}\ntotal_budget: {epsilon: 2, delta: 1e-5}"
	type want struct {
		budget  Budget
		total   *Budget
		dataset string
	}
	tests := []struct {
		name    string
		yaml    string
		a, b, c want
	}{
		{"catalog defaults", budgetCatalog(std, "", "", ""),
			want{Budget{1.5, 1e-6}, &Budget{2, 1e-5}, "a"}, want{Budget{1.5, 1e-6}, &Budget{2, 1e-5}, "b"}, want{Budget{1.5, 1e-6}, &Budget{2, 1e-5}, "c"}},
		{"no total", budgetCatalog("budget: {epsilon: 1}", "", "", ""),
			want{Budget{1, 0}, nil, "a"}, want{Budget{1, 0}, nil, "b"}, want{Budget{1, 0}, nil, "c"}},
		{"table overrides", budgetCatalog(std, "    budget: {epsilon: 0.5}\n", "    total_budget: {epsilon: 4}\n", ""),
			want{Budget{0.5, 0}, &Budget{2, 1e-5}, "a"}, want{Budget{1.5, 1e-6}, &Budget{4, 0}, "b"}, want{Budget{1.5, 1e-6}, &Budget{2, 1e-5}, "c"}},
		{"a total on one table only", budgetCatalog("budget: {epsilon: 1}", "    total_budget: {epsilon: 3}\n", "", ""),
			want{Budget{1, 0}, &Budget{3, 0}, "a"}, want{Budget{1, 0}, nil, "b"}, want{Budget{1, 0}, nil, "c"}},
		{"id space", budgetCatalog(std, "    id_space: people\n", "    id_space: people\n", ""),
			want{Budget{1.5, 1e-6}, &Budget{2, 1e-5}, "people"}, want{Budget{1.5, 1e-6}, &Budget{2, 1e-5}, "people"}, want{Budget{1.5, 1e-6}, &Budget{2, 1e-5}, "c"}},
		{"id space named after one of its tables", budgetCatalog(std, "    id_space: a\n", "    id_space: a\n", ""),
			want{Budget{1.5, 1e-6}, &Budget{2, 1e-5}, "a"}, want{Budget{1.5, 1e-6}, &Budget{2, 1e-5}, "a"}, want{Budget{1.5, 1e-6}, &Budget{2, 1e-5}, "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), writeSource(t))
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range []want{tt.a, tt.b, tt.c} {
				tb := c.Tables[i]
				if tb.Budget != w.budget || (tb.TotalBudget == nil) != (w.total == nil) || (w.total != nil && *tb.TotalBudget != *w.total) || tb.BudgetDataset() != w.dataset {
					t.Errorf("table %s: budget %+v total %+v dataset %q; want %+v %+v %q", tb.Name, tb.Budget, tb.TotalBudget, tb.BudgetDataset(), w.budget, w.total, w.dataset)
				}
			}
			if !strings.Contains(c.Summary(), "budget") {
				t.Errorf("summary says nothing of budgets:\n%s", c.Summary())
			}
		})
	}
}

func TestParseBudgetErrors(t *testing.T) {
	const std = "budget: {epsilon: 1.5, delta: 1e-6}\ntotal_budget: {epsilon: 2, delta: 1e-5}"
	tests := []struct {
		name, yaml, want string
	}{
		{"total without epsilon", budgetCatalog("budget: {epsilon: 1}\ntotal_budget: {delta: 1e-5}", "", "", ""), "total_budget: epsilon missing"},
		{"negative total", budgetCatalog("budget: {epsilon: 1}\ntotal_budget: {epsilon: -2}", "", "", ""), "total_budget: epsilon = -2: want a finite number > 0"},
		{"total delta 1", budgetCatalog("budget: {epsilon: 1}\ntotal_budget: {epsilon: 2, delta: 1}", "", "", ""), "total_budget: delta = 1: want a number in [0, 1)"},
		{"bad table budget", budgetCatalog(std, "    budget: {epsilon: 0}\n", "", ""), "table a: budget: epsilon = 0"},
		{"bad table total", budgetCatalog(std, "", "    total_budget: {epsilon: .inf}\n", ""), "table b: total_budget: epsilon = +Inf"},
		{"bad id space name", budgetCatalog(std, "    id_space: 'two words'\n", "", ""), `table a: id_space "two words": want letters`},
		{"id space with two budgets", budgetCatalog(std, "    id_space: people\n", "    id_space: people\n    budget: {epsilon: 3}\n", ""), "id_space people: tables a and b share budgets but declare different per-analyst budgets"},
		{"id space with two totals", budgetCatalog(std, "    id_space: people\n    total_budget: {epsilon: 9}\n", "    id_space: people\n", ""), "id_space people: tables a and b share budgets but declare different total budgets ({epsilon: 9, delta: 0} and {epsilon: 2, delta: 1e-05})"},
		{"id space named after another table", budgetCatalog(std, "    id_space: c\n", "    id_space: c\n", ""), "id_space c (tables a, b) has the name of table c, which is not in it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), writeSource(t))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse error = %v, want one saying %q", err, tt.want)
			}
		})
	}
}
