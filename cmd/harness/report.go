package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentharness/harness/app"
	"github.com/agentharness/harness/internal/progress"
	"github.com/agentharness/harness/report"
)

// reportFlags are harness report's.
type reportFlags struct {
	since, from, to, by, ledger, html string
	json, csv                         bool
}

func (c *cli) reportCmd() *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:   "report [flags]",
		Short: "Say where the budget went, from the decision log and the ledger",
		Long: `Report adds up the decision log and the events log over a time range (all of
them by default; --since, or --from and --to), grouped by agent, session, role,
tool or day: the calls allowed, warned and denied (by reason), the tokens, shell
calls and cost charged, and the sessions that hit a limit; beside the ledger's
counters, saying whether the log accounts for them. It prints a table, or JSON,
or CSV; --html writes one self-contained page with charts (tokens and cost over
time per agent, refusals by reason, top tools by tokens, each session's usage
against its role's limits), which loads nothing from the network. Reading large
logs shows its progress on a terminal.`,
		Example: `  harness report --since 24h
  harness report --from 2026-12-01 --to 2026-12-08 --by day --csv > week.csv
  harness report --by session --html report.html`,
		Args: noArgs(""),
		RunE: c.runs(func(cmd *cobra.Command, _ []string) int { return c.report(f) }),
	}
	fs := cmd.Flags()
	fs.StringVar(&f.since, "since", "", "only the last `DURATION` (24h, 90m, 7d)")
	fs.StringVar(&f.from, "from", "", "from this `TIME` (RFC 3339, or a date: its UTC midnight)")
	fs.StringVar(&f.to, "to", "", "until this `TIME` (not included)")
	fs.StringVar(&f.by, "by", report.ByAgent, "group the rows by `WHAT`: "+strings.Join(report.Groupings, ", "))
	ledgerFlag(fs, &f.ledger)
	fs.BoolVar(&f.json, "json", false, "write the report as JSON")
	fs.BoolVar(&f.csv, "csv", false, "write the rows as CSV")
	fs.StringVar(&f.html, "html", "", "write the report as one self-contained HTML page with charts to `FILE`")
	cmd.RegisterFlagCompletionFunc("by", completeWords(report.Groupings...))
	cmd.MarkFlagsMutuallyExclusive("json", "csv")
	cmd.MarkFlagsMutuallyExclusive("since", "from")
	return cmd
}

// progress starts a progress line on stderr when it is a terminal (else
// it is nil, which shows nothing); a message clears it first.
func (c *cli) progress(label string) *progress.Meter {
	if file, ok := c.stderr.(*os.File); ok {
		c.meter = progress.ForTerminal(file, label)
	}
	return c.meter
}

// report says where the budget went (see package report): it maps the
// flags to app.ReportOptions and writes the chosen output.
func (c *cli) report(f reportFlags) int {
	now := time.Now()
	from, to, err := report.Range(f.since, f.from, f.to, now)
	if err != nil {
		return c.fail("report: %v", err)
	}
	h, ok := c.load(c.params())
	if !ok {
		return exitError
	}
	defer h.Close()
	meter := c.progress("harness report: reading the logs")
	r, err := h.Report(c.env.ctx, app.ReportOptions{From: from, To: to, By: f.by, Ledger: f.ledger, Progress: meter.Bytes})
	meter.Done()
	if err != nil {
		return c.fail("%v", err)
	}
	if f.html != "" {
		if err := r.WriteHTMLFile(f.html, now); err != nil {
			return c.fail("report: %v", err)
		}
		fmt.Fprintf(c.stderr, "harness: wrote %s\n", f.html)
		if !f.json && !f.csv {
			return exitOK
		}
	}
	switch {
	case f.json:
		var b bytes.Buffer
		if err = r.WriteJSON(&b); err == nil {
			_, err = io.WriteString(c.stdout, printableJSON(b.String()))
		}
	case f.csv:
		err = r.WriteCSV(c.stdout)
	default:
		err = r.WriteTable(c.stdout)
	}
	if err != nil {
		return c.fail("report: %v", err)
	}
	return exitOK
}
