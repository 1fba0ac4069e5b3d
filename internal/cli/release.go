package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

func newReleaseCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "release",
		Short: "not yet available",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("dpstat release is not available yet")
		},
	}
}
