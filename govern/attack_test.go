package govern

import (
	"context"
	"testing"
	"time"

	"github.com/agentharness/harness/budget"
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
