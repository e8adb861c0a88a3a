// Package loggen writes a decision log as the harness writes it (decision
// entries with the session's usage before each call, charge entries with
// the counters after each change) and charges a ledger with the same
// changes, for tests and benchmarks of what reads the log: its totals must
// equal the ledger's. The calls are made up (a seeded random mix of tools,
// outcomes and outputs), the shapes are the governor's.
package loggen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
)

// Options say what to generate.
type Options struct {
	// Decisions and Events are the logs' paths (Events "": none);
	// Rotation bounds their files (zero: no rotation in practice).
	Decisions, Events string
	Rotation          events.Rotation
	// Calls is how many decisions to write; Agents and Sessions how many
	// agents and sessions (in all) make them.
	Calls, Agents, Sessions int
	// Start and Span place the calls in time, evenly.
	Start time.Time
	Span  time.Duration
	// Seed makes the mix.
	Seed uint64
	// Store is the ledger charged alongside.
	Store budget.Store
}

// Tools are the tools the calls are made of; the first is a shell tool.
var Tools = []string{"ctx_shell", "ctx_read", "ctx_search", "ctx_edit", "ctx_tree", "lean__ctx_read", "resource:file:///README.md"}

// Roles are the roles sessions start in.
var Roles = []string{"coder", "reviewer", "debugger"}

// Stats are what was written.
type Stats struct {
	Decisions, Charges, Denied int
}

// input is a decision's logged input, as the governor logs it.
type input struct {
	contract.Input
	ShellPolicy string `json:"shell_policy"`
}

// Generate writes the logs and charges the store.
func Generate(ctx context.Context, o Options) (Stats, error) {
	if o.Rotation.MaxBytes == 0 {
		o.Rotation = events.Rotation{MaxBytes: 1 << 40}
	}
	dl, err := events.OpenDecisionLog(o.Decisions, events.DecisionLogOptions{Rotation: o.Rotation, Labels: map[string]string{"app": "loggen"}})
	if err != nil {
		return Stats{}, err
	}
	defer dl.Close()
	var el *events.EventLog
	if o.Events != "" {
		if el, err = events.OpenEventLog(o.Events, o.Rotation); err != nil {
			return Stats{}, err
		}
		defer el.Close()
	}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	var st Stats
	step := o.Span / time.Duration(max(o.Calls, 1))
	var mask *events.Mask
	for i := range o.Calls {
		at := o.Start.Add(time.Duration(i) * step).UTC()
		n := rng.IntN(max(o.Sessions, 1))
		k := budget.Key{Agent: fmt.Sprintf("agent-%d", n%max(o.Agents, 1)), Session: fmt.Sprintf("s-%04d", n)}
		c, err := o.Store.InitRole(ctx, k, Roles[n%len(Roles)])
		if err != nil {
			return st, err
		}
		tool := Tools[rng.IntN(len(Tools))]
		shellTool := tool == "ctx_shell"
		d := contract.Decision{Decision: contract.Allow, Allowed: true, Role: c.Role, Tool: tool, ShellPolicy: "track", ShellTool: shellTool,
			Reasons: []contract.Reason{}, Warnings: []contract.Reason{}, Signal: contract.LevelOK}
		switch p := rng.IntN(100); {
		case p < 8:
			d.Decision, d.Signal = contract.Warn, contract.LevelWarning
			d.Warnings = []contract.Reason{{Code: contract.CodeBudgetWarning, Message: "tokens at 85% of the budget"}}
		case p < 14:
			d.Decision, d.Allowed = contract.Deny, false
			d.Reasons = []contract.Reason{{Code: contract.CodeToolDenied, Message: fmt.Sprintf("tool '%s' is denied for role '%s'", tool, c.Role)}}
		case p < 17:
			d.Decision, d.Allowed, d.Signal = contract.Deny, false, contract.LevelExhausted
			d.Budget.Tokens.Level = contract.LevelExhausted
			d.Reasons = []contract.Reason{{Code: contract.CodeBudgetExhausted, Message: "tokens budget exhausted"}}
		case p < 19 && shellTool:
			d.Decision, d.Allowed = contract.Deny, false
			d.Reasons = []contract.Reason{{Code: contract.CodeShellBudget, Message: "shell budget spent"}}
		}
		in := input{Input: contract.Input{Role: c.Role, Tool: tool, Arguments: map[string]any{"path": fmt.Sprintf("src/file-%d.go", rng.IntN(500))},
			Budget: contract.Usage{Tokens: c.Tokens, Shell: c.Shell, CostMicros: c.CostMicros}, Session: k.Session, Agent: k.Agent}, ShellPolicy: "track"}
		red, err := mask.Apply(in)
		if err != nil {
			return st, err
		}
		id := events.NewID(at)
		e := events.Entry{DecisionID: id, Path: events.PathDecision, Timestamp: at, Metrics: map[string]int64{"timer_rego_query_eval_ns": 90000}}
		if d.Allowed && shellTool {
			if _, err := o.Store.AddShell(ctx, k, ""); err != nil {
				return st, err
			}
			e.Custom = &events.Custom{Shell: 1}
		}
		if err := dl.Log(e, red, d); err != nil {
			return st, err
		}
		st.Decisions++
		if !d.Allowed {
			st.Denied++
			if el != nil && d.Reasons[0].Code == contract.CodeBudgetExhausted {
				ev := events.Event{Type: events.BudgetExhausted, Session: k.Session, Agent: k.Agent, Role: c.Role,
					Budget: &events.Budget{Dimension: "tokens", Used: c.Tokens, Limit: c.Tokens}}
				ev.Stamp(at)
				if err := el.Emit(ev); err != nil {
					return st, err
				}
			}
			continue
		}
		if shellTool && rng.IntN(50) == 0 { // the call never reached its tool
			after, err := o.Store.ReleaseShell(ctx, k, "")
			if err != nil {
				return st, err
			}
			if err := logCharge(dl, k, tool, at, events.ChargeResult{Shell: -1}, after); err != nil {
				return st, err
			}
			st.Charges++
			continue
		}
		tokens := int64(rng.IntN(4000))
		cost := tokens*3 + 17
		res := events.ChargeResult{DecisionID: id, Tokens: tokens, CostMicros: cost, InputTokens: 17}
		if rng.IntN(40) == 0 {
			res.Withheld = int64(rng.IntN(1000) + 1)
		}
		after, err := o.Store.Charge(ctx, k, "", tokens, cost)
		if err != nil {
			return st, err
		}
		if err := logCharge(dl, k, tool, at, res, after); err != nil {
			return st, err
		}
		st.Charges++
	}
	return st, nil
}

// logCharge writes a charge's entry as the governor does.
func logCharge(dl *events.DecisionLog, k budget.Key, tool string, at time.Time, c events.ChargeResult, after budget.Counters) error {
	c.After = events.ChargeCounters{Tokens: after.Tokens, Shell: after.Shell, CostMicros: after.CostMicros}
	var mask *events.Mask
	red, err := mask.Apply(events.ChargeInput{Role: after.Role, Tool: tool, Session: k.Session, Agent: k.Agent})
	if err != nil {
		return err
	}
	return dl.Log(events.Entry{DecisionID: events.NewID(at), Path: events.PathCharge, Timestamp: at}, red, c)
}
