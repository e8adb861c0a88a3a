package gateway

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
)

// TestAttackErrorTextUnchargedPerCall: the upstream's words an error of
// the connection quotes (an HTTP error's body, a handshake's failure,
// quoted by every call while the upstream is down) were cut to 256 bytes
// a call and never charged, so that an agent calling again and again
// read as much of them as it liked: 40 calls of an agent of 100 tokens
// read 1,200 tokens of them (200 copies of the words), and none was charged. What of them reaches the agent is
// charged, and what its budget cannot take is withheld.
func TestAttackErrorTextUnchargedPerCall(t *testing.T) {
	t.Parallel()
	tools := upstreamOK(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"prompts":{},"completions":{},"resources":{}},"serverInfo":{"name":"x","version":"1"}}`)
	toolList := upstreamOK(`{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`)
	promptList := upstreamOK(`{"prompts":[{"name":"p","arguments":[{"name":"a"}]}]}`)
	resourceList := upstreamOK(`{"resources":[{"uri":"file:///r","name":"r"}]}`)
	failing := reply{http.StatusInternalServerError, attackWords}
	base := func(method string, r reply) map[string]reply {
		m := map[string]reply{"initialize": tools, "tools/list": toolList, "prompts/list": promptList, "resources/list": resourceList}
		m[method] = r
		return m
	}
	for _, tt := range []struct {
		name    string
		replies map[string]reply
		do      func(*agent) *message
	}{
		{"a call's HTTP error body", base("tools/call", failing),
			agentCall("tools/call", map[string]any{"name": "t", "arguments": map[string]any{}})},
		{"calls while the handshake fails", map[string]reply{"initialize": failing},
			agentCall("tools/call", map[string]any{"name": "t", "arguments": map[string]any{}})},
		{"a read's HTTP error body", base("resources/read", failing),
			agentCall("resources/read", map[string]any{"uri": "file:///r"})},
		{"a completion's HTTP error body", base("completion/complete", failing),
			agentCall("completion/complete", map[string]any{"ref": map[string]string{"type": "ref/prompt", "name": "p"}, "argument": map[string]string{"name": "a", "value": ""}})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBench(t, smallRole(100))
			a := stdioAgent(t, b.gateway(t, PrefixNever, scriptedUpstream(t, "x", tt.replies)), Identity{Agent: "a", Session: "s", StartRole: "small"})
			a.initialize(nil)
			copies := 0
			for range 40 {
				copies += strings.Count(string(mustJSON(tt.do(a))), "secret words of the upstream")
			}
			reached := int64(copies) * tokens(t, "secret words of the upstream ")
			charged := b.counters(t, "a", "s").Tokens
			if reached > charged || charged > 100 {
				t.Errorf("40 requests read %d copies of the upstream's words (%d tokens); %d tokens were charged (limit 100)", copies, reached, charged)
			}
		})
	}
}

// TestAttackListsUncharged: what an upstream lists (a tool's description
// and schema, a resource's or a prompt's name and description) reaches
// the agent's context, and none of it was charged: a tool described in
// 10,000 tokens reached an agent of 100. What is listed is charged as
// any text an upstream sends, once a session for the same item; an item
// the budget cannot take is not listed.
func TestAttackListsUncharged(t *testing.T) {
	t.Parallel()
	init := upstreamOK(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"prompts":{},"resources":{}},"serverInfo":{"name":"x","version":"1"}}`)
	lists := map[string]reply{
		"initialize":               init,
		"tools/list":               upstreamOK(`{"tools":[{"name":"t","description":` + quotedWords + `,"inputSchema":{"type":"object"}}]}`),
		"resources/list":           upstreamOK(`{"resources":[{"uri":"file:///r","name":"r","description":` + quotedWords + `}]}`),
		"resources/templates/list": upstreamOK(`{"resourceTemplates":[{"uriTemplate":"file:///{x}","name":"x","description":` + quotedWords + `}]}`),
		"prompts/list":             upstreamOK(`{"prompts":[{"name":"p","description":` + quotedWords + `}]}`),
	}
	for _, method := range []string{"tools/list", "resources/list", "resources/templates/list", "prompts/list"} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			b := newBench(t, smallRole(100))
			a := stdioAgent(t, b.gateway(t, PrefixNever, scriptedUpstream(t, "x", lists)), Identity{Agent: "a", Session: "s", StartRole: "small"})
			a.initialize(nil)
			got := string(a.call(method, map[string]any{}))
			copies := strings.Count(got, "secret words of the upstream")
			reached := int64(copies) * tokens(t, "secret words of the upstream ")
			if charged := b.counters(t, "a", "s").Tokens; reached > charged {
				t.Errorf("%s: %d tokens of the upstream's words reached the agent, %d were charged (limit 100)", method, reached, charged)
			}
		})
	}
}

// A list is charged once a session for the items it lists as they were:
// listed again, unchanged, they cost nothing more; a changed item costs
// it again.
func TestListedItemsChargedOnce(t *testing.T) {
	t.Parallel()
	b := newBench(t, nil)
	a := stdioAgent(t, b.gateway(t, PrefixNever, fixtureUpstream(t, "lean")), Identity{Agent: "a", Session: "s", StartRole: "coder"})
	a.initialize(nil)
	a.call("tools/list", map[string]any{})
	first := b.counters(t, "a", "s").Tokens
	if first == 0 {
		t.Fatal("the tools listed were not charged")
	}
	a.call("tools/list", map[string]any{})
	if again := b.counters(t, "a", "s").Tokens; again != first {
		t.Errorf("the same tools listed again were charged again: %d tokens, then %d", first, again)
	}
}

// TestAttackBlobBelowItsText: a blob (binary data that is no image or
// audio) was charged 256 tokens a KiB, "as base64 text would count"; but
// a client that shows it shows its base64, whose o200k tokens are about
// 940 a KiB: a blob of 40 KiB was charged 10,240 tokens and brought
// 36,920 into a context of 20,000. A blob is charged as the tokens of its
// base64 text.
func TestAttackBlobBelowItsText(t *testing.T) {
	t.Parallel()
	blob := noiseBase64(40 << 10)
	resource := `{"uri":"file:///b","mimeType":"application/octet-stream","blob":"` + blob + `"}`
	init := upstreamOK(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"prompts":{},"resources":{}},"serverInfo":{"name":"x","version":"1"}}`)
	replies := map[string]reply{
		"initialize":     init,
		"tools/list":     upstreamOK(`{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`),
		"resources/list": upstreamOK(`{"resources":[{"uri":"file:///b","name":"b"}]}`),
		"prompts/list":   upstreamOK(`{"prompts":[{"name":"p"}]}`),
		"tools/call":     upstreamOK(`{"content":[{"type":"resource","resource":` + resource + `}]}`),
		"resources/read": upstreamOK(`{"contents":[` + resource + `]}`),
		"prompts/get":    upstreamOK(`{"messages":[{"role":"user","content":{"type":"resource","resource":` + resource + `}}]}`),
	}
	want := tokens(t, blob)
	for _, tt := range []struct {
		name string
		do   func(*agent) *message
	}{
		{"a tool result's embedded resource", agentCall("tools/call", map[string]any{"name": "t", "arguments": map[string]any{}})},
		{"a resource read", agentCall("resources/read", map[string]any{"uri": "file:///b"})},
		{"a prompt's message", agentCall("prompts/get", map[string]any{"name": "p"})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBench(t, smallRole(20000))
			a := stdioAgent(t, b.gateway(t, PrefixNever, scriptedUpstream(t, "x", replies)), Identity{Agent: "a", Session: "s", StartRole: "small"})
			a.initialize(nil)
			before := b.counters(t, "a", "s").Tokens // what was listed
			got := string(mustJSON(tt.do(a)))
			charged := b.counters(t, "a", "s").Tokens - before
			if strings.Contains(got, blob) && charged < want {
				t.Errorf("a blob whose base64 is %d tokens reached the agent, charged %d (limit 20,000)", want, charged)
			}
		})
	}
}

// TestAttackNotificationMethodUncharged: a notification's params are
// charged, but its method (up to 128 bytes) was not, nor was anything of
// a notification without params: an upstream sending 200 of them, each
// a method of words and no params, brought the agent 3,600 tokens
// of its words, none charged. A method that is no MCP notification's is
// charged as text.
func TestAttackNotificationMethodUncharged(t *testing.T) {
	t.Parallel()
	b, a := budgetAgent(t)
	method := "notifications/" + strings.Repeat("upstream secret words ", 5)
	var notes []any
	for range 200 {
		notes = append(notes, map[string]any{"jsonrpc": "2.0", "method": method})
	}
	a.tool("raw", map[string]any{"notify": notes, "result": map[string]any{"content": []any{}}})
	// The upstream sent them before its result, and the gateway passes an
	// upstream's messages on in order: they are all here.
	var reached int64
	for len(a.notes) > 0 {
		if m := <-a.notes; m.Method == method {
			reached += tokens(t, m.Method)
		}
	}
	if charged := b.counters(t, "a", "s").Tokens; reached > charged {
		t.Errorf("notifications' methods of %d tokens reached the agent, %d were charged (limit 100)", reached, charged)
	}
}

// TestAttackImageThatIsNone: data that no decoder reads as an image (a
// text, or bytes, under an image's type) cost 1,600 tokens, the most an
// image costs, whatever its length; no model sees it as an image, and a
// client that shows it shows its base64 text: 40 KiB of it, as an image
// block or an image resource, brought 36,920 tokens into a context of
// 20,000. It is charged as that text (at least 1,600).
func TestAttackImageThatIsNone(t *testing.T) {
	t.Parallel()
	data := noiseBase64(40 << 10)
	init := upstreamOK(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"resources":{}},"serverInfo":{"name":"x","version":"1"}}`)
	replies := map[string]reply{
		"initialize":     init,
		"tools/list":     upstreamOK(`{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`),
		"resources/list": upstreamOK(`{"resources":[{"uri":"file:///i","name":"i"}]}`),
		"tools/call":     upstreamOK(`{"content":[{"type":"image","mimeType":"image/png","data":"` + data + `"}]}`),
		"resources/read": upstreamOK(`{"contents":[{"uri":"file:///i","mimeType":"image/png","blob":"` + data + `"}]}`),
	}
	want := tokens(t, data)
	for _, tt := range []struct {
		name string
		do   func(*agent) *message
	}{
		{"an image block", agentCall("tools/call", map[string]any{"name": "t", "arguments": map[string]any{}})},
		{"an image resource", agentCall("resources/read", map[string]any{"uri": "file:///i"})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBench(t, smallRole(20000))
			a := stdioAgent(t, b.gateway(t, PrefixNever, scriptedUpstream(t, "x", replies)), Identity{Agent: "a", Session: "s", StartRole: "small"})
			a.initialize(nil)
			got := string(mustJSON(tt.do(a)))
			if charged := b.counters(t, "a", "s").Tokens; strings.Contains(got, data) && charged < want {
				t.Errorf("%d tokens of base64 under an image's type reached the agent, charged %d (limit 20,000)", want, charged)
			}
		})
	}
}

// noiseBase64 is the base64 of n bytes that look random (about 940 o200k
// tokens a KiB), with no "ID" in it, which scriptedUpstream replaces with
// the request's id.
func noiseBase64(n int) string {
	raw := make([]byte, n)
	for i := range raw {
		raw[i] = byte(i*7919 + i/13*31 + i*i)
	}
	return strings.ReplaceAll(base64.StdEncoding.EncodeToString(raw), "ID", "Id")
}
