package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/dpstat/dpstat/accounting"
	"github.com/dpstat/dpstat/catalog"
	"github.com/dpstat/dpstat/engine"
	"github.com/dpstat/dpstat/engine/engines"
	"github.com/dpstat/dpstat/ledger"
	"github.com/dpstat/dpstat/query"
	"github.com/dpstat/dpstat/schema"
	"github.com/dpstat/dpstat/suggest"
)

func newCatalogCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Check or start a catalog: the data owner's declaration of tables, bounds and value lists",
	}
	cmd.AddCommand(newCatalogCheckCmd(), newCatalogInitCmd(), newCatalogSuggestCmd())
	return cmd
}

func newCatalogCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check FILE",
		Short: "Check a catalog and say precisely what is wrong",
		Long: `Check a catalog: its YAML shape (unknown fields are errors), every bound
(finite, lower <= upper, integers for int columns), every value list against
its column's type, the contribution bounds, the privacy unit, the engine
section, and that every source exists and has the declared columns with
compatible types: a file for the embedded engine, a table or view the
catalog's user may read on a database server (which must answer), and that
no table declaring nan_free holds NaN in a float column (one scan of each such
table), and that a table declaring clustered_by_unit is stored in the order of
its privacy unit, within the unit's declared bounds (one scan). Prints "ok" and a summary, or every problem found.

This command is for the data owner: when a source cannot be read it shows the
engine's full message, which may quote the data.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cat, err := catalog.Load(args[0])
			if err != nil {
				return err
			}
			ctx := cmdContext(cmd)
			eng, err := engine.Open(ctx, engines.Spec(cat))
			if err != nil {
				return err
			}
			defer eng.Close()
			if err := query.Register(ctx, cat, eng); err != nil {
				return err
			}
			nan, err := query.DeclaredNaN(ctx, cat, eng)
			if err != nil {
				return err
			}
			unclustered, err := query.DeclaredUnclustered(ctx, cat, eng)
			if err != nil {
				return err
			}
			if bad := append(nan, unclustered...); len(bad) > 0 {
				return errors.New(strings.Join(bad, "\n"))
			}
			out := cmd.OutOrStdout()
			fmt.Fprintln(out, "ok")
			sum := cat.Summary()
			if !strings.HasSuffix(sum, "\n") {
				sum += "\n"
			}
			fmt.Fprint(out, sum)
			return nil
		},
	}
}

func newCatalogInitCmd() *cobra.Command {
	var output, table string
	cmd := &cobra.Command{
		Use:   "init DATA.csv",
		Short: "Write a catalog skeleton for a CSV file, leaving bounds to the data owner",
		Long: `Write a catalog skeleton for a CSV (or Parquet) file: the table, its source
and every column with the type DuckDB's reader infers. Bounds, value lists,
the privacy unit and the budget are left as commented placeholders for the
data owner to fill in: they are never read from the data.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data := args[0]
			if _, err := os.Stat(data); err != nil {
				return fmt.Errorf("data file: %w", err)
			}
			ctx := cmdContext(cmd)
			eng, err := engine.Open(ctx, engine.Spec{Kind: engine.DefaultKind})
			if err != nil {
				return err
			}
			defer eng.Close()
			sniffer, ok := eng.(engine.Sniffer)
			if !ok {
				return fmt.Errorf("engine %s cannot read data files", eng.Dialect().Name())
			}
			cols, err := sniffer.Sniff(ctx, data)
			if err != nil {
				return err
			}
			if table == "" {
				table = tableName(data)
			}
			src := data
			outDir := "."
			if output != "" {
				outDir = filepath.Dir(output)
			}
			if absData, err := filepath.Abs(data); err == nil {
				if absOut, err := filepath.Abs(outDir); err == nil {
					if rel, err := filepath.Rel(absOut, absData); err == nil {
						src = rel
					}
				}
			}
			var w io.Writer = cmd.OutOrStdout()
			if output != "" {
				if _, err := os.Stat(output); err == nil {
					return fmt.Errorf("%s exists; dpstat catalog init does not overwrite a catalog", output)
				}
				f, err := os.Create(output)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			return writeSkeleton(w, table, src, cols)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the skeleton to this file instead of standard output (never overwritten)")
	cmd.Flags().StringVar(&table, "table", "", "table name (default: the file name without its extension)")
	return cmd
}

// DataOwner is the analyst name of the data owner's budgets in the ledger:
// catalog suggest charges its estimates there.
const DataOwner = "data-owner"

func newCatalogSuggestCmd() *cobra.Command {
	var (
		output, table, unit, ledgerPath, groupBy string
		epsilon, delta                           float64
	)
	cmd := &cobra.Command{
		Use:   "suggest DATA.csv --epsilon E",
		Short: "Write a catalog with bounds, value lists and contribution bounds estimated with differential privacy",
		Long: `Write a catalog like dpstat catalog init, with differentially private
estimates where init leaves blanks, each with a comment saying how it was
obtained and what it cost:

  numeric columns   lower/upper: the 1st and 99th percentiles (per person: of
                    each person's smallest and largest value), each chosen by
                    the exponential mechanism among readable numbers
                    (0, ±1, 1.5, 2, 2.5, 3, 4, 5, ... × 10^k)
  text columns      values: the values that DP key selection keeps, when at
                    most 100 are kept; otherwise none
  --privacy-unit    max_groups_per_unit and max_rows_per_group: 90th
                    percentiles over people of the groups they have rows in
                    and of their most rows in one group, with the
                    noise/dropped-rows trade-off; the groups are those of
                    --group-by (each grouping's bounds estimated, the largest
                    kept, and the file says which grouping each came from),
                    or else the values of the first text column with a value
                    list

ε is split equally among the columns (and the contribution bounds), δ among
the text columns; the split is written in the file. The whole (ε, δ) is
charged to the data owner's budget on the table (analyst "data-owner", shown
by dpstat budget show) before the data is read or anything is written; a
budget that does not exist yet is created with exactly this (ε, δ) as its
limit, so a second suggestion needs dpstat budget grant --table TABLE
--analyst data-owner --epsilon E first.`,
		Example: `  dpstat catalog suggest visits.csv --privacy-unit visitor_id --epsilon 1 -o catalog.yaml
  dpstat catalog suggest patients.csv --privacy-unit patient_id --group-by diagnosis,visit_date --epsilon 1 -o catalog.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data := args[0]
			if _, err := os.Stat(data); err != nil {
				return fmt.Errorf("data file: %w", err)
			}
			if !cmd.Flags().Changed("epsilon") {
				return errors.New("--epsilon is required: the ε the estimates spend, e.g. --epsilon 1")
			}
			format := "csv"
			switch strings.ToLower(filepath.Ext(data)) {
			case ".csv", ".tsv":
			case ".parquet":
				format = "parquet"
			default:
				return fmt.Errorf("data file %s: unknown format; want a file ending in .csv, .tsv or .parquet", data)
			}
			if output != "" {
				if _, err := os.Stat(output); err == nil {
					return fmt.Errorf("%s exists; dpstat catalog suggest does not overwrite a catalog", output)
				}
			}
			ctx := cmdContext(cmd)
			opened, err := engine.Open(ctx, engine.Spec{Kind: engine.DefaultKind})
			if err != nil {
				return err
			}
			defer opened.Close()
			eng, ok := opened.(interface {
				suggest.Engine
				engine.Sniffer
			})
			if !ok {
				return fmt.Errorf("the %s engine cannot read a data file", engine.DefaultKind)
			}
			sniffed, err := eng.Sniff(ctx, data)
			if err != nil {
				return err
			}
			if table == "" {
				table = tableName(data)
			}
			names := columnNames(sniffed)
			cols := make([]engine.Column, len(sniffed))
			for i, c := range sniffed {
				cols[i] = engine.Column{Name: names[i], Type: c.Type}
				if names[i] != c.Name {
					cols[i].Source = c.Name
				}
			}
			plan, err := suggest.NewPlan(suggest.Options{
				Data: data, Format: format, Table: table, Source: catalogSource(data, output),
				Columns: cols, PrivacyUnit: unit, Epsilon: epsilon, Delta: delta, GroupBy: suggest.ParseGroupBy(groupBy),
			})
			if err != nil {
				return err
			}
			// The charge is durable before the engine reads the data.
			l, err := openLedger(ledgerPath)
			if err != nil {
				return err
			}
			key := ledger.Key{Dataset: table, Analyst: DataOwner}
			if _, err := l.EnsureBudget(key, accounting.EpsDelta{Epsilon: epsilon, Delta: delta}, accounting.Basic); err != nil {
				l.Close()
				return err
			}
			rec, err := l.Charge(ctx, ledger.Charge{Key: key, Cost: plan.Cost, Description: "dpstat catalog suggest " + filepath.Base(data)})
			l.Close()
			if err != nil {
				return fmt.Errorf("nothing was read or written: %w. %s", err, suggestAdvice(err, table))
			}
			s, err := plan.Run(ctx, eng)
			if err != nil {
				return err
			}
			var w io.Writer = cmd.OutOrStdout()
			if output != "" {
				f, err := os.OpenFile(output, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			if err := s.Write(w); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "charged ε=%s δ=%s to the data owner's budget on %s in %s; left ε=%s δ=%s\n",
				fmtNum(plan.Cost.Epsilon), fmtNum(plan.Cost.Delta), table, ledger.Redact(ledgerPath), fmtNum(rec.Remaining.Epsilon), fmtNum(rec.Remaining.Delta))
			if s.BoundsFrom != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "contribution bounds max_groups_per_unit: %d, max_rows_per_group: %d: %s\n", s.MaxGroups, s.MaxRows, s.BoundsFrom)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the catalog to this file instead of standard output (never overwritten)")
	cmd.Flags().StringVar(&table, "table", "", "table name (default: the file name without its extension)")
	cmd.Flags().StringVar(&unit, "privacy-unit", "", "the column identifying a person, when one person may have several rows")
	cmd.Flags().StringVar(&groupBy, "group-by", "", "the columns analysts will GROUP BY, separated by commas (a+b: grouped by both at once); the contribution bounds are the largest any of them needs (default: the first text column with a value list)")
	cmd.Flags().Float64Var(&epsilon, "epsilon", 0, "the ε the estimates spend in all (required)")
	cmd.Flags().Float64Var(&delta, "delta", 1e-6, "the δ the text columns' key selections spend in all")
	addLedgerFlag(cmd, &ledgerPath)
	return cmd
}

// suggestAdvice says how to suggest again after the data owner's budget on
// table refused the charge: raise that budget, or the table's total.
func suggestAdvice(err error, table string) string {
	if errors.Is(err, ledger.ErrTotalExceeded) {
		return fmt.Sprintf("The total budget of table %s (every analyst and the data owner together) is spent; to suggest again, raise it: dpstat budget grant --table %s --total --epsilon E", table, table)
	}
	var ex *accounting.ExceededError
	if !errors.As(err, &ex) {
		return ""
	}
	flags := "--epsilon " + fmtNum(max(ex.Would.Epsilon, ex.Limit.Epsilon))
	if ex.Would.Delta > ex.Limit.Delta {
		flags += " --delta " + fmtNum(ex.Would.Delta)
	}
	return fmt.Sprintf("Each suggestion is charged to the data owner's budget on %s; to suggest again, raise it: dpstat budget grant --table %s --analyst %s %s (dpstat budget show --analyst %s lists it)",
		table, table, DataOwner, flags, DataOwner)
}

// catalogSource is data as a catalog written to output (or to the current
// directory) names it: relative to the catalog's directory when possible.
func catalogSource(data, output string) string {
	outDir := "."
	if output != "" {
		outDir = filepath.Dir(output)
	}
	if absData, err := filepath.Abs(data); err == nil {
		if absOut, err := filepath.Abs(outDir); err == nil {
			if rel, err := filepath.Rel(absOut, absData); err == nil {
				return rel
			}
		}
	}
	return data
}

func tableName(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	var b strings.Builder
	for i, r := range base {
		switch {
		case r == '_' || unicode.IsLetter(r) && r < 128 || unicode.IsDigit(r) && i > 0:
			b.WriteRune(r)
		default:
			b.WriteRune('_')
		}
	}
	if b.Len() == 0 {
		return "data"
	}
	return b.String()
}

func writeSkeleton(w io.Writer, table, src string, cols []engine.Column) error {
	var b strings.Builder
	fmt.Fprintf(&b, `# Catalog skeleton for %s. Fill in what only the data owner knows,
# then run: dpstat catalog check THIS_FILE
# Bounds and value lists are public declarations: choose them from knowledge
# about the domain, never from the data itself.
budget: {epsilon: 10, delta: 1e-5}   # per analyst and table: about ten queries at the default epsilon of 1; choose yours
tables:
  %s:
    source: %s
    # privacy_unit: person_id         # the column identifying a person, if one person may have several rows
    # max_groups_per_unit: 1          # with a privacy_unit: groups one person may contribute to
    # max_rows_per_group: 1           # with a privacy_unit: rows one person may contribute per group
    columns:
`, src, table, yamlString(src))
	names := columnNames(cols)
	for i, c := range cols {
		typ := map[engine.Type]string{engine.Integer: "int", engine.Double: "float", engine.Text: "text", engine.Boolean: "bool",
			engine.Date: "date", engine.Timestamp: "timestamp"}[c.Type]
		hint := ""
		switch c.Type {
		case engine.Integer, engine.Double:
			hint = "  # add lower: and upper: to allow SUM and AVG"
		case engine.Date, engine.Timestamp:
			hint = `  # add lower: and upper: (e.g. "2024-01-01") to allow date_trunc, EXTRACT, MIN and MAX`
		case engine.Text:
			hint = "  # GROUP BY works as is with a δ > 0 (DP key selection keeps the keys); add values: [...] (a public list) to release every listed key at δ = 0"
		}
		from := ""
		if names[i] != c.Name {
			// The header is not a SQL name: the column gets one and
			// reads the header through from:.
			from = "from: " + yamlString(c.Name) + ", "
		}
		fmt.Fprintf(&b, "      %s: {%stype: %s}%s\n", names[i], from, typ, hint)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// columnNames gives each column a name queries can use unquoted: the
// header itself when it is one (letters, digits and underscores, not
// starting with a digit), else the header in lower case with every other
// character run made an underscore ("Hours per week" → hours_per_week;
// a header beginning with schema.ReservedPrefix, dpstat's own, loses
// its leading underscores: _dp_x → dp_x); names are made unique with a
// numeric suffix.
func columnNames(cols []engine.Column) []string {
	out := make([]string, len(cols))
	seen := map[string]bool{}
	for i, c := range cols {
		name := c.Name
		if !isSQLName(name) || schema.Reserved(name) {
			var b strings.Builder
			under := false
			for _, r := range strings.ToLower(name) {
				if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
					b.WriteRune(r)
					under = false
				} else if !under && b.Len() > 0 {
					b.WriteByte('_')
					under = true
				}
			}
			name = strings.TrimSuffix(b.String(), "_")
			if name == "" {
				name = fmt.Sprintf("column_%d", i+1)
			} else if name[0] >= '0' && name[0] <= '9' {
				name = "c_" + name
			}
		}
		base := name
		for k := 2; seen[strings.ToLower(name)]; k++ {
			name = fmt.Sprintf("%s_%d", base, k)
		}
		seen[strings.ToLower(name)] = true
		out[i] = name
	}
	return out
}

func isSQLName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r < 128 && unicode.IsLetter(r) || unicode.IsDigit(r) && i > 0) {
			return false
		}
	}
	return true
}

func yamlString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
