package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/roles"
)

func (c *cli) rolesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "roles (list | show ROLE)",
		Short: "List the roles, or show one resolved, field by field",
		Long: `Roles lists the roles there are (built-in, the user's, the project's), or shows one
resolved: each field with the file that set it, since inheritance is per key.`,
		Example: `  harness roles list
  harness roles show reviewer --json`,
		RunE: group("list, or show NAME"),
	}
	cmd.AddCommand(c.rolesListCmd(), c.rolesShowCmd())
	return cmd
}

func (c *cli) rolesListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [flags]",
		Short: "List every role with its source and description",
		Long: `List lists every role: its name, where it comes from (builtin, user, project),
the role it inherits and its description. With --json, every role resolved, as
roles show --json prints one.`,
		Example: `  harness roles list
  harness --project ~/src/app roles list --json`,
		Args: noArgs(""),
		RunE: c.runs(func(cmd *cobra.Command, _ []string) int {
			h, ok := c.load(c.params())
			if !ok {
				return exitError
			}
			set := h.Roles
			if asJSON {
				return c.printJSON(set.All())
			}
			w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tSOURCE\tINHERITS\tDESCRIPTION")
			for _, r := range set.All() {
				inherits := r.Inherits
				if inherits == "" {
					inherits = "-"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r.Name, r.Source, inherits, contract.Printable(r.Description)) // a project's file is the agent's
			}
			w.Flush()
			return exitOK
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the roles, resolved, as JSON")
	return cmd
}

// showFields are the fields of roles show, in order.
var showFields = []string{
	"role.description", "role.shell_policy", "role.privileged",
	"tools.allowed", "tools.denied", "tools.ask",
	"limits.max_context_tokens", "limits.max_shell_invocations", "limits.max_cost_usd",
	"limits.warn_at_percent", "limits.block_at_percent",
}

func (c *cli) rolesShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ROLE [flags]",
		Short: "Show a role resolved, each field with the file that set it",
		Long: `Show shows the resolved role: its inheritance chain and every field with its value
and the file that set it (inheritance is per key, so one role can draw fields
from several files).`,
		Example: `  harness roles show reviewer
  harness roles show security-auditor --json`,
		Args:              oneArg("role name"),
		ValidArgsFunction: c.completeRoles,
		RunE: c.runs(func(cmd *cobra.Command, args []string) int {
			h, ok := c.load(c.params())
			if !ok {
				return exitError
			}
			r, ok := h.Roles.Get(args[0])
			if !ok {
				return c.fail("%s", unknownRole(args[0], h.Roles))
			}
			if asJSON {
				return c.printJSON(r)
			}
			return c.printRole(r)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the resolved role as JSON")
	return cmd
}

// printRole prints a resolved role, field by field.
func (c *cli) printRole(r *roles.Role) int {
	fmt.Fprintf(c.stdout, "role %s (%s, %s)\n", r.Name, r.Source, contract.Printable(r.File))
	fmt.Fprintf(c.stdout, "chain: %s\n\n", strings.Join(r.Chain, " → "))
	w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "FIELD\tSET BY\tVALUE")
	values := fieldValues(r)
	keys := append([]string{}, showFields...)
	for _, k := range sortedIO(r) {
		keys = append(keys, "io."+k)
	}
	for _, k := range keys {
		fmt.Fprintf(w, "%s\t%s\t%s\n", contract.Printable(k), contract.Printable(shortOrigin(r.Origin[k])), contract.Printable(values[k]))
	}
	w.Flush()
	return exitOK
}

func fieldValues(r *roles.Role) map[string]string {
	list := func(l []string) string {
		if len(l) == 0 {
			return "(none)"
		}
		return strings.Join(l, ", ")
	}
	v := map[string]string{
		"role.description":             fmt.Sprintf("%q", r.Description),
		"role.shell_policy":            string(r.ShellPolicy),
		"role.privileged":              fmt.Sprint(r.Privileged),
		"tools.allowed":                list(r.Allowed),
		"tools.denied":                 list(r.Denied),
		"tools.ask":                    list(r.Ask),
		"limits.max_context_tokens":    fmt.Sprint(r.Limits.MaxContextTokens),
		"limits.max_shell_invocations": fmt.Sprint(r.Limits.MaxShellInvocations),
		"limits.max_cost_usd":          exactUSD(r.Limits.MaxCostMicros),
		"limits.warn_at_percent":       fmt.Sprint(r.Limits.WarnAtPercent),
		"limits.block_at_percent":      fmt.Sprint(r.Limits.BlockAtPercent),
	}
	if r.Limits.BlockAtPercent == roles.NeverBlock {
		v["limits.block_at_percent"] += " (never block)"
	}
	for k, x := range r.IO {
		b, _ := json.Marshal(x)
		v["io."+k] = string(b)
	}
	return v
}

func sortedIO(r *roles.Role) []string {
	var keys []string
	for k := range r.IO {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// shortOrigin shows a built-in's origin as is and a file by its path.
func shortOrigin(origin string) string {
	if origin == "" {
		return "-"
	}
	if strings.HasPrefix(origin, "default") || strings.HasPrefix(origin, "builtin:") {
		return origin
	}
	return filepath.Clean(origin)
}

// exactUSD prints micro-dollars exactly, with at least two decimals:
// 3_000_000 → "$3.00", 1_234_500 → "$1.2345".
func exactUSD(micros int64) string {
	s := fmt.Sprintf("%d.%06d", micros/roles.MicrosPerUSD, micros%roles.MicrosPerUSD)
	for strings.HasSuffix(s, "0") && len(s)-strings.IndexByte(s, '.') > 3 {
		s = s[:len(s)-1]
	}
	return "$" + s
}
