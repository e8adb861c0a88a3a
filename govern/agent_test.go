package govern

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/policy"
	"github.com/agentharness/harness/roles"
)

// agentGovernor is a governor whose agents have budgets across their
// sessions: "ci" 3 shell calls and 1000 tokens a day (warn at 50%),
// every other agent $1 in all; its clock is *now.
func agentGovernor(t *testing.T, s budget.Store, now *time.Time, sinks ...events.Sink) *Governor {
	t.Helper()
	set, err := roles.Load(roles.Dirs{})
	if err != nil {
		t.Fatal(err)
	}
	n := func(v int64) *int64 { return &v }
	cfg := compiler.DefaultConfig()
	cfg.AgentBudgets = map[string]compiler.AgentBudget{
		"ci":              {Period: "day", Tokens: n(1000), Shell: n(3), WarnPercent: 50, BlockPercent: 100},
		compiler.AnyAgent: {Period: "total", CostMicros: n(1_000_000), WarnPercent: 80, BlockPercent: 100},
	}
	e, err := policy.New(context.Background(), compiler.Compile(set, cfg))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	return New(Options{Rules: Rules{Engine: relaxed(e), Roles: set}, Store: s, Sinks: sinks,
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return *now }})
}

// An agent's budget holds across its sessions: a new session is no fresh
// budget, the most restrictive of session and agent wins with its own
// reason code, and the status line shows both.
func TestAgentBudgetAcrossSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
			bus := events.NewBus()
			sub := bus.Subscribe(64)
			g := agentGovernor(t, s, &now, bus)
			for i := range 3 {
				k := budget.Key{Agent: "ci", Session: fmt.Sprintf("s-%d", i)}
				o, err := g.Decide(ctx, Call{Session: k, Tool: "ctx_shell", Reserve: true})
				if err != nil || !o.Allowed || !o.Reserved {
					t.Fatalf("shell call %d: %+v %v", i, o.Decision, err)
				}
			}
			// A fourth session of the agent: its own shell budget is fresh,
			// the agent's is spent.
			o, err := g.Decide(ctx, Call{Session: budget.Key{Agent: "ci", Session: "s-new"}, Tool: "ctx_shell", Reserve: true})
			if err != nil || o.Allowed || len(o.Decision.Reasons) != 2 || o.Decision.Reasons[0].Code != contract.CodeAgentBudgetExhausted ||
				o.Decision.Reasons[1].Code != contract.CodeAgentShellBudget || o.Reserved {
				t.Fatalf("a fresh session of a spent agent: %+v %v", o.Decision, err)
			}
			st, err := g.Status(ctx, budget.Key{Agent: "ci", Session: "s-new"}, "")
			if err != nil || st.StatusLine() != "Budget[coder]: tokens 0/200000 (0%) | shell 0/100 (0%) | cost $0.00/$5.00 (0%) → OK | Agent[ci, day]: tokens 0/1000 (0%) | shell 3/3 (100%) → EXHAUSTED" {
				t.Errorf("status: %s %v", st.StatusLine(), err)
			}
			// Every other agent has the budget of every agent.
			if st, _ := g.Status(ctx, budget.Key{Agent: "other", Session: "x"}, ""); st.AgentBudget == nil || st.AgentBudget.Period != "total" || st.AgentBudget.Cost.Limit != 1_000_000 {
				t.Errorf("another agent: %+v", st.AgentBudget)
			}
			// The crossings of the agent's shell budget are events of scope
			// agent, with the period, once each.
			var got []string
			for len(sub.C) > 0 {
				e := <-sub.C
				if e.Budget != nil {
					got = append(got, fmt.Sprintf("%s %s %s %s %d/%d", e.Type, e.Scope, e.Period, e.Dimension, e.Used, e.Limit))
				}
			}
			want := fmt.Sprint([]string{"BudgetWarning agent day:2026-12-01 shell 2/3", "BudgetExhausted agent day:2026-12-01 shell 3/3"})
			if fmt.Sprint(got) != want {
				t.Errorf("events %v, want %s", got, want)
			}
		})
	}
}

// A period's budget rolls over at its end, in UTC; "total" never does.
func TestAgentBudgetRollsOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 23, 59, 59, 0, time.FixedZone("east", 5*3600)) // 18:59:59 UTC
	g := agentGovernor(t, budget.NewMemory(), &now)
	k := budget.Key{Agent: "ci", Session: "long"}
	if _, err := g.Record(ctx, Result{Session: k, Tool: "ctx_read", Output: "hello world"}); err != nil {
		t.Fatal(err)
	}
	used := func() int64 {
		st, err := g.Status(ctx, k, "")
		if err != nil {
			t.Fatal(err)
		}
		return st.AgentBudget.Tokens.Used
	}
	if used() != 2 {
		t.Fatalf("tokens used today: %d", used())
	}
	now = time.Date(2026, 12, 1, 23, 59, 59, 0, time.UTC)
	if used() != 2 {
		t.Errorf("the same UTC day: %d", used())
	}
	now = now.Add(time.Second)
	if used() != 0 {
		t.Errorf("a new UTC day: %d used", used())
	}
	if st, _ := g.Status(ctx, k, ""); st.Budget.Tokens.Used != 2 {
		t.Errorf("the session's own usage must stay: %+v", st.Budget.Tokens)
	}
	for kind, want := range map[string]string{
		"day": "day:2026-12-02", "week": "week:2026-W49", "month": "month:2026-12", "total": "total",
	} {
		if got := PeriodKey(kind, now); got != want {
			t.Errorf("%s of %v: %s, want %s", kind, now, got, want)
		}
	}
	if got := PeriodKey("week", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)); got != "week:2026-W53" {
		t.Errorf("ISO week of 2027-01-01: %s", got)
	}
}

// Sessions of one agent racing for the agent's last shell slots through
// the governor get exactly the free ones.
func TestAgentShellSlotsExactlyAdmitted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
			g := agentGovernor(t, s, &now)
			var allowed atomic.Int64
			var wg sync.WaitGroup
			for i := range 24 {
				wg.Go(func() {
					o, err := g.Decide(ctx, Call{Session: budget.Key{Agent: "ci", Session: fmt.Sprintf("s-%d", i%6)}, Tool: "ctx_shell", Reserve: true})
					if err != nil {
						t.Error(err)
					}
					if o.Reserved {
						allowed.Add(1)
					}
				})
			}
			wg.Wait()
			if allowed.Load() != 3 {
				t.Errorf("%d shell calls admitted of the agent's 3", allowed.Load())
			}
		})
	}
}
