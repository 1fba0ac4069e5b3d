package cli

import (
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
	"github.com/dpstat/dpstat/ledger"
)

func newBudgetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "budget",
		Short: "Show, grant and audit privacy budgets",
		Long: `Privacy budgets live in the ledger, one per (dataset, analyst). Every
answer dpstat gives is charged there before it is shown; when a budget is
spent, dpstat refuses.

  dpstat budget show     the budgets: limit, spent, remaining, releases
  dpstat budget grant    set or raise a budget
  dpstat budget history  the releases charged, newest first`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return errors.New("missing subcommand: want one of show, grant, history (see dpstat budget --help)")
		},
	}
	cmd.AddCommand(newBudgetShowCmd(), newBudgetGrantCmd(), newBudgetHistoryCmd())
	return cmd
}

// fmtNum formats a budget figure: the shortest form that reads back to the
// same float64, so nothing is hidden by rounding.
// fmtNum writes a figure a person reads, such as a budget: ten significant
// digits, so that sums like 4.1000000000000005 read 4.1.
func fmtNum(x float64) string {
	return strconv.FormatFloat(x, 'g', 10, 64)
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
			if errors.Is(err, os.ErrNotExist) {
				if asJSON {
					return writeJSON(out, budgetShowJSON{Ledger: path, Budgets: []ledger.Status{}})
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
			if asJSON {
				return writeJSON(out, budgetShowJSON{Ledger: path, Budgets: sel})
			}
			fmt.Fprintf(out, "ledger %s\n", path)
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
	Ledger  string          `json:"ledger"`
	Budgets []ledger.Status `json:"budgets"`
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
		asJSON                       bool
	)
	cmd := &cobra.Command{
		Use:   "grant --table T --analyst A --epsilon E [--delta F] [--rule basic|zcdp]",
		Short: "Set or raise the privacy budget of an analyst on a dataset",
		Long: `Set the budget of (dataset, analyst) to (ε, δ), creating it if needed. A
budget may be raised, or lowered down to what is already spent but not
below; its rule cannot change once releases have been charged.

Rules:
  basic  ε's and δ's of the releases add up (sequential composition).
  zcdp   the releases' ρ's add up and the total converts to (ε, δ) at the
         budget's δ; much tighter for many releases. Needs --delta > 0.`,
		Example: `  dpstat budget grant --table census --analyst alice --epsilon 1
  dpstat budget grant --table census --analyst bob --epsilon 3 --delta 1e-6 --rule zcdp`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("table") && !cmd.Flags().Changed("dataset") {
				return fmt.Errorf("--table is required: the table (or dataset) the budget is for")
			}
			for _, f := range []string{"analyst", "epsilon"} {
				if !cmd.Flags().Changed(f) {
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
			key := ledger.Key{Dataset: dataset, Analyst: analyst}
			if err := key.Validate(); err != nil {
				return err
			}
			l, err := openLedger(path)
			if err != nil {
				return err
			}
			defer l.Close()
			st, err := l.Grant(key, limit, r)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, struct {
					Ledger string        `json:"ledger"`
					Budget ledger.Status `json:"budget"`
				}{path, st})
			}
			fmt.Fprintf(out, "granted %v: limit %s (rule %s); spent %s, remaining %s, %d releases\nledger %s\n",
				st.Key, fmtPair(st.Limit), st.Rule, fmtPair(st.Spent), fmtPair(st.Remaining), st.Releases, path)
			return nil
		},
	}
	addLedgerFlag(cmd, &path)
	cmd.Flags().StringVar(&dataset, "table", "", "table (or dataset) name (required)")
	cmd.Flags().StringVar(&dataset, "dataset", "", "same as --table")
	cmd.Flags().StringVar(&analyst, "analyst", "", "analyst name (required)")
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
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Time.Format("2006-01-02T15:04:05Z07:00"),
					r.Key.Dataset, r.Key.Analyst, r.Rule, fmtNum(r.Cost.Epsilon), fmtNum(r.Cost.Delta), fmtNum(r.Cost.Rho),
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
