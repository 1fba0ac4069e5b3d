package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

func newCollectCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "collect",
		Short: "not yet available",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("dpstat collect is not available yet")
		},
	}
}
