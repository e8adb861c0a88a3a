package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentharness/harness/app"
	budgetpkg "github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/transcript"
)

func (c *cli) recordCmd() *cobra.Command {
	var f struct {
		sessionFlags
		tool, outFile, outText, args, model string
		json                                bool
	}
	cmd := &cobra.Command{
		Use:   "record --session ID --tool TOOL (--output-file FILE | --output-text TEXT) [flags]",
		Short: "Charge a finished call: its output's tokens and its cost",
		Long: `Record charges a finished call to its session: the o200k_base tokens of its output
(what reached the agent) to the context budget, and the cost of its input (--args)
and output tokens at the model's price. The session must exist: a session starts
with its first decision (harness decide --session ID).`,
		Example: `  harness record --session s-1 --tool ctx_read --output-file out.txt
  harness record --session s-1 --tool ctx_shell --output-text "$(ls)" --args '{"command": "ls"}' --model sonnet`,
		Args: noArgs(""),
		RunE: c.runs(func(cmd *cobra.Command, _ []string) int {
			if f.tool == "" {
				return c.fail("record: --tool is required")
			}
			if cmd.Flags().Changed("output-file") == cmd.Flags().Changed("output-text") {
				return c.fail("record: give the call's output with exactly one of --output-file F or --output-text TEXT")
			}
			output := f.outText
			if f.outFile != "" {
				b, err := os.ReadFile(f.outFile)
				if err != nil {
					return c.fail("record: %v", err)
				}
				output = string(b)
			}
			if f.args != "" {
				if _, err := parseArgs(f.args); err != nil {
					return c.fail("record: %v", err)
				}
			}
			ctx := c.env.ctx
			h, g, ok := c.open(f.ledger, false)
			if !ok {
				return exitError
			}
			defer h.Close()
			k, ok := c.existing(g, cmd, f.sessionFlags)
			if !ok {
				return exitError // a session starts with its first decision (harness decide --session S)
			}
			ch, err := g.Record(ctx, govern.Result{Session: k, Tool: f.tool, Arguments: f.args, Output: output, Model: f.model})
			if err != nil {
				return c.fail("record: %v", err)
			}
			st, err := g.Status(ctx, k, "")
			if err != nil {
				return c.fail("record: %v", err)
			}
			if f.json {
				return c.printJSON(struct {
					govern.Charge
					StatusLine string `json:"status_line"`
				}{ch, st.StatusLine()})
			}
			fmt.Fprintf(c.stdout, "recorded %s for session %s: %d output tokens, %d input tokens, %s\n",
				contract.Printable(f.tool), contract.Printable(k.String()), ch.OutputTokens, ch.InputTokens, costText(ch.CostMicros))
			fmt.Fprintln(c.stdout, st.StatusLine())
			return exitOK
		}),
	}
	fs := cmd.Flags()
	f.sessionFlags.add(fs)
	fs.StringVar(&f.tool, "tool", "", "the `TOOL` that ran (required)")
	fs.StringVar(&f.outFile, "output-file", "", "a `FILE` holding the output that went back to the agent")
	fs.StringVar(&f.outText, "output-text", "", "the output that went back to the agent, as `TEXT`")
	fs.StringVar(&f.args, "args", "", "the tool's arguments, a `JSON` object (their tokens are input)")
	fs.StringVar(&f.model, "model", "", "the `MODEL` whose price applies (default: [cost] default_model)")
	fs.BoolVar(&f.json, "json", false, "print the charge as JSON")
	return cmd
}

// costText shows micro-dollars exactly when under a cent.
func costText(micros int64) string {
	if micros < 10_000 {
		return fmt.Sprintf("$%d.%06d", micros/1_000_000, micros%1_000_000)
	}
	return contract.FormatUSD(micros)
}

// budgetJSON is a session's budget as budget --json prints it.
type budgetJSON struct {
	Session     string                `json:"session"`
	Agent       string                `json:"agent,omitempty"`
	Role        string                `json:"role"`
	Signal      string                `json:"signal"`
	Budget      contract.Budget       `json:"budget"`
	AgentBudget *contract.AgentBudget `json:"agent_budget,omitempty"`
	CostSource  *costSource           `json:"cost_source,omitempty"`
	StatusLine  string                `json:"status_line"`
	// Reset is true after budget reset.
	Reset bool `json:"reset,omitempty"`
}

// costSource says where a session's cost came from: the agent's transcript
// or the estimate of its tool calls.
type costSource struct {
	Source         string `json:"source"`
	RealMicros     int64  `json:"real_micros"`
	EstimateMicros int64  `json:"estimate_micros"`
	Requests       int64  `json:"requests"`
	Transcript     string `json:"transcript,omitempty"`
}

func (c *cli) budgetCmd() *cobra.Command {
	var f sessionFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "budget --session ID [flags]",
		Short: "Print a session's budget: its status line",
		Long: `Budget prints the status line of a session: its usage of each dimension against
its role's limits, and its agent's across sessions when it has a budget of its own.
It reads the ledger and writes nothing; a session the ledger does not have is an
error.`,
		Example: `  harness budget --session s-1
  harness budget --session s-1 --agent claude-code --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			return fmt.Errorf("%w: want budget --session S, budget reset --session S, or budget reset --agent A --agent-budget",
				unknownCommand(cmd, args[0]))
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
			return c.printBudget(g, k, asJSON, false)
		}),
	}
	f.add(cmd.PersistentFlags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the budget as JSON")
	cmd.AddCommand(c.budgetResetCmd(&f))
	return cmd
}

// printBudget prints the budget of session k.
func (c *cli) printBudget(g *govern.Governor, k budgetpkg.Key, asJSON, reset bool) int {
	d, err := g.Status(c.env.ctx, k, "")
	if err != nil {
		return c.fail("budget: session %s: %v", k, err)
	}
	tally, recorded, err := g.CostSource(k)
	if err != nil {
		c.warn(fmt.Errorf("the transcript's tally of session %s: %w", k, err))
	}
	if asJSON {
		out := budgetJSON{Session: k.Session, Agent: k.Agent, Role: d.Role, Signal: d.Signal, Budget: d.Budget,
			AgentBudget: d.AgentBudget, StatusLine: d.StatusLine(), Reset: reset}
		if recorded {
			out.CostSource = &costSource{tally.Source(), tally.RealMicros, tally.EstimateMicros, tally.Requests, tally.Transcript}
		}
		return c.printJSON(out)
	}
	if reset {
		fmt.Fprintf(c.stdout, "reset the usage of session %s (its role is kept)\n", k)
	}
	fmt.Fprintln(c.stdout, d.StatusLine())
	if recorded {
		fmt.Fprintln(c.stdout, costSourceLine(tally))
	}
	return exitOK
}

func (c *cli) budgetResetCmd(f *sessionFlags) *cobra.Command {
	var agentBudget, asJSON bool
	cmd := &cobra.Command{
		Use:   "reset (--session ID | --agent AGENT --agent-budget) [flags]",
		Short: "Reset a session's usage, or an agent's across its sessions",
		Long: `Reset is the operator's reset of usage, and nothing else ever lowers it: of a
session (its role is kept), or with --agent-budget of an agent's usage in the
current period of its budget across sessions (its sessions' own usage is kept).
Every reset is a BudgetReset event and a decision-log entry. A session the ledger
does not have, or an agent that used nothing, is an error.`,
		Example: `  harness budget reset --session s-1
  harness budget reset --agent claude-code --agent-budget`,
		Args: noArgs("want: budget reset --session S, or budget reset --agent A --agent-budget"),
		RunE: c.runs(func(cmd *cobra.Command, _ []string) int {
			ctx := c.env.ctx
			if agentBudget {
				_, ag, given := c.session(cmd, sessionFlags{agent: f.agent})
				if f.session != "" || !given {
					return c.fail("budget reset --agent-budget: name the agent with --agent A, and no session")
				}
				h, g, ok := c.open(f.ledger, false)
				if !ok {
					return exitError
				}
				defer h.Close()
				period, err := g.ResetAgent(ctx, ag)
				if err != nil {
					return c.fail("budget reset: %v", err)
				}
				if asJSON {
					return c.printJSON(struct {
						Agent  string `json:"agent"`
						Period string `json:"period"`
						Reset  bool   `json:"reset"`
					}{ag, period, true})
				}
				fmt.Fprintf(c.stdout, "reset the usage of agent %s in %s (its sessions' own usage is kept)\n", contract.Printable(ag), period)
				return exitOK
			}
			if f.session == "" {
				return c.fail("budget reset: name the session with --session S (a reset is the operator's act)")
			}
			// The session is looked up on the ledger opened for reading: a
			// reset of a session it does not have is an error that writes
			// nothing.
			h, g, ok := c.open(f.ledger, true)
			if !ok {
				return exitError
			}
			defer h.Close()
			k, ok := c.existing(g, cmd, *f)
			if !ok {
				return exitError
			}
			h.Close()
			g, err := h.Open(ctx, app.OpenOptions{Ledger: f.ledger, Warn: c.warn})
			if err != nil {
				return c.fail("%v", err)
			}
			if err := g.Reset(ctx, k); err != nil {
				return c.fail("budget reset: %v", err)
			}
			return c.printBudget(g, k, asJSON, true)
		}),
	}
	cmd.Flags().BoolVar(&agentBudget, "agent-budget", false, "reset the agent's budget across its sessions (its usage in the current period), not a session's")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the budget after the reset as JSON")
	return cmd
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
