package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

func newCatalogCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "catalog",
		Short: "not yet available",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("dpstat catalog is not available yet")
		},
	}
}
