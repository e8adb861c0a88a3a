package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentharness/harness/contract"
)

// What the gateway declares is what its upstream declared, with tools and
// logging of its own.
func TestCapabilitiesAreTheUpstreams(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	c := f.stdio(t, agentSession("caps"))
	r := c.initialize(nil)
	var caps map[string]json.RawMessage
	json.Unmarshal(r["capabilities"], &caps)
	for _, want := range []string{"tools", "logging", "resources", "prompts", "completions"} {
		if _, ok := caps[want]; !ok {
			t.Errorf("capability %s not declared: %s", want, r["capabilities"])
		}
	}
	if !subscribes(caps["resources"]) {
		t.Errorf("resources without subscribe: %s", caps["resources"])
	}
}

// Resources are listed as the role may read them and read as tools are
// called: decided by resource:URI, charged for what reaches the agent.
func TestResources(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for _, tt := range []struct {
		role     string
		listed   []string
		readable map[string]bool
	}{
		{"coder", []string{"test://static-binary", "test://static-text", "test://watched-resource"},
			map[string]bool{"test://static-text": true, "test://static-binary": true}},
		{"noimage", []string{"test://static-text", "test://watched-resource"},
			map[string]bool{"test://static-text": true, "test://static-binary": false}},
	} {
		t.Run(tt.role, func(t *testing.T) {
			id := Identity{Agent: "tester", Session: "res-" + tt.role, StartRole: tt.role}
			c := f.stdio(t, id)
			c.initialize(nil)
			var list struct{ Resources []struct{ URI string } }
			r := c.result("resources/list", nil)
			json.Unmarshal(r["resources"], &list.Resources)
			var got []string
			for _, x := range list.Resources {
				got = append(got, x.URI)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.listed) {
				t.Errorf("listed %v, want %v", got, tt.listed)
			}
			for uri, ok := range tt.readable {
				before := f.usage(t, key(id)).Tokens
				m := c.call("resources/read", map[string]string{"uri": uri})
				if !ok {
					if m.Error == nil || m.Error.Code != CodeDenied || !strings.Contains(m.Error.Message, "tool_denied") {
						t.Errorf("read of %s: %+v %s", uri, m.Error, m.Result)
					} else if d := decisionOf(t, m.Error.Data); d.Decision != "deny" {
						t.Errorf("the refusal's decision: %+v", d)
					}
					continue
				}
				if m.Error != nil {
					t.Fatalf("read of %s: %s", uri, m.Error.Message)
				}
				var res struct {
					Contents []struct{ URI, Text, Blob string }
				}
				json.Unmarshal(m.Result, &res)
				if len(res.Contents) != 1 || res.Contents[0].URI != uri {
					t.Fatalf("read of %s: %s", uri, m.Result)
				}
				want := tokens(t, res.Contents[0].Text)
				if res.Contents[0].Blob != "" {
					want = 1 // a 1×1 PNG: one token
				}
				if got := f.usage(t, key(id)).Tokens - before; got != want {
					t.Errorf("read of %s charged %d tokens, want %d", uri, got, want)
				}
			}
		})
	}
}

// A template is listed, and a URI made from it is read from its upstream.
func TestResourceTemplates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	c := f.stdio(t, agentSession("templates"))
	c.initialize(nil)
	r := c.result("resources/templates/list", nil)
	if !strings.Contains(string(r["resourceTemplates"]), `"uriTemplate":"test://template/{id}/data"`) {
		t.Errorf("templates: %s", r["resourceTemplates"])
	}
	r = c.result("resources/read", map[string]string{"uri": "test://template/42/data"})
	if !strings.Contains(string(r["contents"]), `Data for ID: 42`) {
		t.Errorf("read: %s", r["contents"])
	}
}

// With several upstreams, URIs and prompt names carry their upstream's
// name, and lead back to it.
func TestSeveralUpstreamsArePrefixed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(o *Options) {
		o.Upstreams = []UpstreamConfig{{Name: "one", Command: upstreamBin}, {Name: "two", Command: upstreamBin}}
	})
	c := f.stdio(t, agentSession("prefixed"))
	c.initialize(nil)
	r := c.result("resources/list", nil)
	for _, want := range []string{`"uri":"one:test://static-text"`, `"uri":"two:test://static-text"`} {
		if !strings.Contains(string(r["resources"]), want) {
			t.Errorf("resources lack %s: %s", want, r["resources"])
		}
	}
	r = c.result("resources/read", map[string]string{"uri": "two:test://static-text"})
	if !strings.Contains(string(r["contents"]), `"uri":"test://static-text"`) {
		t.Errorf("read: %s", r["contents"])
	}
	r = c.result("prompts/list", nil)
	if !strings.Contains(string(r["prompts"]), `"name":"one__test_simple_prompt"`) {
		t.Errorf("prompts: %s", r["prompts"])
	}
	r = c.result("prompts/get", map[string]any{"name": "two__test_prompt_with_arguments", "arguments": map[string]string{"arg1": "a", "arg2": "b"}})
	if !strings.Contains(string(r["messages"]), "arg1='a', arg2='b'") {
		t.Errorf("get: %s", r["messages"])
	}
	if m := c.call("resources/read", map[string]string{"uri": "three:test://static-text"}); m.Error == nil || m.Error.Code != codeResourceNotFound {
		t.Errorf("a URI of no upstream: %+v", m.Error)
	}
	text, isError := toolText(t, c.call("tools/call", tool("two__test_simple_text", nil)))
	if isError || text != "This is a simple text response for testing." {
		t.Errorf("a prefixed tool: %v %q", isError, text)
	}
}

// Prompts are listed as the role may get them, got as tools are called.
func TestPrompts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	id := Identity{Agent: "tester", Session: "prompts", StartRole: "noimage"}
	c := f.stdio(t, id)
	c.initialize(nil)
	r := c.result("prompts/list", nil)
	if strings.Contains(string(r["prompts"]), "test_prompt_with_image") || !strings.Contains(string(r["prompts"]), "test_simple_prompt") {
		t.Errorf("prompts: %s", r["prompts"])
	}
	before := f.usage(t, key(id)).Tokens
	r = c.result("prompts/get", map[string]any{"name": "test_prompt_with_arguments", "arguments": map[string]string{"arg1": "x", "arg2": "y"}})
	want := tokens(t, "Prompt with arguments: arg1='x', arg2='y'")
	if got := f.usage(t, key(id)).Tokens - before; got != want {
		t.Errorf("the prompt charged %d tokens, want %d (%s)", got, want, r["messages"])
	}
	m := c.call("prompts/get", map[string]any{"name": "test_prompt_with_image"})
	if m.Error == nil || m.Error.Code != CodeDenied {
		t.Errorf("a denied prompt: %+v", m.Error)
	}
}

// Everything that reaches the agent is charged: text, structured content,
// errors, images by their size, audio and binary data by their bytes, log
// messages.
func TestWhatReachesTheAgentIsCharged(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for i, tt := range []struct {
		name string
		call map[string]any
		want func(result string) int64
	}{
		{"text", tool("ctx_read", map[string]any{"bytes": 5000}), func(r string) int64 { return tokens(t, text(5000)) }},
		{"structured content", tool("ctx_shell", map[string]string{"command": "structured 4000"}),
			func(r string) int64 { return tokens(t, `{"text":`+string(mustJSON(text(4000)))+`}`) }},
		{"a tool error", tool("test_error_handling", nil),
			func(string) int64 { return tokens(t, "This tool intentionally returns an error for testing") }},
		{"a JSON-RPC error", tool("ctx_shell", map[string]string{"command": "rpcfail"}),
			func(string) int64 { return tokens(t, "the upstream could not run the command") }},
		{"an image by its size", tool("ctx_shell", map[string]string{"command": "image 1000 600"}),
			func(string) int64 { return 800 }}, // 600,000 pixels at 750 a token
		{"a large image at most", tool("ctx_shell", map[string]string{"command": "image 4000 4000"}),
			func(string) int64 { return 1600 }},
		{"audio by its bytes", tool("ctx_shell", map[string]string{"command": "audio 10240"}),
			func(string) int64 { return 320 }}, // 10 KiB at 32 a KiB
		{"a blob by its bytes", tool("ctx_shell", map[string]string{"command": "blob 4096"}),
			func(string) int64 { return 1024 }}, // 4 KiB at 256 a KiB
		{"an embedded text resource", tool("ctx_read", map[string]any{"bytes": 3000, "resource": true}),
			func(string) int64 { return tokens(t, text(3000)) }},
		{"a log message", tool("ctx_shell", map[string]string{"command": "log 3000"}),
			func(string) int64 {
				// Its other members too, as their keys and JSON.
				return tokens(t, text(3000)) + tokens(t, "logged") + tokens(t, "level: \"info\"\nlogger: \"fixture-upstream\"\n")
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := agentSession(fmt.Sprint("charged-", i))
			c := f.stdio(t, id)
			c.initialize(nil)
			c.result("logging/setLevel", map[string]string{"level": "debug"})
			before := f.usage(t, key(id)).Tokens
			m := c.call("tools/call", tt.call)
			raw := string(m.Result)
			if m.Error != nil {
				raw = m.Error.Message
			}
			if strings.HasPrefix(tt.name, "a log message") {
				// The upstream may send it after its result; it is
				// charged before the agent gets it.
				c.waitNote("the log message", func(m *message) bool { return m.Method == "notifications/message" })
			}
			got := f.usage(t, key(id)).Tokens - before
			// The arguments are input, not context: only what came back
			// is charged to the context.
			if want := tt.want(raw); got != want {
				t.Errorf("charged %d tokens, want %d", got, want)
			}
		})
	}
}

// text is the fixture's ctx_read bytes=n.
func text(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %d of the file: the quick brown fox jumps over the lazy dog\n", i)
	}
	return b.String()[:n]
}

// However many calls of a session run at once, its usage never passes
// its limit: each result is charged before it is released, up to what is
// left, and the rest withheld.
func TestParallelCallsNeverPassTheBudget(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	id := Identity{Agent: "tester", Session: "parallel", StartRole: "small"}
	c := f.stdio(t, id)
	c.initialize(nil)
	const calls = 30
	var wg sync.WaitGroup
	texts := make([]string, calls)
	for i := range calls {
		wg.Go(func() {
			m := c.call("tools/call", tool("ctx_read", map[string]any{"bytes": 20000}))
			texts[i], _ = toolText(t, m)
		})
	}
	wg.Wait()
	used := f.usage(t, key(id)).Tokens
	if used > 2000 {
		t.Errorf("%d parallel calls used %d tokens of a budget of 2000", calls, used)
	}
	withheld, denied := 0, 0
	for _, s := range texts {
		switch {
		case strings.Contains(s, "withheld"):
			withheld++
		case strings.Contains(s, "budget_exhausted"):
			denied++
		}
	}
	if withheld == 0 || withheld+denied != calls {
		t.Errorf("of %d calls of 5000 tokens on 2000: %d cut, %d refused", calls, withheld, denied)
	}
	// What reached the agent is what was charged.
	var kept int64
	for _, s := range texts {
		if i := strings.Index(s, "\n[harness] the rest of this text withheld"); i >= 0 {
			kept += tokens(t, s[:i])
		}
	}
	if kept != used {
		t.Errorf("the agent got %d tokens of text, the session was charged %d", kept, used)
	}
}

// An upstream's sampling request reaches an agent whose client can
// answer it, on the call it is about; its cost is charged to the session,
// and the request's tokens to the context, as the agent's client receives
// them (the answer's are not: it goes to the upstream).
func TestSamplingIsRelayedAndCharged(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	id := agentSession("sampling")
	c := f.stdio(t, id)
	asked := make(chan json.RawMessage, 1)
	c.answer = func(m *message) (any, *rpcError) {
		if m.Method != "sampling/createMessage" {
			return nil, &rpcError{Code: codeMethodNotFound, Message: m.Method}
		}
		asked <- m.Params
		return map[string]any{"role": "assistant", "content": map[string]string{"type": "text", "text": "four"}, "model": "claude-sonnet-4-5"}, nil
	}
	c.initialize(map[string]any{"sampling": map[string]any{}})
	before := f.usage(t, key(id))
	text, isError := toolText(t, c.call("tools/call", tool("test_sampling", map[string]string{"prompt": "two and two?"})))
	if isError || text != "LLM response: four" {
		t.Fatalf("test_sampling: %v %q", isError, text)
	}
	p := <-asked
	if !strings.Contains(string(p), "two and two?") {
		t.Errorf("the request: %s", p)
	}
	after := f.usage(t, key(id))
	if after.CostMicros <= before.CostMicros {
		t.Errorf("sampling cost nothing: %d → %d micro-dollars", before.CostMicros, after.CostMicros)
	}
	if got, want := after.Tokens-before.Tokens, tokens(t, string(p))+tokens(t, "LLM response: four"); got != want {
		t.Errorf("the context was charged %d tokens, want %d (the request and the tool's result)", got, want)
	}

	// A client that did not declare sampling is not asked: the upstream
	// hears that it cannot.
	c2 := f.stdio(t, agentSession("no-sampling"))
	c2.initialize(nil)
	text, isError = toolText(t, c2.call("tools/call", tool("test_sampling", map[string]string{"prompt": "x"})))
	if !isError || !strings.Contains(text, "sampling") {
		t.Errorf("without the capability: %v %q", isError, text)
	}
}

// Once the session's budget is spent, an upstream's sampling request is
// refused without asking the agent: it would spend more.
func TestSamplingRefusedWhenSpent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	id := Identity{Agent: "tester", Session: "spent", StartRole: "tiny"}
	c := f.stdio(t, id)
	c.answer = func(m *message) (any, *rpcError) {
		t.Errorf("the client was asked %s", m.Method)
		return nil, &rpcError{Code: codeInternal, Message: "no"}
	}
	c.initialize(map[string]any{"sampling": map[string]any{}})
	c.call("tools/call", tool("ctx_read", map[string]any{"bytes": 5000})) // past the 100 tokens
	f.g.mu.Lock()
	s := f.g.sessions[key(id)]
	f.g.mu.Unlock()
	// As an upstream asks outside any call (a call would be refused).
	_, rerr := s.relay(context.Background(), nil, "sampling/createMessage", json.RawMessage(`{"messages":[],"maxTokens":10}`))
	if rerr == nil || rerr.Code != codeRefused || !strings.Contains(rerr.Message, "exhausted") {
		t.Errorf("sampling on a spent budget: %+v", rerr)
	}
}

// Elicitation and roots requests are relayed to a client that declared
// them, and their answers go back to the upstream.
func TestElicitationAndRootsAreRelayed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	c := f.stdio(t, agentSession("elicit"))
	c.answer = func(m *message) (any, *rpcError) {
		switch m.Method {
		case "elicitation/create":
			return map[string]any{"action": "accept", "content": map[string]string{"username": "ada", "email": "ada@example.test"}}, nil
		case "roots/list":
			return map[string]any{"roots": []map[string]string{{"uri": "file:///repo", "name": "repo"}}}, nil
		}
		return nil, &rpcError{Code: codeMethodNotFound, Message: m.Method}
	}
	c.initialize(map[string]any{"elicitation": map[string]any{}, "roots": map[string]any{"listChanged": true}})
	text, isError := toolText(t, c.call("tools/call", tool("test_elicitation", map[string]string{"message": "who?"})))
	if isError || !strings.Contains(text, "action=accept") || !strings.Contains(text, "ada@example.test") {
		t.Errorf("elicitation: %v %q", isError, text)
	}
	text, isError = toolText(t, c.call("tools/call", tool("ctx_shell", map[string]string{"command": "roots"})))
	if isError || text != "roots: file:///repo" {
		t.Errorf("roots: %v %q", isError, text)
	}
}

// Progress and log messages of a call reach the agent before its result.
func TestProgressAndLogMessages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	c := f.stdio(t, agentSession("progress"))
	c.initialize(nil)
	c.result("logging/setLevel", map[string]string{"level": "info"})
	m := c.call("tools/call", map[string]any{"name": "test_tool_with_progress", "_meta": map[string]any{"progressToken": "p-1"}})
	if text, _ := toolText(t, m); text != "Tool with progress executed successfully" {
		t.Errorf("progress tool: %q", text)
	}
	c.mu.Lock()
	var progress []string
	for _, n := range c.notes {
		if n.Method == "notifications/progress" {
			progress = append(progress, string(n.Params))
		}
	}
	c.mu.Unlock()
	if len(progress) != 3 || !strings.Contains(progress[2], `"progress":100`) || !strings.Contains(progress[0], `"progressToken":"p-1"`) {
		t.Errorf("progress before the result: %v", progress)
	}
	c.call("tools/call", tool("test_tool_with_logging", nil))
	c.waitNote("the upstream's log message", func(m *message) bool {
		return m.Method == "notifications/message" && strings.Contains(string(m.Params), "Tool execution completed")
	})
}

// The harness's own events of a session reach its client as log messages
// once it set a level.
func TestHarnessEventsAsLogMessages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	id := Identity{Agent: "tester", Session: "events", StartRole: "small"}
	c := f.stdio(t, id)
	c.initialize(nil)
	c.result("logging/setLevel", map[string]string{"level": "info"})
	c.call("tools/call", tool("ctx_read", map[string]any{"bytes": 7000})) // 1750 tokens: past 80% of 2000
	m := c.waitNote("the BudgetWarning", func(m *message) bool {
		return m.Method == "notifications/message" && strings.Contains(string(m.Params), `"logger":"agent-harness"`) &&
			strings.Contains(string(m.Params), "BudgetWarning")
	})
	if !strings.Contains(string(m.Params), `"level":"warning"`) {
		t.Errorf("the event: %s", m.Params)
	}
}

// A call the agent cancels is cancelled upstream too, and not answered.
func TestCancellationReachesTheUpstream(t *testing.T) {
	t.Parallel()
	mark := filepath.Join(t.TempDir(), "cancelled")
	f := newFixture(t, func(o *Options) { o.Upstreams[0].Env = []string{"UPSTREAM_CANCELLED=" + mark} })
	c := f.stdio(t, agentSession("cancel"))
	c.initialize(nil)
	id, _ := c.start("tools/call", tool("ctx_shell", map[string]string{"command": "hang"}))
	// Cancel once the call is upstream: the gateway knows it as under way.
	waitFor(t, "the call under way", func() bool { return f.g.inflightCount(true) > 0 })
	// and the upstream runs it: a cancellation it reads before its handler
	// started is one it cannot match to a call (mcp-go's server).
	waitFor(t, "the upstream to run the call", func() bool { _, err := os.Stat(mark + ".started"); return err == nil })
	c.notify("notifications/cancelled", map[string]any{"requestId": id, "reason": "changed my mind"})
	waitFor(t, "the upstream to hear of the cancellation", func() bool { _, err := os.Stat(mark); return err == nil })
	c.result("ping", nil)
	waitFor(t, "the call to end", func() bool { return f.g.inflightCount(false) == 0 })
	c.mu.Lock()
	_, still := c.pending[fmt.Sprint(id)]
	c.mu.Unlock()
	if !still {
		t.Error("the cancelled call was answered")
	}
}

// A call its role asks for runs only when the person at the agent's
// client accepts the gateway's elicitation, and then counts as any call;
// declined, dismissed, unanswerable or not asked (a client without form
// elicitation) it does not run and takes no shell slot; once the budget
// denies the call, nobody is asked.
func TestAskIsAnElicitation(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		caps   map[string]any
		answer func(m *message) (any, *rpcError)
		runs   bool
		says   string // in the refusal's text
	}{
		{"accepted", map[string]any{"elicitation": map[string]any{}}, answerElicitation("accept"), true, ""},
		{"accepted, form mode declared", map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}, answerElicitation("accept"), true, ""},
		{"declined", map[string]any{"elicitation": map[string]any{}}, answerElicitation("decline"), false, "The person declined the call."},
		{"dismissed", map[string]any{"elicitation": map[string]any{}}, answerElicitation("cancel"), false, "did not approve the call (cancel)"},
		{"an answer that is no elicitation result", map[string]any{"elicitation": map[string]any{}},
			func(*message) (any, *rpcError) { return []string{"accept"}, nil }, false, "not an elicitation result"},
		{"an error for an answer", map[string]any{"elicitation": map[string]any{}},
			func(*message) (any, *rpcError) { return nil, &rpcError{Code: -32000, Message: "no person here"} }, false, "could not be asked (no person here)"},
		{"no elicitation", nil, nil, false, "cannot ask a person"},
		{"URL elicitation only", map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}, nil, false, "cannot ask a person"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			id := Identity{Agent: "tester", Session: "ask", StartRole: "careful"}
			c := f.stdio(t, id)
			var asked []*message
			var mu sync.Mutex
			c.answer = func(m *message) (any, *rpcError) {
				mu.Lock()
				asked = append(asked, m)
				mu.Unlock()
				if tt.answer == nil {
					t.Errorf("a client that cannot answer was asked %s", m.Method)
					return nil, &rpcError{Code: codeMethodNotFound, Message: m.Method}
				}
				return tt.answer(m)
			}
			c.initialize(tt.caps)
			m := c.call("tools/call", tool("ctx_shell", map[string]string{"command": "make deploy"}))
			text, isError := toolText(t, m)
			shell := f.usage(t, key(id)).Shell
			if tt.runs {
				if isError || text != "ran: make deploy\n" || shell != 1 {
					t.Fatalf("approved: %v %q, %d shell calls counted", isError, text, shell)
				}
				mu.Lock()
				if len(asked) != 1 || asked[0].Method != "elicitation/create" ||
					!strings.Contains(string(asked[0].Params), `make deploy`) || !strings.Contains(string(asked[0].Params), "needs a person's approval") {
					t.Errorf("the question: %v", asked)
				}
				mu.Unlock()
				// The role's one shell call is spent: the next is denied
				// by the budget, and nobody is asked.
				text, isError = toolText(t, c.call("tools/call", tool("ctx_shell", map[string]string{"command": "make deploy"})))
				mu.Lock()
				n := len(asked)
				mu.Unlock()
				if !isError || !strings.Contains(text, "budget_exhausted") || n != 1 {
					t.Errorf("past the budget: %v %q, asked %d times", isError, text, n)
				}
				return
			}
			if !isError || !strings.Contains(text, "approval_required") || !strings.Contains(text, tt.says) || shell != 0 {
				t.Errorf("not approved: %v %q, %d shell calls counted", isError, text, shell)
			}
			var meta struct {
				Meta map[string]contract.Decision `json:"_meta"`
			}
			json.Unmarshal(m.Result, &meta)
			if d := meta.Meta[DecisionMeta]; d.Decision != contract.Ask || d.Allowed {
				t.Errorf("the decision in _meta: %+v", d)
			}
			// A tool the role does not ask for is not asked about.
			if text, isError := toolText(t, c.call("tools/call", tool("ctx_read", map[string]any{"bytes": 10}))); isError {
				t.Errorf("ctx_read: %q", text)
			}
		})
	}
}

// The arguments an ask shows: as decoded, written again (no white space
// of the agent's), what a screen would hide escaped, and a cut said.
func TestShownArguments(t *testing.T) {
	for _, tt := range []struct {
		raw   string
		limit int
		want  string
	}{
		{``, 100, ""},
		{`{}`, 100, ""},
		{`{"command":"a && b","n":1.50}`, 100, `{"command":"a && b","n":1.50}`},
		{`{"cwd":"."` + strings.Repeat(" ", 3000) + `,"command":"rm"}`, 100, `{"command":"rm","cwd":"."}`},
		{`{"command":"ls \u202e txt.exe"}`, 100, `{"command":"ls \u202e txt.exe"}`},
		{`{"command":"` + strings.Repeat("x", 30) + `"}`, 20,
			`(the first 20 of their 44 bytes; the other 24 are not shown: decline unless you know what they hold) {"command":"xxxxxxxx …`},
	} {
		args, err := arguments(json.RawMessage(tt.raw))
		if err != nil {
			t.Fatal(err)
		}
		if got := shownArguments(args, tt.limit); got != tt.want {
			t.Errorf("%.60q: %q, want %q", tt.raw, got, tt.want)
		}
	}
}

// answerElicitation answers an elicitation with action.
func answerElicitation(action string) func(m *message) (any, *rpcError) {
	return func(m *message) (any, *rpcError) {
		if m.Method != "elicitation/create" {
			return nil, &rpcError{Code: codeMethodNotFound, Message: m.Method}
		}
		return map[string]any{"action": action}, nil
	}
}
