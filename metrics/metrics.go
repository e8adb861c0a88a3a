// Package metrics holds the harness's Prometheus instruments, in a registry
// of their own, and serves them with health and readiness (/metrics,
// /healthz, /readyz). The rest of the harness reports into a [Metrics]
// through small interfaces of its own, which Metrics satisfies: the
// governor's decisions and charges (govern.Observer), the gateway's
// upstream calls, restarts and lists (gateway.Observer), the ledger's
// operations (budget.Observed), the harness events (an events.Sink: budget
// crossings) and the alerts' deliveries (alerts.Observer). Nothing here
// decides or stores anything.
//
// Every label is bounded: tools, roles, agents, upstreams and custom
// policies take their values from sets the operator's configuration, the
// loaded roles and the upstreams' lists fill (each capped), every other
// name being "other"; reason codes, outcomes, methods and event types come
// from closed lists. An agent cannot add a series by naming a new tool.
//
// Every method is safe on a nil *Metrics, which measures nothing.
package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
)

// Reasons are the reason codes of the harness's policy (rego/harness.rego;
// a test holds the two equal) and of refusals that are not about the call
// (contract): the closed set of the reason label. A custom policy's
// refusals and warnings have the code "policy", with the policy's name in
// the policy label.
var Reasons = []string{
	contract.CodeToolDenied, contract.CodeToolNotAllowed, contract.CodeShellDenied, contract.CodeShellBudget,
	contract.CodeBudgetExhausted, contract.CodePolicy, contract.CodeBudgetWarning, contract.CodeUnknownRole,
	contract.CodeInvalidInput, contract.CodeEvalError, contract.CodeAgentBudgetExhausted, contract.CodeAgentShellBudget,
	contract.CodeAgentBudgetWarning, contract.CodeHarnessFiles, contract.CodeOperatorCommand, contract.CodeApprovalRequired,
}

// Outcomes are the outcome label's values: the decision's word, or
// "error" for a call that could not be decided.
var Outcomes = []string{contract.Allow, contract.Warn, contract.Ask, contract.Deny, OutcomeError}

// OutcomeError is the outcome of a call that could not be decided.
const OutcomeError = "error"

// Methods are the MCP methods the gateway sends upstreams on an agent's
// behalf: the method label's values.
var Methods = []string{"tools/call", "resources/read", "prompts/get", "completion/complete", "resources/subscribe",
	"resources/unsubscribe", "logging/setLevel", "tools/list", "resources/list", "resources/templates/list", "prompts/list", "ping"}

// Upstream request results (the result label of
// harness_upstream_requests_total).
const (
	ResultOK        = "ok"        // answered with a result
	ResultError     = "error"     // answered with a JSON-RPC error
	ResultFailed    = "failed"    // not answered: the upstream was down, or went away
	ResultCancelled = "cancelled" // the agent cancelled the call
)

// Why an alert was dropped (the reason label of
// harness_alerts_dropped_total).
const (
	DropQueueFull = "queue_full" // the queue was full: the oldest queued alert made room
	DropGaveUp    = "gave_up"    // retried for as long as configured
	DropRejected  = "rejected"   // the receiver refused it (a 4xx answer other than 408 and 429)
	DropShutdown  = "shutdown"   // still queued when the process stopped
)

// Metrics are the harness's instruments and the vocabularies of their
// labels.
type Metrics struct {
	reg   *prometheus.Registry
	names []string

	tools, roles, agents, policies, upstreams *vocabulary
	projectRoles                              *vocabulary
	series                                    *seriesCap // of harness_decisions_total
	sessions                                  atomic.Pointer[func() int]

	decisions        *prometheus.CounterVec
	decisionSeconds  *prometheus.HistogramVec
	tokens, cost     *prometheus.CounterVec
	shell, released  *prometheus.CounterVec
	crossings        *prometheus.CounterVec
	events           *prometheus.CounterVec
	ledgerSeconds    *prometheus.HistogramVec
	ledgerErrors     *prometheus.CounterVec
	upstreamSeconds  *prometheus.HistogramVec
	upstreamRequests *prometheus.CounterVec
	restarts         *prometheus.CounterVec
	reloads          *prometheus.CounterVec
	alertsDelivered  *prometheus.CounterVec
	alertsFailed     *prometheus.CounterVec
	alertsDropped    *prometheus.CounterVec
}

// New returns the instruments of one process, registered with a registry
// of their own (beside Go's and the process's standard collectors), for
// the harness at version.
func New(version string) *Metrics {
	m := &Metrics{
		reg:   prometheus.NewRegistry(),
		tools: newVocabulary(MaxTools, false, contract.SessionTool),
		roles: newVocabulary(MaxRoles, false),
		// A project's roles are the agent's to write: few of them are
		// label values, whatever their number.
		projectRoles: newVocabulary(MaxProjectRoles, false),
		series:       newSeriesCap(MaxDecisionSeries),
		agents:       newVocabulary(MaxAgents, false),
		policies:     newVocabulary(MaxPolicies, true),
		upstreams:    newVocabulary(MaxUpstreams, false),
	}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		m.reg.MustRegister(c)
		m.names = append(m.names, name)
		return c
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
		m.reg.MustRegister(h)
		m.names = append(m.names, name)
		return h
	}
	m.decisions = counter("harness_decisions_total",
		"Decisions of tool calls, by outcome (allow, warn, ask, deny; error: not decided), the code of the first reason (of the first warning for warn; none for a plain allow), the custom policy of a policy reason, the session's role and the tool.",
		"outcome", "reason", "policy", "role", "tool")
	m.decisionSeconds = histogram("harness_decision_duration_seconds",
		"Time the governor took to decide a tool call: reading the session's counters, the policy's evaluation and taking a shell slot.",
		prometheus.ExponentialBuckets(25e-6, 2, 16), "outcome")
	m.tokens = counter("harness_charged_tokens_total", "Context tokens charged to sessions (o200k_base tokens of what reached the agent), by role and agent.", "role", "agent")
	m.cost = counter("harness_charged_cost_dollars_total", "Cost charged to sessions, in US dollars, by role and agent.", "role", "agent")
	m.shell = counter("harness_shell_calls_total", "Shell slots taken by shell calls, by role and agent.", "role", "agent")
	m.released = counter("harness_shell_calls_released_total", "Shell slots given back by calls that never reached their tool, by role and agent.", "role", "agent")
	m.crossings = counter("harness_budget_crossings_total",
		"Budget dimensions that crossed into a level (warning, exhausted), by dimension, scope (session, or agent: its budget across sessions), role and agent.",
		"level", "dimension", "scope", "role", "agent")
	m.events = counter("harness_events_total", "Harness events emitted, by type.", "type")
	m.ledgerSeconds = histogram("harness_ledger_operation_duration_seconds", "Time of each ledger operation, by operation.",
		prometheus.ExponentialBuckets(10e-6, 3, 13), "op")
	m.ledgerErrors = counter("harness_ledger_errors_total", "Ledger operations that failed, by operation.", "op")
	m.upstreamSeconds = histogram("harness_upstream_request_duration_seconds",
		"Time of each request the gateway made of an upstream for an agent, by upstream and MCP method.",
		prometheus.ExponentialBuckets(0.001, 2, 17), "upstream", "method")
	m.upstreamRequests = counter("harness_upstream_requests_total",
		"Requests the gateway made of upstreams for agents, by upstream, MCP method and result (ok, error: a JSON-RPC error, failed: not answered, cancelled).",
		"upstream", "method", "result")
	m.restarts = counter("harness_upstream_restarts_total", "Attempts to start an upstream again after it went down, by upstream and result (ok, failed).", "upstream", "result")
	m.reloads = counter("harness_policy_reloads_total", "Reloads of roles, policies and configuration after an edit, by result (ok; failed: the last good policy stayed, deciding nothing but exempt tools when a project's file was at fault).", "result")
	m.alertsDelivered = counter("harness_alerts_delivered_total", "Alerts delivered to their webhook, by alert.", "alert")
	m.alertsFailed = counter("harness_alert_failures_total", "Attempts to deliver an alert that failed (each retry counts), by alert.", "alert")
	m.alertsDropped = counter("harness_alerts_dropped_total", "Alerts given up, by alert and reason (queue_full, gave_up, rejected, shutdown).", "alert", "reason")
	sessions := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "harness_live_sessions", Help: "Sessions the gateway is serving now."}, func() float64 {
		if f := m.sessions.Load(); f != nil {
			return float64((*f)())
		}
		return 0
	})
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: "harness_build_info", Help: "The harness's version, as a label; always 1.",
		ConstLabels: prometheus.Labels{"version": version}})
	build.Set(1)
	m.reg.MustRegister(sessions, build)
	m.names = append(m.names, "harness_live_sessions", "harness_build_info")
	// Series an operator alerts on exist from the start, at zero.
	for _, op := range ledgerOps {
		m.ledgerErrors.WithLabelValues(op)
	}
	for _, t := range events.Types {
		m.events.WithLabelValues(string(t))
	}
	m.reloads.WithLabelValues("ok")
	m.reloads.WithLabelValues("failed")
	return m
}

// ledgerOps are the ledger's operations (budget.Ops, which this package
// does not import to stay light); a test holds the two equal.
var ledgerOps = []string{"get", "init_role", "set_role", "switch_role", "pin_project", "reserve_shell", "add_shell",
	"charge", "charge_if", "release_shell", "reset", "reset_agent", "sessions"}

// Registry is the registry the instruments are in.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Names are the names of the harness's metric families (without Go's and
// the process's): what a dashboard may query.
func (m *Metrics) Names() []string { return append([]string(nil), m.names...) }

// KnowTools makes tool names label values: the tools of the harness's
// vocabulary and configuration, the exact names of the roles' tool lists,
// and what the upstreams list.
func (m *Metrics) KnowTools(names ...string) {
	if m != nil {
		m.tools.add(names...)
	}
}

// KnowRoles makes role names label values: the built-in roles and the
// user's that loaded.
func (m *Metrics) KnowRoles(names ...string) {
	if m != nil {
		m.roles.add(names...)
	}
}

// KnowProjectRoles makes the names of a project's roles label values,
// the first MaxProjectRoles of them: the agent can write a project's
// roles, under any names and as many as it likes.
func (m *Metrics) KnowProjectRoles(names ...string) {
	if m != nil {
		m.projectRoles.add(names...)
	}
}

// role is a role's label: known from the built-in and user roles, else
// from a project's, else Other.
func (m *Metrics) role(name string) string {
	if l := m.roles.label(name); l != Other {
		return l
	}
	return m.projectRoles.label(name)
}

// KnowAgents makes agent names label values: the agents of the
// configuration and those the operator named.
func (m *Metrics) KnowAgents(names ...string) {
	if m != nil {
		m.agents.add(names...)
	}
}

// KnowUpstreams makes upstream names label values: the configured ones.
func (m *Metrics) KnowUpstreams(names ...string) {
	if m != nil {
		m.upstreams.add(names...)
	}
}

// SetSessions is how the live sessions are counted (the gateway's).
func (m *Metrics) SetSessions(count func() int) {
	if m != nil {
		m.sessions.Store(&count)
	}
}

// Decided counts a decision of a tool call and how long it took
// (govern.Observer).
func (m *Metrics) Decided(d contract.Decision, took time.Duration, err error) {
	if m == nil {
		return
	}
	outcome := fixed(Outcomes[:4], d.Decision)
	if err != nil || d.Decision == "" {
		outcome = OutcomeError
	}
	reason, policy := None, ""
	var reasons []contract.Reason
	switch outcome {
	case contract.Deny, contract.Ask, Other:
		reasons = d.Reasons
	case contract.Warn:
		reasons = d.Warnings
	}
	if len(reasons) > 0 {
		reason = fixed(Reasons, reasons[0].Code)
		if reason == contract.CodePolicy {
			policy = m.policies.label(reasons[0].Policy)
		}
	}
	role, tool := m.role(d.Role), m.tools.toolLabel(d.Tool)
	if !m.series.admit(outcome, reason, policy, role, tool) {
		policy, role, tool = m.policies.other(policy), Other, Other
	}
	m.decisions.WithLabelValues(outcome, reason, policy, role, tool).Inc()
	m.decisionSeconds.WithLabelValues(outcome).Observe(took.Seconds())
}

// Charged counts usage added to a session (govern.Observer): tokens and
// cost, shell slots taken (u.Shell > 0) or given back (< 0).
func (m *Metrics) Charged(agent, role string, u contract.Usage) {
	if m == nil {
		return
	}
	r, a := m.role(role), m.agents.label(agent)
	if u.Tokens > 0 {
		m.tokens.WithLabelValues(r, a).Add(float64(u.Tokens))
	}
	if u.CostMicros > 0 {
		m.cost.WithLabelValues(r, a).Add(float64(u.CostMicros) / 1e6)
	}
	switch {
	case u.Shell > 0:
		m.shell.WithLabelValues(r, a).Add(float64(u.Shell))
	case u.Shell < 0:
		m.released.WithLabelValues(r, a).Add(float64(-u.Shell))
	}
}

// dimensions are the budget dimensions, the dimension label's values.
var dimensions = []string{"tokens", "shell", "cost"}

// eventTypes are the event types, the type label's values.
var eventTypes = func() []string {
	out := make([]string, len(events.Types))
	for i, t := range events.Types {
		out[i] = string(t)
	}
	return out
}()

// Emit counts a harness event, and a budget crossing by its level
// (events.Sink). It never fails or blocks.
func (m *Metrics) Emit(e events.Event) error {
	if m == nil {
		return nil
	}
	m.events.WithLabelValues(fixed(eventTypes, string(e.Type))).Inc()
	if e.Budget == nil || (e.Type != events.BudgetWarning && e.Type != events.BudgetExhausted) {
		return nil
	}
	level := "warning"
	if e.Type == events.BudgetExhausted {
		level = "exhausted"
	}
	scope := "session"
	if e.Scope == events.ScopeAgent {
		scope = events.ScopeAgent
	}
	m.crossings.WithLabelValues(level, fixed(dimensions, e.Dimension), scope, m.role(e.Role), m.agents.label(e.Agent)).Inc()
	return nil
}

// LedgerOp times a ledger operation and counts its failure (the observer
// of budget.Observed).
func (m *Metrics) LedgerOp(op string, took time.Duration, err error) {
	if m == nil {
		return
	}
	op = fixed(ledgerOps, op)
	m.ledgerSeconds.WithLabelValues(op).Observe(took.Seconds())
	if err != nil {
		m.ledgerErrors.WithLabelValues(op).Inc()
	}
}

// UpstreamCall times a request made of an upstream for an agent, with its
// result (ResultOK, ResultError, ResultFailed, ResultCancelled): the
// gateway's observer.
func (m *Metrics) UpstreamCall(upstream, method string, took time.Duration, result string) {
	if m == nil {
		return
	}
	u, meth := m.upstreams.label(upstream), fixed(Methods, method)
	m.upstreamSeconds.WithLabelValues(u, meth).Observe(took.Seconds())
	m.upstreamRequests.WithLabelValues(u, meth, fixed([]string{ResultOK, ResultError, ResultFailed, ResultCancelled}, result)).Inc()
}

// UpstreamRestart counts an attempt to start an upstream again; err is its
// failure.
func (m *Metrics) UpstreamRestart(upstream string, err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "failed"
	}
	m.restarts.WithLabelValues(m.upstreams.label(upstream), result).Inc()
}

// ToolsListed makes the names an upstream's tools and prompts have for the
// agent label values (prompts as prompt:NAME, as the policy names them).
func (m *Metrics) ToolsListed(names []string) { m.KnowTools(names...) }

// Reloaded counts a reload of roles, policies and configuration; err is
// one that kept the last good policy.
func (m *Metrics) Reloaded(err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "failed"
	}
	m.reloads.WithLabelValues(result).Inc()
}

// AlertDelivered counts an alert delivered (alerts.Observer).
func (m *Metrics) AlertDelivered(alert string) {
	if m != nil {
		m.alertsDelivered.WithLabelValues(alert).Inc()
	}
}

// AlertFailed counts a failed attempt to deliver an alert.
func (m *Metrics) AlertFailed(alert string) {
	if m != nil {
		m.alertsFailed.WithLabelValues(alert).Inc()
	}
}

// AlertDropped counts n alerts given up, and why (DropQueueFull, …).
func (m *Metrics) AlertDropped(alert, reason string, n int) {
	if m != nil && n > 0 {
		m.alertsDropped.WithLabelValues(alert, reason).Add(float64(n))
	}
}
