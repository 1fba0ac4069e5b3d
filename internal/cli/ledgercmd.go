package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dpstat/dpstat/ledger"
)

// newLedgerCmd is dpstat ledger: operations on the ledger as a whole.
func newLedgerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "Operate on the ledger as a whole (copy a file ledger into PostgreSQL)",
		Long: `The ledger holds the privacy budgets, the releases with their chained records,
stored answers and analysts. It is a file by default, or a schema in a
PostgreSQL database (--ledger postgres://...), which several dpstat serve
replicas share (docs/scaling.md).

  dpstat ledger migrate   copy a ledger file into a database and verify the copy`,
	}
	cmd.AddCommand(newLedgerMigrateCmd())
	return cmd
}

func newLedgerMigrateCmd() *cobra.Command {
	var from, to string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "migrate --from FILE --to postgres://USER:PASSWORD@HOST:PORT/DB[?schema=NAME]",
		Short: "Copy a ledger into another (a file into PostgreSQL) and verify the copy",
		Long: `Copy every record of the ledger --from into the new, empty ledger --to, byte
for byte, in one transaction: budgets, total budgets, releases and grants with
their chain, request IDs, stored answers, analysts and their tokens. Both
ledgers are verified (dpstat budget verify) and must agree; a sealed ledger
stays sealed (give its key with DPSTAT_LEDGER_KEY_FILE). A destination that
already holds records is refused and left unchanged.

Stop the servers that use --from first: the file is opened read-only, which
waits for a writer to close it. Afterwards start them with --ledger set to
the database, and keep the file as a backup: the copy does not change it.`,
		Example: `  dpstat ledger migrate --from ./ledger.db --to 'postgres://dpstat_ledger:PASSWORD@db.internal:5432/dpstat'`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" || to == "" {
				return fmt.Errorf("ledger migrate needs --from (the ledger to copy) and --to (a new ledger, e.g. postgres://USER:PASSWORD@HOST/DB)")
			}
			if ledger.Redact(from) == ledger.Redact(to) {
				return fmt.Errorf("ledger migrate: --from and --to are both %s: want two different ledgers", ledger.Redact(to))
			}
			src, err := openLedgerReadOnly(from)
			if err != nil {
				return err
			}
			defer src.Close()
			dst, err := openLedger(to)
			if err != nil {
				return err
			}
			defer dst.Close()
			rep, err := ledger.Copy(src, dst)
			if err != nil {
				return err
			}
			if err := dst.Close(); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, rep)
			}
			fmt.Fprintf(out, "copied %s into %s: %d records in %d buckets\n", rep.From, rep.To, rep.Entries, rep.Buckets)
			fmt.Fprintf(out, "the copy verifies: %d budgets and %d total budgets match their %d release records and %d grant records (a chain of %d records)",
				rep.Copy.Budgets, rep.Copy.Totals, rep.Copy.Releases, rep.Copy.Grants, rep.Copy.Events)
			if rep.Copy.SealChecked {
				fmt.Fprint(out, "; the seal verifies with the key")
			}
			fmt.Fprintln(out)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the ledger to copy (a file)")
	cmd.Flags().StringVar(&to, "to", "", "the new ledger: postgres://USER:PASSWORD@HOST:PORT/DB[?schema=NAME] (or a new file)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
