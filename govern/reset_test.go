package govern

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
)

// Every reset, of a session's usage or of an agent's across its sessions,
// is an event (BudgetReset, by the operator, with its scope and period)
// and a decision-log entry (harness/reset); a reset of nothing is an
// error and records nothing.
func TestResetsAreRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rec := &recorder{}
	g := agentGovernor(t, budget.NewMemory(), &now, rec)
	logPath := filepath.Join(t.TempDir(), "decisions.jsonl")
	dl, err := events.OpenDecisionLog(logPath, events.DecisionLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dl.Close() })
	g.decisions = dl
	k := budget.Key{Agent: "ci", Session: "s-1"}
	if _, err := g.Decide(ctx, Call{Session: k, Tool: "ctx_shell", Role: "debugger", Reserve: true}); err != nil {
		t.Fatal(err)
	}

	if err := g.Reset(ctx, budget.Key{Agent: "ci", Session: "ghost"}); !errors.Is(err, budget.ErrNoSession) {
		t.Errorf("reset of an unknown session: %v", err)
	}
	if _, err := g.ResetAgent(ctx, "nobody"); err == nil {
		t.Error("reset of an agent that used nothing")
	}
	if err := g.Reset(ctx, k); err != nil {
		t.Fatal(err)
	}
	period, err := g.ResetAgent(ctx, "ci")
	if err != nil || period != "day:2026-12-01" {
		t.Fatalf("agent reset: %s, %v", period, err)
	}

	resets := rec.of(events.BudgetReset)
	want := []struct{ session, role, scope, period string }{
		{"s-1", "debugger", events.ScopeSession, ""},
		{"", "", events.ScopeAgent, "day:2026-12-01"},
	}
	if len(resets) != len(want) {
		t.Fatalf("%d BudgetReset events, want %d: %+v", len(resets), len(want), resets)
	}
	for i, w := range want {
		e := resets[i]
		if e.Reset == nil || e.Reset.By != contract.ByOperator || e.Reset.Scope != w.scope || e.Reset.Period != w.period ||
			e.Agent != "ci" || e.Session != w.session || e.Role != w.role || e.ID == "" {
			t.Errorf("reset %d: %+v %+v", i, e, e.Reset)
		}
	}
	var entries []events.Entry
	events.ReadLines(logPath, 0, func(line []byte) error {
		var e events.Entry
		if err := json.Unmarshal(line, &e); err == nil && e.Path == "harness/reset" {
			entries = append(entries, e)
		}
		return nil
	})
	if len(entries) != 2 {
		t.Fatalf("%d reset entries in the decision log, want 2", len(entries))
	}
	for i, w := range want {
		var in contract.ResetInput
		var out contract.ResetResult
		if err := json.Unmarshal(entries[i].Input, &in); err != nil || json.Unmarshal(entries[i].Result, &out) != nil ||
			in.Session != w.session || in.Agent != "ci" || in.Scope != w.scope || in.Period != w.period || in.By != contract.ByOperator ||
			!out.Reset || out.Role != w.role || entries[i].DecisionID != resets[i].Reset.DecisionID {
			t.Errorf("entry %d: %s → %s (%v)", i, entries[i].Input, entries[i].Result, err)
		}
	}
}
