package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentharness/harness/app"
	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/config"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/explain"
	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/policy"
)

// decideFlags are the flags of decide.
type decideFlags struct {
	sessionFlags
	tool, role, args, tokens, shell, cost string
	json, record, explain                 bool
	trace                                 traceFlag
}

func (c *cli) decideCmd() *cobra.Command {
	var f decideFlags
	cmd := &cobra.Command{
		Use:   "decide --tool TOOL [flags]",
		Short: "Decide one tool call: allow, warn, ask or deny, and why",
		Long: `Decide decides one tool call by the role's tool lists, shell policy and budget, and
the custom policies, and prints the decision and the status line.

Without a session, --tokens, --shell and --cost are the usage before the call, and
the role is --role, else the agent's role in harness.toml, else $LEAN_CTX_ROLE,
else the configured default (coder). With --session S the counters come from the
ledger, and so does the session's role (a new session starts in --role); with
--record an allowed call is charged: a shell tool takes its shell slot, atomically
with the decision.

Exit codes: 0 allowed or warned, 2 denied (0 in shadow mode), 1 usage or load error.`,
		Example: `  harness decide --role reviewer --tool ctx_shell
  harness decide --tool ctx_read --tokens 170000 --json
  harness decide --session s-1 --agent claude-code --tool ctx_shell --args '{"command": "ls"}' --record
  harness decide --role reviewer --tool ctx_edit --explain --trace=notes`,
		Args: noArgs(""),
		RunE: c.runs(func(cmd *cobra.Command, _ []string) int { return c.decide(cmd, f) }),
	}
	fs := cmd.Flags()
	fs.StringVar(&f.tool, "tool", "", "the `TOOL` to decide on (required)")
	fs.StringVar(&f.role, "role", "", "the `ROLE` (default: the session's, else $LEAN_CTX_ROLE, else the configured default)")
	fs.StringVar(&f.args, "args", "", "the tool's arguments, a `JSON` object")
	fs.StringVar(&f.tokens, "tokens", "", "context tokens used so far, a whole `NUMBER` (without --session)")
	fs.StringVar(&f.shell, "shell", "", "shell invocations so far, a whole `NUMBER` (without --session)")
	fs.StringVar(&f.cost, "cost", "", "estimated cost so far, in `USD` (without --session)")
	fs.BoolVar(&f.json, "json", false, "print the decision as JSON, with its status line")
	f.sessionFlags.add(fs)
	fs.BoolVar(&f.record, "record", false, "charge an allowed call to the session (a shell slot for a shell tool)")
	fs.BoolVar(&f.explain, "explain", false, "say which rules, role fields and budget arithmetic produced the decision")
	fs.Var(&f.trace, "trace", "print OPA's trace of the evaluation, its `MODE` full (alone: --trace), notes, fails or debug")
	fs.Lookup("trace").NoOptDefVal = "full"
	cmd.RegisterFlagCompletionFunc("role", c.completeRoles)
	cmd.RegisterFlagCompletionFunc("trace", completeWords(policy.TraceModes...))
	return cmd
}

// decide decides one call.
func (c *cli) decide(cmd *cobra.Command, f decideFlags) int {
	if f.tool == "" {
		return c.fail("decide: --tool is required")
	}
	id, ag, agentGiven := c.session(cmd, f.sessionFlags)
	k := budget.Key{Session: id, Agent: ag}
	stateless := id == ""
	if stateless && f.record {
		return c.fail("decide: --record needs a session (--session S or $HARNESS_SESSION)")
	}
	if !stateless && (f.tokens != "" || f.shell != "" || f.cost != "") {
		return c.fail("decide: with a session the counters come from the ledger; --tokens, --shell and --cost are for decisions without one")
	}
	var usage contract.Usage
	for _, n := range []struct {
		flag, text string
		dst        *int64
	}{{"--tokens", f.tokens, &usage.Tokens}, {"--shell", f.shell, &usage.Shell}} {
		if n.text == "" {
			continue
		}
		v, err := strconv.ParseInt(n.text, 10, 64)
		if err != nil || v < 0 {
			return c.fail("decide: %s %q: want a whole number >= 0", n.flag, n.text)
		}
		*n.dst = v
	}
	var err error
	if f.cost != "" {
		if usage.CostMicros, err = contract.ParseUSD(f.cost); err != nil {
			return c.fail("decide: --cost: %v", err)
		}
	}
	var arguments map[string]any
	if f.args != "" {
		if arguments, err = parseArgs(f.args); err != nil {
			return c.fail("decide: %v", err)
		}
	}

	ctx := c.env.ctx
	h, ok := c.load(c.params())
	if !ok {
		return exitError
	}
	defer h.Close()
	e := h.Engine
	var o govern.Outcome
	var in contract.Input // what the decision was made on
	status := ""          // the status line after the call's charge, when it took one
	// The paths of an edit as the file system resolves them, as the
	// governor resolves them (govern.Resolve).
	resolved := govern.Resolve(e.EditPaths(f.tool, "", arguments), e.Document().Config.Protect.Home, c.env.workDir, h.Project())
	if stateless {
		startRole := h.Rules().StartRole(k.Agent, f.role, h.EnvRole())
		if _, ok := h.Roles.Get(startRole); !ok {
			return c.fail("%s", unknownRole(startRole, h.Roles))
		}
		in = contract.Input{Role: startRole, Tool: f.tool, Arguments: arguments, Budget: usage, Agent: k.Agent, Project: h.Project(), Resolved: resolved}
		d, err := e.Decide(ctx, in)
		if err != nil {
			return c.fail("decide: %v", err)
		}
		o = govern.Outcome{Decision: d, Allowed: d.Allowed}
		if !d.Allowed && h.Config.Mode == config.Shadow {
			o.Allowed, o.Shadowed = true, true
		}
	} else {
		g, err := h.Open(ctx, app.OpenOptions{Ledger: f.ledger, Warn: c.warn})
		if err != nil {
			return c.fail("%v", err)
		}
		// The session of that id (of the one agent that has it, when no
		// agent is named), else a new one.
		if k, _, err = g.Find(ctx, id, ag, agentGiven); err != nil {
			return c.fail("decide: %v", err)
		}
		cur, err := g.Session(ctx, k, f.role)
		if err != nil {
			return c.fail("%v", err)
		}
		if f.role != "" && cur.Role != f.role {
			return c.fail("session %s is in role %s; --role %s only names the role of a new session (switch with: harness role switch %s --session %s)", k, cur.Role, f.role, f.role, k.Session)
		}
		if _, ok := h.Roles.Get(cur.Role); !ok {
			return c.fail("session %s: %s", k, unknownRole(cur.Role, h.Roles))
		}
		o, err = g.Decide(ctx, govern.Call{Session: k, Tool: f.tool, Arguments: arguments, Role: f.role, Reserve: f.record})
		if err != nil {
			return c.fail("decide: %v", err)
		}
		d := o.Decision
		in = contract.Input{Role: d.Role, Tool: f.tool, Arguments: arguments, Session: k.Session, Agent: k.Agent, Project: h.Project(), Resolved: resolved,
			Budget: contract.Usage{Tokens: d.Budget.Tokens.Used, Shell: d.Budget.Shell.Used, CostMicros: d.Budget.Cost.Used}}
		if o.Reserved {
			st, err := g.Status(ctx, k, "")
			if err != nil {
				return c.fail("decide: %v", err)
			}
			status = st.StatusLine()
		}
	}
	if status == "" {
		status = o.Decision.StatusLine()
	}
	if f.trace.mode != "" {
		fmt.Fprintf(c.stdout, "trace (%s):\n", f.trace.mode)
		if _, err := e.Trace(ctx, in, f.trace.mode, c.stdout); err != nil {
			return c.fail("decide: %v", err)
		}
	}
	if f.json {
		out := struct {
			contract.Decision
			StatusLine string `json:"status_line"`
			Shadowed   bool   `json:"shadowed,omitempty"`
			Reserved   bool   `json:"reserved,omitempty"`
			Session    string `json:"session,omitempty"`
		}{o.Decision, status, o.Shadowed, o.Reserved, k.Session}
		if err := c.writeJSON(out); err != nil {
			return c.fail("%v", err)
		}
	} else {
		c.printOutcome(o, status)
	}
	if f.explain {
		x, err := e.Explain(ctx, in)
		if err != nil {
			return c.fail("decide: %v", err)
		}
		r, _ := h.Roles.Get(in.Role)
		explain.Write(c.stdout, x, r)
	}
	if !o.Allowed {
		return exitDenied
	}
	return exitOK
}

// parseArgs reads a tool's arguments: a JSON object, numbers kept exact.
func parseArgs(s string) (map[string]any, error) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil || m == nil || dec.More() {
		return nil, fmt.Errorf("--args must be a JSON object, like '{\"command\": \"ls\"}'")
	}
	return m, nil
}

func (c *cli) writeJSON(v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := io.WriteString(c.stdout, printableJSON(b.String())) // what JSON lets through raw is the agent's too
	return err
}

// printOutcome writes the readable summary of a decision.
// The decision's own budget is the usage before the call; status is the
// status line to show (after the call's charge, if any).
func (c *cli) printOutcome(o govern.Outcome, status string) {
	// The tool and the messages (which may quote the arguments) are the
	// agent's: shown Printable.
	p := contract.Printable
	d := o.Decision
	verdict := p(d.Decision)
	if o.Shadowed {
		verdict += " (shadow mode: not enforced)"
	}
	fmt.Fprintf(c.stdout, "%s: role %s, tool %s\n", verdict, p(d.Role), p(d.Tool))
	for _, r := range d.Reasons {
		fmt.Fprintf(c.stdout, "  reason  %s: %s\n", p(r.Code), p(r.Message))
	}
	for _, w := range d.Warnings {
		fmt.Fprintf(c.stdout, "  warning %s: %s\n", p(w.Code), p(w.Message))
	}
	if d.CompressOutput {
		fmt.Fprintf(c.stdout, "  output will be compressed (shell_policy %s)\n", p(d.ShellPolicy))
	}
	if o.Reserved {
		fmt.Fprintf(c.stdout, "  recorded: shell invocation %d\n", o.Counters.Shell)
	}
	fmt.Fprintln(c.stdout, status)
}

// traceFlag is --trace: alone it means full; --trace=MODE picks a filter.
type traceFlag struct{ mode string }

func (t *traceFlag) String() string { return t.mode }
func (t *traceFlag) Type() string   { return "mode" }

func (t *traceFlag) Set(s string) error {
	if s == "true" {
		s = "full"
	}
	if s == "false" {
		s = ""
	}
	if s != "" && !slices.Contains(policy.TraceModes, s) {
		return fmt.Errorf("want one of %s", strings.Join(policy.TraceModes, ", "))
	}
	t.mode = s
	return nil
}
