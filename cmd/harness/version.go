package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func (c *cli) versionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version [flags]",
		Short: "Print the harness's version, and how it was built",
		Long: `Version prints the version of this build of the harness (the module's version that
go install built, or Go's stamp of the repository it was built in, else the
harness's own), its commit, the Go version, the platform and the version of the
embedded Open Policy Agent. harness --version prints the same.`,
		Example: `  harness version
  harness version --json`,
		Args: noArgs(""),
		RunE: c.runs(func(cmd *cobra.Command, _ []string) int { return c.version(asJSON) }),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the version and build as JSON")
	return cmd
}

// version prints how this binary was built.
func (c *cli) version(asJSON bool) int {
	b := c.env.build()
	if asJSON {
		return c.printJSON(b)
	}
	fmt.Fprintf(c.stdout, "Version: %s\n", b.Version)
	if b.Revision != "" {
		modified := ""
		if b.Modified {
			modified = " (modified)"
		}
		fmt.Fprintf(c.stdout, "Commit: %s%s\n", b.Revision, modified)
	}
	if b.Time != "" {
		fmt.Fprintf(c.stdout, "Commit Time: %s\n", b.Time)
	}
	fmt.Fprintf(c.stdout, "Go Version: %s\n", b.GoVersion)
	fmt.Fprintf(c.stdout, "Platform: %s\n", b.Platform)
	if b.OPAVersion != "" {
		fmt.Fprintf(c.stdout, "OPA Version: %s\n", b.OPAVersion)
	}
	return exitOK
}
