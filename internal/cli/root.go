// Package cli implements dpstat's command line: one cobra command per
// subcommand, each a thin layer over the library packages.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

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
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(
		newReleaseCmd(),
		newBudgetCmd(),
		newQueryCmd(),
		newSynthCmd(),
		newCatalogCmd(),
		newLdpCmd(),
		newCollectCmd(),
		newServeCmd(), newAnalystCmd(),
		newLedgerCmd(),
	)
	return root
}

var badFlagRE = regexp.MustCompile(`^invalid argument "(.*)" for "(.+?)" flag: (.*)$`)

// flagError rewrites the flag parser's messages (which quote strconv) to
// say which flag had what value and what it accepts.
func flagError(cmd *cobra.Command, err error) error {
	m := badFlagRE.FindStringSubmatch(err.Error())
	if m == nil {
		if strings.HasPrefix(err.Error(), "unknown flag") || strings.HasPrefix(err.Error(), "unknown shorthand flag") {
			return fmt.Errorf("%v; dpstat %s --help lists the flags", err, cmd.Name())
		}
		return err
	}
	value, flag, cause := m[1], m[2], m[3]
	if i := strings.LastIndex(flag, "--"); i >= 0 {
		flag = flag[i:]
	}
	want := "a valid value"
	switch {
	case strings.Contains(cause, "ParseFloat"):
		want = "a number such as 0.5"
	case strings.Contains(cause, "ParseInt"), strings.Contains(cause, "ParseUint"):
		want = "a whole number such as 10"
	case strings.Contains(cause, "ParseBool"):
		want = "true or false"
	case strings.Contains(cause, "time: "):
		want = "a duration such as 30s or 2m"
	}
	if strings.Contains(cause, "value out of range") {
		return fmt.Errorf("%s %q: out of range; want %s", flag, value, want)
	}
	return fmt.Errorf("%s %q: want %s", flag, value, want)
}

// Main is the entry point used by cmd/dpstat.
func Main() {
	os.Exit(Execute(os.Args[1:], os.Stdout, os.Stderr))
}

// cmdContext is the command's context, or the background context when it
// has none (a command run outside ExecuteContext).
func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
