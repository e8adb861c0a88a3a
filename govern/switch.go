package govern

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/roles"
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
		if r.Broken != "" {
			// The rules in force may be ones the operator has since
			// tightened: a role switched into now would outlast them.
			d.Allowed = false
			d.Reasons = []contract.Reason{{Code: contract.CodeSwitchDenied, Rule: "files", Message: r.Broken}}
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

// restrained says why a session may not act in its role, if it may not:
// the project's files no longer load (Rules.Broken), or the role is held
// beyond the agent's ceiling (heldBeyond).
func (r *Rules) restrained(agent, role string) (contract.Reason, bool) {
	if r.Broken != "" {
		return contract.Reason{Code: contract.CodeEvalError, Rule: "files", Message: r.Broken}, true
	}
	return r.heldBeyond(agent, role)
}

// heldBeyond says why a session may not act in its role, if it may not:
// the role is one the project defines, and it is beyond the agent's
// ceiling in the roles the call is decided by. The repository's files are
// the agent's to write (a checkout of another branch rewrites a role file
// that the self-protection rules keep its edits from), so a project's role
// is in effect only within the agent's ceiling, whoever chose it and
// whenever its file changed: the switch rules check a role when the agent
// switches into it, in the project the switch names, which neither a
// rewrite of the file afterwards nor a switch made where the same name is
// narrow may turn into more. An operator who means an agent to hold more
// names a built-in or user role, or raises the agent's max_role.
func (r *Rules) heldBeyond(agent, role string) (contract.Reason, bool) {
	ceiling, beyond := r.Beyond(agent, role)
	if !beyond {
		return contract.Reason{}, false
	}
	return contract.Reason{Code: contract.CodeSwitchDenied, Rule: "ceiling", Message: fmt.Sprintf(
		"the session's role '%s', which this project defines, is beyond %s as the project defines it now: "+
			"an agent holds a project's role only within its ceiling, since the repository's files can change it "+
			"(switch back with ctx_session; an operator names a user's role instead, or raises the agent's max_role)", role, ceiling)}, true
}

// Beyond says whether role is one the project defines beyond agent's
// ceiling, and that ceiling in words: a role in which every call of the
// agent but an exempt tool's is refused (see heldBeyond).
func (r *Rules) Beyond(agent, role string) (ceiling string, beyond bool) {
	doc := r.Engine.Document()
	def, ok := doc.Roles[role]
	if !ok || def.Source != string(roles.SourceProject) {
		return "", false
	}
	covers, ceiling := doc.Ceiling.Covers, "the ceiling of agents without a max_role"
	if m := r.AgentMaxRoles[agent]; m != "" {
		covers, ceiling = nil, fmt.Sprintf("its max_role '%s'", m)
		if md, ok := doc.Roles[m]; ok && md.Source != string(roles.SourceProject) {
			covers = md.Covers
		}
	}
	return ceiling, !covers[role]
}

// refusedForRole is d refused for why (see heldBeyond), with the refusals
// d had: the policy's measure of the budget stays. An exempt tool stays as
// the policy decided it (rule 1): the agent can still see its role and
// switch back.
func refusedForRole(r *Rules, in contract.Input, d contract.Decision, why contract.Reason) contract.Decision {
	if r.Engine.Document().Config.ExemptByOrigin[in.Upstream][in.Tool] {
		return d
	}
	reasons := []contract.Reason{why}
	if d.Decision == contract.Deny {
		reasons = append(reasons, d.Reasons...)
	}
	d.Decision, d.Allowed, d.Reasons = contract.Deny, false, reasons
	return d
}
