package govern

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/internal/testredis"
)

// A result settled while Redis loses the reply to its charge (the server
// died after running it, the network failed) is charged once: withheld
// from the agent, since the governor cannot know that it was charged, but
// never charged again.
func TestSettleChargesOnceWhenTheReplyIsLost(t *testing.T) {
	ctx := context.Background()
	p := testredis.NewLossyProxy(t, testredis.URL(t))
	s, err := budget.OpenRedis(ctx, p.URL, budget.Options{Prefix: fmt.Sprintf("govern-lost:%d:", time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g := settleGovernor(t, s)
	k := budget.Key{Agent: "a", Session: "s"}
	text := strings.Repeat("the quick brown fox ", 347) // 1389 tokens
	want, _ := g.tokens.Count(text)
	cost, _ := g.prices.Cost("", 0, want)
	if _, err := g.Settle(ctx, Output{Session: k, Tool: "ctx_read", Parts: []Part{{Text: "warm"}}}); err != nil {
		t.Fatal(err)
	}
	before, err := g.Status(ctx, k, "")
	if err != nil {
		t.Fatal(err)
	}
	p.LoseReplyTo(fmt.Sprintf("\r\n%d\r\n$%d\r\n%d\r\n", want, len(fmt.Sprint(cost)), cost)) // the charge's arguments: its tokens, then its cost
	st, err := g.Settle(ctx, Output{Session: k, Tool: "ctx_read", Parts: []Part{{Text: text}}})
	if p.Lost() != 1 {
		t.Fatal("the proxy lost no reply")
	}
	after, serr := g.Status(ctx, k, "")
	if serr != nil {
		t.Fatal(serr)
	}
	got := after.Budget.Tokens.Used - before.Budget.Tokens.Used
	if got != want {
		t.Errorf("a result of %d tokens, its charge's reply lost, took the usage from %d to %d (settled: %+v, %v)",
			want, before.Budget.Tokens.Used, after.Budget.Tokens.Used, st.Charge, err)
	}
}
