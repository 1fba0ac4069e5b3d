package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

func newBudgetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "budget",
		Short: "not yet available",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("dpstat budget is not available yet")
		},
	}
}
