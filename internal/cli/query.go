package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

func newQueryCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "query",
		Short: "not yet available",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("dpstat query is not available yet")
		},
	}
}
