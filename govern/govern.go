// Package govern is the orchestrating stage: for one tool call it reads the
// session's counters, asks the policy, takes a shell slot atomically with
// the decision, and after the call charges the tokens and cost of what went
// back to the agent. The CLI, the gateway and the hook are transports wired
// to a Governor; the policy never touches counters, and this package never
// decides anything itself.
package govern

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/policy"
	"github.com/agentharness/harness/pricing"
)

// maxAttempts bounds the retries of a shell reservation. Every failed
// attempt means another call took a slot, so retries end quickly; the bound
// only guards against a store that never agrees.
const maxAttempts = 1000

// Governor governs the tool calls of many sessions. It is safe for
// concurrent use.
type Governor struct {
	engine      *policy.Engine
	store       budget.Store
	tokens      *budget.Tokenizer
	prices      pricing.Prices
	shadow      bool
	defaultRole string
	sinks       []events.Sink
	decisions   *events.DecisionLog
	now         func() time.Time
	onError     func(error)
	agentRoles  map[string]string
	maxRoles    map[string]string
	project     string
	envRole     string
}

// Options are a Governor's parts.
type Options struct {
	Engine    *policy.Engine
	Store     budget.Store
	Tokenizer *budget.Tokenizer // nil: a new one
	Prices    pricing.Prices    // zero: the default price table
	// Shadow decides and records but never denies: a refused call runs,
	// flagged as shadowed ([enforcement] mode = "shadow").
	Shadow      bool
	DefaultRole string // role of a new session when nothing else names one
	// AgentRoles are the starting roles of agents by name ([agents.NAME]
	// role in harness.toml).
	AgentRoles map[string]string
	// AgentMaxRoles are the most privileged roles agents may switch
	// themselves into, by name ([agents.NAME] max_role, or their tokens').
	AgentMaxRoles map[string]string
	// Project is the project's root, given to the policy (input.project).
	Project string
	// EnvRole is $LEAN_CTX_ROLE: the operator's starting role for new
	// sessions of agents without one of their own.
	EnvRole string
	// Sinks receive the harness events (a Bus, an EventLog).
	Sinks []events.Sink
	// Decisions, if set, records every decision.
	Decisions *events.DecisionLog
	// Now is the clock (default time.Now).
	Now func() time.Time
	// OnError hears of events and log entries that could not be written;
	// the call itself goes on. Default: ignored.
	OnError func(error)
}

// New returns a Governor.
func New(o Options) *Governor {
	g := &Governor{engine: o.Engine, store: o.Store, tokens: o.Tokenizer, prices: o.Prices, shadow: o.Shadow,
		defaultRole: o.DefaultRole, sinks: o.Sinks, decisions: o.Decisions, now: o.Now, onError: o.OnError,
		agentRoles: o.AgentRoles, maxRoles: o.AgentMaxRoles, envRole: o.EnvRole, project: o.Project}
	if g.now == nil {
		g.now = time.Now
	}
	if g.onError == nil {
		g.onError = func(error) {}
	}
	if g.tokens == nil {
		g.tokens = budget.NewTokenizer()
	}
	if g.prices.Models == nil {
		g.prices = pricing.Default()
	}
	if g.defaultRole == "" {
		g.defaultRole = "coder"
	}
	return g
}

// Engine is the policy engine the Governor asks.
func (g *Governor) Engine() *policy.Engine { return g.engine }

// Call is one tool call to decide.
type Call struct {
	Session   budget.Key
	Tool      string
	Arguments map[string]any
	// Role is the role a new session starts in; "" for the default. A
	// session that has a role keeps it.
	Role string
	// Reserve takes the shell slot of an allowed shell call: the call is
	// going to run. Without it the decision is only a question.
	Reserve bool
	// Background writes the decision's log entry and events while the
	// caller goes on (the gateway overlaps them with the upstream call):
	// Outcome.Wait waits for them. Without it they are written before
	// Decide returns.
	Background bool
}

// Outcome is what came of a call.
type Outcome struct {
	Decision contract.Decision
	// Allowed says whether the call may run: the decision's word, or always
	// true in shadow mode.
	Allowed bool
	// Shadowed is true when shadow mode let through a call the policy denied.
	Shadowed bool
	// Reserved is true when a shell slot was taken for the call.
	Reserved bool
	// Counters are the session's counters after the reservation.
	Counters budget.Counters
	// DecisionID names the decision in the decision log and events.
	DecisionID string

	written chan struct{} // closed once a Background decision is logged
}

// Wait returns once the decision's log entry and events are written.
func (o Outcome) Wait() {
	if o.written != nil {
		<-o.written
	}
}

// StartRole is the role a new session of agent starts in: role if given
// (the operator's choice), else the agent's configured role, else
// $LEAN_CTX_ROLE, else the configured default.
func (g *Governor) StartRole(agent, role string) string {
	return PickRole(role, g.agentRoles[agent], g.envRole, g.defaultRole)
}

// Project is the project's root the policy is told of ("" for none).
func (g *Governor) Project() string { return g.project }

// MaxRole is the most privileged role agent may switch itself into, "" if
// it has none.
func (g *Governor) MaxRole(agent string) string { return g.maxRoles[agent] }

// PickRole returns the first role named, else coder: the order of
// precedence of a new session's role.
func PickRole(candidates ...string) string {
	for _, r := range candidates {
		if r != "" {
			return r
		}
	}
	return "coder"
}

// Session returns the session's counters, giving a new session its
// starting role (see StartRole). A session that has a role keeps it: only
// a switch changes it.
func (g *Governor) Session(ctx context.Context, k budget.Key, role string) (budget.Counters, error) {
	c, err := g.store.Get(ctx, k)
	if err != nil || c.Role != "" {
		return c, err
	}
	return g.store.InitRole(ctx, k, g.StartRole(k.Agent, role))
}

// Decide decides a call with the session's live counters. With Reserve, an
// allowed shell call takes its slot by a compare-and-swap on the very
// counters the decision was made on; if another call changed them first,
// the call is decided again on the new counters. So under any concurrency,
// exactly the calls the policy admits pass, and a denied call takes nothing.
func (g *Governor) Decide(ctx context.Context, call Call) (Outcome, error) {
	cur, err := g.Session(ctx, call.Session, call.Role)
	if err != nil {
		return Outcome{}, fmt.Errorf("ledger: %w", err)
	}
	shellTool := g.engine.Document().Config.ShellTools[call.Tool]
	for range maxAttempts {
		in := contract.Input{
			Role:      cur.Role,
			Tool:      call.Tool,
			Arguments: call.Arguments,
			Budget:    contract.Usage{Tokens: cur.Tokens, Shell: cur.Shell, CostMicros: cur.CostMicros},
			Session:   call.Session.Session,
			Agent:     call.Session.Agent,
			Project:   g.project,
		}
		start := g.now()
		d, err := g.engine.Decide(ctx, in)
		elapsed := g.now().Sub(start)
		if err != nil {
			return Outcome{Decision: d}, err
		}
		o := Outcome{Decision: d, Allowed: d.Allowed, Counters: cur}
		if !d.Allowed && g.shadow {
			o.Allowed, o.Shadowed = true, true
		}
		switch {
		case !call.Reserve || !shellTool || !o.Allowed:
		case o.Shadowed: // the call runs although the policy refused it: count it
			o.Counters, err = g.store.AddShell(ctx, call.Session)
			if err != nil {
				return o, fmt.Errorf("ledger: %w", err)
			}
			o.Reserved = true
		default:
			next, ok, err := g.store.ReserveShell(ctx, call.Session, cur)
			if err != nil {
				return o, fmt.Errorf("ledger: %w", err)
			}
			if !ok {
				cur = next
				continue // another call changed the counters: decide again
			}
			o.Reserved, o.Counters = true, next
		}
		at := g.now()
		o.DecisionID = events.NewID(at)
		record := func() {
			g.recordDecision(o, at, in, elapsed)
			if o.Reserved {
				before := o.Counters
				before.Shell--
				g.crossings(call.Session, before, o.Counters)
			}
		}
		if call.Background {
			done := make(chan struct{})
			o.written = done
			go func() {
				defer close(done)
				record()
			}()
		} else {
			record()
		}
		return o, nil
	}
	return Outcome{}, errors.New("ledger: could not reserve a shell slot: the counters kept changing")
}

// loggedInput is the input as the policy saw it, with the shell policy the
// engine filled in.
type loggedInput struct {
	contract.Input
	ShellPolicy string `json:"shell_policy"`
}

// logEntry writes the decision-log entry of the decision id, made at.
func (g *Governor) logEntry(id string, at time.Time, path string, input, result any, elapsed time.Duration, shadow bool) {
	if g.decisions != nil {
		err := g.decisions.Log(events.Entry{
			DecisionID: id,
			Path:       path,
			Timestamp:  at.UTC(),
			Metrics:    map[string]int64{"timer_rego_query_eval_ns": elapsed.Nanoseconds()},
			Shadow:     shadow,
		}, input, result)
		if err != nil {
			g.onError(fmt.Errorf("decision log: %w", err))
		}
	}
}

// recordDecision writes the decision log entry and, for a deny, the
// PolicyViolation event.
func (g *Governor) recordDecision(o Outcome, at time.Time, in contract.Input, elapsed time.Duration) {
	d := o.Decision
	g.logEntry(o.DecisionID, at, "harness/decision", loggedInput{in, d.ShellPolicy}, d, elapsed, g.shadow)
	if d.Allowed {
		return
	}
	var parts []string
	for _, r := range d.Reasons {
		parts = append(parts, r.Code+": "+r.Message)
	}
	g.emit(events.Event{
		Type: events.PolicyViolation, Session: in.Session, Agent: in.Agent, Role: d.Role, Shadow: o.Shadowed,
		Violation: &events.Violation{Tool: d.Tool, Reason: strings.Join(parts, "; "), Reasons: d.Reasons, DecisionID: o.DecisionID},
	})
}

func (g *Governor) emit(e events.Event) {
	e.Stamp(g.now())
	for _, s := range g.sinks {
		if err := s.Emit(e); err != nil {
			g.onError(fmt.Errorf("event %s: %w", e.Type, err))
		}
	}
}

var levelRank = map[string]int{compiler.LevelOK: 0, compiler.LevelWarning: 1, compiler.LevelExhausted: 2}

// crossings emits BudgetWarning and BudgetExhausted for every dimension
// that one atomic change of the counters (before → after) carried into
// those levels. Counters only grow and every change is atomic, so exactly
// one change crosses each threshold: each crossing is reported once, however
// many calls run at the same moment. A role switch is such a change too:
// the same usage measured against the new role's limits.
func (g *Governor) crossings(k budget.Key, before, after budget.Counters) {
	doc := g.engine.Document()
	r, ok := doc.Roles[after.Role]
	if !ok {
		return
	}
	old, known := doc.Roles[before.Role]
	if !known {
		old = r
	}
	for _, dim := range []struct {
		name          string
		before, after int64
		limit         int64
	}{
		{"tokens", before.Tokens, after.Tokens, r.Limits.Tokens},
		{"shell", before.Shell, after.Shell, r.Limits.Shell},
		{"cost", before.CostMicros, after.CostMicros, r.Limits.CostMicros},
	} {
		from := levelRank[old.Thresholds[dim.name].Level(dim.before)]
		to := levelRank[r.Thresholds[dim.name].Level(dim.after)]
		if to <= from {
			continue
		}
		if from < 1 {
			p := percent(dim.after, dim.limit)
			g.emit(events.Event{Type: events.BudgetWarning, Session: k.Session, Agent: k.Agent, Role: after.Role,
				Budget: &events.Budget{Dimension: dim.name, Used: dim.after, Limit: dim.limit, Percent: &p}})
		}
		if to == 2 {
			g.emit(events.Event{Type: events.BudgetExhausted, Session: k.Session, Agent: k.Agent, Role: after.Role,
				Budget: &events.Budget{Dimension: dim.name, Used: dim.after, Limit: dim.limit}})
		}
	}
}

// percent is rule 4 of the contract, for event fields.
func percent(used, limit int64) int64 {
	switch {
	case limit > 0:
		return used * 100 / limit
	case used > 0:
		return 100
	}
	return 0
}

// Result is a finished tool call, to charge.
type Result struct {
	Session budget.Key
	Tool    string
	// Arguments as the agent sent them (JSON); their tokens are input.
	Arguments string
	// Output is the text that went back to the agent; its tokens are
	// context tokens and output.
	Output string
	// Model prices the call; "" for the configured default.
	Model string
}

// Charge is what a result cost.
type Charge struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	CostMicros   int64 `json:"cost_micros"`
	// Before and After are the session's counters around the charge.
	Before budget.Counters `json:"before"`
	After  budget.Counters `json:"after"`
}

// Record charges a finished call: the o200k_base tokens of its output to the
// context budget, and the cost of its input and output tokens.
func (g *Governor) Record(ctx context.Context, r Result) (Charge, error) {
	if r.Session.Session == "" {
		return Charge{}, errors.New("record: a session id is required")
	}
	in, err := g.tokens.Count(r.Arguments)
	if err != nil {
		return Charge{}, err
	}
	out, err := g.tokens.Count(r.Output)
	if err != nil {
		return Charge{}, err
	}
	cost, err := g.prices.Cost(r.Model, in, out)
	if err != nil {
		return Charge{}, err
	}
	after, err := g.store.Charge(ctx, r.Session, out, cost)
	if err != nil {
		return Charge{}, fmt.Errorf("ledger: %w", err)
	}
	if after.Role == "" { // a session charged before any decision: give it its role
		if after, err = g.store.InitRole(ctx, r.Session, g.StartRole(r.Session.Agent, "")); err != nil {
			return Charge{}, fmt.Errorf("ledger: %w", err)
		}
	}
	before := after
	before.Tokens -= out
	before.CostMicros -= cost
	g.crossings(r.Session, before, after)
	return Charge{InputTokens: in, OutputTokens: out, CostMicros: cost, Before: before, After: after}, nil
}

// Status is the session's budget as the policy sees it now: the decision
// for an exempt tool, whose budget and status line are those of the session.
func (g *Governor) Status(ctx context.Context, k budget.Key, role string) (contract.Decision, error) {
	c, err := g.Session(ctx, k, role)
	if err != nil {
		return contract.Decision{}, fmt.Errorf("ledger: %w", err)
	}
	tool := contract.SessionTool
	if exempt := g.engine.Document().Config.ExemptTools; !exempt[tool] && len(exempt) > 0 {
		tool = slices.Min(slices.Collect(maps.Keys(exempt)))
	}
	return g.engine.Decide(ctx, contract.Input{
		Role: c.Role, Tool: tool, Session: k.Session, Agent: k.Agent, Project: g.project,
		Budget: contract.Usage{Tokens: c.Tokens, Shell: c.Shell, CostMicros: c.CostMicros},
	})
}

// SwitchOutcome is what came of a role switch.
type SwitchOutcome struct {
	Decision contract.SwitchDecision
	// Switched is true when the role changed (false when refused, or when
	// the session was already in the role).
	Switched bool
	// Counters are the session's counters afterwards: usage unchanged.
	Counters   budget.Counters
	DecisionID string
}

// Switch changes a session's active role, by an agent (under the switch
// rules) or by the operator. The role changes by a compare-and-swap on the
// role the switch was decided on; usage is never touched, and the new
// role's limits apply to it at once. Every switch, made or refused, is an
// event (RoleChanged, or PolicyViolation with code switch_denied) and a
// decision-log entry.
func (g *Governor) Switch(ctx context.Context, k budget.Key, to, by string) (SwitchOutcome, error) {
	cur, err := g.Session(ctx, k, "")
	if err != nil {
		return SwitchOutcome{}, fmt.Errorf("ledger: %w", err)
	}
	for range maxAttempts {
		if cur.Role == to {
			return SwitchOutcome{Decision: contract.SwitchDecision{Allowed: true, From: to, To: to, By: by, Reasons: []contract.Reason{}}, Counters: cur}, nil
		}
		in := contract.SwitchInput{From: cur.Role, To: to, By: by, Session: k.Session, Agent: k.Agent, MaxRole: g.MaxRole(k.Agent)}
		start := g.now()
		d, err := g.engine.Switch(ctx, in)
		elapsed := g.now().Sub(start)
		if err != nil {
			return SwitchOutcome{Decision: d}, err
		}
		o := SwitchOutcome{Decision: d, Counters: cur}
		if d.Allowed {
			next, ok, err := g.store.SwitchRole(ctx, k, cur.Role, to)
			if err != nil {
				return o, fmt.Errorf("ledger: %w", err)
			}
			if !ok {
				cur = next // another switch came first: decide again from its role
				continue
			}
			o.Switched, o.Counters = true, next
		}
		at := g.now()
		o.DecisionID = events.NewID(at)
		g.logEntry(o.DecisionID, at, "harness/switch", in, d, elapsed, false)
		if !o.Switched {
			var parts []string
			for _, r := range d.Reasons {
				parts = append(parts, r.Code+": "+r.Rule+": "+r.Message)
			}
			g.emit(events.Event{Type: events.PolicyViolation, Session: k.Session, Agent: k.Agent, Role: cur.Role,
				Violation: &events.Violation{Tool: contract.SessionTool, Reason: strings.Join(parts, "; "), Reasons: d.Reasons, DecisionID: o.DecisionID}})
			return o, nil
		}
		g.emit(events.Event{Type: events.RoleChanged, Session: k.Session, Agent: k.Agent,
			Switch: &events.Switch{From: cur.Role, To: to, By: by}})
		g.crossings(k, cur, o.Counters)
		return o, nil
	}
	return SwitchOutcome{}, errors.New("ledger: could not switch: the role kept changing")
}

// Level is the worst budget level of counters under their role's
// thresholds: the policy's signal, read from the compiled data without an
// evaluation (an unknown role is EXHAUSTED, so that callers look closer).
func (g *Governor) Level(c budget.Counters) string {
	r, ok := g.engine.Document().Roles[c.Role]
	if !ok {
		return compiler.LevelExhausted
	}
	worst := compiler.LevelOK
	for dim, used := range map[string]int64{"tokens": c.Tokens, "shell": c.Shell, "cost": c.CostMicros} {
		if l := r.Thresholds[dim].Level(used); levelRank[l] > levelRank[worst] {
			worst = l
		}
	}
	return worst
}

// Reset is the operator's reset of a session's usage (its role stays).
func (g *Governor) Reset(ctx context.Context, k budget.Key) error { return g.store.Reset(ctx, k) }

// ArgumentsJSON renders arguments as the agent would have sent them, for
// counting input tokens.
func ArgumentsJSON(args map[string]any) string {
	if len(args) == 0 {
		return ""
	}
	b, err := json.Marshal(args)
	if err != nil {
		return ""
	}
	return string(b)
}
