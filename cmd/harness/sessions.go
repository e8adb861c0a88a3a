package main

import (
	"fmt"
	"github.com/agentharness/harness/budget"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentharness/harness/contract"
)

func (c *cli) sessionsCmd() *cobra.Command {
	var f sessionFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sessions [flags]",
		Short: "List the sessions of the ledger",
		Long: `Sessions lists what the ledger has: each session's agent, id, role, usage against
the role's limits, signal and the time of its last change, the latest first. It
reads the ledger and writes nothing.`,
		Example: `  harness sessions
  harness sessions --agent claude-code --json`,
		Args: noArgs(""),
		RunE: c.runs(func(cmd *cobra.Command, _ []string) int { return c.sessions(cmd, f, asJSON) }),
	}
	fs := cmd.Flags()
	fs.StringVar(&f.session, "session", "", "only the sessions of this `ID` (one per agent that has it)")
	fs.StringVar(&f.agent, "agent", "", "only this `AGENT`'s sessions (\"\": those of no agent)")
	ledgerFlag(fs, &f.ledger)
	fs.BoolVar(&asJSON, "json", false, "print the sessions as JSON")
	return cmd
}

// sessions lists the sessions of the ledger.
func (c *cli) sessions(cmd *cobra.Command, f sessionFlags, asJSON bool) int {
	h, g, ok := c.open(f.ledger, true)
	if !ok {
		return exitError
	}
	defer h.Close()
	list, err := g.Sessions(c.env.ctx, f.session)
	if err != nil {
		return c.fail("sessions: %v", err)
	}
	agentGiven := cmd.Flags().Changed("agent")
	type row struct {
		Agent   string          `json:"agent"`
		Session string          `json:"session"`
		Role    string          `json:"role"`
		Defined bool            `json:"role_defined"`
		Signal  string          `json:"signal"`
		Budget  contract.Budget `json:"budget"`
		Updated time.Time       `json:"last_activity"`
	}
	rows := []row{}
	for _, s := range list {
		if agentGiven && s.Key.Agent != f.agent {
			continue
		}
		rows = append(rows, row{s.Key.Agent, s.Key.Session, s.Role, s.Defined, s.Status.Signal, s.Status.Budget, s.Updated.UTC()})
	}
	if asJSON {
		if err := c.writeJSON(rows); err != nil {
			return c.fail("%v", err)
		}
		return exitOK
	}
	if len(rows) == 0 {
		fmt.Fprintln(c.stderr, "harness: no sessions in the ledger", budget.Redacted(h.LedgerURL(f.ledger)))
		return exitOK
	}
	w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "AGENT\tSESSION\tROLE\tTOKENS\tSHELL\tCOST\tSIGNAL\tLAST ACTIVITY")
	p := contract.Printable // what the ledger holds may be the agent's
	for _, r := range rows {
		agent, role, signal := p(r.Agent), p(r.Role), p(r.Signal)
		if agent == "" {
			agent = "-"
		}
		if !r.Defined {
			role, signal = role+" (undefined)", "-"
		}
		b := r.Budget
		when := "-"
		if !r.Updated.IsZero() && r.Updated.Unix() > 0 {
			when = r.Updated.Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d/%d\t%d/%d\t%s/%s\t%s\t%s\n", agent, p(r.Session), role,
			b.Tokens.Used, b.Tokens.Limit, b.Shell.Used, b.Shell.Limit,
			contract.FormatUSD(b.Cost.Used), contract.FormatUSD(b.Cost.Limit), signal, when)
	}
	w.Flush()
	return exitOK
}
