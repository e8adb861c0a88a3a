package main

import (
	"flag"
	"fmt"
	"os"

	budgetpkg "github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/transcript"
)

// record charges a finished call.
func (c *cli) record(args []string) int {
	fs, project := c.flags("record")
	session, agent, ledger := sessionFlags(fs)
	tool := fs.String("tool", "", "the tool that ran (required)")
	outFile := fs.String("output-file", "", "a `FILE` holding the output that went back to the agent")
	outText := fs.String("output-text", "", "the output that went back to the agent")
	argsJSON := fs.String("args", "", "the tool's arguments, a JSON object (their tokens are input)")
	model := fs.String("model", "", "the model whose price applies (default: [cost] default_model)")
	asJSON := fs.Bool("json", false, "print the charge as JSON")
	if !c.parseNone(fs, args, "") {
		return exitError
	}
	if *tool == "" {
		return c.fail("record: --tool is required")
	}
	outputGiven := 0
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "output-file" || f.Name == "output-text" {
			outputGiven++
		}
	})
	if outputGiven != 1 {
		return c.fail("record: give the call's output with exactly one of --output-file F or --output-text TEXT")
	}
	output := *outText
	if *outFile != "" {
		b, err := os.ReadFile(*outFile)
		if err != nil {
			return c.fail("record: %v", err)
		}
		output = string(b)
	}
	if *argsJSON != "" {
		if _, err := parseArgs(*argsJSON); err != nil {
			return c.fail("record: %v", err)
		}
	}
	ctx := c.env.ctx
	h, g, ok := c.open(*project, *ledger)
	if !ok {
		return exitError
	}
	defer h.Close()
	k, ok := c.existing(g, fs, *session, *agent)
	if !ok {
		return exitError // a session starts with its first decision (harness decide --session S)
	}
	ch, err := g.Record(ctx, govern.Result{Session: k, Tool: *tool, Arguments: *argsJSON, Output: output, Model: *model})
	if err != nil {
		return c.fail("record: %v", err)
	}
	st, err := g.Status(ctx, k, "")
	if err != nil {
		return c.fail("record: %v", err)
	}
	if *asJSON {
		out := struct {
			govern.Charge
			StatusLine string `json:"status_line"`
		}{ch, st.StatusLine()}
		if err := c.writeJSON(out); err != nil {
			return c.fail("%v", err)
		}
		return exitOK
	}
	fmt.Fprintf(c.stdout, "recorded %s for session %s: %d output tokens, %d input tokens, %s\n",
		contract.Printable(*tool), contract.Printable(k.String()), ch.OutputTokens, ch.InputTokens, costText(ch.CostMicros))
	fmt.Fprintln(c.stdout, st.StatusLine())
	return exitOK
}

// costText shows micro-dollars exactly when under a cent.
func costText(micros int64) string {
	if micros < 10_000 {
		return fmt.Sprintf("$%d.%06d", micros/1_000_000, micros%1_000_000)
	}
	return contract.FormatUSD(micros)
}

// budget prints a session's status line, or resets its usage.
func (c *cli) budget(args []string) int {
	reset := len(args) > 0 && args[0] == "reset"
	if reset {
		args = args[1:]
	}
	fs, project := c.flags("budget")
	session, agent, ledger := sessionFlags(fs)
	asJSON := fs.Bool("json", false, "print the budget as JSON")
	agentBudget := fs.Bool("agent-budget", false, "with reset: reset the agent's budget across its sessions (its usage in the current period), not a session's")
	if !c.parseNone(fs, args, "want: budget [--session S], budget reset --session S, or budget reset --agent A --agent-budget") {
		return exitError
	}
	if reset && *agentBudget {
		_, ag, given := c.session(fs, "", *agent)
		if *session != "" || !given {
			return c.fail("budget reset --agent-budget: name the agent with --agent A, and no session")
		}
		*agent = ag
		h, g, ok := c.open(*project, *ledger)
		if !ok {
			return exitError
		}
		defer h.Close()
		period, err := g.ResetAgent(c.env.ctx, *agent)
		if err != nil {
			return c.fail("budget reset: %v", err)
		}
		fmt.Fprintf(c.stdout, "reset the usage of agent %s in %s (its sessions' own usage is kept)\n", contract.Printable(*agent), period)
		return exitOK
	}
	if reset && *session == "" {
		return c.fail("budget reset: name the session with --session S (a reset is the operator's act)")
	}
	ctx := c.env.ctx
	h, g, ok := c.open(*project, *ledger)
	if !ok {
		return exitError
	}
	defer h.Close()
	k, ok := c.existing(g, fs, *session, *agent)
	if !ok {
		return exitError
	}
	if reset {
		if err := g.Reset(ctx, k); err != nil {
			return c.fail("budget reset: %v", err)
		}
		fmt.Fprintf(c.stdout, "reset the usage of session %s (its role is kept)\n", k)
	}
	d, err := g.Status(ctx, k, "")
	if err != nil {
		return c.fail("budget: session %s: %v", k, err)
	}
	tally, recorded, err := g.CostSource(k)
	if err != nil {
		c.warn(fmt.Errorf("the transcript's tally of session %s: %w", k, err))
	}
	if *asJSON {
		type costSource struct {
			Source         string `json:"source"`
			RealMicros     int64  `json:"real_micros"`
			EstimateMicros int64  `json:"estimate_micros"`
			Requests       int64  `json:"requests"`
			Transcript     string `json:"transcript,omitempty"`
		}
		out := struct {
			Session     string                `json:"session"`
			Agent       string                `json:"agent,omitempty"`
			Role        string                `json:"role"`
			Signal      string                `json:"signal"`
			Budget      contract.Budget       `json:"budget"`
			AgentBudget *contract.AgentBudget `json:"agent_budget,omitempty"`
			CostSource  *costSource           `json:"cost_source,omitempty"`
			StatusLine  string                `json:"status_line"`
		}{Session: k.Session, Agent: k.Agent, Role: d.Role, Signal: d.Signal, Budget: d.Budget, AgentBudget: d.AgentBudget, StatusLine: d.StatusLine()}
		if recorded {
			out.CostSource = &costSource{tally.Source(), tally.RealMicros, tally.EstimateMicros, tally.Requests, tally.Transcript}
		}
		if err := c.writeJSON(out); err != nil {
			return c.fail("%v", err)
		}
		return exitOK
	}
	fmt.Fprintln(c.stdout, d.StatusLine())
	if recorded {
		fmt.Fprintln(c.stdout, costSourceLine(tally))
	}
	return exitOK
}

// costSourceLine says where a session's cost came from.
func costSourceLine(t transcript.Tally) string {
	if t.Source() == transcript.SourceTranscript {
		return fmt.Sprintf("cost: from the agent's transcript, %s for %d model requests at the models' prices (the estimate of its tool calls, %s, is not charged on top)",
			costText(t.RealMicros), t.Requests, costText(t.EstimateMicros))
	}
	return fmt.Sprintf("cost: the estimate of its tool calls, %s (its transcript records %s for %d model requests)",
		costText(t.EstimateMicros), costText(t.RealMicros), t.Requests)
}

func newTokenizer() *budgetpkg.Tokenizer { return budgetpkg.NewTokenizer() }
