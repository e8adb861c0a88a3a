package gateway

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestAttackRequestsHeldWithoutBound: one agent's requests under way are
// not bounded: each holds its body (up to [gateway] max_body_mb) and its
// decoded arguments for as long as the agent likes (here: a call decided
// ask, whose elicitation the agent's client never answers), so that one
// token can grow the gateway's heap until it fails every agent's
// sessions. Past a bound, a request is refused (429) before its body is
// read.
func TestAttackRequestsHeldWithoutBound(t *testing.T) {
	b := newBench(t, map[string]string{"asker": "[role]\ninherits = \"coder\"\n[tools]\nask = [\"ctx_read\"]\n"})
	g := b.gateway(t, PrefixNever, fixtureUpstream(t, "lean"))
	url := httpBench(t, g, "asker", "evil-token-0123456789")
	evil := newHTTPAgent(t, url, "evil-token-0123456789")
	evil.initialize(map[string]any{"elicitation": map[string]any{}})
	go func() { // the questions, taken and never answered
		for range evil.requests {
		}
	}()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const held, size = 128, 2 << 20
	path := strings.Repeat("x", size)
	for range held {
		evil.request("tools/call", map[string]any{"name": "ctx_read", "arguments": map[string]any{"path": path}})
	}
	// Under way, or refused: what is under way after 10 s is all that
	// will be.
	for deadline := time.Now().Add(10 * time.Second); g.inflightCount(false) < held && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapInuse) - int64(before.HeapInuse)
	n := g.inflightCount(false)
	g.Close() // the requests held end, so that the agent's client is done
	if int64(n)*size > DefaultMaxPending {
		t.Errorf("one agent holds %d requests under way, %d MiB of bodies (at most %d MiB), %d MiB of the gateway's heap", n, n*size>>20, DefaultMaxPending>>20, grown>>20)
	}
}
