package budget

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestAttackRedisTTLForgetsAgentBudget: with a ledger TTL shorter than an
// agent's budget period (ttl = "1h", a month's budget), the agent's
// counters of the period expired with the TTL: an agent that stayed idle
// for an hour came back to a month without usage, a fresh budget no
// operator gave it. An agent's counters of a period must live until the
// period is over, whatever the TTL of sessions.
func TestAttackRedisTTLForgetsAgentBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prefix := fmt.Sprintf("attack-ttl:%d:", time.Now().UnixNano())
	s, err := OpenRedis(ctx, redisURL(t), Options{Prefix: prefix, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tt := range []struct {
		period Period
		lasts  time.Duration // the longest the period runs
	}{
		{"day:2026-12-01", 24 * time.Hour},
		{"week:2026-W49", 7 * 24 * time.Hour},
		{"month:2026-12", 31 * 24 * time.Hour},
	} {
		k := Key{Agent: "claude-code", Session: "s-" + tt.period[:3]}
		if _, err := s.Charge(ctx, k, tt.period, 4_000_000, 1); err != nil {
			t.Fatal(err)
		}
		ttl, err := s.client.TTL(ctx, s.agentKey(k.Agent, tt.period)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl != -1 && ttl < tt.lasts {
			t.Errorf("the agent's %s counters (4,000,000 tokens) expire in %v, before the period ends (up to %v): an idle agent comes back to a fresh budget",
				tt.period, ttl, tt.lasts)
		}
	}
}
