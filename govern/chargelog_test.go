package govern

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/events"
)

// Every change of a session's counters is in the decision log: a decision
// that took a shell slot says so (custom.shell), and each charge (settled,
// recorded, or a shell slot given back) is an entry of its own; so what the
// log adds up to is what the ledger holds.
func TestChargesAreLogged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	dl, err := events.OpenDecisionLog(path, events.DecisionLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Close()
	store := budget.NewMemory()
	g := New(Options{Rules: Rules{Engine: relaxed(engine(t))}, Store: store, Decisions: dl})
	k := budget.Key{Agent: "a", Session: "s"}
	steps := []struct {
		name string
		do   func() error
	}{
		{"a shell call", func() error {
			o, err := g.Decide(ctx, Call{Session: k, Tool: "ctx_shell", Reserve: true})
			if err == nil && !o.Reserved {
				t.Errorf("no shell slot taken: %+v", o)
			}
			return err
		}},
		{"a question", func() error { _, err := g.Decide(ctx, Call{Session: k, Tool: "ctx_shell"}); return err }},
		{"a settled result", func() error {
			o, err := g.Decide(ctx, Call{Session: k, Tool: "ctx_read"})
			if err != nil {
				return err
			}
			_, err = g.Settle(ctx, Output{Session: k, Tool: "ctx_read", Arguments: `{"path":"x"}`, Parts: []Part{{Text: "hello world"}}, DecisionID: o.DecisionID, Background: true})
			g.Wait()
			return err
		}},
		{"a recorded result", func() error {
			_, err := g.Record(ctx, Result{Session: k, Tool: "ctx_search", Output: "one two three"})
			return err
		}},
		{"a slot given back", func() error {
			o, err := g.Decide(ctx, Call{Session: k, Tool: "ctx_shell", Reserve: true})
			if err != nil {
				return err
			}
			return g.ReleaseShell(ctx, k, "ctx_shell", o.Period)
		}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	var sum events.ChargeCounters
	var charges, decisions int
	var linked bool
	err = events.ReadLines(path, 0, func(line []byte) error {
		var e events.Entry
		if err := json.Unmarshal(line, &e); err != nil {
			return err
		}
		switch e.Path {
		case events.PathDecision:
			decisions++
			if e.Custom != nil {
				sum.Shell += e.Custom.Shell
			}
		case events.PathCharge:
			charges++
			var in events.ChargeInput
			var c events.ChargeResult
			if err := json.Unmarshal(e.Input, &in); err != nil {
				return err
			}
			if err := json.Unmarshal(e.Result, &c); err != nil {
				return err
			}
			if in.Session != "s" || in.Agent != "a" || in.Role != "coder" {
				t.Errorf("charge input: %+v", in)
			}
			linked = linked || c.DecisionID != ""
			sum.Tokens += c.Tokens
			sum.Shell += c.Shell
			sum.CostMicros += c.CostMicros
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := store.Get(ctx, k, "")
	if err != nil {
		t.Fatal(err)
	}
	if decisions != 4 || charges != 3 || !linked {
		t.Errorf("%d decisions, %d charges (linked to a decision: %v); want 4 and 3", decisions, charges, linked)
	}
	if want := (events.ChargeCounters{Tokens: c.Tokens, Shell: c.Shell, CostMicros: c.CostMicros}); sum != want || c.Tokens == 0 || c.Shell != 1 {
		t.Errorf("the log adds up to %+v, the ledger has %+v", sum, want)
	}
}
