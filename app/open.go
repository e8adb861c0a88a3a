package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/open-policy-agent/opa/v1/version"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/config"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/transcript"
)

// StateDir is the user's state directory of the harness, where the ledger,
// the logs and the hook daemon's socket live by default:
// $XDG_STATE_HOME/lean-ctx/harness (~/.local/state/lean-ctx/harness).
func StateDir(e Env) string { return filepath.Dir(budget.DefaultPath(e.getenv, e.Home)) }

// TranscriptsDir is where the state directory keeps what was read of the
// transcripts in which agents record their model usage.
func TranscriptsDir(e Env) string { return filepath.Join(StateDir(e), "transcripts") }

// LedgerURL is the ledger a governor opens: the given URL (--ledger), else
// the configuration's, else the SQLite file in the state directory.
func (h *Harness) LedgerURL(given string) string {
	switch {
	case given != "":
		return given
	case h.Config.LedgerURL != "":
		return h.Config.LedgerURL
	}
	return "sqlite:" + budget.DefaultPath(h.Params.getenv, h.Params.Home)
}

// LedgerOptions are the configuration's options of the ledger ([ledger]
// prefix, ttl, timeout, replicas).
func (h *Harness) LedgerOptions() budget.Options {
	o := budget.Options{Prefix: h.Config.LedgerPrefix, TTL: h.Config.LedgerTTL, Timeout: h.Config.LedgerTimeout}
	if r := h.Config.LedgerReplicas; r != nil {
		o.Replicas = *r
		if *r == 0 {
			o.Replicas = -1 // none, even with Sentinel
		}
	}
	return o
}

// EventsPath and DecisionsPath are the logs' files: the configured ones,
// else in the state directory; "" when the configuration turns one off.
func (h *Harness) EventsPath() string { return h.logPath(h.Config.EventsFile, "events.jsonl") }

// DecisionsPath is the decision log's file ("" when it is off).
func (h *Harness) DecisionsPath() string { return h.logPath(h.Config.DecisionsFile, "decisions.jsonl") }

func (h *Harness) logPath(configured, name string) string {
	switch configured {
	case config.Off:
		return ""
	case "":
		return filepath.Join(StateDir(h.Params.Env), name)
	}
	return configured
}

// OpenOptions tune Open.
type OpenOptions struct {
	// Ledger overrides the ledger's URL (--ledger).
	Ledger string
	// Warn hears what goes wrong without stopping a call: an event or
	// log entry that could not be written.
	Warn func(error)
	// Sinks receive the events beside the events log (a bus).
	Sinks []events.Sink
	// Changed hears of the sessions whose counters may have changed (see
	// govern.Options.Changed).
	Changed func(budget.Key)
	// ReadOnly opens the ledger for reading only (a missing SQLite file is
	// not created) and no log: for the commands that only show what the
	// ledger holds, which must leave it, and the state directory, as they
	// found them.
	ReadOnly bool
}

// Open opens the ledger and the event and decision logs, and wires the
// governor on the load's rules. Close releases them. A second Open returns
// the same governor (until Close).
func (h *Harness) Open(ctx context.Context, o OpenOptions) (*govern.Governor, error) {
	if h.gov != nil {
		return h.gov, nil
	}
	mask, err := events.NewMask(h.Config.Mask)
	if err != nil {
		return nil, fmt.Errorf("[log] mask: %w", err)
	}
	lo := h.LedgerOptions()
	lo.ReadOnly = o.ReadOnly
	store, err := budget.Open(ctx, h.LedgerURL(o.Ledger), lo)
	if err != nil {
		return nil, err
	}
	h.closers = append(h.closers, store.Close)
	opts := govern.Options{
		Rules: h.Rules(), Store: store, Prices: h.Config.Prices, Shadow: h.Config.Mode == config.Shadow,
		Project: h.Project(), EnvRole: h.EnvRole(), OnError: o.Warn, Sinks: o.Sinks, Mask: mask, Changed: o.Changed,
		Transcripts: transcript.Open(TranscriptsDir(h.Params.Env), h.Params.Home, transcript.DefaultLimits),
	}
	if o.ReadOnly {
		h.gov = govern.New(opts)
		return h.gov, nil
	}
	rot := events.Rotation{MaxBytes: h.Config.LogMaxBytes, MaxFiles: h.Config.LogMaxFiles}
	if p := h.EventsPath(); p != "" {
		l, err := events.OpenEventLog(p, rot)
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("events log: %w", err)
		}
		h.closers = append(h.closers, l.Close)
		opts.Sinks = append(opts.Sinks, l)
	}
	if p := h.DecisionsPath(); p != "" {
		id, err := InstallationID(StateDir(h.Params.Env))
		if err != nil {
			if o.Warn != nil {
				o.Warn(fmt.Errorf("decision log: the installation's id: %w; this process logs under an id of its own", err))
			}
			id = events.NewID(time.Now())
		}
		l, err := events.OpenDecisionLog(p, events.DecisionLogOptions{
			Rotation: rot,
			// As OPA labels its own: the instance's id and OPA's version.
			Labels: map[string]string{"app": "agent-harness", "id": id, "version": version.Version, "harness_version": Version},
		})
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("decision log: %w", err)
		}
		h.closers = append(h.closers, l.Close)
		opts.Decisions = l
	}
	h.gov = govern.New(opts)
	return h.gov, nil
}

// Close releases what Open opened (the logs, then the ledger).
func (h *Harness) Close() error {
	var errs []error
	for i := len(h.closers) - 1; i >= 0; i-- {
		errs = append(errs, h.closers[i]())
	}
	h.closers, h.gov = nil, nil
	return errors.Join(errs...)
}
