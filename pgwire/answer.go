package pgwire

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/schema"
)

// request builds the answerer's request for sql with the session settings.
func (ss *session) request(sql string, dry bool) answer.Request {
	r := answer.Request{Analyst: ss.user.Name, SQL: sql, Epsilon: ss.epsilon, Delta: ss.delta, Confidence: ss.confidence, DryRun: dry, Fresh: ss.fresh, Dropped: ss.dropped}
	if ss.accuracy != nil {
		r.Epsilon, r.Accuracy = 0, ss.accuracy
	}
	return r
}

func (ss *session) answer(sql string, dry bool) (*answer.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ss.s.opts.QueryTimeout)
	defer cancel()
	if ss.reqID == "" {
		ss.reqID = answer.NewRequestID()
	}
	ctx = answer.WithRequestID(ctx, ss.reqID)
	start := time.Now()
	resp, err := ss.s.opts.Answerer.Answer(ctx, ss.request(sql, dry))
	// A query is observed when it runs, or when it is refused at its
	// dry run (a Describe, or the check of a multi-statement string):
	// once, however often a driver describes it again.
	if o := ss.s.opts.Observer; o != nil && (!dry || (err != nil && ss.refusedSQL != sql)) {
		o.ObserveQuery(answer.NewQueryEvent("pg", ss.reqID, ss.user.Name, resp, err, time.Since(start)))
		if dry {
			ss.refusedSQL = sql
		}
	}
	if err != nil {
		return nil, err
	}
	if len(resp.CI) != 0 && len(resp.CI) != len(resp.Rows) {
		return nil, fmt.Errorf("answer has %d rows but %d interval rows", len(resp.Rows), len(resp.CI))
	}
	return resp, nil
}

// describeDP finds a DP query's result shape with a dry run, which charges
// nothing.
func (ss *session) describeDP(sql string) (*description, error) {
	resp, err := ss.answer(sql, true)
	if err != nil {
		return nil, err
	}
	return ss.shape(resp), nil
}

// noisy reports whether column j of resp carries intervals.
func noisy(resp *answer.Response, j int) bool {
	for _, ci := range resp.CI {
		if j < len(ci) && ci[j] != nil {
			return true
		}
	}
	return false
}

// shape is the result description of resp, typed as the answer types its
// columns (answer.Response.Types): group keys
// typed by their declared type, counts as int8, other noisy values as
// float8, and with dpstat.intervals on, a _low and a _high column (float8)
// after each noisy one.
func (ss *session) shape(resp *answer.Response) *description {
	typed := len(resp.Types) == len(resp.Columns)
	types := map[string]schema.Type{}
	// Declared types do not depend on who asks: list every table, which
	// needs no budget lookups.
	for _, t := range ss.s.opts.Answerer.Tables("") {
		if t.Name == resp.Table || resp.Table == "" {
			for _, c := range t.Columns {
				types[c.Name] = c.Type
			}
		}
	}
	d := &description{kind: kindDP, intervals: ss.intervals}
	for j, name := range resp.Columns {
		if noisy(resp, j) {
			// Counts are whole numbers; MIN, MAX and quantiles of dates
			// and timestamps are released as such (their intervals stay
			// numbers: days or microseconds since 1970-01-01); the rest
			// are doubles. The answer types every column.
			oid := uint32(oidFloat8)
			if typed {
				switch t := resp.Types[j]; t {
				case schema.Int, schema.Date, schema.Timestamp:
					oid = uint32(typeOf(t).oid)
				}
			}
			d.cols = append(d.cols, column{name, oid})
			if ss.intervals {
				d.cols = append(d.cols, column{name + "_low", oidFloat8}, column{name + "_high", oidFloat8})
			}
			continue
		}
		oid := uint32(oidText)
		declared := types[name]
		if typed && resp.Types[j] != "" {
			// The key's type from the plan: a computed key (date_trunc,
			// lower(…)) or a column under an alias.
			declared = resp.Types[j]
		}
		switch _, known := declaredTypes[declared]; {
		case known:
			oid = uint32(typeOf(declared).oid)
		case declared == "":
			// A computed column without an interval (an expression over
			// released values): typed by its values.
			oid = valueType(resp, j)
		}
		d.cols = append(d.cols, column{name, oid})
	}
	return d
}

func (ss *session) dpQuery(sql string, formats []int16, describe bool) error {
	ss.reqID, ss.refusedSQL = answer.NewRequestID(), ""
	resp, err := ss.answer(sql, false)
	if err != nil {
		return err
	}
	d := ss.shape(resp)
	if !describe && ss.expect != nil && !sameShape(ss.expect.cols, d.cols) {
		// The answer was charged, but its columns no longer match what the
		// client was told (e.g. dpstat.intervals changed since the
		// statement was described). PostgreSQL's message for this case
		// makes drivers such as pgx prepare the statement again.
		return pgErrorf("0A000", "cached plan must not change result type")
	}
	rows := make([][]any, len(resp.Rows))
	for i, r := range resp.Rows {
		for j, v := range r {
			rows[i] = append(rows[i], v)
			if ss.intervals && noisy(resp, j) {
				var lo, hi any
				if i < len(resp.CI) && j < len(resp.CI[i]) && resp.CI[i][j] != nil {
					lo, hi = resp.CI[i][j][0], resp.CI[i][j][1]
				}
				rows[i] = append(rows[i], lo, hi)
			}
		}
	}
	for _, n := range dpNotices(resp) {
		ss.notice(n)
	}
	return ss.sendRows(d.cols, rows, formats, describe, fmt.Sprintf("SELECT %d", len(rows)))
}

// dpNotices are the NOTICE messages of an answer: intervals, cost and
// budget left.
func dpNotices(resp *answer.Response) []string {
	var out []string
	conf := "intervals"
	var parts []string
	for i, r := range resp.CI {
		var keys, ivs []string
		for j, ci := range r {
			if j >= len(resp.Columns) {
				break
			}
			if ci == nil {
				if i < len(resp.Rows) && j < len(resp.Rows[i]) {
					keys = append(keys, fmt.Sprint(resp.Rows[i][j]))
				}
				continue
			}
			ivs = append(ivs, fmt.Sprintf("%s [%s, %s]", resp.Columns[j], fmtNum(ci[0]), fmtNum(ci[1])))
		}
		if len(ivs) == 0 {
			continue
		}
		p := strings.Join(ivs, ", ")
		if len(keys) > 0 {
			p = strings.Join(keys, ", ") + ": " + p
		}
		parts = append(parts, p)
	}
	if len(parts) > 0 {
		out = append(out, conf+": "+strings.Join(parts, "; "))
	}
	num := accounting.Num
	out = append(out, fmt.Sprintf("cost: epsilon=%s delta=%s; budget on %s: spent epsilon=%s delta=%s, remaining epsilon=%s delta=%s",
		num(resp.Cost.Epsilon), num(resp.Cost.Delta), resp.Table,
		num(resp.Budget.Spent.Epsilon), num(resp.Budget.Spent.Delta),
		num(resp.Budget.Remaining.Epsilon), num(resp.Budget.Remaining.Delta)))
	out = append(out, resp.Notes...)
	return out
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }

// valueType is the type of column j's values: int8 or float8 when they are
// numbers, text otherwise.
func valueType(resp *answer.Response, j int) uint32 {
	for _, row := range resp.Rows {
		if j >= len(row) {
			continue
		}
		switch row[j].(type) {
		case int64:
			return oidInt8
		case float64:
			return oidFloat8
		}
	}
	return oidText
}
