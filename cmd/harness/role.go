package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/govern"
)

func (c *cli) roleCmd() *cobra.Command {
	var f sessionFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "role --session ID [flags]",
		Short: "Show a session's role, where it may switch, and its budget",
		Long: `Role shows a session's active role (its description, shell policy and tool
lists), the roles the agent may switch itself into and those only the operator may
give it, and its status line. It reads the ledger and writes nothing; a session the
ledger does not have is an error.

A session keeps its role: only a switch changes it (role set, role switch), and a
switch never resets usage.`,
		Example: `  harness role --session s-1
  harness role set admin --session s-1
  harness role switch reviewer --session s-1`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			return fmt.Errorf("%w: want role, role set NAME, or role switch NAME", unknownCommand(cmd, args[0]))
		},
		RunE: c.runs(func(cmd *cobra.Command, _ []string) int {
			h, g, ok := c.open(f.ledger, true)
			if !ok {
				return exitError
			}
			defer h.Close()
			k, ok := c.existing(g, cmd, f)
			if !ok {
				return exitError
			}
			return c.showRole(g, k, asJSON)
		}),
	}
	f.add(cmd.PersistentFlags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the role, its targets and the budget as JSON")
	cmd.AddCommand(
		c.roleSwitchCmd(&f, "set", contract.ByOperator, "Give a session a role, as the operator (who may enter privileged roles)",
			`Set gives the session the role, as the operator: any role, privileged ones too. A
session the ledger does not have starts in it. The switch keeps usage, and is a
RoleChanged event and a decision-log entry.`,
			"  harness role set admin --session s-1"),
		c.roleSwitchCmd(&f, "switch", contract.ByAgent, "Switch a session's role as the agent would, under the switch rules",
			`Switch switches the session's role as the agent itself would (ctx_session action=role
value=NAME): only into a role within its ceiling, never into a privileged one. A
refused switch exits 2 and says which rule refused it. Made or refused, a switch is
an event and a decision-log entry; it keeps usage.`,
			"  harness role switch reviewer --session s-1"),
	)
	return cmd
}

// roleSwitchCmd is role set or role switch: a switch by the operator or as
// the agent.
func (c *cli) roleSwitchCmd(f *sessionFlags, verb, by, short, long, example string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:               verb + " ROLE --session ID [flags]",
		Short:             short,
		Long:              long,
		Example:           example,
		Args:              oneArg("role name"),
		ValidArgsFunction: c.completeRoles,
		RunE: c.runs(func(cmd *cobra.Command, args []string) int {
			ctx := c.env.ctx
			h, g, ok := c.open(f.ledger, false)
			if !ok {
				return exitError
			}
			defer h.Close()
			// A switch may start a session: the operator's role set gives a
			// new session its role, an agent's switch is its session's
			// first act.
			id, ag, given := c.session(cmd, *f)
			if id == "" {
				return c.fail("role %s: name the session with --session S or $HARNESS_SESSION (harness sessions lists them)", verb)
			}
			k, found, err := g.Find(ctx, id, ag, given)
			if err != nil {
				return c.fail("role %s: %v", verb, err)
			}
			if !found && !asJSON {
				fmt.Fprintf(c.stdout, "session %s is new: it starts in role %s\n", k, g.StartRole(k.Agent, ""))
			}
			o, err := g.Switch(ctx, k, args[0], by)
			if err != nil {
				return c.fail("role %s: %v", verb, err)
			}
			code := exitOK
			if !o.Decision.Allowed {
				code = exitDenied
			}
			if asJSON {
				if c.printJSON(switchJSON{Session: k.Session, Agent: k.Agent, New: !found, Switched: o.Switched, Decision: o.Decision,
					DecisionID: o.DecisionID, Status: o.Status, StatusLine: o.Status.StatusLine()}) != exitOK {
					return exitError
				}
				return code
			}
			p := contract.Printable // roles from the ledger, messages of custom policies
			switch {
			case !o.Decision.Allowed:
				fmt.Fprintf(c.stdout, "refused: session %s stays in role %s\n", p(k.String()), p(o.Counters.Role))
				for _, r := range o.Decision.Reasons {
					fmt.Fprintf(c.stdout, "  %s (%s): %s\n", p(r.Code), p(r.Rule), p(r.Message))
				}
				return code
			case !o.Switched:
				fmt.Fprintf(c.stdout, "session %s is already in role %s\n", p(k.String()), p(o.Counters.Role))
			default:
				fmt.Fprintf(c.stdout, "session %s: role %s → %s (by the %s); usage kept\n", p(k.String()), p(o.Decision.From), p(o.Decision.To), by)
			}
			fmt.Fprintln(c.stdout, o.Status.StatusLine())
			return code
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the switch's decision and the budget after it as JSON")
	return cmd
}

// switchJSON is a switch as role set --json and role switch --json print
// it.
type switchJSON struct {
	Session string `json:"session"`
	Agent   string `json:"agent,omitempty"`
	// New is true when the switch started the session.
	New        bool                    `json:"new,omitempty"`
	Switched   bool                    `json:"switched"`
	Decision   contract.SwitchDecision `json:"decision"`
	DecisionID string                  `json:"decision_id,omitempty"`
	Status     contract.Status         `json:"status"`
	StatusLine string                  `json:"status_line"`
}

// showRole prints a session's role, where it may switch, and its budget.
func (c *cli) showRole(g *govern.Governor, k budget.Key, asJSON bool) int {
	info, err := g.RoleInfo(c.env.ctx, k, "")
	if err != nil {
		return c.fail("session %s: %v", k, err)
	}
	if asJSON {
		return c.printJSON(struct {
			Session string `json:"session"`
			Agent   string `json:"agent,omitempty"`
			govern.RoleInfo
			StatusLine string `json:"status_line"`
		}{k.Session, k.Agent, info, info.Status.StatusLine()})
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
