package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/ledger"
)

func newBudgetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "budget",
		Short: "Show, grant and audit privacy budgets",
		Long: `Privacy budgets live in the ledger, one per (dataset, analyst), and a
dataset may also have a total budget that every analyst's releases share.
A dataset is a table, or an id space (tables whose privacy units name the
same people). Every answer dpstat gives is charged there before it is
shown; when a budget is spent, dpstat refuses.

  dpstat budget show     the budgets: limit, spent, remaining, releases
  dpstat budget grant    set or raise a budget (--total: the dataset's total)
  dpstat budget history  the releases charged, newest first
  dpstat budget verify   check every budget against the ledger's records`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return errors.New("missing subcommand: want one of show, grant, history, verify (see dpstat budget --help)")
		},
	}
	cmd.AddCommand(newBudgetShowCmd(), newBudgetGrantCmd(), newBudgetHistoryCmd(), newBudgetVerifyCmd())
	return cmd
}

// fmtNum writes a figure a person reads, such as a budget or a cost:
// accounting.Num, so that sums like 4.1000000000000005 read 4.1.
func fmtNum(x float64) string {
	return accounting.Num(x)
}

func fmtPair(e accounting.EpsDelta) string {
	return fmt.Sprintf("ε=%s δ=%s", fmtNum(e.Epsilon), fmtNum(e.Delta))
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newBudgetShowCmd() *cobra.Command {
	var (
		path, dataset, analyst string
		asJSON                 bool
	)
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Show budgets: limit, spent, remaining and number of releases",
		Long: `Show the budgets in the ledger, optionally only those of one dataset or
one analyst. Spent amounts are rounded up and remaining amounts down. With
rule zcdp, spent is the (ε, δ) that the sum of the releases' ρ converts to;
its δ is the whole budget δ as soon as anything is spent.`,
		Example: `  dpstat budget show
  dpstat budget show --table census --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			filter := ledger.Key{Dataset: dataset, Analyst: analyst}
			out := cmd.OutOrStdout()
			l, err := openLedgerReadOnly(path)
			path = ledger.Redact(path) // what is shown: never a password
			if errors.Is(err, os.ErrNotExist) {
				if asJSON {
					return writeJSON(out, budgetShowJSON{Ledger: path, Budgets: []ledger.Status{}, Totals: []ledger.TotalStatus{}})
				}
				fmt.Fprintf(out, "ledger %s does not exist yet: no budgets (grant one with dpstat budget grant)\n", path)
				return nil
			}
			if err != nil {
				return err
			}
			defer l.Close()
			all, err := l.Budgets()
			if err != nil {
				return err
			}
			sel := []ledger.Status{}
			for _, s := range all {
				if (dataset == "" || s.Key.Dataset == dataset) && (analyst == "" || s.Key.Analyst == analyst) {
					sel = append(sel, s)
				}
			}
			totals, err := l.Totals()
			if err != nil {
				return err
			}
			selTotals := []ledger.TotalStatus{}
			for _, t := range totals {
				if dataset == "" || t.Dataset == dataset {
					selTotals = append(selTotals, t)
				}
			}
			var epochBudgets []ledger.Status
			for _, s := range sel {
				eb, err := l.EpochBudgets(s.Key)
				if err != nil {
					return err
				}
				epochBudgets = append(epochBudgets, eb...)
			}
			var epochTotals []ledger.TotalStatus
			for _, t := range selTotals {
				et, err := l.EpochTotals(t.Dataset)
				if err != nil {
					return err
				}
				epochTotals = append(epochTotals, et...)
			}
			if asJSON {
				return writeJSON(out, budgetShowJSON{Ledger: path, Budgets: sel, Totals: selTotals, EpochBudgets: epochBudgets, EpochTotals: epochTotals})
			}
			defer func() { writeEpochs(out, epochBudgets, epochTotals) }()
			fmt.Fprintf(out, "ledger %s\n", path)
			if len(selTotals) > 0 {
				tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "DATASET\tTOTAL (ALL ANALYSTS)\tRULE\tLIMIT ε\tLIMIT δ\tSPENT ε\tSPENT δ\tREMAINING ε\tREMAINING δ\tRELEASES")
				for _, t := range selTotals {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", t.Dataset, "total", t.Rule,
						fmtNum(t.Limit.Epsilon), fmtNum(t.Limit.Delta), fmtNum(t.Spent.Epsilon), fmtNum(t.Spent.Delta),
						fmtNum(t.Remaining.Epsilon), fmtNum(t.Remaining.Delta), t.Releases)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			if len(sel) == 0 {
				what := "no budgets"
				if filter != (ledger.Key{}) {
					what = "no budgets match " + describeFilter(filter)
				}
				fmt.Fprintln(out, what)
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "TABLE\tANALYST\tRULE\tLIMIT ε\tLIMIT δ\tSPENT ε\tSPENT δ\tREMAINING ε\tREMAINING δ\tRELEASES")
			for _, s := range sel {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", s.Key.Dataset, s.Key.Analyst, s.Rule,
					fmtNum(s.Limit.Epsilon), fmtNum(s.Limit.Delta), fmtNum(s.Spent.Epsilon), fmtNum(s.Spent.Delta),
					fmtNum(s.Remaining.Epsilon), fmtNum(s.Remaining.Delta), s.Releases)
			}
			return tw.Flush()
		},
	}
	addLedgerFlag(cmd, &path)
	cmd.Flags().StringVar(&dataset, "table", "", "only budgets of this table (or dataset)")
	cmd.Flags().StringVar(&dataset, "dataset", "", "same as --table")
	cmd.Flags().StringVar(&analyst, "analyst", "", "only budgets of this analyst")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

type budgetShowJSON struct {
	Ledger  string               `json:"ledger"`
	Budgets []ledger.Status      `json:"budgets"`
	Totals  []ledger.TotalStatus `json:"totals"`
	// EpochBudgets and EpochTotals are the budgets of the epochs charged
	// on datasets that declare epochs, one per run of consecutive epochs
	// with equal budgets (key.epoch / epoch spells the run).
	EpochBudgets []ledger.Status      `json:"epoch_budgets,omitempty"`
	EpochTotals  []ledger.TotalStatus `json:"epoch_totals,omitempty"`
}

// gauge draws the share of a budget spent as a bar of ten cells.
func gauge(spent, limit float64) string {
	n := 10
	if limit > 0 && spent < limit {
		n = int(spent / limit * 10)
	}
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", 10-n) + "]"
}

// writeEpochs prints the budgets of charged epochs, a strip of gauges per
// (dataset, analyst) and per dataset's totals.
func writeEpochs(out io.Writer, budgets []ledger.Status, totals []ledger.TotalStatus) {
	if len(budgets) == 0 && len(totals) == 0 {
		return
	}
	fmt.Fprintln(out, "\nepochs (each epoch of a dataset that declares epochs has a budget of its own, with the limit above; epochs not listed have their whole budget):")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLE\tANALYST\tEPOCHS\tSPENT\tSPENT ε\tREMAINING ε\tRELEASES")
	for _, t := range totals {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", t.Dataset, "total", t.Epoch, gauge(t.Spent.Epsilon, t.Limit.Epsilon),
			fmtNum(t.Spent.Epsilon), fmtNum(t.Remaining.Epsilon), t.Releases)
	}
	for _, s := range budgets {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", s.Key.Dataset, s.Key.Analyst, s.Key.Epoch, gauge(s.Spent.Epsilon, s.Limit.Epsilon),
			fmtNum(s.Spent.Epsilon), fmtNum(s.Remaining.Epsilon), s.Releases)
	}
	_ = tw.Flush()
}

func describeFilter(k ledger.Key) string {
	var parts []string
	if k.Dataset != "" {
		parts = append(parts, fmt.Sprintf("dataset %q", k.Dataset))
	}
	if k.Analyst != "" {
		parts = append(parts, fmt.Sprintf("analyst %q", k.Analyst))
	}
	return strings.Join(parts, " and ")
}

func newBudgetGrantCmd() *cobra.Command {
	var (
		path, dataset, analyst, rule string
		epsilon, delta               float64
		asJSON, total                bool
	)
	cmd := &cobra.Command{
		Use:   "grant --table T (--analyst A | --total) --epsilon E [--delta F] [--rule basic|zcdp]",
		Short: "Set or raise the privacy budget of an analyst on a table, or the table's total",
		Long: `Set the budget of (dataset, analyst) to (ε, δ), creating it if needed. A
budget may be raised, or lowered down to what is already spent but not
below; its rule cannot change once releases have been charged.

With --total (and no --analyst) set the dataset's total budget instead:
every release from the dataset, by any analyst, must fit it as well as
the analyst's own budget. A new total counts the releases already
charged to the dataset. For tables of an id space, the dataset is the id
space's name.

Rules:
  basic  ε's and δ's of the releases add up (sequential composition).
  zcdp   the releases' ρ's add up and the total converts to (ε, δ) at the
         budget's δ; much tighter for many releases. Needs --delta > 0.`,
		Example: `  dpstat budget grant --table census --analyst alice --epsilon 1
  dpstat budget grant --table census --analyst bob --epsilon 3 --delta 1e-6 --rule zcdp
  dpstat budget grant --table census --total --epsilon 2 --delta 1e-5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("table") && !cmd.Flags().Changed("dataset") {
				return fmt.Errorf("--table is required: the table (or dataset) the budget is for")
			}
			required := []string{"analyst", "epsilon"}
			if total {
				if cmd.Flags().Changed("analyst") {
					return fmt.Errorf("--total with --analyst %q: a total budget covers every analyst; give one or the other", analyst)
				}
				required = []string{"epsilon"}
			}
			for _, f := range required {
				if !cmd.Flags().Changed(f) {
					if f == "analyst" {
						return errors.New("--analyst is required (or --total for the dataset's total budget)")
					}
					return fmt.Errorf("--%s is required", f)
				}
			}
			if math.IsNaN(epsilon) || math.IsInf(epsilon, 0) || epsilon < 0 {
				return fmt.Errorf("--epsilon %v: want a finite number >= 0", epsilon)
			}
			if math.IsNaN(delta) || delta < 0 || delta >= 1 {
				return fmt.Errorf("--delta %v: want a number in [0, 1)", delta)
			}
			r, err := accounting.ParseRule(rule)
			if err != nil {
				return fmt.Errorf("--rule: %w", err)
			}
			limit := accounting.EpsDelta{Epsilon: epsilon, Delta: delta}
			if err := accounting.ValidateLimit(limit, r); err != nil {
				return err
			}
			if total {
				return grantTotal(cmd, path, dataset, limit, r, asJSON)
			}
			key := ledger.Key{Dataset: dataset, Analyst: analyst}
			if err := key.Validate(); err != nil {
				return err
			}
			return withLedger(path, func(l *ledger.Ledger) error {
				st, err := l.Grant(key, limit, r)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), struct {
						Ledger string        `json:"ledger"`
						Budget ledger.Status `json:"budget"`
					}{ledger.Redact(path), st})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "granted %v: limit %s (rule %s); spent %s, remaining %s, %d releases\nledger %s\n",
					st.Key, fmtPair(st.Limit), st.Rule, fmtPair(st.Spent), fmtPair(st.Remaining), st.Releases, ledger.Redact(path))
				return nil
			})
		},
	}
	addLedgerFlag(cmd, &path)
	cmd.Flags().StringVar(&dataset, "table", "", "table (or dataset) name (required)")
	cmd.Flags().StringVar(&dataset, "dataset", "", "same as --table")
	cmd.Flags().StringVar(&analyst, "analyst", "", "analyst name (required unless --total)")
	cmd.Flags().BoolVar(&total, "total", false, "set the table's total budget, every analyst together")
	cmd.Flags().Float64Var(&epsilon, "epsilon", 0, "budget ε (required)")
	cmd.Flags().Float64Var(&delta, "delta", 0, "budget δ, in [0, 1); rule zcdp needs δ > 0")
	cmd.Flags().StringVar(&rule, "rule", string(accounting.Basic), "composition rule: basic or zcdp")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newBudgetHistoryCmd() *cobra.Command {
	var (
		path, dataset, analyst string
		limit                  int
		asJSON                 bool
	)
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List the releases charged to budgets, newest first",
		Example: `  dpstat budget history --table census --analyst alice --limit 10
  dpstat budget history --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return fmt.Errorf("--limit %d: want a number >= 0 (0 lists every release)", limit)
			}
			out := cmd.OutOrStdout()
			l, err := openLedgerReadOnly(path)
			path = ledger.Redact(path) // what is shown: never a password
			if errors.Is(err, os.ErrNotExist) {
				if asJSON {
					return writeJSON(out, historyJSON{Ledger: path, Releases: []ledger.Release{}})
				}
				fmt.Fprintf(out, "ledger %s does not exist yet: no releases\n", path)
				return nil
			}
			if err != nil {
				return err
			}
			defer l.Close()
			rels, err := l.History(ledger.Key{Dataset: dataset, Analyst: analyst}, limit)
			if err != nil {
				return err
			}
			if rels == nil {
				rels = []ledger.Release{}
			}
			if asJSON {
				return writeJSON(out, historyJSON{Ledger: path, Releases: rels})
			}
			fmt.Fprintf(out, "ledger %s\n", path)
			if len(rels) == 0 {
				fmt.Fprintln(out, "no releases")
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTIME\tTABLE\tANALYST\tRULE\tε\tδ\tρ\tDESCRIPTION")
			for _, r := range rels {
				table := r.Key.Dataset
				if r.Epochs != nil {
					// charged in each of these epochs
					table += "(" + r.Epochs.String() + ")"
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Time.Format("2006-01-02T15:04:05Z07:00"),
					table, r.Key.Analyst, r.Rule, fmtNum(r.Cost.Epsilon), fmtNum(r.Cost.Delta), fmtNum(r.Cost.Rho),
					oneLine(r.Description))
			}
			return tw.Flush()
		},
	}
	addLedgerFlag(cmd, &path)
	cmd.Flags().StringVar(&dataset, "table", "", "only releases on this table (or dataset)")
	cmd.Flags().StringVar(&dataset, "dataset", "", "same as --table")
	cmd.Flags().StringVar(&analyst, "analyst", "", "only releases by this analyst")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many releases (0: all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

type historyJSON struct {
	Ledger   string           `json:"ledger"`
	Releases []ledger.Release `json:"releases"`
}

// oneLine keeps a description on one table row.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:77]) + "..."
	}
	return s
}

func grantTotal(cmd *cobra.Command, path, dataset string, limit accounting.EpsDelta, r accounting.Rule, asJSON bool) error {
	if err := (ledger.Key{Dataset: dataset, Analyst: "-"}).Validate(); err != nil {
		return err
	}
	return withLedger(path, func(l *ledger.Ledger) error {
		t, err := l.GrantTotal(dataset, limit, r)
		if err != nil {
			return err
		}
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), struct {
				Ledger string             `json:"ledger"`
				Total  ledger.TotalStatus `json:"total"`
			}{ledger.Redact(path), t})
		}
		fmt.Fprintf(cmd.OutOrStdout(), "granted the total budget of dataset %q (all analysts together): limit %s (rule %s); spent %s, remaining %s, %d releases\nledger %s\n",
			t.Dataset, fmtPair(t.Limit), t.Rule, fmtPair(t.Spent), fmtPair(t.Remaining), t.Releases, ledger.Redact(path))
		return nil
	})
}

func newBudgetVerifyCmd() *cobra.Command {
	var (
		path         string
		seal, asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check every budget against the ledger's own records",
		Long: `Check the ledger: its release and grant records form a chain (each holds
the hash of the one before, and the ledger the hash of the last), every
budget's limit is its last grant's, and its sums and release count are
those of its releases. With a key ($DPSTAT_LEDGER_KEY_FILE) the chain's
seal is checked too. A mismatch names the budget or record and exits with
status 1; the ledger is never repaired or reset.

--seal seals a ledger that has no seal yet with the key (after checking
it); from then on it opens for writing only with the key. The ledger is
opened read-only otherwise.`,
		Example: `  dpstat budget verify
  DPSTAT_LEDGER_KEY_FILE=/etc/dpstat/ledger.key dpstat budget verify --seal`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			key, err := ledger.KeyFromEnv()
			if err != nil {
				return err
			}
			if seal && key == nil {
				return fmt.Errorf("--seal needs a key: set $%s to a key file", ledger.KeyFileEnv)
			}
			l, err := ledger.Open(path, ledger.Options{ReadOnly: !seal, Key: key, Seal: seal})
			path = ledger.Redact(path) // what is shown: never a password
			if err != nil {
				return err
			}
			defer l.Close()
			rep, err := l.Verify()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, struct {
					Ledger string `json:"ledger"`
					ledger.VerifyReport
				}{path, rep})
			}
			fmt.Fprintf(out, "ledger %s: verified\n", path)
			fmt.Fprintf(out, "%d budgets and %d total budgets match their %d release records", rep.Budgets, rep.Totals, rep.Releases)
			if rep.Chained {
				fmt.Fprintf(out, " and %d grant records (a chain of %d records)\n", rep.Grants, rep.Events)
			} else {
				fmt.Fprintf(out, "\nformat %d: the records are not chained yet; opening the ledger for writing once (any grant or charge) chains them\n", rep.Version)
			}
			switch {
			case rep.SealChecked:
				fmt.Fprintln(out, "sealed: the seal verifies with the key given")
			case rep.Sealed:
				fmt.Fprintf(out, "sealed, but the seal was not checked: set $%s to check it\n", ledger.KeyFileEnv)
			default:
				fmt.Fprintln(out, "not sealed: a consistent rewrite of the whole file would not be detected (see docs/accounting.md)")
			}
			return nil
		},
	}
	addLedgerFlag(cmd, &path)
	cmd.Flags().BoolVar(&seal, "seal", false, "seal the ledger with the key of $"+ledger.KeyFileEnv)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
