// Package cli implements dpstat's command line: one cobra command per
// subcommand, each a thin layer over the library packages.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// Execute runs the dpstat command line with the given arguments and streams
// and returns the process exit code.
func Execute(args []string, stdout, stderr io.Writer) int {
	return ExecuteContext(context.Background(), args, stdout, stderr)
}

// ExecuteContext is Execute with a context: cancelling it stops a long
// command such as dpstat serve as SIGTERM would.
func ExecuteContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := NewRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "dpstat: %v\n", err)
		return 1
	}
	return 0
}

// NewRoot builds the dpstat command tree.
func NewRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "dpstat",
		Short: "Differentially private statistics over sensitive data",
		Long: `dpstat answers aggregate questions about sensitive data with differential
privacy: every answer carries calibrated noise, every answer is charged to a
durable privacy budget, and when a budget is spent dpstat refuses.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newReleaseCmd(),
		newBudgetCmd(),
		newQueryCmd(),
		newCatalogCmd(),
		newLdpCmd(),
		newCollectCmd(),
		newServeCmd(), newAnalystCmd(),
	)
	return root
}

// Main is the entry point used by cmd/dpstat.
func Main() {
	os.Exit(Execute(os.Args[1:], os.Stdout, os.Stderr))
}
