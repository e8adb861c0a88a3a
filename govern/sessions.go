package govern

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
)

// SessionInfo is a session of the ledger and its budget under its role as
// the policy measures it.
type SessionInfo struct {
	budget.Session
	Status contract.Status
	// Defined is false when the rules in force do not define its role.
	Defined bool
}

// Sessions lists the sessions of the ledger, the latest change first; with
// session given, those of that id (one per agent that has it).
func (g *Governor) Sessions(ctx context.Context, session string) ([]SessionInfo, error) {
	r := g.rules.Load()
	list, err := g.store.Sessions(ctx, session)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	out := make([]SessionInfo, len(list))
	for i, s := range list {
		period := g.period(r, s.Agent)
		if period != "" {
			c, err := g.store.Get(ctx, s.Key, period)
			if err != nil {
				return nil, fmt.Errorf("ledger: %w", err)
			}
			s.AgentUsage = c.AgentUsage
		}
		st, err := r.Engine.Status(ctx, statusInput(s.Key, s.Counters, period))
		out[i] = SessionInfo{Session: s, Status: st, Defined: err == nil}
	}
	return out, nil
}

// AmbiguousSessionError is a session id that several agents have, named
// without its agent.
type AmbiguousSessionError struct {
	Session string
	Agents  []string
}

func (e *AmbiguousSessionError) Error() string {
	names := make([]string, len(e.Agents))
	for i, a := range e.Agents {
		names[i] = a
		if a == "" {
			names[i] = `"" (no agent)`
		}
	}
	return fmt.Sprintf("session %s is a session of several agents (%s): name one with --agent", e.Session, strings.Join(names, ", "))
}

// Find is the session that id and agent name: with agentGiven, the session
// of that agent; without, the session of that id of the one agent that
// has one. found is false when the ledger has no such session (the key is
// then that of a new session: of agent, if given); several agents with a
// session of that id are an *AmbiguousSessionError.
func (g *Governor) Find(ctx context.Context, id, agent string, agentGiven bool) (k budget.Key, found bool, err error) {
	k = budget.Key{Session: id, Agent: agent}
	if err := k.Validate(); err != nil {
		return k, false, err
	}
	list, err := g.store.Sessions(ctx, id)
	if err != nil {
		return k, false, fmt.Errorf("ledger: %w", err)
	}
	if agentGiven {
		for _, s := range list {
			if s.Key == k {
				return k, true, nil
			}
		}
		return k, false, nil
	}
	switch len(list) {
	case 0:
		return k, false, nil
	case 1:
		return list[0].Key, true, nil
	}
	agents := make([]string, len(list))
	for i, s := range list {
		agents[i] = s.Agent
	}
	slices.Sort(agents)
	return k, false, &AmbiguousSessionError{Session: id, Agents: agents}
}

// Limits are the limits of role under the rules in force (money in
// micro-dollars), with its warn and block percentages; false when the
// rules do not define it.
func (g *Governor) Limits(role string) (compiler.LimitsDoc, bool) {
	r, ok := g.rules.Load().Engine.Document().Roles[role]
	return r.Limits, ok
}
