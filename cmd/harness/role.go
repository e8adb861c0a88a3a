package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/govern"
)

// role shows a session's active role, or switches it.
func (c *cli) role(args []string) int {
	verb := ""
	if len(args) > 0 && (args[0] == "set" || args[0] == "switch") {
		verb, args = args[0], args[1:]
	}
	fs, project := c.flags("role")
	session, agent, ledger := sessionFlags(fs)
	rest, err := parse(fs, args)
	if err != nil {
		return exitError
	}
	switch {
	case verb == "" && len(rest) > 0:
		return c.fail("role: unexpected argument %q (want: role, role set NAME, role switch NAME)", rest[0])
	case verb != "" && len(rest) != 1:
		return c.fail("role %s: want one role name", verb)
	}
	ctx := c.env.ctx
	h, g, ok := c.open(*project, *ledger, verb == "")
	if !ok {
		return exitError
	}
	defer h.Close()
	if verb == "" {
		return c.showRole(g, fs, *session, *agent)
	}
	// A switch may start a session: the operator's role set gives a new
	// session its role, an agent's switch is its session's first act.
	id, ag, given := c.session(fs, *session, *agent)
	if id == "" {
		return c.fail("role %s: name the session with --session S or $HARNESS_SESSION (harness sessions lists them)", verb)
	}
	k, found, err := g.Find(ctx, id, ag, given)
	if err != nil {
		return c.fail("role %s: %v", verb, err)
	}
	if !found {
		fmt.Fprintf(c.stdout, "session %s is new: it starts in role %s\n", k, g.StartRole(k.Agent, ""))
	}
	by := contract.ByAgent
	if verb == "set" {
		by = contract.ByOperator
	}
	o, err := g.Switch(ctx, k, rest[0], by)
	if err != nil {
		return c.fail("role %s: %v", verb, err)
	}
	p := contract.Printable // roles from the ledger, messages of custom policies
	switch {
	case !o.Decision.Allowed:
		fmt.Fprintf(c.stdout, "refused: session %s stays in role %s\n", p(k.String()), p(o.Counters.Role))
		for _, r := range o.Decision.Reasons {
			fmt.Fprintf(c.stdout, "  %s (%s): %s\n", p(r.Code), p(r.Rule), p(r.Message))
		}
		return exitDenied
	case !o.Switched:
		fmt.Fprintf(c.stdout, "session %s is already in role %s\n", p(k.String()), p(o.Counters.Role))
	default:
		fmt.Fprintf(c.stdout, "session %s: role %s → %s (by the %s); usage kept\n", p(k.String()), p(o.Decision.From), p(o.Decision.To), by)
	}
	fmt.Fprintln(c.stdout, o.Status.StatusLine())
	return exitOK
}

// showRole prints a session's role, where it may switch, and its budget.
func (c *cli) showRole(g *govern.Governor, fs *flag.FlagSet, session, agent string) int {
	k, ok := c.existing(g, fs, session, agent)
	if !ok {
		return exitError
	}
	info, err := g.RoleInfo(c.env.ctx, k, "")
	if err != nil {
		return c.fail("session %s: %v", k, err)
	}
	r := info.Role
	p := contract.Printable // a project's role files are the agent's
	fmt.Fprintf(c.stdout, "session %s: role %s (%s)\n", p(k.String()), p(r.Name), p(r.Description))
	fmt.Fprintf(c.stdout, "  shell_policy %s; tools allowed: %s; denied: %s\n", r.ShellPolicy, orNone(r.Allowed), orNone(r.Denied))
	fmt.Fprintf(c.stdout, "  the agent may switch to: %s\n", orNone(info.MayEnter()))
	fmt.Fprintf(c.stdout, "  only the operator may switch to: %s\n", orNone(info.OperatorOnly()))
	fmt.Fprintln(c.stdout, info.Status.StatusLine())
	return exitOK
}

// orNone is a list of names or patterns, shown Printable.
func orNone(list []string) string {
	if len(list) == 0 {
		return "(none)"
	}
	return contract.Printable(strings.Join(list, ", "))
}
