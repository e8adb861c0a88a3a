package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/open-policy-agent/opa/v1/version"

	"github.com/agentharness/harness/alerts"
	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/config"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/hook"
	"github.com/agentharness/harness/metrics"
	"github.com/agentharness/harness/roles"
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
	// AlertWait is how long Close waits for the alerts still queued
	// ([[alerts]]) to be delivered (DefaultAlertWait).
	AlertWait time.Duration
	// Changed hears of the sessions whose counters may have changed (see
	// govern.Options.Changed).
	Changed func(budget.Key)
	// ReadOnly opens the ledger for reading only (a missing SQLite file is
	// not created) and no log: for the commands that only show what the
	// ledger holds, which must leave it, and the state directory, as they
	// found them.
	ReadOnly bool
}

// DefaultAlertWait bounds the wait at Close for queued alerts: a command
// or a hook call whose events could not reach a webhook ends at most this
// much later.
const DefaultAlertWait = 2 * time.Second

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
	h.store = store
	h.closers = append(h.closers, store.Close)
	opts := govern.Options{
		Rules: h.Rules(), Store: store, Prices: h.Config.Prices, Shadow: h.Config.Mode == config.Shadow,
		Project: h.Project(), WorkDir: h.Params.WorkDir, EnvRole: h.EnvRole(), OnError: o.Warn, Sinks: slices.Clone(o.Sinks), Mask: mask, Changed: o.Changed,
		Transcripts: transcript.Open(TranscriptsDir(h.Params.Env), h.Params.Home, transcript.DefaultLimits),
	}
	if o.ReadOnly {
		h.gov = govern.New(opts)
		return h.gov, nil
	}
	var observer alerts.Observer
	if m := h.Params.Metrics; m != nil {
		h.know(m)
		opts.Store = budget.Observed(store, m.LedgerOp)
		opts.Observer = m
		opts.Sinks = append(opts.Sinks, m)
		observer = m
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
	if len(h.Config.Alerts) > 0 {
		wait := o.AlertWait
		if wait <= 0 {
			wait = DefaultAlertWait
		}
		warn := o.Warn
		if warn == nil {
			warn = func(error) {}
		}
		s := alerts.New(alerts.Options{Alerts: h.alerts(), Observer: observer, UserAgent: "agent-harness/" + Version,
			Logf: func(format string, args ...any) { warn(fmt.Errorf(format, args...)) }})
		h.closers = append(h.closers, func() error { s.Close(wait); return nil })
		opts.Sinks = append(opts.Sinks, s)
	}
	h.gov = govern.New(opts)
	return h.gov, nil
}

// alerts are the configuration's [[alerts]], for the alerts' sender.
func (h *Harness) alerts() []alerts.Alert {
	var out []alerts.Alert
	for _, a := range h.Config.Alerts {
		var types []events.Type
		for _, t := range a.Events {
			types = append(types, events.Type(t))
		}
		out = append(out, alerts.Alert{Name: a.Name, URL: a.URL, Events: types, Format: a.Format, Headers: a.Headers,
			Queue: a.Queue, Timeout: a.Timeout, RetryFor: a.RetryFor})
	}
	return out
}

// readyProbe is the session a readiness check reads: one no call makes
// (Get never creates a session).
var readyProbe = budget.Key{Session: "harness-readiness-probe"}

// Ready says whether the harness can decide: Open wired its governor on a
// policy, and the ledger answers (a read of a session that does not
// exist), within ctx.
func (h *Harness) Ready(ctx context.Context) error {
	if h.gov == nil || h.store == nil || h.gov.Engine() == nil {
		return errors.New("the policy is not loaded")
	}
	if _, err := h.store.Get(ctx, readyProbe, ""); err != nil {
		return fmt.Errorf("the ledger does not answer: %w", err)
	}
	return nil
}

// know gives m the names of this load as label values: its roles (a
// project's in a small set of their own); the tools of the harness's
// vocabulary, of the configuration, of the hook's map and the exact names
// of the tool lists of the built-in and user roles (not a project's: its
// agent can write them); the configured agents.
func (h *Harness) know(m *metrics.Metrics) {
	project := map[string]bool{}
	for _, r := range h.Roles.All() {
		if r.Source == roles.SourceProject {
			project[r.Name] = true
			m.KnowProjectRoles(r.Name)
		} else {
			m.KnowRoles(r.Name)
		}
	}
	tools := []string{contract.SessionTool}
	tools = append(tools, h.Config.ShellTools...)
	tools = append(tools, h.Config.ExemptTools...)
	for _, t := range hook.DefaultTools {
		tools = append(tools, t)
	}
	for _, t := range h.Config.HookTools {
		tools = append(tools, t)
	}
	doc := h.Engine.Document()
	for _, name := range slices.Sorted(maps.Keys(doc.Roles)) {
		if project[name] {
			continue // the agent writes these, tool names included
		}
		r := doc.Roles[name]
		tools = append(tools, slices.Sorted(maps.Keys(r.Allowed.Exact))...)
		tools = append(tools, slices.Sorted(maps.Keys(r.Denied.Exact))...)
	}
	m.KnowTools(tools...)
	agents := []string{config.DefaultAgent, h.Config.DefaultAgent, hook.Agent}
	for _, set := range []map[string]string{h.Config.AgentRoles, h.Config.AgentMaxRoles} {
		agents = append(agents, slices.Sorted(maps.Keys(set))...)
	}
	for name := range h.Config.AgentBudgets {
		if name != config.AnyAgent {
			agents = append(agents, name)
		}
	}
	for _, t := range h.Config.Tokens {
		agents = append(agents, t.Agent)
	}
	m.KnowAgents(agents...)
}

// UserConfig is the user's harness.toml alone (~/.lean-ctx/harness.toml):
// what a process that serves no project reads (the hook daemon's metrics
// token).
func UserConfig(e Env) (config.Config, error) {
	return config.Load(config.FindFiles(e.Home, "", nil))
}

// Close releases what Open opened (the logs, then the ledger).
func (h *Harness) Close() error {
	var errs []error
	for i := len(h.closers) - 1; i >= 0; i-- {
		errs = append(errs, h.closers[i]())
	}
	h.closers, h.gov, h.store = nil, nil, nil
	return errors.Join(errs...)
}
