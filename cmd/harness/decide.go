package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentharness/harness/policy"
	"github.com/agentharness/harness/roles"
)

func (c *cli) decide(args []string) int {
	fs, project := c.flags("decide")
	tool := fs.String("tool", "", "the tool to decide on (required)")
	role := fs.String("role", "", "the role (default: $LEAN_CTX_ROLE, else coder)")
	argsJSON := fs.String("args", "", "the tool's arguments, a JSON object")
	tokens := fs.String("tokens", "0", "context tokens used so far")
	shell := fs.String("shell", "0", "shell invocations so far")
	cost := fs.String("cost", "0", "estimated cost so far, in US dollars")
	asJSON := fs.Bool("json", false, "print the decision as JSON")
	session := fs.String("session", "", "session id, passed to the policy")
	agent := fs.String("agent", "", "agent name, passed to the policy")
	rest, err := parse(fs, args)
	if err != nil {
		return exitError
	}
	if len(rest) > 0 {
		return c.fail("decide: unexpected argument %q", rest[0])
	}
	if *tool == "" {
		return c.fail("decide: --tool is required")
	}
	in := policy.Input{Tool: *tool, Session: *session, Agent: *agent, Role: *role}
	if in.Role == "" {
		in.Role = c.env.getenv("LEAN_CTX_ROLE")
	}
	if in.Role == "" {
		in.Role = roles.DefaultRole
	}
	for _, n := range []struct {
		flag string
		text string
		dst  *int64
	}{{"--tokens", *tokens, &in.Budget.Tokens}, {"--shell", *shell, &in.Budget.Shell}} {
		v, err := strconv.ParseInt(n.text, 10, 64)
		if err != nil || v < 0 {
			return c.fail("decide: %s %q: want a whole number >= 0", n.flag, n.text)
		}
		*n.dst = v
	}
	if in.Budget.CostMicros, err = policy.ParseUSD(*cost); err != nil {
		return c.fail("decide: --cost: %v", err)
	}
	if *argsJSON != "" {
		dec := json.NewDecoder(bytes.NewReader([]byte(*argsJSON)))
		dec.UseNumber()
		if err := dec.Decode(&in.Arguments); err != nil || in.Arguments == nil || dec.More() {
			return c.fail("decide: --args must be a JSON object, like '{\"command\": \"ls\"}'")
		}
	}

	ctx := context.Background()
	e, set, ok := c.engine(ctx, *project)
	if !ok {
		return exitError
	}
	if _, ok := set.Get(in.Role); !ok {
		return c.fail("%s", unknownRole(in.Role, set))
	}
	d, err := e.Decide(ctx, in)
	if err != nil {
		return c.fail("decide: %v", err)
	}
	if *asJSON {
		out := struct {
			policy.Decision
			StatusLine string `json:"status_line"`
		}{d, d.StatusLine()}
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return c.fail("%v", err)
		}
	} else {
		printDecision(c, d)
	}
	if !d.Allowed {
		return exitDenied
	}
	return exitOK
}

// printDecision writes the readable summary of a decision.
func printDecision(c *cli, d policy.Decision) {
	fmt.Fprintf(c.stdout, "%s: role %s, tool %s\n", d.Decision, d.Role, d.Tool)
	for _, r := range d.Reasons {
		fmt.Fprintf(c.stdout, "  reason  %s: %s\n", r.Code, r.Message)
	}
	for _, w := range d.Warnings {
		fmt.Fprintf(c.stdout, "  warning %s: %s\n", w.Code, w.Message)
	}
	if d.CompressOutput {
		fmt.Fprintf(c.stdout, "  output will be compressed (shell_policy %s)\n", d.ShellPolicy)
	}
	fmt.Fprintln(c.stdout, d.StatusLine())
}
