package govern

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/policy"
)

// seen is in as the policy saw it: with the shell policy the engine
// filled in, and arguments {} for a call without any.
func seen(in contract.Input, shellPolicy string) events.CallInput {
	if in.Arguments == nil {
		in.Arguments = map[string]any{}
	}
	return events.CallInput{Input: in, ShellPolicy: shellPolicy}
}

// redact is the redaction of the decision whose input is input: what the
// configured masks keep out of its log entry and of its events.
func (g *Governor) redact(input any) *events.Redaction {
	r, err := g.mask.Apply(input)
	if err != nil {
		g.onError(fmt.Errorf("decision log: masking the input: %w", err))
	}
	return r
}

// entry is what a decision-log entry says beside its input and result.
type entry struct {
	id       string
	at       time.Time
	path     string
	elapsed  time.Duration
	revision string // the bundle's revision the decision was made with
	client   string // the client's name and version as it says them, "" when unknown
	custom   events.Custom
}

// logEntry writes the decision-log entry e, its input as red masked it.
func (g *Governor) logEntry(e entry, red *events.Redaction, result any) {
	if g.decisions != nil {
		var labels map[string]string
		if e.client != "" {
			labels = map[string]string{"client": e.client}
		}
		var bundles map[string]events.BundleInfo
		if e.revision != "" {
			bundles = map[string]events.BundleInfo{policy.BundleName: {Revision: e.revision}}
		}
		custom := e.custom
		var metrics map[string]int64
		if e.path != events.PathCharge { // a charge evaluates no policy
			metrics = map[string]int64{"timer_rego_query_eval_ns": e.elapsed.Nanoseconds()}
		}
		err := g.decisions.Log(events.Entry{
			DecisionID: e.id,
			Path:       e.path,
			Timestamp:  e.at.UTC(),
			Metrics:    metrics,
			Labels:     labels,
			Bundles:    bundles,
			Custom:     &custom,
		}, red, result)
		if err != nil {
			g.onError(fmt.Errorf("decision log: %w", err))
		}
	}
}

// shellSlot is the decision's custom.shell: 1 when it took a shell slot.
func shellSlot(o Outcome) int64 {
	if o.Reserved {
		return 1
	}
	return 0
}

// recordDecision writes the decision log entry and, for a deny, the
// PolicyViolation event (for an ask, ApprovalRequested: the call waits for
// a person, it broke no rule), its reasons summarised, both masked; it
// returns the decision's redaction, for the events that follow from it.
func (g *Governor) recordDecision(o Outcome, r *Rules, at time.Time, in contract.Input, elapsed time.Duration, call Call, costSource string) *events.Redaction {
	d := o.Decision
	defer g.changed(budget.Key{Agent: in.Agent, Session: in.Session})
	red := g.redact(seen(in, d.ShellPolicy))
	g.logEntry(entry{id: o.DecisionID, at: at, path: events.PathDecision, elapsed: elapsed, revision: r.Engine.Revision(),
		client: call.Client, custom: events.Custom{Shadow: g.shadow, CostSource: costSource, ApprovedBy: approvedBy(o, call), Shell: shellSlot(o)}}, red, d)
	if !d.Allowed && !o.Approved {
		typ := events.PolicyViolation
		if d.Decision == contract.Ask {
			typ = events.ApprovalRequested
		}
		reasons := events.SummariseReasons(d.Reasons)
		g.emit(red, events.Event{
			Type: typ, Session: in.Session, Agent: in.Agent, Role: d.Role, Shadow: o.Shadowed,
			Violation: &events.Violation{Tool: d.Tool, Reason: oneLine(reasons, false), Reasons: reasons, DecisionID: o.DecisionID},
		})
	}
	return red
}

// approvedBy is who approved a call decided ask that runs, "" otherwise.
func approvedBy(o Outcome, call Call) string {
	if o.Approved {
		return call.Approved
	}
	return ""
}

// oneLine is reasons as one line: "code: message; …" (with the rule that
// refused, for switches).
func oneLine(reasons []contract.Reason, rules bool) string {
	parts := make([]string, 0, len(reasons))
	for _, r := range reasons {
		if rules {
			parts = append(parts, r.Code+": "+r.Rule+": "+r.Message)
		} else {
			parts = append(parts, r.Code+": "+r.Message)
		}
	}
	return strings.Join(parts, "; ")
}

// emit stamps e and gives it, masked by red, to every sink.
func (g *Governor) emit(red *events.Redaction, e events.Event) {
	defer g.changed(budget.Key{Agent: e.Agent, Session: e.Session})
	e = red.Event(e)
	e.Stamp(g.now())
	for _, s := range g.sinks {
		if err := s.Emit(e); err != nil {
			g.onError(fmt.Errorf("event %s: %w", e.Type, err))
		}
	}
}

// levelRank orders budget levels.
var levelRank = map[string]int{contract.LevelOK: 0, contract.LevelWarning: 1, contract.LevelExhausted: 2}

// crossings works out BudgetWarning and BudgetExhausted for every
// dimension that one atomic change of the counters (before → after) carried
// into those levels, as the policy measures them: the session's under its
// role, and its agent's in the period of the agent's budget (scope
// "agent"). It returns the levels after, and the events to emit. Counters
// only grow and every change is atomic, so exactly one change crosses each
// threshold: each crossing is reported once, however many calls run at
// the same moment. A role switch is such a change too: the same usage
// measured against the new role's limits. The levels of both sides take
// one evaluation (the policy's levels entry point); the figures of the
// events, one more when something was crossed.
func (g *Governor) crossings(ctx context.Context, r *Rules, k budget.Key, period budget.Period, before, after budget.Counters) (policy.Levels, []events.Event) {
	if before.Role == "" {
		before.Role = after.Role
	}
	ru := func(role string, c budget.Counters) policy.RoleUsage {
		in := statusInput(k, c, period)
		return policy.RoleUsage{Role: role, Usage: in.Budget, Agent: k.Agent, AgentUsage: in.AgentBudget}
	}
	ls, err := r.Engine.Levels(ctx, ru(before.Role, before), ru(after.Role, after))
	if err == nil && !ls[0].Defined && ls[1].Defined { // a role that is gone: measure by the new one
		var again []policy.Levels
		if again, err = r.Engine.Levels(ctx, ru(after.Role, before)); err == nil {
			ls[0] = again[0]
		}
	}
	if err != nil {
		g.onError(fmt.Errorf("budget levels of session %s: %w", k, err))
		return policy.Levels{}, nil
	}
	was, now := ls[0], ls[1]
	if !now.Defined {
		return now, nil
	}
	type crossing struct{ scope, dim, was string }
	var crossed []crossing
	for _, dim := range []struct{ name, was, is string }{
		{"tokens", was.Tokens, now.Tokens}, {"shell", was.Shell, now.Shell}, {"cost", was.Cost, now.Cost},
	} {
		if levelRank[dim.is] > levelRank[dim.was] {
			crossed = append(crossed, crossing{"", dim.name, dim.was})
		}
	}
	for dim, is := range now.Agent {
		if w := was.Agent[dim]; levelRank[is] > levelRank[w] {
			crossed = append(crossed, crossing{events.ScopeAgent, dim, w})
		}
	}
	if len(crossed) == 0 {
		return now, nil
	}
	st, err := r.Engine.Status(ctx, statusInput(k, after, period))
	if err != nil {
		g.onError(fmt.Errorf("budget of session %s: %w", k, err))
		return now, nil
	}
	figures := map[string]*contract.Dimension{"tokens": &st.Budget.Tokens, "shell": &st.Budget.Shell, "cost": &st.Budget.Cost}
	agentFigures := map[string]*contract.Dimension{}
	if a := st.AgentBudget; a != nil {
		agentFigures = map[string]*contract.Dimension{"tokens": a.Tokens, "shell": a.Shell, "cost": a.Cost}
	}
	slices.SortFunc(crossed, func(a, b crossing) int {
		return cmp.Or(cmp.Compare(a.scope, b.scope), cmp.Compare(dimOrder[a.dim], dimOrder[b.dim]))
	})
	var out []events.Event
	for _, c := range crossed {
		d, p := figures[c.dim], ""
		if c.scope == events.ScopeAgent {
			d, p = agentFigures[c.dim], period
		}
		if d == nil {
			continue
		}
		if levelRank[c.was] < levelRank[contract.LevelWarning] {
			pct := d.Percent
			out = append(out, events.Event{Type: events.BudgetWarning, Session: k.Session, Agent: k.Agent, Role: after.Role,
				Budget: &events.Budget{Dimension: c.dim, Used: d.Used, Limit: d.Limit, Percent: &pct, Scope: c.scope, Period: p}})
		}
		if d.Level == contract.LevelExhausted {
			out = append(out, events.Event{Type: events.BudgetExhausted, Session: k.Session, Agent: k.Agent, Role: after.Role,
				Budget: &events.Budget{Dimension: c.dim, Used: d.Used, Limit: d.Limit, Scope: c.scope, Period: p}})
		}
	}
	return now, out
}

// dimOrder orders the dimensions as the status line does.
var dimOrder = map[string]int{"tokens": 0, "shell": 1, "cost": 2}

// logCharge writes the decision-log entry of a charge of session k (one
// atomic change of its counters, to after), made at, for tool.
func (g *Governor) logCharge(k budget.Key, tool string, at time.Time, c events.ChargeResult, after budget.Counters) {
	defer g.changed(k)
	if g.decisions == nil {
		return
	}
	c.After = events.ChargeCounters{Tokens: after.Tokens, Shell: after.Shell, CostMicros: after.CostMicros}
	red := g.redact(events.ChargeInput{Role: after.Role, Tool: tool, Session: k.Session, Agent: k.Agent, Project: g.project})
	g.logEntry(entry{id: events.NewID(at), at: at, path: events.PathCharge}, red, c)
}
