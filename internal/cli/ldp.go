package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

func newLdpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ldp",
		Short: "not yet available",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("dpstat ldp is not available yet")
		},
	}
}
