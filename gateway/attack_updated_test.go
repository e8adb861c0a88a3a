package gateway

import (
	"strings"
	"testing"
	"time"
)

// An upstream's notification that a resource changed names the resource.
// One the session's role may not read is not passed on: its URI (a file's
// name, say) would tell the agent of what it may not see, and how it
// changes. One the role may read is.
func TestAttackUpdatedOfAnUnreadableResource(t *testing.T) {
	t.Parallel()
	b := newBench(t, map[string]string{"guarded": "[role]\ninherits = \"coder\"\n[tools]\ndenied = [\"resource:file:///secret/*\"]\n"})
	a := stdioAgent(t, b.gateway(t, PrefixNever, rawUpstreamConfig(t, "raw")), Identity{Agent: "a", Session: "s", StartRole: "guarded"})
	a.initialize(nil)
	updated := func(uri string) any {
		return map[string]any{"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": map[string]any{"uri": uri}}
	}
	a.tool("raw", map[string]any{"notify": []any{updated("file:///secret/plan.txt"), updated("file:///open/readme.txt")},
		"result": map[string]any{"content": []any{}}})
	// The upstream's notifications come in order: the secret one, sent
	// first, would come before the other.
	for timeout := time.After(30 * time.Second); ; {
		select {
		case m := <-a.notes:
			if strings.Contains(string(m.Params), "secret") {
				t.Fatalf("%s reached the agent: %s", m.Method, m.Params)
			}
			if strings.Contains(string(m.Params), "file:///open/readme.txt") {
				return
			}
		case <-timeout:
			t.Fatal("the readable resource's notification never came")
		}
	}
}
