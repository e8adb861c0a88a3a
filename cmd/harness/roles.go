package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/roles"
)

func (c *cli) roles(args []string) int {
	if len(args) == 0 {
		return c.fail("roles: want a subcommand: list, or show NAME")
	}
	switch args[0] {
	case "list":
		return c.rolesList(args[1:])
	case "show":
		return c.rolesShow(args[1:])
	}
	return c.fail("roles: unknown subcommand %q: want list, or show NAME", args[0])
}

func (c *cli) rolesList(args []string) int {
	fs, project := c.flags("roles list")
	if !c.parseNone(fs, args, "") {
		return exitError
	}
	h, ok := c.load(c.params(*project))
	if !ok {
		return exitError
	}
	set := h.Roles
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
}

// showFields are the fields of roles show, in order.
var showFields = []string{
	"role.description", "role.shell_policy", "role.privileged",
	"tools.allowed", "tools.denied", "tools.ask",
	"limits.max_context_tokens", "limits.max_shell_invocations", "limits.max_cost_usd",
	"limits.warn_at_percent", "limits.block_at_percent",
}

func (c *cli) rolesShow(args []string) int {
	fs, project := c.flags("roles show")
	asJSON := fs.Bool("json", false, "print the resolved role as JSON")
	rest, err := parse(fs, args)
	if err != nil {
		return exitError
	}
	if len(rest) != 1 {
		return c.fail("roles show: want one role name")
	}
	h, ok := c.load(c.params(*project))
	if !ok {
		return exitError
	}
	r, ok := h.Roles.Get(rest[0])
	if !ok {
		return c.fail("%s", unknownRole(rest[0], h.Roles))
	}
	if *asJSON {
		if err := c.writeJSON(r); err != nil {
			return c.fail("%v", err)
		}
		return exitOK
	}
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
