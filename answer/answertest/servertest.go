// Package answertest provides a stand-in Answerer for testing and
// benchmarking the server's front ends without a query engine. It parses
// nothing beyond the table name, answers with fixed rows, and charges a real
// ledger exactly as a real answerer must: before answering, never for a
// refusal or a dry run.
package answertest

import (
	"context"
	"errors"
	"regexp"
	"strings"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/schema"
)

// Answerer is a fake answer.Answerer over two declared tables, "adult" and
// "visits", and the public table "weekdays". Its answers are fixed
// numbers; only its charging is real.
type Answerer struct {
	// Ledger is charged for every answer.
	Ledger *ledger.Ledger
}

var quotedRE = regexp.MustCompile(`'(?:[^']|'')*'`)

var fromRE = regexp.MustCompile(`(?i)\bfrom\s+("?)([A-Za-z_][A-Za-z0-9_]*)("?)`)

func f(v float64) *float64 { return &v }

var tables = []answer.TableInfo{
	{Name: "adult", Columns: []answer.ColumnInfo{
		{Name: "age", Type: "int", Lower: f(17), Upper: f(90)},
		{Name: "hours_per_week", Type: "int", Lower: f(1), Upper: f(99)},
		{Name: "sex", Type: "text", Values: []string{"Female", "Male"}},
		{Name: "education", Type: "text"},
	}},
	{Name: "visits", PrivacyUnit: "visitor_id", MaxGroupsPerUnit: 3, MaxRowsPerGroup: 1, Columns: []answer.ColumnInfo{
		{Name: "visitor_id", Type: "int"},
		{Name: "day", Type: "int", Values: []string{"1", "2", "3", "4", "5", "6", "7"}},
		{Name: "euros_spent", Type: "float", Lower: f(0), Upper: f(60)},
		{Name: "first_visit", Type: "date", Lower: f(19723), Upper: f(20088), Range: []string{"2024-01-01", "2024-12-31"}},
	}},
	{Name: "weekdays", Public: true, Columns: []answer.ColumnInfo{
		{Name: "day", Type: "int", Values: []string{"1", "2", "3", "4", "5", "6", "7"}},
		{Name: "name", Type: "text"},
	}},
}

// Tables lists the tables on which analyst has a budget ("" lists all).
func (a *Answerer) Tables(analyst string) []answer.TableInfo {
	var out []answer.TableInfo
	for _, t := range tables {
		if analyst == "" {
			out = append(out, t)
			continue
		}
		if t.Public {
			out = append(out, t) // no budget: every analyst may join it
			continue
		}
		if _, err := a.Ledger.Status(ledger.Key{Dataset: t.Name, Analyst: analyst}); err == nil {
			out = append(out, t)
		}
	}
	return out
}

// Answer answers "SELECT sex, COUNT(*) ... FROM table" with two fixed rows,
// charging Epsilon (default 1) and Delta to (table, analyst). A query that
// mentions AVG( gets a third column, avg, with fixed averages.
func (a *Answerer) Answer(ctx context.Context, req answer.Request) (*answer.Response, error) {
	sql := strings.TrimSpace(req.SQL)
	sql = strings.TrimSuffix(sql, ";")
	low := strings.ToLower(sql)
	switch {
	case !strings.HasPrefix(low, "select"):
		if strings.HasPrefix(low, "drop") || strings.HasPrefix(low, "insert") || strings.HasPrefix(low, "delete") || strings.HasPrefix(low, "update") {
			return nil, answer.Errorf(answer.KindRefused, "only SELECT queries are answered; got %q", firstWord(sql))
		}
		return nil, answer.Errorf(answer.KindSyntax, "syntax error at or near %q", firstWord(sql))
	case strings.Contains(quotedRE.ReplaceAllString(sql, "''"), ";"):
		return nil, answer.Errorf(answer.KindRefused, "several statements in one query are refused: send one SELECT")
	case strings.Contains(low, "select *"):
		return nil, answer.Errorf(answer.KindRefused, "SELECT * is refused: name aggregates such as COUNT(*)")
	}
	m := fromRE.FindStringSubmatch(sql)
	if m == nil {
		return nil, answer.Errorf(answer.KindSyntax, "no FROM clause: name a table")
	}
	table := m[2]
	known := false
	for _, t := range tables {
		known = known || t.Name == table
	}
	if !known {
		return nil, answer.Errorf(answer.KindUnknownTable, "table %q is not in the catalog", table)
	}
	key := ledger.Key{Dataset: table, Analyst: req.Analyst}
	if _, err := a.Ledger.Status(key); errors.Is(err, ledger.ErrNoBudget) {
		return nil, answer.Errorf(answer.KindNotGranted, "analyst %q has no budget on table %q", req.Analyst, table)
	} else if err != nil {
		return nil, err
	}
	eps := req.Epsilon
	if eps == 0 {
		eps = 1
	}
	cost := accounting.Approximate(eps, req.Delta)
	resp := &answer.Response{
		Columns: []string{"sex", "count"},
		Types:   []schema.Type{schema.Text, schema.Int},
		Table:   table,
		Cost:    answer.Pair{Epsilon: eps, Delta: req.Delta},
	}
	withAvg := strings.Contains(low, "avg(")
	if withAvg {
		resp.Columns = append(resp.Columns, "avg")
		resp.Types = append(resp.Types, schema.Float)
	}
	if req.DryRun {
		resp.DryRun = true
		resp.Rows = [][]any{{"Female", nil}, {"Male", nil}}
		resp.CI = [][]*[2]float64{{nil, {-3 / eps, 3 / eps}}, {nil, {-3 / eps, 3 / eps}}}
		if withAvg {
			for i := range resp.Rows {
				resp.Rows[i] = append(resp.Rows[i], nil)
				resp.CI[i] = append(resp.CI[i], &[2]float64{-0.5 / eps, 0.5 / eps})
			}
		}
		st, err := a.Ledger.Status(key)
		if err != nil {
			return nil, err
		}
		resp.Budget = answer.BudgetLeft{Spent: answer.Pair{Epsilon: st.Spent.Epsilon, Delta: st.Spent.Delta},
			Remaining: answer.Pair{Epsilon: st.Remaining.Epsilon, Delta: st.Remaining.Delta}}
		return resp, nil
	}
	rc, err := a.Ledger.Charge(ctx, ledger.Charge{Key: key, Description: sql, Cost: cost})
	var ex *accounting.ExceededError
	if errors.As(err, &ex) {
		return nil, answer.Errorf(answer.KindBudgetExceeded, "budget exceeded: %v", err)
	}
	if err != nil {
		return nil, err
	}
	resp.Rows = [][]any{{"Female", 10771.0}, {"Male", 21790.0}}
	resp.CI = [][]*[2]float64{{nil, {10771 - 3/eps, 10771 + 3/eps}}, {nil, {21790 - 3/eps, 21790 + 3/eps}}}
	if withAvg {
		for i, v := range []float64{36.8, 39.4} {
			resp.Rows[i] = append(resp.Rows[i], v)
			resp.CI[i] = append(resp.CI[i], &[2]float64{v - 0.5/eps, v + 0.5/eps})
		}
	}
	resp.Budget = answer.BudgetLeft{Spent: answer.Pair{Epsilon: rc.Spent.Epsilon, Delta: rc.Spent.Delta},
		Remaining: answer.Pair{Epsilon: rc.Remaining.Epsilon, Delta: rc.Remaining.Delta}, Total: answer.TotalInfoOf(rc.Total)}
	resp.ReleaseID = rc.ReleaseID
	return resp, nil
}

func firstWord(s string) string {
	if i := strings.IndexAny(s, " \t\n("); i > 0 {
		s = s[:i]
	}
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}
