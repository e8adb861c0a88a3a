package govern

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
)

// observed is an Observer that keeps what it hears.
type observed struct {
	mu        sync.Mutex
	decisions []string // decision/tool/role, or "error"
	usage     contract.Usage
	agents    map[string]bool
}

func (o *observed) Decided(d contract.Decision, took time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		o.decisions = append(o.decisions, "error")
		return
	}
	o.decisions = append(o.decisions, d.Decision+"/"+d.Tool+"/"+d.Role)
}

func (o *observed) Charged(agent, role string, u contract.Usage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.agents == nil {
		o.agents = map[string]bool{}
	}
	o.agents[agent+"/"+role] = true
	o.usage.Tokens += u.Tokens
	o.usage.CostMicros += u.CostMicros
	o.usage.Shell += u.Shell
}

// failing is a ledger that fails every read.
type failing struct{ budget.Store }

func (failing) Get(context.Context, budget.Key, budget.Period) (budget.Counters, error) {
	return budget.Counters{}, errors.New("down")
}

// The observer hears each decision, and the usage charged to the ledger:
// shell slots taken and given back, tokens and cost recorded; it equals
// what the ledger holds. An operator's reset is a BudgetReset event.
func TestObserver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := budget.NewMemory()
	obs := &observed{}
	rec := &recorder{}
	g := New(Options{Rules: Rules{Engine: engine(t)}, Store: s, Observer: obs, Sinks: []events.Sink{rec}})
	k := budget.Key{Session: "s", Agent: "a"}
	for _, c := range []Call{
		{Session: k, Tool: "ctx_read", Role: "coder"},
		{Session: k, Tool: "ctx_shell", Reserve: true},
		{Session: k, Tool: "ctx_shell", Reserve: true},
		{Session: budget.Key{Session: "r", Agent: "a"}, Tool: "ctx_edit", Role: "reviewer"},
	} {
		if _, err := g.Decide(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.ReleaseShell(ctx, k, "ctx_shell", ""); err != nil { // no agent budget
		t.Fatal(err)
	}
	ch, err := g.Record(ctx, Result{Session: k, Tool: "ctx_read", Arguments: `{"path":"x"}`, Output: "hello world"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"allow/ctx_read/coder", "allow/ctx_shell/coder", "allow/ctx_shell/coder", "deny/ctx_edit/reviewer"}
	if len(obs.decisions) != len(want) {
		t.Fatalf("decisions %v, want %v", obs.decisions, want)
	}
	for i := range want {
		if obs.decisions[i] != want[i] {
			t.Errorf("decision %d: %s, want %s", i, obs.decisions[i], want[i])
		}
	}
	c, err := s.Get(ctx, k, "")
	if err != nil {
		t.Fatal(err)
	}
	if obs.usage != (contract.Usage{Tokens: c.Tokens, CostMicros: c.CostMicros, Shell: c.Shell}) || obs.usage.Shell != 1 ||
		obs.usage.Tokens != ch.OutputTokens || obs.usage.CostMicros != ch.CostMicros || !obs.agents["a/coder"] {
		t.Errorf("observed %+v (%v), the ledger holds %+v", obs.usage, obs.agents, c)
	}

	if err := g.Reset(ctx, k); err != nil {
		t.Fatal(err)
	}
	resets := rec.of(events.BudgetReset)
	if len(resets) != 1 || resets[0].Session != "s" || resets[0].Agent != "a" || resets[0].Reset == nil || resets[0].Reset.Scope != events.ScopeSession {
		t.Errorf("reset events %+v", resets)
	}

	bad := New(Options{Rules: Rules{Engine: engine(t)}, Store: failing{s}, Observer: obs})
	if _, err := bad.Decide(ctx, Call{Session: k, Tool: "ctx_read"}); err == nil {
		t.Fatal("decided on a ledger that fails")
	}
	if last := obs.decisions[len(obs.decisions)-1]; last != "error" {
		t.Errorf("a call not decided was observed as %s", last)
	}
}
