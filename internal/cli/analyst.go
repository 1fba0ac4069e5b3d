package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/analyst"
	"github.com/dpstat/dpstat/ledger"
)

func newAnalystCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "analyst",
		Short: "Manage the analysts of dpstat serve: add, list, grant, revoke, rotate",
		Long: `Manage who may query a dpstat server. Analysts, their roles and the hashes
of their tokens live in the ledger, next to their budgets.

While dpstat serve runs it holds a ledger file open, so these commands cannot
open it: use the server's admin API (/v1/admin/...) with an admin token then.
A PostgreSQL ledger (--ledger postgres://...) stays open to them; running
servers see a change within 5 s.`,
	}
	cmd.AddCommand(newAnalystAddCmd(), newAnalystListCmd(), newAnalystRevokeCmd(), newAnalystRotateCmd(), newAnalystGrantCmd())
	return cmd
}

// openAnalysts opens the ledger and its analyst registry.
func openAnalysts(path string) (*ledger.Ledger, *analyst.Registry, error) {
	l, err := openLedger(path)
	if errors.Is(err, ledger.ErrInUse) {
		return nil, nil, fmt.Errorf("%w: if dpstat serve is running on it, use its admin API (/v1/admin/...) instead", err)
	}
	if err != nil {
		return nil, nil, err
	}
	reg, err := analyst.NewRegistry(l)
	if err != nil {
		l.Close()
		return nil, nil, err
	}
	return l, reg, nil
}

type grantFlags struct {
	tables         []string
	epsilon, delta float64
	rule           string
}

func (g *grantFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&g.tables, "table", nil, "table to grant a budget on (repeat or separate with commas)")
	cmd.Flags().Float64Var(&g.epsilon, "epsilon", 0, "budget ε on each --table")
	cmd.Flags().Float64Var(&g.delta, "delta", 0, "budget δ on each --table, in [0, 1)")
	cmd.Flags().StringVar(&g.rule, "rule", string(accounting.Basic), "composition rule: basic or zcdp")
}

// check validates the flags without touching the ledger.
func (g *grantFlags) check(cmd *cobra.Command) (accounting.Rule, error) {
	if len(g.tables) == 0 {
		if cmd.Flags().Changed("epsilon") || cmd.Flags().Changed("delta") {
			return "", errors.New("--epsilon and --delta need --table: say which table the budget is for")
		}
		return "", nil
	}
	if !cmd.Flags().Changed("epsilon") {
		return "", errors.New("--table needs --epsilon: the budget to grant")
	}
	r, err := accounting.ParseRule(g.rule)
	if err != nil {
		return "", fmt.Errorf("--rule: %w", err)
	}
	if err := accounting.ValidateLimit(accounting.EpsDelta{Epsilon: g.epsilon, Delta: g.delta}, r); err != nil {
		return "", err
	}
	for _, t := range g.tables {
		if err := (ledger.Key{Dataset: t, Analyst: "x"}).Validate(); err != nil {
			return "", fmt.Errorf("--table %q: %w", t, err)
		}
	}
	return r, nil
}

// apply grants the budgets to name.
func (g *grantFlags) apply(cmd *cobra.Command, l *ledger.Ledger, name string) ([]ledger.Status, error) {
	r, err := g.check(cmd)
	if err != nil || len(g.tables) == 0 {
		return nil, err
	}
	var out []ledger.Status
	for _, t := range g.tables {
		st, err := l.Grant(ledger.Key{Dataset: t, Analyst: name}, accounting.EpsDelta{Epsilon: g.epsilon, Delta: g.delta}, r)
		if err != nil {
			return out, fmt.Errorf("granting %q on table %q: %w", name, t, err)
		}
		out = append(out, st)
	}
	return out, nil
}

func newAnalystAddCmd() *cobra.Command {
	var (
		path   string
		admin  bool
		asJSON bool
		g      grantFlags
	)
	cmd := &cobra.Command{
		Use:   "add NAME [--table T --epsilon E [--delta D]] [--admin] [--json]",
		Short: "Create an analyst and print its token (shown only once)",
		Example: `  dpstat analyst add alice --table adult --epsilon 3 --delta 1e-6
  dpstat analyst add curator --admin`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := analyst.ValidateName(args[0]); err != nil {
				return err
			}
			if _, err := g.check(cmd); err != nil {
				return err
			}
			l, reg, err := openAnalysts(path)
			if err != nil {
				return err
			}
			defer l.Close()
			role := analyst.RoleAnalyst
			if admin {
				role = analyst.RoleAdmin
			}
			a, tok, err := reg.Add(args[0], role)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			sts, gerr := g.apply(cmd, l, a.Name)
			if asJSON {
				type grant struct {
					Table   string  `json:"table"`
					Epsilon float64 `json:"epsilon"`
					Delta   float64 `json:"delta"`
					Rule    string  `json:"rule"`
				}
				grants := []grant{}
				for _, st := range sts {
					grants = append(grants, grant{st.Key.Dataset, st.Limit.Epsilon, st.Limit.Delta, string(st.Rule)})
				}
				if err := writeJSON(out, struct {
					Name   string  `json:"name"`
					Role   string  `json:"role"`
					Token  string  `json:"token"`
					Grants []grant `json:"grants"`
				}{a.Name, string(a.Role), tok, grants}); err != nil {
					return err
				}
				return gerr
			}
			fmt.Fprintf(out, "added %s %q\n", a.Role, a.Name)
			for _, st := range sts {
				fmt.Fprintf(out, "granted table %q: epsilon %s, delta %s (rule %s)\n", st.Key.Dataset, fmtNum(st.Limit.Epsilon), fmtNum(st.Limit.Delta), st.Rule)
			}
			fmt.Fprintf(out, "token (shown only now; only its hash is stored):\n%s\n", tok)
			return gerr
		},
	}
	addLedgerFlag(cmd, &path)
	cmd.Flags().BoolVar(&admin, "admin", false, "give the admin role: manage analysts and grants, read every release")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the analyst, its grants and its token as JSON (the token is shown only now)")
	g.add(cmd)
	return cmd
}

func newAnalystListCmd() *cobra.Command {
	var (
		path   string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List analysts with their roles and budgets",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, reg, err := openAnalysts(path)
			if err != nil {
				return err
			}
			defer l.Close()
			budgets, err := l.Budgets()
			if err != nil {
				return err
			}
			type row struct {
				analyst.Analyst
				Budgets []ledger.Status `json:"budgets"`
			}
			var rows []row
			for _, a := range reg.List() {
				r := row{Analyst: a, Budgets: []ledger.Status{}}
				for _, b := range budgets {
					if b.Key.Analyst == a.Name {
						r.Budgets = append(r.Budgets, b)
					}
				}
				rows = append(rows, r)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if rows == nil {
					rows = []row{}
				}
				return enc.Encode(rows)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tROLE\tSTATUS\tCREATED\tTABLE\tSPENT ε\tLIMIT ε\tSPENT δ\tLIMIT δ")
			for _, r := range rows {
				status := "active"
				if r.Revoked {
					status = "revoked"
				}
				if len(r.Budgets) == 0 {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t-\t\t\t\t\n", r.Name, r.Role, status, r.Created.Format("2006-01-02"))
				}
				for _, b := range r.Budgets {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Role, status, r.Created.Format("2006-01-02"),
						b.Key.Dataset, fmtNum(b.Spent.Epsilon), fmtNum(b.Limit.Epsilon), fmtNum(b.Spent.Delta), fmtNum(b.Limit.Delta))
				}
			}
			return tw.Flush()
		},
	}
	addLedgerFlag(cmd, &path)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newAnalystRevokeCmd() *cobra.Command {
	return analystNameCmd("revoke NAME", "Revoke an analyst's token; budgets and releases stay in the ledger",
		func(cmd *cobra.Command, reg *analyst.Registry, name string) error {
			if _, err := reg.Revoke(name); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %q\n", name)
			return nil
		})
}

func newAnalystRotateCmd() *cobra.Command {
	return analystNameCmd("rotate NAME", "Give an analyst a new token (the old one stops working); reinstates a revoked analyst",
		func(cmd *cobra.Command, reg *analyst.Registry, name string) error {
			_, tok, err := reg.Rotate(name)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "new token for %q (shown only now; only its hash is stored):\n%s\n", name, tok)
			return nil
		})
}

// analystNameCmd is a command on one analyst, named by its argument: run
// gets the registry of the ledger the --ledger flag names.
func analystNameCmd(use, short string, run func(cmd *cobra.Command, reg *analyst.Registry, name string) error) *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, reg, err := openAnalysts(path)
			if err != nil {
				return err
			}
			defer l.Close()
			return run(cmd, reg, args[0])
		},
	}
	addLedgerFlag(cmd, &path)
	return cmd
}

func newAnalystGrantCmd() *cobra.Command {
	var (
		path string
		g    grantFlags
	)
	cmd := &cobra.Command{
		Use:     "grant NAME --table T --epsilon E [--delta D]",
		Short:   "Set an analyst's budget on tables",
		Example: `  dpstat analyst grant alice --table adult --epsilon 5 --delta 1e-6`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(g.tables) == 0 {
				return errors.New("--table is required: the table to grant a budget on")
			}
			if _, err := g.check(cmd); err != nil {
				return err
			}
			l, reg, err := openAnalysts(path)
			if err != nil {
				return err
			}
			defer l.Close()
			if _, ok := reg.Get(args[0]); !ok {
				return fmt.Errorf("no analyst %q: add it first with dpstat analyst add", args[0])
			}
			sts, err := g.apply(cmd, l, args[0])
			for _, st := range sts {
				fmt.Fprintf(cmd.OutOrStdout(), "granted %q on table %q: limit epsilon %s, delta %s; spent epsilon %s, delta %s\n",
					args[0], st.Key.Dataset, fmtNum(st.Limit.Epsilon), fmtNum(st.Limit.Delta), fmtNum(st.Spent.Epsilon), fmtNum(st.Spent.Delta))
			}
			return err
		},
	}
	addLedgerFlag(cmd, &path)
	g.add(cmd)
	return cmd
}
