package govern

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
)

// SwitchOutcome is what came of a role switch.
type SwitchOutcome struct {
	Decision contract.SwitchDecision
	// Switched is true when the role changed (false when refused, or when
	// the session was already in the role).
	Switched bool
	// Counters are the session's counters afterwards: usage unchanged.
	Counters   budget.Counters
	DecisionID string
	// Status is the session's budget afterwards, under its role then.
	Status contract.Status
}

// Switch changes a session's active role, by an agent (under the switch
// rules) or by the operator. The role changes by a compare-and-swap on the
// role the switch was decided on; usage is never touched, and the new
// role's limits apply to it at once. Every switch, made or refused, is an
// event (RoleChanged, or PolicyViolation with code switch_denied) and a
// decision-log entry.
func (g *Governor) Switch(ctx context.Context, k budget.Key, to, by string) (SwitchOutcome, error) {
	r := g.rules.Load()
	period := g.period(r, k.Agent)
	cur, err := g.session(ctx, r, k, "", period)
	if err != nil {
		return SwitchOutcome{}, err
	}
	agent := cur.AgentUsage // a switch does not change it
	for range maxAttempts {
		cur.AgentUsage = agent
		if cur.Role == to {
			st, _ := r.Engine.Status(ctx, statusInput(k, cur, period))
			return SwitchOutcome{Decision: contract.SwitchDecision{Allowed: true, From: to, To: to, By: by, Reasons: []contract.Reason{}},
				Counters: cur, Status: st}, nil
		}
		in := contract.SwitchInput{From: cur.Role, To: to, By: by, Session: k.Session, Agent: k.Agent, MaxRole: r.AgentMaxRoles[k.Agent]}
		start := g.now()
		d, err := r.Engine.Switch(ctx, in)
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
			next.AgentUsage = agent
			o.Switched, o.Counters = true, next
		}
		at := g.now()
		o.DecisionID = events.NewID(at)
		red := g.redact(in)
		g.logEntry(entry{id: o.DecisionID, at: at, path: events.PathSwitch, elapsed: elapsed, revision: r.Engine.Revision()}, red, d)
		if !o.Switched {
			o.Status, _ = r.Engine.Status(ctx, statusInput(k, cur, period))
			reasons := events.SummariseReasons(d.Reasons)
			g.emit(red, events.Event{Type: events.PolicyViolation, Session: k.Session, Agent: k.Agent, Role: cur.Role,
				Violation: &events.Violation{Tool: contract.SessionTool, Reason: oneLine(reasons, true), Reasons: reasons, DecisionID: o.DecisionID}})
			return o, nil
		}
		g.emit(red, events.Event{Type: events.RoleChanged, Session: k.Session, Agent: k.Agent,
			Switch: &events.Switch{From: cur.Role, To: to, By: by}})
		_, crossed := g.crossings(ctx, r, k, period, cur, o.Counters)
		for _, e := range crossed {
			g.emit(red, e)
		}
		o.Status, _ = r.Engine.Status(ctx, statusInput(k, o.Counters, period))
		return o, nil
	}
	return SwitchOutcome{}, errors.New("ledger: could not switch: the role kept changing")
}
