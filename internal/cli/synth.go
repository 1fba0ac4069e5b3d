package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/engines"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query"
	"github.com/dpstat/dpstat/random"
	"github.com/dpstat/dpstat/schema"
	"github.com/dpstat/dpstat/synth"
)

// SidecarSuffix is appended to the output's name for the file that records
// a synthetic table's cost.
const SidecarSuffix = ".dpstat.json"

func newSynthCmd() *cobra.Command {
	var (
		catalogPath, ledgerPath, analyst, table, out string
		dryRun                                       bool
		opts                                         = synth.Options{Delta: synth.DefaultDelta}
	)
	cmd := &cobra.Command{
		Use:   "synth --catalog FILE --table T --epsilon E --out FILE.csv|FILE.parquet",
		Short: "Release a differentially private synthetic copy of a table (MST)",
		Long: `Release a synthetic table whose 1-way and 2-way statistics resemble the
real table's, with differential privacy, by MST (McKenna, Miklau & Sheldon
2021): noisy 1-way marginals, a spanning tree of the most dependent pairs
of columns chosen with the exponential mechanism, the tree's 2-way marginals
measured with the exact discrete Gaussian, a tree model fitted to them, and
rows sampled from it. The cost is accounted in zCDP and charged as (ε, δ).

Columns with a public values: list keep those values; numeric columns with
declared bounds are cut into --bins bins (numbers are drawn uniformly within
their bin); date and timestamp columns with declared bounds into days, weeks,
months or years (the finest that fits --bins), sampled back as dates; NULL is
a value of its own in a nullable column. Columns with no
public domain, and the privacy unit, are left out (the plan says which). A
person's rows are bounded to max_groups_per_unit × max_rows_per_group.

The release is charged to the analyst's budget on the table before anything
is written. The output is CSV or Parquet, by the extension of --out, with the
declared column names (and, in Parquet, types); its cost, the ledger's release
id and the plan go to the output's name followed by ` + SidecarSuffix + ` (e.g.
synthetic.csv` + SidecarSuffix + `). --dry-run prints the
cost and the plan without reading data or charging.`,
		Example: `  dpstat synth --catalog examples/catalog.yaml --table adult --epsilon 1 --out adult-synth.csv`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if catalogPath == "" {
				return fmt.Errorf("--catalog is required: give the data owner's catalog file")
			}
			if table == "" {
				return fmt.Errorf("--table is required: name a table of the catalog")
			}
			cat, err := catalog.Load(catalogPath)
			if err != nil {
				return err
			}
			t := cat.Table(table)
			if t == nil {
				var names []string
				for _, t := range cat.Tables {
					names = append(names, t.Name)
				}
				return fmt.Errorf("--table %q: the catalog declares no such table; it declares %s", table, strings.Join(names, ", "))
			}
			plan, err := synth.NewPlan(t, opts)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if dryRun {
				fmt.Fprintln(w, "dry run: nothing read, nothing charged")
				for _, l := range plan.Describe() {
					fmt.Fprintln(w, l)
				}
				return nil
			}
			if err := checkOut(out); err != nil {
				return err
			}
			ctx := cmdContext(cmd)
			return runSynth(ctx, w, cat, t, plan, analyst, ledgerPath, out)
		},
	}
	f := cmd.Flags()
	f.StringVar(&catalogPath, "catalog", "", "the data owner's catalog file (YAML); required")
	f.StringVar(&table, "table", "", "the table to copy; required")
	f.Float64Var(&opts.Epsilon, "epsilon", 0, "the release's privacy cost ε; required")
	f.Float64Var(&opts.Delta, "delta", synth.DefaultDelta, "the release's δ, in (0, 1)")
	f.Int64Var(&opts.Rows, "rows", 0, "rows to write; the default is the DP estimate of the table's size")
	f.IntVar(&opts.Bins, "bins", synth.DefaultBins, "bins of a bounded numeric column without a value list")
	f.StringVar(&out, "out", "", "the file to write, FILE.csv or FILE.parquet; its cost goes to that name followed by "+SidecarSuffix)
	f.BoolVar(&dryRun, "dry-run", false, "print the cost and the plan (columns, bins, marginals, σ) without reading data or charging")
	f.StringVar(&analyst, "analyst", defaultAnalyst(), "whose budget is charged; the default is $USER, or \"default\" when it is unset")
	addLedgerFlag(cmd, &ledgerPath)
	return cmd
}

// checkOut refuses an output the command cannot write, before any charge.
func checkOut(out string) error {
	if out == "" {
		return errors.New("--out is required: name the file to write, e.g. --out synthetic.csv or --out synthetic.parquet")
	}
	switch strings.ToLower(filepath.Ext(out)) {
	case ".csv":
	case ".parquet":
		if !engine.Registered(catalog.DefaultEngine) {
			return fmt.Errorf("--out %s: Parquet is written by the embedded DuckDB engine, which this build lacks; give a name ending in .csv", out)
		}
	default:
		return fmt.Errorf("--out %s: want a file name ending in .csv or .parquet", out)
	}
	dir := filepath.Dir(out)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("--out %s: the directory %s does not exist; create it first", out, dir)
	}
	return nil
}

// synthLedger is what a synthetic release needs of the ledger.
type synthLedger interface {
	EnsureBudget(k ledger.Key, def accounting.EpsDelta, rule accounting.Rule) (ledger.Status, error)
	EnsureTotal(ds string, def accounting.EpsDelta, rule accounting.Rule) (ledger.TotalStatus, error)
	Check(k ledger.Key, c accounting.Cost) error
	Charge(ctx context.Context, c ledger.Charge) (ledger.Receipt, error)
}

func runSynth(ctx context.Context, w io.Writer, cat *catalog.Catalog, t *catalog.Table, plan *synth.Plan, analyst, ledgerPath, out string) error {
	eng, err := engine.Open(ctx, engines.Spec(cat))
	if err != nil {
		return err
	}
	defer eng.Close()
	if err := query.Register(ctx, cat, eng); err != nil {
		return err
	}
	led, err := openLedger(ledgerPath)
	if err != nil {
		return err
	}
	defer led.Close()
	receipt, err := chargeSynth(ctx, led, eng, cat, t, plan, analyst)
	if err != nil {
		return err
	}
	// Charged: from here on the release has cost its ε whatever happens.
	failed := func(err error) error {
		return fmt.Errorf("the synthetic table of %s was charged as release %d, but %w", t.Name, receipt.ReleaseID, err)
	}
	data, err := plan.Read(ctx, eng)
	if err != nil {
		return failed(errors.New("reading the table failed; the details are withheld because they may depend on the data"))
	}
	src := random.NewSecure()
	res, err := plan.Synthesize(data, src)
	if err != nil {
		return failed(err)
	}
	if strings.EqualFold(filepath.Ext(out), ".parquet") {
		err = writeParquet(ctx, out, plan, func(f io.Writer) error { return res.WriteCSV(f, src) })
	} else {
		err = writeAtomic(out, func(f io.Writer) error { return res.WriteCSV(f, src) })
	}
	if err != nil {
		return failed(fmt.Errorf("writing %s failed: %v", out, err))
	}
	side := res.Sidecar(receipt.Key.Dataset, receipt.Key.Analyst, receipt.ReleaseID, time.Now())
	if err := writeAtomic(out+SidecarSuffix, func(f io.Writer) error {
		enc := json.NewEncoder(f)
		enc.SetIndent("", "  ")
		return enc.Encode(side)
	}); err != nil {
		return failed(fmt.Errorf("writing %s failed: %v", out+SidecarSuffix, err))
	}
	fmt.Fprintf(w, "wrote %d rows of %d columns to %s (cost and plan in %s)\n", res.N, len(plan.Attrs), out, out+SidecarSuffix)
	if res.Capped {
		fmt.Fprintf(w, "the DP estimate of the table's size exceeds %d rows, the most a synthetic table may have: %d rows written (give --rows to choose)\n", synth.MaxRows, res.N)
	}
	for _, l := range plan.LeftOut {
		fmt.Fprintf(w, "left out: %s (%s)\n", l.Column, l.Reason)
	}
	var tree []string
	for _, e := range res.Measurements.Tree {
		tree = append(tree, plan.Attrs[e[0]].Name+"–"+plan.Attrs[e[1]].Name)
	}
	if len(tree) > 0 {
		fmt.Fprintf(w, "2-way marginals measured: %s\n", strings.Join(tree, ", "))
	}
	fmt.Fprintf(w, "cost ε=%s δ=%s; budget of %s on %s: spent ε=%s δ=%s, left ε=%s δ=%s\n",
		fmtNum(receipt.Cost.Epsilon), fmtNum(receipt.Cost.Delta), receipt.Key.Analyst, receipt.Key.Dataset,
		fmtNum(receipt.Spent.Epsilon), fmtNum(receipt.Spent.Delta), fmtNum(receipt.Remaining.Epsilon), fmtNum(receipt.Remaining.Delta))
	if tt := receipt.Total; tt != nil {
		fmt.Fprintf(w, "total budget of %s, every analyst together: spent ε=%s δ=%s, left ε=%s δ=%s\n",
			tt.Dataset, fmtNum(tt.Spent.Epsilon), fmtNum(tt.Spent.Delta), fmtNum(tt.Remaining.Epsilon), fmtNum(tt.Remaining.Delta))
	}
	return nil
}

// chargeSynth charges the release to the analyst's budget on the table
// (and the table's total), durably, or refuses it at no cost.
func chargeSynth(ctx context.Context, led synthLedger, eng engine.Engine, cat *catalog.Catalog, t *catalog.Table, plan *synth.Plan, analyst string) (ledger.Receipt, error) {
	def := t.Budget
	if def == (catalog.Budget{}) {
		def = cat.Budget
	}
	key := ledger.Key{Dataset: t.BudgetDataset(), Analyst: analyst}
	if t.TotalBudget != nil {
		if _, err := led.EnsureTotal(t.BudgetDataset(), accounting.EpsDelta{Epsilon: t.TotalBudget.Epsilon, Delta: t.TotalBudget.Delta}, accounting.Basic); err != nil {
			return ledger.Receipt{}, fmt.Errorf("total budget of %q: %w", t.BudgetDataset(), err)
		}
	}
	if _, err := led.EnsureBudget(key, accounting.EpsDelta{Epsilon: def.Epsilon, Delta: def.Delta}, accounting.Basic); err != nil {
		return ledger.Receipt{}, fmt.Errorf("budget for %s: %w", key, err)
	}
	refused := func(err error) error {
		var ex *accounting.ExceededError
		if errors.As(err, &ex) {
			return fmt.Errorf("synthetic release refused, nothing charged: %w. To spend more, the data owner raises the budget: dpstat budget grant --table %s --analyst %s --epsilon E", err, t.Name, analyst)
		}
		return fmt.Errorf("checking the budget failed, nothing read or charged: %w", err)
	}
	if err := led.Check(key, plan.Cost()); err != nil {
		return ledger.Receipt{}, refused(err)
	}
	if pinger, ok := eng.(engine.Pinger); ok {
		if err := pinger.Ping(ctx); err != nil {
			return ledger.Receipt{}, fmt.Errorf("synthetic release refused, nothing charged: %w", &engine.UnavailableError{Err: err})
		}
	}
	receipt, err := led.Charge(ctx, ledger.Charge{
		Key:         key,
		Description: fmt.Sprintf("synth %s: MST synthetic table (ε=%s δ=%s ρ=%s)", t.Name, fmtNum(plan.Epsilon), fmtNum(plan.Delta), accounting.Note(plan.Rho)),
		Cost:        plan.Cost(),
	})
	if err != nil {
		return ledger.Receipt{}, refused(err)
	}
	return receipt, nil
}

// writeAtomic writes a file through a temporary file in the same
// directory, renamed into place once complete.
func writeAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	bw := bufio.NewWriterSize(f, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		// As os.Create would make it (before the umask).
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// writeParquet writes the synthetic rows as CSV to a temporary file, then
// has an embedded DuckDB engine (opened through the registry, whatever
// engine holds the table) copy it into Parquet with the declared column
// types, renamed into place once complete.
func writeParquet(ctx context.Context, out string, plan *synth.Plan, writeCSV func(io.Writer) error) error {
	dir := filepath.Dir(out)
	tmpCSV, err := os.CreateTemp(dir, "."+filepath.Base(out)+".*.csv")
	if err != nil {
		return err
	}
	csvPath := tmpCSV.Name()
	tmpCSV.Close()
	defer os.Remove(csvPath)
	if err := writeAtomic(csvPath, writeCSV); err != nil {
		return err
	}
	eng, err := engine.Open(ctx, engine.Spec{Kind: catalog.DefaultEngine, Threads: 2})
	if err != nil {
		return err
	}
	defer eng.Close()
	d := eng.Dialect()
	var cols []string
	for _, a := range plan.Attrs {
		t := engine.Text
		switch a.Type {
		case schema.Int:
			t = engine.Integer
		case schema.Float:
			t = engine.Double
		case schema.Bool:
			t = engine.Boolean
		}
		name := d.TypeName(t)
		switch a.Type {
		case schema.Date:
			name = "DATE" // written as 2024-03-17
		case schema.Timestamp:
			name = "TIMESTAMP"
		}
		cols = append(cols, d.QuoteString(a.Name)+": "+d.QuoteString(name))
	}
	tmpPQ := filepath.Join(dir, "."+filepath.Base(out)+".tmp")
	defer os.Remove(tmpPQ)
	sql := "COPY (SELECT * FROM read_csv(" + d.QuoteString(csvPath) + ", header = true, auto_detect = false, delim = ',', quote = '\"', columns = {" +
		strings.Join(cols, ", ") + "})) TO " + d.QuoteString(tmpPQ) + " (FORMAT parquet)"
	if _, err := eng.Query(ctx, sql); err != nil {
		return err
	}
	return os.Rename(tmpPQ, out)
}
