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
	"github.com/agentharness/harness/config"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/policy"
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
	prices      budget.Prices
	mode        config.Mode
	defaultRole string
	sinks       []events.Sink
	decisions   *events.DecisionLog
	now         func() time.Time
	onError     func(error)
}

// Options are a Governor's parts.
type Options struct {
	Engine      *policy.Engine
	Store       budget.Store
	Tokenizer   *budget.Tokenizer // nil: a new one
	Prices      budget.Prices     // zero: the default price table
	Mode        config.Mode       // "": enforce
	DefaultRole string            // role of a new session when the call names none
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
	g := &Governor{engine: o.Engine, store: o.Store, tokens: o.Tokenizer, prices: o.Prices, mode: o.Mode,
		defaultRole: o.DefaultRole, sinks: o.Sinks, decisions: o.Decisions, now: o.Now, onError: o.OnError}
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
		g.prices = budget.DefaultPrices()
	}
	if g.mode == "" {
		g.mode = config.Enforce
	}
	if g.defaultRole == "" {
		g.defaultRole = "coder"
	}
	return g
}

// Engine is the policy engine the Governor asks.
func (g *Governor) Engine() *policy.Engine { return g.engine }

// Mode is the enforcement mode.
func (g *Governor) Mode() config.Mode { return g.mode }

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
}

// Outcome is what came of a call.
type Outcome struct {
	Decision policy.Decision
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
}

// Session returns the session's counters, giving a new session its
// starting role (role, else the default role).
func (g *Governor) Session(ctx context.Context, k budget.Key, role string) (budget.Counters, error) {
	c, err := g.store.Get(ctx, k)
	if err != nil || c.Role != "" {
		return c, err
	}
	if role == "" {
		role = g.defaultRole
	}
	return g.store.InitRole(ctx, k, role)
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
		in := policy.Input{
			Role:      cur.Role,
			Tool:      call.Tool,
			Arguments: call.Arguments,
			Budget:    policy.Usage{Tokens: cur.Tokens, Shell: cur.Shell, CostMicros: cur.CostMicros},
			Session:   call.Session.Session,
			Agent:     call.Session.Agent,
		}
		start := g.now()
		d, err := g.engine.Decide(ctx, in)
		elapsed := g.now().Sub(start)
		if err != nil {
			return Outcome{Decision: d}, err
		}
		o := Outcome{Decision: d, Allowed: d.Allowed, Counters: cur}
		if !d.Allowed && g.mode == config.Shadow {
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
		g.recordDecision(&o, in, elapsed)
		if o.Reserved {
			before := o.Counters
			before.Shell--
			g.crossings(call.Session, before, o.Counters)
		}
		return o, nil
	}
	return Outcome{}, errors.New("ledger: could not reserve a shell slot: the counters kept changing")
}

// loggedInput is the input as the policy saw it, with the shell policy the
// engine filled in.
type loggedInput struct {
	policy.Input
	ShellPolicy string `json:"shell_policy"`
}

// recordDecision writes the decision log entry and, for a deny, the
// PolicyViolation event.
func (g *Governor) recordDecision(o *Outcome, in policy.Input, elapsed time.Duration) {
	now := g.now()
	o.DecisionID = events.NewID(now)
	d := o.Decision
	if g.decisions != nil {
		err := g.decisions.Log(events.Entry{
			DecisionID: o.DecisionID,
			Path:       "harness/decision",
			Timestamp:  now.UTC(),
			Metrics:    map[string]int64{"timer_rego_query_eval_ns": elapsed.Nanoseconds()},
			Shadow:     g.mode == config.Shadow,
		}, loggedInput{in, d.ShellPolicy}, d)
		if err != nil {
			g.onError(fmt.Errorf("decision log: %w", err))
		}
	}
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
// many calls run at the same moment.
func (g *Governor) crossings(k budget.Key, before, after budget.Counters) {
	r, ok := g.engine.Document().Roles[after.Role]
	if !ok || before.Role != after.Role {
		return
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
		t := r.Thresholds[dim.name]
		from, to := levelRank[t.Level(dim.before)], levelRank[t.Level(dim.after)]
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
	if _, err := g.Session(ctx, r.Session, ""); err != nil {
		return Charge{}, fmt.Errorf("ledger: %w", err)
	}
	after, err := g.store.Charge(ctx, r.Session, out, cost)
	if err != nil {
		return Charge{}, fmt.Errorf("ledger: %w", err)
	}
	before := after
	before.Tokens -= out
	before.CostMicros -= cost
	g.crossings(r.Session, before, after)
	return Charge{InputTokens: in, OutputTokens: out, CostMicros: cost, Before: before, After: after}, nil
}

// Status is the session's budget as the policy sees it now: the decision
// for an exempt tool, whose budget and status line are those of the session.
func (g *Governor) Status(ctx context.Context, k budget.Key, role string) (policy.Decision, error) {
	c, err := g.Session(ctx, k, role)
	if err != nil {
		return policy.Decision{}, fmt.Errorf("ledger: %w", err)
	}
	tool := "ctx_session"
	if exempt := g.engine.Document().Config.ExemptTools; !exempt[tool] && len(exempt) > 0 {
		tool = slices.Min(slices.Collect(maps.Keys(exempt)))
	}
	return g.engine.Decide(ctx, policy.Input{
		Role: c.Role, Tool: tool, Session: k.Session, Agent: k.Agent,
		Budget: policy.Usage{Tokens: c.Tokens, Shell: c.Shell, CostMicros: c.CostMicros},
	})
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
