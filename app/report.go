package app

import (
	"context"
	"errors"
	"time"

	"github.com/agentharness/harness/report"
)

// ReportOptions are a report's: its range and grouping, the ledger to
// hold it against, and who hears of its progress.
type ReportOptions struct {
	// From and To bound the range (zero: open).
	From, To time.Time
	// By groups the rows (report.Groupings).
	By string
	// Ledger overrides the ledger's URL (--ledger).
	Ledger string
	// Progress hears how many bytes of the logs were read (nil: nobody).
	Progress func(done, total int64)
}

// Report reads the decision log and the events log of this load's
// configuration and adds them up beside the ledger's counters (see
// package report). The caller closes h.
func (h *Harness) Report(ctx context.Context, o ReportOptions) (*report.Report, error) {
	decisions := h.DecisionsPath()
	if decisions == "" {
		return nil, errors.New("report: the decision log is off ([log] decisions = \"off\"): there is nothing to report")
	}
	g, err := h.Open(ctx, OpenOptions{Ledger: o.Ledger, ReadOnly: true}) // reading never writes
	if err != nil {
		return nil, err
	}
	list, err := g.Sessions(ctx, "")
	if err != nil {
		return nil, err
	}
	ledger := make([]report.LedgerSession, 0, len(list))
	for _, s := range list {
		l := report.LedgerSession{Agent: s.Agent, Session: s.Session.Session, Role: s.Role, Defined: s.Defined,
			Tokens: s.Tokens, Shell: s.Shell, CostMicros: s.CostMicros, Signal: s.Status.Signal, Updated: s.Updated.UTC()}
		if lim, ok := g.Limits(s.Role); ok {
			l.Limits = report.Limits{Tokens: lim.Tokens, Shell: lim.Shell, CostMicros: lim.CostMicros,
				WarnPercent: lim.WarnPercent, BlockPercent: lim.BlockPercent}
		}
		ledger = append(ledger, l)
	}
	return report.Build(ctx, report.Options{Decisions: decisions, Events: h.EventsPath(), MaxFiles: h.Config.LogMaxFiles,
		From: o.From, To: o.To, By: o.By, Ledger: ledger, Progress: o.Progress})
}
