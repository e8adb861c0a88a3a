package govern

import (
	"context"
	"testing"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/internal/testroles"
	"github.com/agentharness/harness/policy"
)

// TestAttackReleaseShellAcrossMidnight: a shell call decided just before
// midnight UTC took its slot in the agent's day that was ending; its
// upstream down, the slot was given back just after midnight, to the day
// that had begun. The new day's count went down by one for a call it
// never counted (another session's call that ran was forgotten), and the
// old day's kept a call that never ran. Calls fired at a dead upstream
// around midnight each take one shell call off the agent's new day.
func TestAttackReleaseShellAcrossMidnight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			now := time.Date(2026, 12, 1, 23, 59, 59, 999_000_000, time.UTC)
			g := agentGovernor(t, s, &now)
			before := budget.Key{Agent: "ci", Session: "before-midnight"}
			o, err := g.Decide(ctx, Call{Session: before, Tool: "ctx_shell", Reserve: true})
			if err != nil || !o.Reserved {
				t.Fatalf("the call before midnight: %+v %v", o.Decision, err)
			}
			now = time.Date(2026, 12, 2, 0, 0, 0, 1_000_000, time.UTC)
			after := budget.Key{Agent: "ci", Session: "after-midnight"}
			if o, err := g.Decide(ctx, Call{Session: after, Tool: "ctx_shell", Reserve: true}); err != nil || !o.Reserved {
				t.Fatalf("the call after midnight: %+v %v", o.Decision, err)
			}
			// The call before midnight never reached its tool.
			if err := g.ReleaseShell(ctx, before, "ctx_shell", o.Period); err != nil {
				t.Fatal(err)
			}
			for _, tt := range []struct {
				period budget.Period
				want   int64
			}{{"day:2026-12-01", 0}, {"day:2026-12-02", 1}} {
				c, err := s.Get(ctx, after, tt.period)
				if err != nil {
					t.Fatal(err)
				}
				if c.AgentUsage.Shell != tt.want {
					t.Errorf("agent ci's shell calls in %s: %d, want %d (the slot was given back to the wrong day)", tt.period, c.AgentUsage.Shell, tt.want)
				}
			}
		})
	}
}

// TestAttackZeroLimitRoleEscapesTheCeiling: a limit of 0 context tokens
// or of $0 is never exhausted (contract rule 5: a role must not be locked
// out by usage made under another), so a role with one has no bound on
// that dimension at all; yet the ceiling compared it as the smallest
// limit there is. A project's role file with max_context_tokens = 0 and
// max_cost_usd = 0 was within every ceiling: the agent switched itself
// into it and went on past 10,000,000 tokens and $100, where its ceiling
// (the built-ins' least upper bound, or its max_role coder) stops it at
// 200,000 tokens and $5.
func TestAttackZeroLimitRoleEscapesTheCeiling(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct {
		name, limits  string
		maxRole       string
		tokens, micro int64 // the usage charged in the role
	}{
		{"no tokens limit", "max_context_tokens = 0", "", 10_000_000, 0},
		{"no cost limit", "max_cost_usd = 0.0", "", 0, 100_000_000},
		{"neither", "max_context_tokens = 0\nmax_cost_usd = 0.0", "", 10_000_000, 100_000_000},
		{"neither, under max_role coder", "max_context_tokens = 0\nmax_cost_usd = 0.0", "coder", 10_000_000, 100_000_000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			set := testroles.Set(t, map[string]string{"free": "[role]\ninherits = \"coder\"\n[limits]\n" + tt.limits + "\n"})
			e, err := policy.New(ctx, compiler.Compile(set, compiler.DefaultConfig()))
			if err != nil {
				t.Fatal(err)
			}
			relaxed(e)
			s := budget.NewMemory()
			g := New(Options{Rules: Rules{Engine: e, Roles: set, AgentMaxRoles: map[string]string{"a": tt.maxRole}}, Store: s})
			k := budget.Key{Agent: "a", Session: "s"}
			o, err := g.Switch(ctx, k, "free", contract.ByAgent)
			if err != nil {
				t.Fatal(err)
			}
			if o.Decision.Allowed || o.Switched {
				t.Errorf("the agent switched itself into a role without a bound on tokens or cost: %+v", o.Decision)
			}
			// Set by the operator (or switched into before the file
			// changed), the project's role is held to the ceiling.
			if _, err := g.Switch(ctx, k, "free", contract.ByOperator); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Charge(ctx, k, "", tt.tokens, tt.micro); err != nil {
				t.Fatal(err)
			}
			d, err := g.Decide(ctx, Call{Session: k, Tool: "ctx_read"})
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed {
				t.Errorf("a read after %d tokens and %d micro-dollars in the project's role: %s %+v", tt.tokens, tt.micro, d.Decision.Decision, d.Decision.Warnings)
			}
		})
	}
}
