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

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/config"
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
}

// Options are a Governor's parts.
type Options struct {
	Engine      *policy.Engine
	Store       budget.Store
	Tokenizer   *budget.Tokenizer // nil: a new one
	Prices      budget.Prices     // zero: the default price table
	Mode        config.Mode       // "": enforce
	DefaultRole string            // role of a new session when the call names none
}

// New returns a Governor.
func New(o Options) *Governor {
	g := &Governor{engine: o.Engine, store: o.Store, tokens: o.Tokenizer, prices: o.Prices, mode: o.Mode, defaultRole: o.DefaultRole}
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
		d, err := g.engine.Decide(ctx, policy.Input{
			Role:      cur.Role,
			Tool:      call.Tool,
			Arguments: call.Arguments,
			Budget:    policy.Usage{Tokens: cur.Tokens, Shell: cur.Shell, CostMicros: cur.CostMicros},
			Session:   call.Session.Session,
			Agent:     call.Session.Agent,
		})
		if err != nil {
			return Outcome{Decision: d}, err
		}
		o := Outcome{Decision: d, Allowed: d.Allowed, Counters: cur}
		if !d.Allowed && g.mode == config.Shadow {
			o.Allowed, o.Shadowed = true, true
		}
		if !call.Reserve || !shellTool || !o.Allowed {
			return o, nil
		}
		if o.Shadowed { // the call runs although the policy refused it: count it
			o.Counters, err = g.store.AddShell(ctx, call.Session)
			o.Reserved = err == nil
			return o, err
		}
		next, ok, err := g.store.ReserveShell(ctx, call.Session, cur)
		if err != nil {
			return o, fmt.Errorf("ledger: %w", err)
		}
		if ok {
			o.Reserved, o.Counters = true, next
			return o, nil
		}
		cur = next
	}
	return Outcome{}, errors.New("ledger: could not reserve a shell slot: the counters kept changing")
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
