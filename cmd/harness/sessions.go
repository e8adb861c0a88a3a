package main

import (
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/agentharness/harness/contract"
)

// sessions lists the sessions of the ledger.
func (c *cli) sessions(args []string) int {
	fs, project := c.flags("sessions")
	session := fs.String("session", "", "only the sessions of this id (one per agent that has it)")
	agent := fs.String("agent", "", "only this agent's sessions")
	ledger := fs.String("ledger", "", "the counters' store `URL` (default: [ledger] url, else the SQLite file in the state directory)")
	asJSON := fs.Bool("json", false, "print the sessions as JSON")
	if !c.parseNone(fs, args, "") {
		return exitError
	}
	h, g, ok := c.open(*project, *ledger, true)
	if !ok {
		return exitError
	}
	defer h.Close()
	list, err := g.Sessions(c.env.ctx, *session)
	if err != nil {
		return c.fail("sessions: %v", err)
	}
	agentGiven := false
	fs.Visit(func(f *flag.Flag) { agentGiven = agentGiven || f.Name == "agent" })
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
		if agentGiven && s.Key.Agent != *agent {
			continue
		}
		rows = append(rows, row{s.Key.Agent, s.Key.Session, s.Role, s.Defined, s.Status.Signal, s.Status.Budget, s.Updated.UTC()})
	}
	if *asJSON {
		if err := c.writeJSON(rows); err != nil {
			return c.fail("%v", err)
		}
		return exitOK
	}
	if len(rows) == 0 {
		fmt.Fprintln(c.stderr, "harness: no sessions in the ledger", h.LedgerURL(*ledger))
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
