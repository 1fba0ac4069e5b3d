package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/answer"
	"github.com/dpstat/dpstat/answer/queryanswer"
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/engines"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query"
	"github.com/dpstat/dpstat/query/ir"
	"github.com/dpstat/dpstat/schema"
)

// oneQuery checks that the query came as one argument: an unquoted query
// arrives split at its spaces.
func oneQuery(cmd *cobra.Command, args []string) error {
	switch len(args) {
	case 1:
		return nil
	case 0:
		return fmt.Errorf("no query given: dpstat %s --catalog FILE \"SELECT COUNT(*) FROM t\"", cmd.Name())
	}
	return fmt.Errorf("the query arrived as %d arguments (%q, ...): quote it as one, e.g. dpstat %s --catalog FILE \"%s\"",
		len(args), args[0], cmd.Name(), strings.Join(args, " "))
}

func newQueryCmd() *cobra.Command {
	var (
		catalogPath, ledgerPath, analyst, format string
		accuracy                                 string
		dryRun                                   bool
		opts                                     = query.Options{Epsilon: query.DefaultEpsilon, Confidence: query.DefaultConfidence}
	)
	cmd := &cobra.Command{
		Use:   `query --catalog FILE [flags] "SQL"`,
		Short: "Answer an aggregate SQL query with differential privacy",
		Long: `Answer an aggregate SQL query over a catalog's table with differential
privacy, and charge its cost to the analyst's budget on that table.

Supported: SELECT COUNT(*), COUNT(col), COUNT(DISTINCT privacy_unit),
SUM(col), AVG(col), VAR_POP/VAR_SAMP/VARIANCE(col), STDDEV_POP/STDDEV(col),
MEDIAN(col), percentile_cont(q) WITHIN GROUP (ORDER BY col) and grouped
columns FROM one table [WHERE a row condition] [GROUP BY columns]
[HAVING, ORDER BY, LIMIT over the noisy results]. Numeric aggregates need the
column's bounds in the catalog. GROUP BY a column with a public value list
releases every listed group; a column without one is grouped by DP key
selection, which needs --delta > 0: when the query has a count (COUNT, AVG's
count, COUNT(DISTINCT privacy_unit)) its noisy value selects the keys and
costs only delta; otherwise a separate noisy count takes half of epsilon.
The query's epsilon (default 1) is split equally among its aggregates; every answer comes
with intervals at the --confidence level. A refused query costs nothing.

EXPLAIN <query> or --dry-run shows the cost, the split, the noise, the
interval half-widths and the engine SQL without reading data or charging.
--accuracy H asks for an accuracy instead of an epsilon: the half-width of
the intervals at the --confidence level (95% by default), one number for
every COUNT, SUM and COUNT(DISTINCT) column, or one per output column
(--accuracy n=20,total=500). dpstat spends the smallest epsilon (4
significant digits) whose planned intervals are at most that wide in every
released group, shows it in the dry run, and charges it; when the budget
left cannot pay for it, the query is refused, free, with the best
half-widths the budget left would buy. AVG, variances, quantiles and
computed columns have intervals that depend on the data: --accuracy does
not target them (a per-column accuracy naming one is refused); the interval
reported with the answer is the real one. Key selection spends the --delta
given, or 1e-6. --accuracy and --epsilon cannot be given together.

An identical query asked again by the same analyst (same epsilon, delta and
confidence) returns the stored answer at no cost.

A COUNT, SUM or AVG query whose groups are unions of groups an earlier query
released (a coarser GROUP BY over columns with declared value lists, a subset
of the keys, the same filter and bounds) is derived from those noisy values
at no cost when the derived intervals meet the --accuracy asked, or are at
least as tight as a fresh answer at the --epsilon asked; the answer says
"derived from releases ..., cost 0". --fresh answers afresh (and pays).

The budget charged is the analyst's budget on the queried table (the ledger
key is the table name and the analyst); it is created from the catalog's
budget on first use.`,
		Example: `  dpstat query --catalog examples/catalog.yaml \
    "SELECT sex, COUNT(*), AVG(hours_per_week) FROM adult GROUP BY sex"
  dpstat query --catalog examples/catalog.yaml --accuracy n=20,hours=5000 --dry-run \
    "SELECT sex, COUNT(*) AS n, SUM(hours_per_week) AS hours FROM adult GROUP BY sex"`,
		Args: oneQuery,
		RunE: func(cmd *cobra.Command, args []string) error {
			if catalogPath == "" {
				return fmt.Errorf("--catalog is required: give the data owner's catalog file")
			}
			switch format {
			case "table", "csv", "json":
			default:
				return fmt.Errorf("--format %q: want table, csv or json", format)
			}
			opts.Analyst = analyst
			if err := checkQueryFlags(cmd, opts); err != nil {
				return err
			}
			if cmd.Flags().Changed("accuracy") {
				if cmd.Flags().Changed("epsilon") {
					return fmt.Errorf("--accuracy and --epsilon were both given: keep one, --accuracy (dpstat chooses the smallest epsilon that meets it) or --epsilon (dpstat reports the half-widths it gives)")
				}
				acc, err := answer.ParseAccuracy(accuracy)
				if err != nil {
					return err
				}
				opts.Accuracy, opts.Epsilon = &query.Accuracy{All: acc.All, Columns: acc.Columns}, 0
			}
			cat, err := catalog.Load(catalogPath)
			if err != nil {
				return err
			}
			ctx := cmdContext(cmd)
			// The query is planned as dpstat serve plans it: with the
			// engine (a table sharded by its privacy unit is bounded on
			// the shards) and the public tables' facts (joins). Every
			// refusal happens in Prepare, before the ledger is opened.
			eng, err := engine.Open(ctx, engines.Spec(cat))
			if err != nil {
				return err
			}
			defer eng.Close()
			// A preview (--dry-run, EXPLAIN) reads no budget and charges
			// nothing: its service has no ledger.
			var led query.Ledger = noLedger{}
			var book *ledger.Ledger
			preview := dryRun || query.LooksLikeExplain(args[0])
			if !preview {
				if book, err = openLedger(ledgerPath); err != nil {
					return err
				}
				defer book.Close()
				led = book
			}
			svc, err := query.NewService(ctx, cat, eng, led)
			if err != nil {
				return err
			}
			if preview {
				// The command line's preview is the planner's full
				// explanation (with the engine SQL), which the data owner
				// may see.
				prep, err := svc.Prepare(args[0], opts)
				if err != nil {
					return err
				}
				return writeExplanation(cmd.OutOrStdout(), prep.Explain(), format)
			}
			return answerQuery(cmd, svc, cat, book, args[0], opts, format)
		},
	}
	f := cmd.Flags()
	f.StringVar(&catalogPath, "catalog", "", "the data owner's catalog file (YAML); required")
	f.Float64Var(&opts.Epsilon, "epsilon", query.DefaultEpsilon, "the query's privacy cost ε, split equally among its aggregates")
	f.Float64Var(&opts.Delta, "delta", 0, "the δ the query may spend, in [0, 1); a GROUP BY column without public values needs δ > 0 for key selection")
	f.StringVar(&accuracy, "accuracy", "", "ask for a half-width instead of an ε: one number for every COUNT, SUM and COUNT(DISTINCT) column, or column=number pairs (n=20,total=500); dpstat spends the smallest ε that meets it")
	f.BoolVar(&opts.Fresh, "fresh", false, "answer afresh (and pay) even when the answer could be derived at no cost from earlier releases of the table")
	f.Float64Var(&opts.Confidence, "confidence", query.DefaultConfidence, "confidence level of the reported intervals, in (0, 1)")
	f.StringVar(&format, "format", "table", "output format: table, csv or json")
	f.BoolVar(&opts.Dropped, "dropped", false, "also estimate, with DP, the share of the rows read that contribution bounding dropped (takes 10% of the query's ε; free for a table without a privacy unit)")
	f.BoolVar(&dryRun, "dry-run", false, "show the cost, the split, the noise and interval half-widths and the engine SQL without reading data or charging (as EXPLAIN does)")
	f.StringVar(&analyst, "analyst", defaultAnalyst(), "whose budget is charged; the default is $USER, or \"default\" when it is unset")
	addLedgerFlag(cmd, &ledgerPath)
	return cmd
}

// checkQueryFlags checks the numbers given on the command line as every
// front end checks them (answer.CheckParam).
func checkQueryFlags(cmd *cobra.Command, opts query.Options) error {
	for _, p := range []struct {
		param answer.Param
		flag  string
		v     float64
	}{{answer.ParamEpsilon, "epsilon", opts.Epsilon}, {answer.ParamDelta, "delta", opts.Delta}, {answer.ParamConfidence, "confidence", opts.Confidence}} {
		if cmd.Flags().Changed(p.flag) {
			if err := answer.CheckParam(p.param, "--"+p.flag, p.v); err != nil {
				return err
			}
		}
	}
	return nil
}

// answerQuery answers sql through the one answering contract, as over HTTP
// and psql (budgets created from the catalog's on first use), and prints
// the response in format.
func answerQuery(cmd *cobra.Command, svc *query.Service, cat *catalog.Catalog, book *ledger.Ledger, sql string, opts query.Options, format string) error {
	ans, err := queryanswer.NewWith(svc, cat, book, queryanswer.Options{CatalogBudgets: true, Advice: raiseAdvice})
	if err != nil {
		return err
	}
	req := answer.Request{Analyst: opts.Analyst, SQL: sql, Epsilon: opts.Epsilon, Delta: opts.Delta, Confidence: opts.Confidence, Fresh: opts.Fresh, Dropped: opts.Dropped}
	if a := opts.Accuracy; a != nil {
		req.Accuracy = &answer.Accuracy{All: a.All, Columns: a.Columns}
	}
	res, err := ans.Answer(cmdContext(cmd), req)
	if err != nil {
		return cliError(err)
	}
	out := cmd.OutOrStdout()
	switch format {
	case "json":
		return writeQueryJSON(out, res)
	case "csv":
		// The rows stay plain CSV; the cost goes to standard error.
		if err := writeQueryCSV(out, res); err != nil {
			return err
		}
		fmt.Fprintln(cmd.ErrOrStderr(), costLine(res))
		return nil
	}
	return writeQueryTable(out, res)
}

// noLedger is the ledger of a preview (--dry-run): it is never charged,
// and refuses if it were.
type noLedger struct{}

// EnsureBudget refuses: a preview reads no budget.
func (noLedger) EnsureBudget(ledger.Key, accounting.EpsDelta, accounting.Rule) (ledger.Status, error) {
	return ledger.Status{}, errors.New("a preview (--dry-run) reads no budget")
}

// Charge refuses: a preview is never charged.
func (noLedger) Charge(context.Context, ledger.Charge) (ledger.Receipt, error) {
	return ledger.Receipt{}, errors.New("a preview (--dry-run) is never charged")
}

// writeExplanation prints a query preview: JSON as one object, otherwise
// one line per item.
func writeExplanation(w io.Writer, e *query.Explanation, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			DryRun bool `json:"dry_run"`
			*query.Explanation
		}{true, e})
	}
	for _, l := range e.Lines() {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

func defaultAnalyst() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "default"
}

// cliError is the error the command prints for a refusal or a failure: the
// contract's message, or for an internal error its cause (the command
// line's user runs the engine and may read its text).
func cliError(err error) error {
	e := answer.AsError(err)
	if e.Kind == answer.KindInternal && e.Err != nil {
		return e.Err
	}
	return e
}

// queryJSON is the JSON form of an answer: the contract's response (as the
// HTTP API returns it) with the ledger key charged.
type queryJSON struct {
	*answer.Response
	Ledger *ledgerKeyJSON `json:"ledger,omitempty"`
}

// ledgerKeyJSON is the budget charged: the table (the ledger's "dataset",
// kept under both names) and the analyst.
type ledgerKeyJSON struct {
	Table   string `json:"table"`
	Dataset string `json:"dataset"`
	Analyst string `json:"analyst"`
}

func writeQueryJSON(w io.Writer, r *answer.Response) error {
	out := queryJSON{Response: r, Ledger: &ledgerKeyJSON{r.Budget.Dataset, r.Budget.Dataset, r.Budget.Analyst}}
	if out.Rows == nil {
		out.Rows = [][]any{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func writeQueryCSV(w io.Writer, r *answer.Response) error {
	cw := csv.NewWriter(w)
	var header []string
	isAgg := make([]bool, len(r.Columns))
	if len(r.CI) > 0 {
		for j, iv := range r.CI[0] {
			isAgg[j] = iv != nil
		}
	} else {
		for j := range r.Columns {
			isAgg[j] = true
		}
	}
	for j, c := range r.Columns {
		header = append(header, c)
		if isAgg[j] {
			header = append(header, c+"_low", c+"_high")
		}
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	for i, row := range r.Rows {
		var rec []string
		for j, v := range row {
			rec = append(rec, formatPlain(v))
			if iv := r.CI[i][j]; iv != nil {
				rec = append(rec, strconv.FormatFloat(iv[0], 'g', -1, 64), strconv.FormatFloat(iv[1], 'g', -1, 64))
			}
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func formatPlain(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// temporalInterval spells the interval of a released date or timestamp
// (a MIN, MAX or quantile of one), held in days or microseconds since
// 1970-01-01, as dates or timestamps; ok is false for any other value.
func temporalInterval(v any, iv *[2]float64) (string, bool) {
	s, ok := v.(string)
	if !ok {
		return "", false
	}
	t := schema.Date
	if _, err := schema.ParseDate(s); err != nil {
		if _, err := schema.ParseTimestamp(s); err != nil {
			return "", false
		}
		t = schema.Timestamp
	}
	return "[" + schema.FormatValue(t, int64(math.Round(iv[0]))) + ", " + schema.FormatValue(t, int64(math.Round(iv[1]))) + "]", true
}

// formatNoisy prints a noisy value with the decimals its interval warrants.
func formatNoisy(v any, half float64) string {
	f, ok := v.(float64)
	if !ok {
		return fmt.Sprint(v)
	}
	if math.Abs(f) >= 1e15 || half <= 0 || math.IsInf(half, 0) || math.IsNaN(half) {
		return strconv.FormatFloat(f, 'g', 6, 64)
	}
	dec := int(math.Ceil(-math.Log10(half))) + 1
	dec = max(0, min(dec, 8))
	return strconv.FormatFloat(f, 'f', dec, 64)
}

func writeQueryTable(w io.Writer, r *answer.Response) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var header []string
	isAgg := make([]bool, len(r.Columns))
	for j := range r.Columns {
		isAgg[j] = len(r.CI) == 0 || r.CI[0][j] != nil
	}
	if len(r.CI) == 0 {
		// No rows (HAVING or LIMIT removed them all): show the columns.
		for j := range r.Columns {
			isAgg[j] = false
		}
	}
	// A column whose intervals are not symmetric around the values (one
	// side over 1% longer than the other: a quantile's, or an average's or
	// a variance's clipped to the range the declared bounds allow) shows
	// each interval as [low, high]: a ± of the longer side would claim
	// values beyond the shorter one, perhaps outside the declared range
	// (a median of 47 ± 53 for an age in [0, 100]). A 1% difference is
	// below the two digits a half-width is shown with.
	lopsided := make([]bool, len(r.Columns))
	for i, row := range r.Rows {
		for j, v := range row {
			if iv := r.CI[i][j]; iv != nil {
				if _, ok := temporalInterval(v, iv); ok {
					lopsided[j] = true // a date's interval is its range
					continue
				}
				x, _ := ir.Number(v)
				below, above := x-iv[0], iv[1]-x
				lopsided[j] = lopsided[j] || math.Abs(below-above) > 0.01*math.Max(math.Abs(below), math.Abs(above))
			}
		}
	}
	for j, c := range r.Columns {
		header = append(header, c)
		switch {
		case isAgg[j] && lopsided[j]:
			header = append(header, "interval")
		case isAgg[j]:
			header = append(header, "±")
		}
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for i, row := range r.Rows {
		var cells []string
		for j, v := range row {
			iv := r.CI[i][j]
			if iv == nil {
				cells = append(cells, fmt.Sprint(v))
				continue
			}
			x, _ := ir.Number(v)
			half := math.Max(x-iv[0], iv[1]-x)
			if span, ok := temporalInterval(v, iv); ok {
				cells = append(cells, fmt.Sprint(v), span)
				continue
			}
			if lopsided[j] {
				w := (iv[1] - iv[0]) / 2
				cells = append(cells, formatNoisy(v, w), "["+formatNoisy(iv[0], w)+", "+formatNoisy(iv[1], w)+"]")
				continue
			}
			cells = append(cells, formatNoisy(v, half), formatNoisy(half, half))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var split []string
	for _, s := range r.Split {
		// A share is a figure of the plan, not a charge: a few digits.
		part := fmt.Sprintf("%s ε=%s", s.Column, accounting.Note(s.Epsilon))
		if s.Delta > 0 {
			part += " δ=" + accounting.Note(s.Delta)
		}
		split = append(split, part)
	}
	what := "± is the half-width of a %s%% interval"
	for _, l := range lopsided {
		if l {
			what = "± and [low, high] are %s%% intervals"
			break
		}
	}
	if len(split) == 0 {
		// Derived from earlier releases: nothing was split or spent.
		fmt.Fprintf(w, what+"\n", accounting.Num(r.Confidence*100))
	} else {
		fmt.Fprintf(w, what+"; ε split: %s\n", accounting.Num(r.Confidence*100), strings.Join(split, ", "))
	}
	// The notes say what shaped the numbers (contribution bounding above
	// all: counts below the rows in the file, with no other word on
	// screen, confuse), as the JSON output, psql and the dashboard do.
	for _, n := range r.Notes {
		if !strings.HasPrefix(n, "repeated query:") {
			fmt.Fprintln(w, "note: "+n)
		}
	}
	if r.Repeated && r.OriginalCost != nil {
		fmt.Fprintf(w, "%s (first answered at a cost of ε=%s δ=%s)\n", query.RepeatedNote, fmtNum(r.OriginalCost.Epsilon), fmtNum(r.OriginalCost.Delta))
	}
	fmt.Fprintln(w, costLine(r))
	if t := r.Budget.Total; t != nil {
		fmt.Fprintf(w, "total budget of %s, every analyst together: spent ε=%s δ=%s, left ε=%s δ=%s\n",
			t.Table, fmtNum(t.Spent.Epsilon), fmtNum(t.Spent.Delta), fmtNum(t.Remaining.Epsilon), fmtNum(t.Remaining.Delta))
	}
	return nil
}

// costLine says what a query cost and what is left of the budget.
func costLine(r *answer.Response) string {
	return fmt.Sprintf("cost ε=%s δ=%s; budget of %s on %s: spent ε=%s δ=%s, left ε=%s δ=%s",
		fmtNum(r.Cost.Epsilon), fmtNum(r.Cost.Delta), r.Budget.Analyst, r.Budget.Dataset,
		fmtNum(r.Budget.Spent.Epsilon), fmtNum(r.Budget.Spent.Delta), fmtNum(r.Budget.Remaining.Epsilon), fmtNum(r.Budget.Remaining.Delta))
}

// raiseAdvice says how to spend more after a budget refused a charge: the
// table's total budget (every analyst together) or the analyst's own,
// whichever refused, with the table's name.
func raiseAdvice(total bool, table, analyst string) string {
	if total {
		return fmt.Sprintf("The total budget of every analyst together is spent; to spend more, the data owner raises it: dpstat budget grant --table %s --total --epsilon E (dpstat budget show lists the budgets)", table)
	}
	return fmt.Sprintf("To spend more, the data owner raises the analyst's budget: dpstat budget grant --table %s --analyst %s --epsilon E (dpstat budget show --analyst %s lists the budgets)", table, analyst, analyst)
}
