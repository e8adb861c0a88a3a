package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentharness/harness/app"
	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/internal/strict"
	"github.com/agentharness/harness/policy"
)

func (c *cli) checkCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check [flags]",
		Short: "Check every role, configuration and policy file",
		Long: `Check loads everything as every command does, and reports every problem of every
role, configuration and policy file together, each with its file, line, column and
key: what any later command would refuse. Without problems it says what it loaded.

Exit codes: 0 ok, 3 the files have errors, 1 the harness itself cannot run.`,
		Example: `  harness check
  harness --project ~/src/app check --json`,
		Args: noArgs(""),
		RunE: c.runs(func(cmd *cobra.Command, _ []string) int {
			h, err := app.Load(c.env.ctx, c.params())
			var list strict.ErrorList
			switch {
			case errors.As(err, &list):
				if asJSON {
					if c.printJSON(struct {
						OK     bool            `json:"ok"`
						Errors []*strict.Error `json:"errors"`
					}{false, list}) != exitOK {
						return exitError
					}
					return exitCheck
				}
				for _, e := range list {
					fmt.Fprintln(c.stdout, printableLines(e.Error()))
				}
				fmt.Fprintf(c.stdout, "%d error(s) in role, configuration or policy files\n", len(list))
				return exitCheck
			case err != nil:
				return c.fail("%v", err)
			}
			s := h.Summary()
			if asJSON {
				return c.printJSON(struct {
					OK     bool            `json:"ok"`
					Errors []*strict.Error `json:"errors"`
					app.Summary
				}{true, []*strict.Error{}, s})
			}
			for _, w := range s.Warnings {
				fmt.Fprintf(c.stdout, "warning: %s\n", printableLines(w))
			}
			fmt.Fprintf(c.stdout, "ok: %d roles (%d built-in, %d user, %d project)\n", s.Roles.Total, s.Roles.Builtin, s.Roles.User, s.Roles.Project)
			for _, d := range s.ProjectRoles {
				fmt.Fprintf(c.stdout, "project roles: %s\n", contract.Printable(d))
			}
			for _, d := range s.UserRoles {
				fmt.Fprintf(c.stdout, "user roles:    %s\n", d)
			}
			for _, f := range s.Configuration {
				fmt.Fprintf(c.stdout, "configuration: %s\n", f)
			}
			fmt.Fprintf(c.stdout, "custom policies: %d (%d test files)\n", s.CustomPolicies, s.TestFiles)
			fmt.Fprintf(c.stdout, "mode: %s\n", s.Mode)
			for _, a := range s.Alerts { // never the URL: it can be a secret
				what := "every event"
				if len(a.Events) > 0 {
					what = strings.Join(a.Events, ", ")
				}
				fmt.Fprintf(c.stdout, "alert %s: %s, as %s\n", a.Name, what, a.Format)
			}
			return exitOK
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the problems, or what was loaded, as JSON")
	return cmd
}

func (c *cli) compileCmd() *cobra.Command {
	var out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "compile --out DIR [flags]",
		Short: "Write the roles and policies as an OPA bundle directory",
		Long: `Compile writes an OPA bundle directory: data.json (the compiled roles), .manifest
(root harness, Rego v1), the harness's policy and its tests, and the custom policies
with theirs. opa test, opa build and a stock OPA take it as it is.`,
		Example: `  harness compile --out bundle && opa test bundle`,
		Args:    noArgs(""),
		RunE: c.runs(func(cmd *cobra.Command, _ []string) int {
			if out == "" {
				return c.fail("compile: --out DIR is required")
			}
			meter := c.progress("harness compile")
			meter.Say("loading and compiling the roles and policies")
			h, ok := c.load(c.params())
			if !ok {
				meter.Done()
				return exitError
			}
			b, err := compiler.NewBundle(h.Engine.Document(), append(h.Engine.Bundle().Modules, policy.TestModules()...))
			if err != nil {
				meter.Done()
				return c.fail("compile: %v", err)
			}
			err = b.WriteProgress(out, func(done, total int) { meter.Count(int64(done), int64(total)) })
			meter.Done()
			if err != nil {
				return c.fail("compile: %v", err)
			}
			if asJSON {
				return c.printJSON(struct {
					Out     string `json:"out"`
					Roles   int    `json:"roles"`
					Modules int    `json:"modules"`
					Custom  int    `json:"custom"`
				}{out, h.Roles.Len(), len(b.Modules), len(h.Custom)})
			}
			fmt.Fprintf(c.stdout, "wrote %s: %d roles, %d Rego modules (%d custom), data.json, .manifest\n", out, h.Roles.Len(), len(b.Modules), len(h.Custom))
			return exitOK
		}),
	}
	cmd.Flags().StringVar(&out, "out", "", "the bundle `DIR` to write (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was written as JSON")
	return cmd
}
