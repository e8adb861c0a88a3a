package govern

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/policy"
)

// loggedInput is the input as the policy saw it, with the shell policy the
// engine filled in.
type loggedInput struct {
	contract.Input
	ShellPolicy string `json:"shell_policy"`
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

// logEntry writes the decision-log entry of the decision id, made at, its
// input as red masked it.
func (g *Governor) logEntry(id string, at time.Time, path string, red *events.Redaction, result any, elapsed time.Duration, shadow bool) {
	if g.decisions != nil {
		err := g.decisions.Log(events.Entry{
			DecisionID: id,
			Path:       path,
			Timestamp:  at.UTC(),
			Metrics:    map[string]int64{"timer_rego_query_eval_ns": elapsed.Nanoseconds()},
			Shadow:     shadow,
		}, red, result)
		if err != nil {
			g.onError(fmt.Errorf("decision log: %w", err))
		}
	}
}

// recordDecision writes the decision log entry and, for a deny, the
// PolicyViolation event (its reasons summarised), both masked; it returns
// the decision's redaction, for the events that follow from it.
func (g *Governor) recordDecision(o Outcome, at time.Time, in contract.Input, elapsed time.Duration) *events.Redaction {
	d := o.Decision
	red := g.redact(loggedInput{in, d.ShellPolicy})
	g.logEntry(o.DecisionID, at, "harness/decision", red, d, elapsed, g.shadow)
	if !d.Allowed {
		reasons := events.SummariseReasons(d.Reasons)
		g.emit(red, events.Event{
			Type: events.PolicyViolation, Session: in.Session, Agent: in.Agent, Role: d.Role, Shadow: o.Shadowed,
			Violation: &events.Violation{Tool: d.Tool, Reason: oneLine(reasons, false), Reasons: reasons, DecisionID: o.DecisionID},
		})
	}
	return red
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

// crossings emits BudgetWarning and BudgetExhausted for every dimension
// that one atomic change of the counters (before → after) carried into
// those levels, as the policy measures them: it returns the levels after,
// and the BudgetWarning and BudgetExhausted events to emit.
// Counters only grow and every change is atomic, so exactly one change
// crosses each threshold: each crossing is reported once, however many
// calls run at the same moment. A role switch is such a change too: the
// same usage measured against the new role's limits. The levels of both
// sides take one evaluation (the policy's levels entry point); the
// figures of the events, one more when something was crossed.
func (g *Governor) crossings(ctx context.Context, r *Rules, k budget.Key, before, after budget.Counters) (policy.Levels, []events.Event) {
	if before.Role == "" {
		before.Role = after.Role
	}
	ls, err := r.Engine.Levels(ctx, policy.RoleUsage{Role: before.Role, Usage: usage(before)}, policy.RoleUsage{Role: after.Role, Usage: usage(after)})
	if err == nil && !ls[0].Defined && ls[1].Defined { // a role that is gone: measure by the new one
		var again []policy.Levels
		if again, err = r.Engine.Levels(ctx, policy.RoleUsage{Role: after.Role, Usage: usage(before)}); err == nil {
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
	var crossed []string
	for _, dim := range []struct{ name, was, is string }{
		{"tokens", was.Tokens, now.Tokens}, {"shell", was.Shell, now.Shell}, {"cost", was.Cost, now.Cost},
	} {
		if levelRank[dim.is] > levelRank[dim.was] {
			crossed = append(crossed, dim.name)
		}
	}
	if len(crossed) == 0 {
		return now, nil
	}
	st, err := r.Engine.Status(ctx, after.Role, usage(after))
	if err != nil {
		g.onError(fmt.Errorf("budget of session %s: %w", k, err))
		return now, nil
	}
	var out []events.Event
	figures := map[string]contract.Dimension{"tokens": st.Budget.Tokens, "shell": st.Budget.Shell, "cost": st.Budget.Cost}
	wasLevel := map[string]string{"tokens": was.Tokens, "shell": was.Shell, "cost": was.Cost}
	for _, name := range crossed {
		d := figures[name]
		if levelRank[wasLevel[name]] < levelRank[contract.LevelWarning] {
			p := d.Percent
			out = append(out, events.Event{Type: events.BudgetWarning, Session: k.Session, Agent: k.Agent, Role: after.Role,
				Budget: &events.Budget{Dimension: name, Used: d.Used, Limit: d.Limit, Percent: &p}})
		}
		if d.Level == contract.LevelExhausted {
			out = append(out, events.Event{Type: events.BudgetExhausted, Session: k.Session, Agent: k.Agent, Role: after.Role,
				Budget: &events.Budget{Dimension: name, Used: d.Used, Limit: d.Limit}})
		}
	}
	return now, out
}
