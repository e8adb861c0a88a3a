package govern

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
)

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
	g.emit(events.Event{
		Type: events.PolicyViolation, Session: in.Session, Agent: in.Agent, Role: d.Role, Shadow: o.Shadowed,
		Violation: &events.Violation{Tool: d.Tool, Reason: oneLine(d.Reasons, false), Reasons: d.Reasons, DecisionID: o.DecisionID},
	})
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

func (g *Governor) emit(e events.Event) {
	e.Stamp(g.now())
	for _, s := range g.sinks {
		if err := s.Emit(e); err != nil {
			g.onError(fmt.Errorf("event %s: %w", e.Type, err))
		}
	}
}

// levelRank orders budget levels.
var levelRank = map[string]int{contract.LevelOK: 0, contract.LevelWarning: 1, contract.LevelExhausted: 2}

// crossings emits BudgetWarning and BudgetExhausted for every dimension
// that one atomic change of the counters (before → after) carried into
// those levels, as the policy measures them (its status entry point), and
// returns the status after. Counters only grow and every change is atomic,
// so exactly one change crosses each threshold: each crossing is reported
// once, however many calls run at the same moment. A role switch is such a
// change too: the same usage measured against the new role's limits.
func (g *Governor) crossings(ctx context.Context, r *Rules, k budget.Key, before, after budget.Counters) contract.Status {
	now, err := r.Engine.Status(ctx, after.Role, usage(after))
	if err != nil {
		g.onError(fmt.Errorf("budget levels of session %s: %w", k, err))
		return contract.Status{}
	}
	if before.Role == "" {
		before.Role = after.Role
	}
	was, err := r.Engine.Status(ctx, before.Role, usage(before))
	if err != nil {
		was, err = r.Engine.Status(ctx, after.Role, usage(before)) // a role that is gone: measure by the new one
		if err != nil {
			g.onError(fmt.Errorf("budget levels of session %s: %w", k, err))
			return now
		}
	}
	for _, dim := range []struct {
		name    string
		was, is contract.Dimension
	}{
		{name: "tokens", was: was.Budget.Tokens, is: now.Budget.Tokens},
		{name: "shell", was: was.Budget.Shell, is: now.Budget.Shell},
		{name: "cost", was: was.Budget.Cost, is: now.Budget.Cost},
	} {
		from, to := levelRank[dim.was.Level], levelRank[dim.is.Level]
		if to <= from {
			continue
		}
		if from < levelRank[contract.LevelWarning] {
			p := dim.is.Percent
			g.emit(events.Event{Type: events.BudgetWarning, Session: k.Session, Agent: k.Agent, Role: after.Role,
				Budget: &events.Budget{Dimension: dim.name, Used: dim.is.Used, Limit: dim.is.Limit, Percent: &p}})
		}
		if to == levelRank[contract.LevelExhausted] {
			g.emit(events.Event{Type: events.BudgetExhausted, Session: k.Session, Agent: k.Agent, Role: after.Role,
				Budget: &events.Budget{Dimension: dim.name, Used: dim.is.Used, Limit: dim.is.Limit}})
		}
	}
	return now
}
