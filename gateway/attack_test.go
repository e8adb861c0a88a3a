package gateway

// Attacks on the gateway by a hostile agent (and, where noted, by an
// upstream that passes on what an agent wrote): each test does what such
// an agent would, and checks that it gets no more than its role and
// budget allow.

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/internal/testroles"
	"github.com/agentharness/harness/policy"
)

// smallRole is a coder with a budget of a few tokens.
func smallRole(tokens int) map[string]string {
	return map[string]string{"small": "[role]\ninherits = \"coder\"\n[limits]\nmax_context_tokens = " + itoa(tokens) + "\n"}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// reachedTokens are the tokens of the texts of a result that reach the
// agent's context (every "text" at any depth), without what the harness
// says of them (from "[harness]", and a newline before it, on).
func reachedTokens(t *testing.T, raw json.RawMessage) int64 {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	tk := budget.NewTokenizer()
	var n int64
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && k == "text" {
					if i := strings.Index(s, "[harness]"); i >= 0 {
						s = strings.TrimSuffix(s[:i], "\n") // the newline before the note is the harness's
					}
					c, err := tk.Count(s)
					if err != nil {
						t.Fatal(err)
					}
					n += c
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return n
}

// An embedded resource past the budget is cut where its text is: in the
// resource, not beside it (the agent's client reads resource.text, so a
// cut put anywhere else lets all of it through uncharged).
func TestAttackEmbeddedResourcePastTheBudget(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		tokens int
		method string
		params map[string]any
	}{
		{"tool result", 1000, "tools/call", map[string]any{"name": "ctx_read", "arguments": map[string]any{"bytes": 40000, "resource": true}}},
		{"prompt", 3, "prompts/get", map[string]any{"name": "test_prompt_with_embedded_resource", "arguments": map[string]any{"resourceUri": "test://x"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBench(t, smallRole(tt.tokens))
			a := stdioAgent(t, b.gateway(t, PrefixNever, fixtureUpstream(t, "lean")), Identity{Agent: "a", Session: "s", StartRole: "small"})
			a.initialize(nil)
			raw := a.call(tt.method, tt.params)
			charged := b.counters(t, "a", "s").Tokens
			if reached := reachedTokens(t, raw); reached > charged {
				t.Errorf("%d tokens reached the agent, %d were charged: %.400s", reached, charged, raw)
			}
		})
	}
}

// Calls under way while an upstream sends notifications about them: the
// gateway notes which upstream each call went to as the notifications
// look for it, and no goroutine reads what another writes unlocked
// (run with -race).
func TestAttackNotificationsDuringParallelCalls(t *testing.T) {
	t.Parallel()
	b := newBench(t, nil)
	a := stdioAgent(t, b.gateway(t, PrefixNever, fixtureUpstream(t, "lean")), Identity{Agent: "a", Session: "s"})
	a.initialize(nil)
	a.call("logging/setLevel", map[string]string{"level": "debug"})
	var ids []string
	for range 4 {
		ids = append(ids, a.request("tools/call", map[string]any{"name": "test_tool_with_logging"}))
		for range 10 {
			ids = append(ids, a.request("tools/call", map[string]any{"name": "ctx_read", "arguments": map[string]any{"path": "x"}}))
		}
	}
	for _, id := range ids {
		if m := a.await(id); m.Error != nil {
			t.Errorf("call %s: %s", id, m.Error.Message)
		}
	}
}

// A call the agent cancels once it is sent has run upstream, with its
// arguments: their cost is charged as that of any call (else an agent
// cancels every call as it goes out and is never charged for what it
// sends).
func TestAttackCancelledCallIsCharged(t *testing.T) {
	t.Parallel()
	b := newBench(t, nil)
	a := stdioAgent(t, b.gateway(t, PrefixNever, fixtureUpstream(t, "lean")), Identity{Agent: "a", Session: "s"})
	a.initialize(map[string]any{"sampling": map[string]any{}})
	id := a.request("tools/call", map[string]any{"name": "test_sampling", "arguments": map[string]any{"prompt": strings.Repeat("many words ", 20000)}})
	// The upstream asks the agent's model, so the call is under way
	// upstream: then the agent gives it up.
	ask := <-a.requests
	if ask.Method != "sampling/createMessage" {
		t.Fatalf("the gateway asked %s", ask.Method)
	}
	a.notify("notifications/cancelled", map[string]any{"requestId": json.RawMessage(id)})
	// A cancelled call is not answered: its charge is what shows it ended.
	waitFor(t, "the cancelled call's arguments to be charged", func() bool { return b.counters(t, "a", "s").CostMicros > 0 })
}

// A result the gateway cannot read (an upstream's, shaped as no MCP
// result is) reaches the agent only as far as it was charged: it is
// withheld when the budget does not cover it.
func TestAttackUnreadableResultPastTheBudget(t *testing.T) {
	t.Parallel()
	words := strings.Repeat("words of a result ", 2000)
	for _, tt := range []struct {
		name, method string
		params       map[string]any
	}{
		{"tool result that is a string", "tools/call", map[string]any{"name": "raw", "arguments": map[string]any{"result": words}}},
		{"tool result whose content is no list", "tools/call", map[string]any{"name": "raw", "arguments": map[string]any{"result": map[string]any{"content": words}}}},
		{"resource whose contents are no list", "resources/read", map[string]any{"uri": rawURI(map[string]any{"contents": words})}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBench(t, smallRole(100))
			a := stdioAgent(t, b.gateway(t, PrefixNever, rawUpstreamConfig(t, "raw")), Identity{Agent: "a", Session: "s", StartRole: "small"})
			a.initialize(nil)
			m := a.await(a.request(tt.method, tt.params))
			charged := b.counters(t, "a", "s").Tokens
			if got, _ := json.Marshal(m); strings.Contains(string(got), words) {
				t.Errorf("all of a result of about 8000 tokens reached the agent, %d were charged: %.300s", charged, got)
			}
		})
	}
}

// httpBench serves g over HTTP to the tokens' agents (token T: agent
// agent-T[:4], new sessions in role).
func httpBench(t *testing.T, g *Gateway, role string, tokens ...string) string {
	t.Helper()
	var list []Token
	for _, tok := range tokens {
		list = append(list, Token{Token: tok, Agent: "agent-" + tok[:4], Role: role})
	}
	srv := httptest.NewUnstartedServer(g.HTTPHandler(HTTPOptions{Tokens: list, Loopback: true}))
	srv.Listener = smallBuffers{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// smallBuffers gives the connections it accepts small send buffers, so
// that a client that does not read fills them soon.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}

// An agent whose client opens its session's stream and never reads it
// holds up no other agent's messages: the harness's events of every
// other session still reach their clients.
func TestAttackStalledStreamHoldsUpNoOtherSession(t *testing.T) {
	t.Parallel()
	b := newBench(t, nil)
	url := httpBench(t, b.gateway(t, PrefixNever, fixtureUpstream(t, "lean")), "reviewer", "evil-token-0123456789", "good-token-0123456789")
	evil := newHTTPAgent(t, url, "evil-token-0123456789")
	evil.initialize(nil)
	evil.call("logging/setLevel", map[string]string{"level": "debug"})
	// The stream, opened and never read.
	conn, err := net.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(16 << 10)
	fmt.Fprintf(conn, "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer evil-token-0123456789\r\nMcp-Session-Id: %s\r\nAccept: text/event-stream\r\n\r\n", evil.sid)
	// Denied calls, each a PolicyViolation of 200 KB sent on that stream:
	// 2 MB, more than the connection's buffers hold.
	long := strings.Repeat("x", 64<<10)
	for range 10 {
		evil.await(evil.request("tools/call", map[string]any{"name": long}))
	}
	good := newHTTPAgent(t, url, "good-token-0123456789")
	good.initialize(nil)
	good.call("logging/setLevel", map[string]string{"level": "debug"})
	good.stream()
	good.tool("ctx_edit", map[string]any{"path": "x"}) // denied to a reviewer: an event
	for {
		select {
		case m := <-good.notes:
			if m.Method == "notifications/message" && strings.Contains(string(m.Params), "PolicyViolation") {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the other agent's event never came: the stalled stream held it up")
		}
	}
}

// fixtureHTTP runs the fixture upstream over HTTP and returns it with
// its URL.
func fixtureHTTP(t *testing.T) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(fixtureUpstream(t, "x").Command, "--http", "127.0.0.1:0")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if _, url, ok := strings.Cut(sc.Text(), "listening on "); ok {
			go io.Copy(io.Discard, stderr)
			return cmd, url
		}
	}
	t.Fatal("the fixture upstream never listened")
	return nil, ""
}

// A shell call whose upstream cannot be reached gets its slot back,
// whatever the transport: the call never ran. (The upstream is behind a
// proxy that keeps no connection for a next request, so that each one
// connects anew: a request on a kept connection that the upstream closed
// may have reached it.)
func TestAttackShellSlotOfAnUpstreamThatIsGone(t *testing.T) {
	t.Parallel()
	_, upstreamURL := fixtureHTTP(t)
	target, err := url.Parse(upstreamURL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		r.Host = target.Host // the fixture refuses requests for other hosts
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	b := newBench(t, nil)
	a := stdioAgent(t, b.gateway(t, PrefixNever, UpstreamConfig{Name: "lean", URL: proxy.URL + target.Path}), Identity{Agent: "a", Session: "s"})
	a.initialize(nil)
	if r := a.tool("ctx_shell", map[string]any{"command": "ls"}); r.IsError {
		t.Fatalf("ctx_shell: %s", r.raw)
	}
	proxy.Listener.Close()
	proxy.CloseClientConnections()
	if r := a.tool("ctx_shell", map[string]any{"command": "ls"}); !r.IsError {
		t.Fatalf("ctx_shell of an upstream that is gone: %s", r.raw)
	}
	if c := b.counters(t, "a", "s"); c.Shell != 1 {
		t.Errorf("one shell call ran, %d were counted", c.Shell)
	}
}

// A request of a session that ended between its lookup and its handling
// (a DELETE, or the expiry, racing a POST of a session whose client never
// made the handshake) starts no upstream: nobody would stop it.
func TestAttackRequestOfASessionThatEnded(t *testing.T) {
	t.Parallel()
	b := newBench(t, nil)
	g := b.gateway(t, PrefixNever, fixtureUpstream(t, "lean"))
	s, err := g.session(Identity{Agent: "a", Session: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g.release(s)
	s.handle(t.Context(), &message{JSONRPC: "2.0", ID: json.RawMessage("1"), Method: "tools/list"}, nil)
	if ups := s.upstreams(); len(ups) > 0 {
		t.Errorf("a session that ended started %d upstreams", len(ups))
		for _, u := range ups {
			u.close()
		}
	}
}

// An upstream that sends null where an object belongs crashes nothing: a
// panic in a goroutine of the gateway ends every session it serves.
func TestAttackNullsFromAnUpstream(t *testing.T) {
	t.Parallel()
	b := newBench(t, nil)
	g := b.gateway(t, PrefixNever, rawUpstreamConfig(t, "raw"))
	s, err := g.session(Identity{Agent: "a", Session: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.release(s)
	u := newUpstream(g.o.Upstreams[0], s)
	noted := func(r charged, err error) {
		if err == nil {
			r.note("[harness] warning: tokens at 85%")
			r.encode()
		}
	}
	for _, tt := range []struct {
		name string
		f    func()
	}{
		{"resources/updated of params null", func() { s.fromUpstream(u, "notifications/resources/updated", json.RawMessage("null")) }},
		{"a tool result null, with a warning", func() { noted(readToolResult(json.RawMessage("null"))) }},
		{"contents whose _meta is null, with a warning", func() { noted(readContents(json.RawMessage(`{"contents":[],"_meta":null}`))) }},
		{"a prompt whose _meta is null, with a warning", func() { noted(readPrompt(json.RawMessage(`{"messages":[],"_meta":null}`))) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("panic: %v", p)
				}
			}()
			tt.f()
		})
	}
}

// A resource is read under the name the policy decided: a URI whose path
// climbs out of what a role's pattern allows ("resource:file:///repo/*")
// with dot segments, as they are or percent-encoded, is not read (what
// the upstream makes of such a URI is its own: it may well climb).
func TestAttackResourceURIsThatClimbOut(t *testing.T) {
	t.Parallel()
	b := newBench(t, map[string]string{"repo": "[tools]\nallowed = [\"resource:file:///repo/*\"]\n"})
	a := stdioAgent(t, b.gateway(t, PrefixNever, rawUpstreamConfig(t, "raw")), Identity{Agent: "a", Session: "s", StartRole: "repo"})
	a.initialize(nil)
	read := func(uri string) string {
		m := a.await(a.request("resources/read", map[string]string{"uri": uri}))
		out, _ := json.Marshal(m)
		return string(out)
	}
	if got := read("file:///repo/main.go"); !strings.Contains(got, "read file:///repo/main.go") {
		t.Fatalf("a file of the repository: %s", got)
	}
	for _, uri := range []string{
		"file:///repo/../home/u/.lean-ctx/harness.toml",
		"file:///repo/%2e%2e/home/u/.lean-ctx/harness.toml",
		"file:///repo/%2E%2e/home/u/.lean-ctx/harness.toml",
		"file:///repo/sub/./../../etc/passwd",
		"file:///repo/..",
		"file:///repo/..?x",
		"file:///repo/..#x",
		"file:///repo/..%2fetc/passwd",
		`file:///repo/..\etc\passwd`,
	} {
		if got := read(uri); strings.Contains(got, "read file:") {
			t.Errorf("%s was read: %.200s", uri, got)
		}
	}
}

// The roots an upstream is told are within the project: the agent's
// client answers roots/list, and an upstream that takes its roots as the
// directories it may touch (as the reference filesystem server does,
// over the ones it was started with) must not be widened by it to the
// whole machine.
func TestAttackRootsBeyondTheProject(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	if err := os.Mkdir(filepath.Join(project, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(project, "link")); err != nil { // the agent writes its repository
		t.Fatal(err)
	}
	b := newBenchOf(t, benchOptions{project: project})
	a := stdioAgent(t, b.gateway(t, PrefixNever, rawUpstreamConfig(t, "raw")), Identity{Agent: "a", Session: "s"})
	a.initialize(map[string]any{"roots": map[string]any{}})
	id := a.request("tools/call", map[string]any{"name": "raw", "arguments": map[string]any{"ask": map[string]any{"method": "roots/list"}}})
	ask := <-a.requests
	a.send(resultMessage(ask.ID, mustJSON(map[string]any{"roots": []any{
		map[string]string{"uri": "file:///", "name": "everything"},
		map[string]string{"uri": "file://" + project + "/../..", "name": "above"},
		map[string]string{"uri": "file://" + filepath.Dir(project), "name": "parent"},
		map[string]string{"uri": "file://" + project + "-other", "name": "sibling"},
		map[string]string{"uri": "file://" + project + "/link", "name": "a link out"},
		map[string]string{"uri": "file://" + project + "/sub", "name": "inside"},
	}})))
	var r struct {
		Content []struct{ Text string }
	}
	m := a.await(id)
	if err := json.Unmarshal(m.Result, &r); err != nil || len(r.Content) != 1 {
		t.Fatalf("the call: %v %s", err, m.Result)
	}
	var got struct {
		Result struct {
			Roots []struct{ URI, Name string }
		}
	}
	json.Unmarshal([]byte(r.Content[0].Text), &got)
	var names []string
	for _, root := range got.Result.Roots {
		names = append(names, root.Name)
	}
	if fmt.Sprint(names) != "[inside]" {
		t.Errorf("the upstream was told the roots %v: %s", names, r.Content[0].Text)
	}
}

// An agent that hangs up (closes the gateway's stdin) while an upstream
// waits for its answer to a request (sampling) leaves no gateway behind:
// its calls are answered, the request it cannot answer any more fails,
// and the gateway stops.
func TestAttackHangUpDuringARelayedRequest(t *testing.T) {
	t.Parallel()
	b := newBench(t, nil)
	a := stdioAgent(t, b.gateway(t, PrefixNever, fixtureUpstream(t, "lean")), Identity{Agent: "a", Session: "s"})
	a.initialize(map[string]any{"sampling": map[string]any{}})
	a.request("tools/call", map[string]any{"name": "test_sampling", "arguments": map[string]any{"prompt": "hello"}})
	<-a.requests
	a.hangUp()
	select {
	case <-a.served:
	case <-time.After(20 * time.Second):
		t.Fatal("the gateway still serves an agent that hung up, waiting for its answer")
	}
}

// What a hostile client may send instead of MCP, each followed by a ping
// that must be answered: the gateway stays up, and answers what has an id.
func TestAttackOddMessages(t *testing.T) {
	t.Parallel()
	b := newBench(t, nil)
	a := stdioAgent(t, b.gateway(t, PrefixNever, fixtureUpstream(t, "lean")), Identity{Agent: "a", Session: "s"})
	a.initialize(nil)
	deep := strings.Repeat(`{"a":`, 9000) + "1" + strings.Repeat("}", 9000)
	tooDeep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	for _, tt := range []struct {
		name, line string
		answered   bool // a response comes (with the id, or null)
	}{
		{"a batch", `[{"jsonrpc":"2.0","id":"odd","method":"ping"}]`, true},
		{"no JSON", `{"jsonrpc":`, true},
		{"null", `null`, true},
		{"a number", `1`, true},
		{"an empty object", `{}`, true},
		{"no jsonrpc", `{"id":"odd","method":"ping"}`, true},
		{"a response to a request never made", `{"jsonrpc":"2.0","id":"harness-1","result":{}}`, false},
		{"an error response to a request never made", `{"jsonrpc":"2.0","id":"harness-2","error":{"code":1,"message":"x"}}`, false},
		{"an id and nothing else", `{"jsonrpc":"2.0","id":"odd"}`, false},
		{"cancelling what is not under way", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nothing"}}`, false},
		{"cancelling with params null", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":null}`, false},
		{"cancelling without params", `{"jsonrpc":"2.0","method":"notifications/cancelled"}`, false},
		{"roots changed, of a client without roots", `{"jsonrpc":"2.0","method":"notifications/roots/list_changed","params":null}`, false},
		{"an unknown notification", `{"jsonrpc":"2.0","method":"notifications/whatever","params":[1]}`, false},
		{"an id that is an object", `{"jsonrpc":"2.0","id":{"a":[1,2]},"method":"ping"}`, true},
		{"an id of a megabyte", `{"jsonrpc":"2.0","id":"` + strings.Repeat("i", 1<<20) + `","method":"ping"}`, true},
		{"params that are a string", `{"jsonrpc":"2.0","id":"odd","method":"tools/call","params":"ctx_read"}`, true},
		{"params null", `{"jsonrpc":"2.0","id":"odd","method":"tools/call","params":null}`, true},
		{"arguments null", `{"jsonrpc":"2.0","id":"odd","method":"tools/call","params":{"name":"ctx_read","arguments":null}}`, true},
		{"arguments nested 9000 deep", `{"jsonrpc":"2.0","id":"odd","method":"tools/call","params":{"name":"ctx_read","arguments":` + deep + `}}`, true},
		{"JSON nested 20000 deep", `{"jsonrpc":"2.0","id":"odd","method":"tools/call","params":` + tooDeep + `}`, true},
		{"a handshake again, of params null", `{"jsonrpc":"2.0","id":"odd","method":"initialize","params":null}`, true},
		{"a level of null", `{"jsonrpc":"2.0","id":"odd","method":"logging/setLevel","params":{"level":null}}`, true},
		{"a completion of no ref", `{"jsonrpc":"2.0","id":"odd","method":"completion/complete","params":{"ref":null}}`, true},
		{"a completion of a ref without a name", `{"jsonrpc":"2.0","id":"odd","method":"completion/complete","params":{"ref":{"type":"ref/prompt"}}}`, true},
		{"a subscription of no uri", `{"jsonrpc":"2.0","id":"odd","method":"resources/subscribe","params":{}}`, true},
		{"a prompt of arguments that are a list", `{"jsonrpc":"2.0","id":"odd","method":"prompts/get","params":{"name":"test_simple_prompt","arguments":[1]}}`, true},
		{"ctx_session of arguments that are a list", `{"jsonrpc":"2.0","id":"odd","method":"tools/call","params":{"name":"ctx_session","arguments":[1]}}`, true},
		{"a method of a server", `{"jsonrpc":"2.0","id":"odd","method":"sampling/createMessage","params":{}}`, true},
		{"a line of spaces", strings.Repeat(" ", 1<<20), false},
	} {
		t.Run(tt.name, func(t *testing.T) { // one after the other, on one session
			ch := make(chan *message, 1)
			a.mu.Lock()
			a.waiting["null"], a.waiting[`"odd"`] = ch, ch
			if strings.Contains(tt.line, `"id":{"a"`) {
				a.waiting[`{"a":[1,2]}`] = ch
			}
			if strings.Contains(tt.line, `"iii`) {
				a.waiting[`"`+strings.Repeat("i", 1<<20)+`"`] = ch
			}
			a.mu.Unlock()
			a.send([]byte(tt.line))
			a.call("ping", nil)
			if tt.answered {
				select {
				case <-ch:
				case <-time.After(30 * time.Second):
					t.Error("no answer")
				}
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			if len(a.strays) > 0 {
				t.Errorf("unexpected messages: %.300q", a.strays)
				a.strays = nil
			}
		})
	}
}

// Calls at once, on one session or on many sessions of one token, get no
// more than the budget: the tokens that reach the agents are at most its
// limit, and no more shell calls run than it has slots (fewer when the
// tokens run out first), each counted.
func TestAttackParallelCallsStayInTheBudget(t *testing.T) {
	t.Parallel()
	limit := int64(2000)
	roles := map[string]string{"small": "[role]\ninherits = \"coder\"\n[limits]\nmax_context_tokens = 2000\nmax_shell_invocations = 5\n"}
	read := map[string]any{"name": "ctx_read", "arguments": map[string]any{"bytes": 3000}}
	shell := map[string]any{"name": "ctx_shell", "arguments": map[string]any{"command": "ls"}}
	// race sends each agent's calls at once, and returns what reached the
	// agents (in tokens) and how many shell calls ran.
	race := func(t *testing.T, agents []*agent, calls int) (reached, shells int64) {
		var ids [][]string
		for _, a := range agents {
			var mine []string
			for i := range calls {
				mine = append(mine, a.request("tools/call", []map[string]any{read, shell}[i%2]))
			}
			ids = append(ids, mine)
		}
		for i, a := range agents {
			for j, id := range ids[i] {
				m := a.await(id)
				if m.Error != nil {
					t.Fatalf("a call: %s", m.Error.Message)
				}
				reached += reachedTokens(t, m.Result)
				if j%2 == 1 && !strings.Contains(string(m.Result), "[harness] denied") { // it ran (its output may be withheld)
					shells++
				}
			}
		}
		return reached, shells
	}
	t.Run("one session", func(t *testing.T) {
		t.Parallel()
		b := newBench(t, roles)
		a := stdioAgent(t, b.gateway(t, PrefixNever, fixtureUpstream(t, "lean")), Identity{Agent: "a", Session: "s", StartRole: "small"})
		a.initialize(nil)
		reached, shells := race(t, []*agent{a}, 64)
		if c := b.counters(t, "a", "s"); reached > limit || c.Tokens > limit || shells > 5 || c.Shell != shells {
			t.Errorf("64 calls at once: %d tokens reached the agent (%d charged) of %d; %d shell calls ran (%d counted) of 5", reached, c.Tokens, limit, shells, c.Shell)
		}
	})
	t.Run("sessions of one token", func(t *testing.T) {
		t.Parallel()
		b := newBenchOf(t, benchOptions{agents: map[string]compiler.AgentBudget{"agent-many": {Period: "total", Tokens: &limit, Shell: ptr(int64(5)), BlockPercent: 100, WarnPercent: 80}}})
		url := httpBench(t, b.gateway(t, PrefixNever, fixtureUpstream(t, "lean")), "coder", "many-token-0123456789")
		var agents []*agent
		for range 8 {
			h := newHTTPAgent(t, url, "many-token-0123456789")
			h.initialize(nil)
			agents = append(agents, h.agent)
		}
		reached, shells := race(t, agents, 8)
		if reached > limit || shells > 5 {
			t.Errorf("8 sessions of 8 calls at once: %d tokens reached the agent of %d; %d shell calls ran of 5", reached, limit, shells)
		}
	})
}

func ptr[T any](v T) *T { return &v }

// What a role hides stays hidden whatever the name it is asked by: not
// listed, or listed under other names, prefixed or not, a call, read, get,
// subscription or completion of it is refused, and no shell runs.
func TestAttackWhatTheRoleHides(t *testing.T) {
	t.Parallel()
	roles := map[string]string{
		"hider": "[tools]\nallowed = [\"ctx_read\", \"resource:test://static-*\", \"prompt:test_prompt_with_arguments\"]\n" +
			"denied = [\"ctx_shell\", \"resource:test://static-binary\"]\n",
		"prefixed": "[tools]\nallowed = [\"*__*\", \"resource:*\", \"prompt:*\"]\ndenied = [\"ctx_shell\", \"resource:other:*\", \"prompt:other__*\"]\n",
	}
	tool := func(name string) map[string]any {
		return map[string]any{"name": name, "arguments": map[string]any{"command": "ls", "path": "x"}}
	}
	type ask struct {
		method  string
		params  map[string]any
		allowed bool
	}
	completion := func(ref map[string]string) map[string]any {
		return map[string]any{"ref": ref, "argument": map[string]string{"name": "id", "value": "1"}}
	}
	for _, tt := range []struct {
		role, prefix string
		ups          []string
		asks         []ask
	}{
		{"hider", PrefixNever, []string{"lean"}, []ask{
			{"tools/call", tool("ctx_read"), true},
			{"tools/call", tool("ctx_shell"), false},
			{"tools/call", tool("ctx_edit"), false},
			{"tools/call", tool("CTX_SHELL"), false},
			{"tools/call", tool("ctx_shell "), false},
			{"tools/call", tool("lean__ctx_shell"), false},
			{"resources/read", map[string]any{"uri": "test://static-text"}, true},
			{"resources/read", map[string]any{"uri": "test://static-binary"}, false},
			{"resources/read", map[string]any{"uri": "test://template/1/data"}, false},
			{"resources/subscribe", map[string]any{"uri": "test://watched-resource"}, false},
			{"prompts/get", map[string]any{"name": "test_prompt_with_arguments", "arguments": map[string]string{"arg1": "a", "arg2": "b"}}, true},
			{"prompts/get", map[string]any{"name": "test_simple_prompt"}, false},
			{"completion/complete", completion(map[string]string{"type": "ref/prompt", "name": "test_simple_prompt"}), false},
			{"completion/complete", completion(map[string]string{"type": "ref/resource", "uri": "test://template/{id}/data"}), false},
		}},
		{"prefixed", PrefixAuto, []string{"lean", "other"}, []ask{
			{"tools/call", tool("lean__ctx_read"), true},
			{"tools/call", tool("lean__ctx_shell"), false},
			{"tools/call", tool("other__ctx_shell"), false},
			{"tools/call", tool("ctx_shell"), false},
			{"tools/call", tool("lean__lean__ctx_shell"), false},
			{"tools/call", tool("lean__ctx_shell\u0000"), false},
			{"resources/read", map[string]any{"uri": "lean:test://static-text"}, true},
			{"resources/read", map[string]any{"uri": "other:test://static-text"}, false},
			{"resources/read", map[string]any{"uri": "test://static-text"}, false},
			{"resources/subscribe", map[string]any{"uri": "other:test://watched-resource"}, false},
			{"prompts/get", map[string]any{"name": "other__test_simple_prompt"}, false},
			{"prompts/get", map[string]any{"name": "lean__test_simple_prompt"}, true},
			{"completion/complete", completion(map[string]string{"type": "ref/prompt", "name": "other__test_prompt_with_arguments"}), false},
			{"completion/complete", completion(map[string]string{"type": "ref/resource", "uri": "other:test://template/{id}/data"}), false},
		}},
	} {
		t.Run(tt.role, func(t *testing.T) {
			t.Parallel()
			b := newBench(t, roles)
			var ups []UpstreamConfig
			for _, name := range tt.ups {
				ups = append(ups, fixtureUpstream(t, name))
			}
			a := stdioAgent(t, b.gateway(t, tt.prefix, ups...), Identity{Agent: "a", Session: "s", StartRole: tt.role})
			a.initialize(nil)
			if tt.role == "hider" {
				for method, want := range map[string]string{
					"tools/list": "ctx_session ctx_read", "resources/list": "test://static-text",
					"resources/templates/list": "", "prompts/list": "test_prompt_with_arguments",
				} {
					if got := listedNames(t, a.call(method, nil)); got != want {
						t.Errorf("%s: %q, want %q", method, got, want)
					}
				}
			}
			for _, q := range tt.asks {
				m := a.await(a.request(q.method, q.params))
				out, _ := json.Marshal(m)
				refused := m.Error != nil || strings.Contains(string(m.Result), "[harness] denied")
				if refused == q.allowed || strings.Contains(string(out), "ran: ls") {
					t.Errorf("%s %v: %.300s", q.method, q.params, out)
				}
			}
		})
	}
}

// listedNames are the names (or URIs) of a list's items, in order.
func listedNames(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var r map[string][]map[string]any
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, items := range r {
		for _, it := range items {
			for _, k := range []string{"name", "uri", "uriTemplate"} {
				if k == "name" && (it["uri"] != nil || it["uriTemplate"] != nil) {
					continue
				}
				if v, ok := it[k].(string); ok {
					names = append(names, v)
				}
			}
		}
	}
	return strings.Join(names, " ")
}

// The HTTP transport's limits, each met as a hostile client would meet
// it: what it answers, and that the sessions it ends are gone.
func TestAttackHTTPLimits(t *testing.T) {
	t.Parallel()
	b := newBench(t, nil)
	g := b.gateway(t, PrefixNever, fixtureUpstream(t, "lean"))
	handler := g.HTTPHandler(HTTPOptions{Loopback: true, MaxBody: 4 << 10, BodyTimeout: 300 * time.Millisecond, MaxSessions: 2,
		Tokens: []Token{{Token: "one-token-0123456789", Agent: "one"}, {Token: "two-token-0123456789", Agent: "two"}}})
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	url := srv.URL + "/mcp"
	one, two := newHTTPAgent(t, url, "one-token-0123456789"), newHTTPAgent(t, url, "two-token-0123456789")
	one.initialize(nil)
	two.initialize(nil)
	do := func(method, token, sid string, headers map[string]string, body string) int {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		if host := headers["Host"]; host != "" {
			req.Host = host
		}
		if method == http.MethodGet {
			req.Header.Set("Accept", "text/event-stream")
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel() // a GET that is answered 200 is a stream: it ends here
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, tt := range []struct {
		name, method, token, sid string
		headers                  map[string]string
		body                     string
		want                     int
	}{
		{"its own session", "POST", "one-token-0123456789", one.sid, nil, ping, 200},
		{"another token's session: POST", "POST", "one-token-0123456789", two.sid, nil, ping, 404},
		{"another token's session: GET", "GET", "one-token-0123456789", two.sid, nil, "", 404},
		{"another token's session: DELETE", "DELETE", "one-token-0123456789", two.sid, nil, "", 404},
		{"no session", "POST", "one-token-0123456789", "", nil, ping, 400},
		{"a session it named", "POST", "one-token-0123456789", "", map[string]string{"X-Harness-Session": "mine"}, initialize, 400},
		{"a body past the limit", "POST", "one-token-0123456789", one.sid, nil, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("x", 8<<10) + `"}}`, 413},
		{"a page's origin", "POST", "one-token-0123456789", one.sid, map[string]string{"Origin": "https://evil.example"}, ping, 403},
		{"a rebound name", "POST", "one-token-0123456789", one.sid, map[string]string{"Host": "evil.example"}, ping, 403},
		{"a protocol version of nobody's", "POST", "one-token-0123456789", one.sid, map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, ping, 400},
		{"no JSON", "POST", "one-token-0123456789", one.sid, map[string]string{"Content-Type": "text/plain"}, ping, 415},
		{"a batch", "POST", "one-token-0123456789", one.sid, nil, "[" + ping + "]", 400},
		{"no token", "POST", "", one.sid, nil, ping, 401},
		{"a method of no one", "PUT", "one-token-0123456789", one.sid, nil, ping, 405},
		{"a GET of no stream", "GET", "one-token-0123456789", one.sid, map[string]string{"Accept": "application/json"}, "", 200}, // Accept is set to event-stream for GETs
		{"a second session", "POST", "one-token-0123456789", "", nil, initialize, 200},
		{"a third session, past the cap", "POST", "one-token-0123456789", "", nil, initialize, 429},
	} {
		if tt.token == "" {
			tt.token = "no-token"
		}
		if got := do(tt.method, tt.token, tt.sid, tt.headers, tt.body); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
	t.Run("ended sessions are gone", func(t *testing.T) {
		if got := do("DELETE", "two-token-0123456789", two.sid, nil, ""); got != 204 {
			t.Fatalf("DELETE: %d", got)
		}
		if got := do("POST", "two-token-0123456789", two.sid, nil, ping); got != 404 {
			t.Errorf("a POST of a session that was deleted: %d", got)
		}
		// The idle ones expire: their upstreams stop, their ids are 404.
		if n := handler.(*httpServer).expire(time.Now().Add(time.Hour)); n != 2 {
			t.Errorf("%d sessions expired, want one's 2", n)
		}
		if n := g.Sessions(); n != 0 {
			t.Errorf("%d sessions live after all ended", n)
		}
		if got := do("POST", "one-token-0123456789", one.sid, nil, ping); got != 404 {
			t.Errorf("a POST of a session that expired: %d", got)
		}
		if got := do("POST", "one-token-0123456789", "", nil, initialize); got != 200 {
			t.Errorf("a new session once the others ended: %d", got)
		}
	})
}

// A body that never ends holds nothing: past the body's deadline the
// client is answered 408 and its connection closed (the server would
// otherwise read on, without a deadline, for the rest of the body to
// keep the connection: a goroutine and a descriptor held for ever, per
// connection).
func TestAttackBodyThatNeverEnds(t *testing.T) {
	t.Parallel()
	b := newBench(t, nil)
	g := b.gateway(t, PrefixNever)
	srv := httptest.NewServer(g.HTTPHandler(HTTPOptions{Loopback: true, Anonymous: "anon", BodyTimeout: 300 * time.Millisecond}))
	t.Cleanup(srv.Close)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":")
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReader(conn)
	if status, err := r.ReadString('\n'); err != nil || !strings.Contains(status, " 408 ") {
		t.Fatalf("the answer: %q %v", status, err)
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		t.Errorf("the connection was not closed after the answer: %v", err)
	}
}

// An upstream that spells a key of its result twice, once as MCP does and
// once in another case, has the gateway charge what the agent's client
// reads: the key as MCP spells it (encoding/json would read the last of
// them into a struct's field, whatever its case).
func TestAttackKeysInAnotherCase(t *testing.T) {
	big := strings.Repeat("what the agent reads ", 50)
	charged := func(r charged, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, p := range r.parts(ChargeOptions{}) {
			texts = append(texts, p.Text)
		}
		return strings.Join(texts, "|")
	}
	for _, tt := range []struct {
		name string
		got  func() string
	}{
		{"a text block", func() string {
			return charged(readToolResult(json.RawMessage(`{"content":[{"type":"text","text":"` + big + `","Text":"small"}]}`)))
		}},
		{"an embedded resource", func() string {
			return charged(readToolResult(json.RawMessage(`{"content":[{"type":"resource","resource":{"uri":"x","text":"` + big + `","TEXT":"small"}}]}`)))
		}},
		{"a block's type", func() string {
			return charged(readToolResult(json.RawMessage(`{"content":[{"type":"text","Type":"image","text":"` + big + `"}]}`)))
		}},
		{"a resource's contents", func() string {
			return charged(readContents(json.RawMessage(`{"contents":[{"uri":"x","text":"` + big + `","Text":"small"}]}`)))
		}},
		{"a prompt's message", func() string {
			return charged(readPrompt(json.RawMessage(`{"messages":[{"role":"user","content":{"type":"text","text":"` + big + `","tExt":"small"}}]}`)))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.got(); !strings.Contains(got, big) {
				t.Errorf("charged %q, not the text the agent reads", got)
			}
		})
	}
}

// A resource with both a text and a blob is read by the agent's client as
// a text (the MCP TypeScript SDK's union tries TextResourceContents first,
// as mcp-go's ParseResourceContents does), and its blob may be read too:
// it is charged for both. Charged by its blob alone, a blob of one base64
// character (0 tokens) carried any text uncharged.
func TestTextBesideABlobIsCharged(t *testing.T) {
	t.Parallel()
	words := strings.Repeat("words of a result ", 2000) // 8,000 tokens
	res := map[string]any{"uri": "file:///x", "mimeType": "text/plain", "text": words, "blob": "QUJD"}
	for _, tt := range []struct {
		name, method string
		params       map[string]any
	}{
		{"embedded resource", "tools/call", map[string]any{"name": "raw", "arguments": map[string]any{
			"result": map[string]any{"content": []any{map[string]any{"type": "resource", "resource": res}}}}}},
		{"resource contents", "resources/read", map[string]any{"uri": rawURI(map[string]any{"contents": []any{res}})}},
	} {
		for _, budget := range []int{100, 1000000} {
			t.Run(fmt.Sprintf("%s/budget %d", tt.name, budget), func(t *testing.T) {
				t.Parallel()
				b := newBench(t, smallRole(budget))
				a := stdioAgent(t, b.gateway(t, PrefixNever, rawUpstreamConfig(t, "raw")), Identity{Agent: "a", Session: "s", StartRole: "small"})
				a.initialize(nil)
				m := a.await(a.request(tt.method, tt.params))
				charged := b.counters(t, "a", "s").Tokens
				reached := strings.Contains(string(m.Result), words)
				switch {
				case budget == 100 && reached:
					t.Errorf("a text of 8,000 tokens reached the agent (budget 100), %d tokens charged", charged)
				case budget == 100 && strings.Contains(string(m.Result), "QUJD"):
					t.Errorf("the blob beside a withheld text reached the agent")
				case budget > 100 && !reached:
					t.Errorf("the resource was withheld within the budget: %.200s", m.Result)
				case budget > 100 && charged < 8000:
					t.Errorf("%d tokens charged for a text of 8,000 and a blob", charged)
				}
			})
		}
	}
}

// completeUpstream is an upstream of one prompt whose completions are the
// JSON text completion, as it is.
func completeUpstream(t *testing.T, completion string) UpstreamConfig {
	return staticUpstream(t, "c", map[string]string{
		"initialize":          `{"protocolVersion":"2025-06-18","capabilities":{"prompts":{},"completions":{}},"serverInfo":{"name":"c","version":"1"}}`,
		"prompts/list":        `{"prompts":[{"name":"p","arguments":[{"name":"a"}]}]}`,
		"completion/complete": completion,
	})
}

// Completion values are read by their key as it is spelled, as a client
// reads them: read as encoding/json reads a struct, a second key
// "Values" (an empty list) hid the values from the charge. Values that
// cannot be read are withheld, not passed on uncharged.
func TestCompletionValuesAreReadAsTheClientReadsThem(t *testing.T) {
	t.Parallel()
	words := strings.Repeat("words of a completion ", 2000)
	for _, tt := range []struct{ name, completion string }{
		{"a second key in another case", `{"completion":{"values":[` + string(mustJSON(words)) + `],"Values":[]}}`},
		{"a value that is not a string", `{"completion":{"values":[` + string(mustJSON(words)) + `, 1]}}`},
		{"values that are not a list", `{"completion":{"values":` + string(mustJSON(words)) + `}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBench(t, smallRole(100))
			a := stdioAgent(t, b.gateway(t, PrefixNever, completeUpstream(t, tt.completion)), Identity{Agent: "a", Session: "s", StartRole: "small"})
			a.initialize(nil)
			m := a.await(a.request("completion/complete", map[string]any{"ref": map[string]string{"type": "ref/prompt", "name": "p"},
				"argument": map[string]string{"name": "a", "value": ""}}))
			if strings.Contains(string(m.Result), "words of a completion") {
				t.Errorf("completion values of %d tokens reached the agent (budget 100), %d tokens charged", tokens(t, words), b.counters(t, "a", "s").Tokens)
			}
		})
	}
}

// A session's first request may be one that is charged without being
// decided (a completion): the session starts in its identity's role all
// the same, not in the role the agent would start in without one (the
// default coder here, where the identity says "small").
func TestAChargeStartsTheSessionInItsRole(t *testing.T) {
	t.Parallel()
	b := newBench(t, smallRole(1000000))
	a := stdioAgent(t, b.gateway(t, PrefixNever, completeUpstream(t, `{"completion":{"values":["a"]}}`)), Identity{Agent: "a", Session: "s", StartRole: "small"})
	a.initialize(nil)
	a.call("completion/complete", map[string]any{"ref": map[string]string{"type": "ref/prompt", "name": "p"},
		"argument": map[string]string{"name": "a", "value": ""}})
	if c := b.counters(t, "a", "s"); c.Role != "small" || c.Tokens != 1 {
		t.Errorf("after a completion first: role %q, %d tokens", c.Role, c.Tokens)
	}
}

// A switch as a session's first request starts from the identity's role:
// an agent that starts as a reviewer, whose most privileged role is
// reviewer, asked to become a coder first thing and was "already" one
// (the session opened in the default role).
func TestASwitchFirstStartsFromTheSessionsRole(t *testing.T) {
	t.Parallel()
	set := testroles.Set(t, nil)
	e, err := policy.New(context.Background(), compiler.Compile(set, compiler.DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	e.SetBounds(policy.Bounds{Timeout: time.Minute})
	store, bus := budget.NewMemory(), events.NewBus()
	b := &bench{gov: govern.New(govern.Options{Rules: govern.Rules{Engine: e, Roles: set, AgentMaxRoles: map[string]string{"a": "reviewer"}},
		Store: store, Sinks: []events.Sink{bus}}), store: store, bus: bus}
	a := stdioAgent(t, b.gateway(t, PrefixNever), Identity{Agent: "a", Session: "first", StartRole: "reviewer"})
	a.initialize(nil)
	a.call("tools/call", map[string]any{"name": SessionTool, "arguments": map[string]string{"action": "role", "value": "coder"}})
	if role := b.counters(t, "a", "first").Role; role != "reviewer" {
		t.Errorf("after a switch to coder as the first request: role %q", role)
	}
}

// An upstream's sampling request charged before any call was decided (the
// agent asked for completions) opens the session in the identity's role,
// not the default one.
func TestASamplingChargeFirstStartsTheSessionInItsRole(t *testing.T) {
	t.Parallel()
	b := newBench(t, nil)
	up := rawUpstreamConfig(t, "raw")
	up.Env = []string{"GATEWAY_RAW_UPSTREAM=completions"}
	a := stdioAgent(t, b.gateway(t, PrefixNever, up), Identity{Agent: "a", Session: "s", StartRole: "reviewer"})
	a.initialize(map[string]any{"sampling": map[string]any{}})
	// The upstream asks while it completes: nothing is decided.
	id := a.request("completion/complete", map[string]any{"ref": map[string]string{"type": "ref/prompt", "name": "p"},
		"argument": map[string]string{"name": "a", "value": "ask:sampling/createMessage"}})
	ask := <-a.requests
	if ask.Method != "sampling/createMessage" {
		t.Fatalf("asked %s", ask.Method)
	}
	a.send(resultMessage(ask.ID, json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"hello"},"model":"x"}`)))
	a.await(id)
	if c := b.counters(t, "a", "s"); c.Role != "reviewer" || c.CostMicros == 0 {
		t.Errorf("after a sampling request first: role %q, %d micro-dollars", c.Role, c.CostMicros)
	}
}

// headersSeen is a ResponseWriter that notes, when the event stream's
// headers are flushed to the client, whether the session would already
// deliver a message on it.
type headersSeen struct {
	*httptest.ResponseRecorder
	g       *Gateway
	flushed chan bool
	once    sync.Once
}

func (w *headersSeen) Flush() {
	w.once.Do(func() {
		w.g.mu.Lock()
		defer w.g.mu.Unlock()
		routed := false
		for _, s := range w.g.sessions {
			s.mu.Lock()
			routed = routed || s.out != nil
			s.mu.Unlock()
		}
		w.flushed <- routed
	})
	w.ResponseRecorder.Flush()
}

// Once a client sees its stream open, the session's messages go on it: a
// client that opens its stream and then makes a call whose event comes on
// it at once loses none. (The stream's headers were flushed before the
// session took the stream as its way to the agent, and an event sent in
// between was dropped: under load, TestAttackStalledStreamHoldsUpNoOtherSession
// waited for it in vain.)
func TestStreamIsRoutedBeforeItOpens(t *testing.T) {
	b := newBench(t, nil)
	g := b.gateway(t, PrefixNever, fixtureUpstream(t, "lean"))
	handler := g.HTTPHandler(HTTPOptions{Tokens: []Token{{Token: "good-token-0123456789", Agent: "agent-good", Role: "reviewer"}}, Loopback: true})
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	a := newHTTPAgent(t, srv.URL+"/mcp", "good-token-0123456789")
	a.initialize(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/mcp", nil)
	req.RemoteAddr = "127.0.0.1:1"
	a.header(req)
	req.Header.Set("Accept", "text/event-stream")
	w := &headersSeen{ResponseRecorder: httptest.NewRecorder(), g: g, flushed: make(chan bool, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		handler.ServeHTTP(w, req)
	}()
	select {
	case routed := <-w.flushed:
		if !routed {
			t.Error("the stream's headers went out before the session sent its messages on it")
		}
	case <-done:
		t.Fatalf("the stream did not open: %d %s", w.Code, w.Body)
	}
	cancel()
	<-done
}

// TestAttackRootsReadTwoWays: a root the gateway checks is the root the
// upstream gets, whatever else the client's answer holds: a key that
// another reader takes for uri (a "URI", which Go's encoding/json reads
// case-insensitively, a uri given twice) does not reach it, nor any member
// but uri and name.
func TestAttackRootsReadTwoWays(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	if err := os.Mkdir(filepath.Join(project, ".. "), 0o755); err != nil { // ".." to a parser that strips a URL's last spaces
		t.Fatal(err)
	}
	in := `"file://` + project + `"`
	for _, tt := range []struct {
		name, answer string
		want         []map[string]any
	}{
		{"a URI beside uri", `{"roots":[{"uri":"file:///","name":"everything","URI":` + in + `}]}`, nil},
		{"a URI inside, uri outside", `{"roots":[{"URI":` + in + `,"uri":"file:///"}]}`, nil},
		{"uri twice, the last outside", `{"roots":[{"uri":` + in + `,"uri":"file:///"}]}`, nil},
		{"uri twice, the last inside", `{"roots":[{"uri":"file:///","uri":` + in + `}]}`,
			[]map[string]any{{"uri": "file://" + project}}},
		{"members besides uri and name", `{"roots":[{"uri":` + in + `,"name":"p","path":"/","_meta":{"uri":"file:///"}}],"ROOTS":[{"uri":"file:///"}]}`,
			[]map[string]any{{"uri": "file://" + project, "name": "p"}}},
		{"a name not a string", `{"roots":[{"uri":` + in + `,"name":["file:///"]}]}`,
			[]map[string]any{{"uri": "file://" + project}}},
		{"roots twice, the last outside", `{"roots":[{"uri":` + in + `}],"roots":[{"uri":"file:///"}]}`, nil},
		{"a query that climbs", `{"roots":[{"uri":"file://` + project + `?/../../../../../etc"}]}`, nil},
		{"a fragment that climbs", `{"roots":[{"uri":"file://` + project + `#/../../../../../etc"}]}`, nil},
		{"an empty query", `{"roots":[{"uri":"file://` + project + `?"}]}`, nil},
		{"a last segment of .. and a space", `{"roots":[{"uri":"file://` + project + `/.. "}]}`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBenchOf(t, benchOptions{project: project})
			a := stdioAgent(t, b.gateway(t, PrefixNever, rawUpstreamConfig(t, "raw")), Identity{Agent: "a", Session: "s"})
			a.initialize(map[string]any{"roots": map[string]any{}})
			id := a.request("tools/call", map[string]any{"name": "raw", "arguments": map[string]any{"ask": map[string]any{"method": "roots/list"}}})
			ask := <-a.requests
			a.send(resultMessage(ask.ID, json.RawMessage(tt.answer)))
			var r struct{ Content []struct{ Text string } }
			m := a.await(id)
			if err := json.Unmarshal(m.Result, &r); err != nil || len(r.Content) != 1 {
				t.Fatalf("the call: %v %s", err, m.Result)
			}
			var got struct {
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal([]byte(r.Content[0].Text), &got); err != nil {
				t.Fatalf("the upstream's view: %v %s", err, r.Content[0].Text)
			}
			var seen any
			json.Unmarshal(got.Result, &seen)
			want := mustJSON(map[string]any{"roots": append([]map[string]any{}, tt.want...)})
			if string(mustJSON(seen)) != string(want) {
				t.Errorf("the upstream was told %s, want %s", got.Result, want)
			}
		})
	}
}

// attackWords are about 10,000 tokens of an upstream's text, past a
// budget of 100.
var attackWords = strings.Repeat("secret words of the upstream ", 2000)

// budgetAgent is an agent in role small (100 tokens) before the raw
// upstream.
func budgetAgent(t *testing.T) (*bench, *agent) {
	b := newBench(t, smallRole(100))
	a := stdioAgent(t, b.gateway(t, PrefixNever, rawUpstreamConfig(t, "raw")), Identity{Agent: "a", Session: "s", StartRole: "small"})
	a.initialize(nil)
	return b, a
}

// An upstream's notification is charged whole, whatever its method and
// wherever its text: what the budget cannot take does not reach the
// agent (params that are not an object are not passed on).
func TestAttackNotificationsChargedWhole(t *testing.T) {
	t.Parallel()
	note := func(method string, params any) any {
		return map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	}
	for _, tt := range []struct {
		name string
		note any
	}{
		{"logger", note("notifications/message", map[string]any{"level": "info", "logger": attackWords, "data": "x"})},
		{"params an array", note("notifications/message", []any{attackWords})},
		{"progress extra member", note("notifications/progress", map[string]any{"progressToken": "p", "progress": 1, "message": "x", "extra": attackWords})},
		{"updated title", note("notifications/resources/updated", map[string]any{"uri": "file:///x", "title": attackWords})},
		{"other method", note("notifications/tasks/status", map[string]any{"statusMessage": attackWords})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, a := budgetAgent(t)
			a.tool("raw", map[string]any{"notify": []any{tt.note}, "result": map[string]any{"content": []any{}}})
			for deadline := time.After(500 * time.Millisecond); ; {
				select {
				case m := <-a.notes:
					if strings.Contains(string(m.Params), attackWords) {
						t.Errorf("%s: %d bytes reached the agent; tokens charged %d (limit 100)", m.Method, len(attackWords), b.counters(t, "a", "s").Tokens)
					}
					continue
				case <-deadline:
				}
				break
			}
		})
	}
}

// A result's content that the gateway cannot read as a known block or
// field (an element that is no object, a block of an unknown type, a
// member the gateway does not charge) is charged as text, or withheld.
func TestAttackUnreadableContentCharged(t *testing.T) {
	t.Parallel()
	type request struct {
		method string
		params any
	}
	call := func(result any) request {
		return request{"tools/call", map[string]any{"name": "raw", "arguments": map[string]any{"result": result}}}
	}
	read := func(result any) request { return request{"resources/read", map[string]any{"uri": rawURI(result)}} }
	text := map[string]any{"type": "text", "text": "ok"}
	for _, tt := range []struct {
		name string
		req  request
	}{
		{"content element a string", call(map[string]any{"content": []any{attackWords}})},
		{"content element an array", call(map[string]any{"content": []any{[]any{map[string]any{"type": "text", "text": attackWords}}}})},
		{"contents element a string", read(map[string]any{"contents": []any{attackWords}})},
		{"resource text not a string", read(map[string]any{"contents": []any{map[string]any{"uri": "x", "text": []any{attackWords}}}})},
		{"unknown block type", call(map[string]any{"content": []any{map[string]any{"type": "markdown", "text": attackWords}}})},
		{"resource_link title", call(map[string]any{"content": []any{map[string]any{"type": "resource_link", "uri": "file:///a", "name": "a", "title": attackWords}}})},
		{"block annotations", call(map[string]any{"content": []any{map[string]any{"type": "text", "text": "ok", "annotations": map[string]any{"x": attackWords}}}})},
		{"result _meta", call(map[string]any{"content": []any{text}, "_meta": map[string]any{"x": attackWords}})},
		{"result other member", call(map[string]any{"content": []any{text}, "notes": attackWords})},
		{"a resource's uri", read(map[string]any{"contents": []any{map[string]any{"uri": "file:///" + attackWords, "text": "ok"}}})},
		{"a resource's mimeType", read(map[string]any{"contents": []any{map[string]any{"uri": "x", "mimeType": attackWords, "text": "ok"}}})},
		{"an embedded resource's uri", call(map[string]any{"content": []any{map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///" + attackWords, "text": "ok"}}}})},
		{"an image's mimeType", call(map[string]any{"content": []any{map[string]any{"type": "image", "data": "aGVsbG8=", "mimeType": attackWords}}})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, a := budgetAgent(t)
			m := a.await(a.request(tt.req.method, tt.req.params))
			if got, _ := json.Marshal(m); strings.Contains(string(got), attackWords) {
				t.Errorf("%d bytes reached the agent; tokens charged %d (limit 100)", len(attackWords), b.counters(t, "a", "s").Tokens)
			}
		})
	}
}

// What the gateway does not read as known text, and the members of a
// notification, reach the agent when the budget can take them, and are
// charged; a notification without params is passed on.
func TestUnreadContentChargedWithinBudget(t *testing.T) {
	t.Parallel()
	words := strings.Repeat("a few words ", 100)
	b := newBench(t, smallRole(100000))
	a := stdioAgent(t, b.gateway(t, PrefixNever, rawUpstreamConfig(t, "raw")), Identity{Agent: "a", Session: "s", StartRole: "small"})
	a.initialize(nil)
	r := a.tool("raw", map[string]any{
		"notify": []any{
			map[string]any{"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": map[string]any{"statusMessage": words}},
			map[string]any{"jsonrpc": "2.0", "method": "notifications/nothing"},
		},
		"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "ok", "annotations": map[string]any{"x": words}}}, "notes": words},
	})
	if n := strings.Count(string(r.raw), words); n != 2 {
		t.Errorf("the result reached the agent with %d of its 2 texts unread: %.300s", n, r.raw)
	}
	seen := map[string]bool{}
	for deadline := time.After(2 * time.Second); len(seen) < 2; {
		select {
		case m := <-a.notes:
			seen[m.Method] = m.Method != "notifications/tasks/status" || strings.Contains(string(m.Params), words)
			continue
		case <-deadline:
		}
		break
	}
	if !seen["notifications/tasks/status"] || !seen["notifications/nothing"] {
		t.Errorf("notifications passed on whole: %v", seen)
	}
	if got, want := b.counters(t, "a", "s").Tokens, 3*tokens(t, words); got < want {
		t.Errorf("charged %d tokens, want at least %d", got, want)
	}
}

// TestAttackCompletionInARoleHeldBeyond: a session whose role the project
// defines beyond the ceiling (a narrow role switched into, then its file
// rewritten wide) is shown only the exempt tools, so what is decided by
// what is shown (a completion, a subscription) is refused like its calls.
func TestAttackCompletionInARoleHeldBeyond(t *testing.T) {
	t.Parallel()
	rules := func(helper string) govern.Rules {
		set := testroles.Set(t, map[string]string{"helper": helper}) // the project's
		e, err := policy.New(context.Background(), compiler.Compile(set, compiler.DefaultConfig()))
		if err != nil {
			t.Fatal(err)
		}
		e.SetBounds(policy.Bounds{Timeout: time.Minute})
		return govern.Rules{Engine: e, Roles: set}
	}
	narrow := "[role]\ninherits = \"reviewer\"\n"
	wide := "[role]\ninherits = \"admin\"\nprivileged = false\n[limits]\nmax_shell_invocations = 1000000\nmax_cost_usd = 1000.0\n"
	store, bus := budget.NewMemory(), events.NewBus()
	b := &bench{gov: govern.New(govern.Options{Rules: rules(narrow), Store: store, Sinks: []events.Sink{bus}}), store: store, bus: bus}
	const secret = "a value of the upstream's"
	a := stdioAgent(t, b.gateway(t, PrefixNever, completeUpstream(t, `{"completion":{"values":["`+secret+`"]}}`)), Identity{Agent: "a", Session: "s"})
	a.initialize(nil)
	if m := a.await(a.request("tools/call", map[string]any{"name": SessionTool, "arguments": map[string]string{"action": "role", "value": "helper"}})); m.Error != nil || strings.Contains(string(m.Result), `"isError":true`) {
		t.Fatalf("the switch into the narrow helper: %+v", m)
	}
	complete := func() *message {
		return a.await(a.request("completion/complete", map[string]any{"ref": map[string]string{"type": "ref/prompt", "name": "p"},
			"argument": map[string]string{"name": "a", "value": ""}}))
	}
	if m := complete(); !strings.Contains(string(m.Result), secret) {
		t.Fatalf("a completion in the narrow helper: %s", m.Result)
	}
	b.gov.Swap(rules(wide)) // a checkout of another branch rewrote helper.toml
	if m := complete(); strings.Contains(string(m.Result), secret) {
		t.Errorf("a completion in the helper rewritten beyond the ceiling: %s", m.Result)
	}
	if m := a.await(a.request("prompts/list", nil)); strings.Contains(string(m.Result), `"p"`) {
		t.Errorf("the prompts listed in the helper rewritten beyond the ceiling: %s", m.Result)
	}
	if m := a.await(a.request("tools/list", nil)); !strings.Contains(string(m.Result), SessionTool) {
		t.Errorf("the exempt tool is not listed: %s", m.Result)
	}
}

// TestAttackWhatStillWentUncharged: what a review of the charging of
// unread content found still going to the agent for nothing: fields under
// their bounds, repeated over many blocks or items; a prompt message's
// role; a notification's method; a key given twice, whose first value a
// client reading the first would see.
func TestAttackWhatStillWentUncharged(t *testing.T) {
	t.Parallel()
	chunk := func(n, i int) string { return itoa(i) + " " + attackWords[:n] }
	var blocks, items []any
	for i := range 100 {
		uri, mt := "file:///"+chunk(2000, i), "text/"+chunk(240, i)
		blocks = append(blocks, map[string]any{"type": "resource", "resource": map[string]any{"uri": uri, "mimeType": mt, "text": ""}})
		blocks = append(blocks, map[string]any{"type": "audio", "data": "", "mimeType": mt})
		items = append(items, map[string]any{"uri": uri, "mimeType": mt, "text": ""})
	}
	var promptMessages []any
	for i := range 100 {
		promptMessages = append(promptMessages, map[string]any{"role": "user", "content": map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///" + chunk(2000, i), "text": ""}}})
	}
	prompt := func(result any) map[string]any {
		return map[string]any{"name": "p", "arguments": map[string]string{"a": base64.RawURLEncoding.EncodeToString(mustJSON(result))}}
	}
	for _, tt := range []struct {
		name, method string
		params       any
		max          int // copies of the words that may reach the agent
	}{
		{"short uris and MIME types of many blocks", "tools/call", map[string]any{"name": "raw", "arguments": map[string]any{"result": map[string]any{"content": blocks}}}, 1},
		{"short uris and MIME types of many items", "resources/read", map[string]any{"uri": rawURI(map[string]any{"contents": items})}, 1},
		{"a key twice, the first long", "resources/read", map[string]any{"uri": rawURI(json.RawMessage(`{"contents":[{"uri":"x","text":` + string(mustJSON(attackWords)) + `,"text":"ok"}]}`))}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, a := budgetAgent(t)
			m := a.await(a.request(tt.method, tt.params))
			got, _ := json.Marshal(m)
			if n := strings.Count(string(got), "secret words of the upstream"); n > tt.max*2000 {
				t.Errorf("%d copies of the words reached the agent; tokens charged %d (limit 100): %.200s", n, b.counters(t, "a", "s").Tokens, got)
			}
		})
	}
	for _, tt := range []struct {
		name     string
		messages []any
		max      int
	}{
		{"a prompt message's role", []any{map[string]any{"role": attackWords, "content": map[string]any{"type": "text", "text": "ok"}}}, 0},
		{"short uris of many prompt messages' resources", promptMessages, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBench(t, smallRole(100))
			up := rawUpstreamConfig(t, "raw")
			up.Env = []string{"GATEWAY_RAW_UPSTREAM=completions"} // it lists a prompt
			a := stdioAgent(t, b.gateway(t, PrefixNever, up), Identity{Agent: "a", Session: "s", StartRole: "small"})
			a.initialize(nil)
			m := a.await(a.request("prompts/get", prompt(map[string]any{"messages": tt.messages})))
			if m.Error != nil {
				t.Fatalf("prompts/get: %+v", m.Error)
			}
			if n := strings.Count(string(m.Result), "secret words of the upstream"); n > tt.max*2000 {
				t.Errorf("%d copies of the words reached the agent; tokens charged %d (limit 100)", n, b.counters(t, "a", "s").Tokens)
			}
		})
	}
	t.Run("a notification's method", func(t *testing.T) {
		t.Parallel()
		b, a := budgetAgent(t)
		a.tool("raw", map[string]any{"notify": []any{map[string]any{"jsonrpc": "2.0", "method": "notifications/" + attackWords}}, "result": map[string]any{"content": []any{}}})
		for deadline := time.After(time.Second); ; {
			select {
			case m := <-a.notes:
				if strings.Contains(m.Method, attackWords) {
					t.Errorf("%.40s: %d bytes reached the agent; tokens charged %d (limit 100)", m.Method, len(attackWords), b.counters(t, "a", "s").Tokens)
				}
				continue
			case <-deadline:
			}
			break
		}
	})
}

// TestAttackAKeyTwiceOrAnotherMemberUncharged: the last review's finds:
// a completion's members besides its values, and a key given twice in a
// completion, a prompt or a notification's params (a client may read the
// first value, the gateway reads the last), reached the agent uncharged.
func TestAttackAKeyTwiceOrAnotherMemberUncharged(t *testing.T) {
	t.Parallel()
	big := string(mustJSON(attackWords))
	promptAgent := func(t *testing.T) (*bench, *agent) {
		b := newBench(t, smallRole(100))
		up := rawUpstreamConfig(t, "raw")
		up.Env = []string{"GATEWAY_RAW_UPSTREAM=completions"} // it lists a prompt
		a := stdioAgent(t, b.gateway(t, PrefixNever, up), Identity{Agent: "a", Session: "s", StartRole: "small"})
		a.initialize(nil)
		return b, a
	}
	for _, tt := range []struct{ name, kind, raw string }{
		{"a completion's other member", "completion", `{"completion":{"values":["a"],"note":` + big + `}}`},
		{"a completion's _meta", "completion", `{"completion":{"values":["a"]},"_meta":{"x":` + big + `}}`},
		{"a completion's values twice", "completion", `{"completion":{"values":[` + big + `],"values":["a"]}}`},
		{"a prompt's messages twice", "prompt", `{"messages":[{"role":"user","content":{"type":"text","text":` + big + `}}],"messages":[{"role":"user","content":{"type":"text","text":"ok"}}]}`},
		{"a prompt message's content twice", "prompt", `{"messages":[{"role":"user","content":{"type":"text","text":` + big + `},"content":{"type":"text","text":"ok"}}]}`},
		{"a prompt message's role twice", "prompt", `{"messages":[{"role":` + big + `,"role":"user","content":{"type":"text","text":"ok"}}]}`},
		{"a prompt's description twice", "prompt", `{"description":` + big + `,"description":"d","messages":[]}`},
		{"a log message's data twice", "notification", `{"level":"info","data":` + big + `,"data":"x"}`},
		{"a log message's logger twice", "notification", `{"level":"info","logger":` + big + `,"logger":"l","data":"x"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b *bench
			var got string
			switch tt.kind {
			case "completion":
				b = newBench(t, smallRole(100))
				a := stdioAgent(t, b.gateway(t, PrefixNever, completeUpstream(t, tt.raw)), Identity{Agent: "a", Session: "s", StartRole: "small"})
				a.initialize(nil)
				m := a.await(a.request("completion/complete", map[string]any{"ref": map[string]string{"type": "ref/prompt", "name": "p"},
					"argument": map[string]string{"name": "a", "value": ""}}))
				got = string(mustJSON(m))
			case "prompt":
				var a *agent
				b, a = promptAgent(t)
				m := a.await(a.request("prompts/get", map[string]any{"name": "p", "arguments": map[string]string{"a": base64.RawURLEncoding.EncodeToString([]byte(tt.raw))}}))
				got = string(mustJSON(m))
			case "notification":
				var a *agent
				b, a = budgetAgent(t)
				note := base64.RawURLEncoding.EncodeToString([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":` + tt.raw + `}`))
				a.tool("raw", map[string]any{"notify": []any{note}, "result": map[string]any{"content": []any{}}})
				for deadline := time.After(time.Second); ; {
					select {
					case m := <-a.notes:
						got += string(m.Params)
						continue
					case <-deadline:
					}
					break
				}
			}
			if strings.Contains(got, attackWords) {
				t.Errorf("%d bytes reached the agent; tokens charged %d (limit 100)", len(attackWords), b.counters(t, "a", "s").Tokens)
			}
		})
	}
}

// TestAttackAskShowsTheWholeCall: the person asked to approve a call sees
// its arguments in the elicitation's message, cut at 2,000 bytes without
// a word of it. The agent puts a long, harmless argument first (the keys
// come in order) and the command after it: the person read 2,000 bytes of
// a decoy, accepted, and "rm -rf ~" ran, never shown to them.
func TestAttackAskShowsTheWholeCall(t *testing.T) {
	t.Parallel()
	decoy := "harmless note " + strings.Repeat("x", 2500)
	for _, tt := range []struct {
		name string
		args map[string]any
	}{
		{"a decoy argument first", map[string]any{"a": decoy, "command": "rm -rf ~"}},
		{"a decoy in the command", map[string]any{"command": "echo " + decoy + " ; rm -rf ~"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			id := Identity{Agent: "tester", Session: "ask", StartRole: "careful"}
			c := f.stdio(t, id)
			var mu sync.Mutex
			var shown []string
			c.answer = func(m *message) (any, *rpcError) {
				var p struct {
					Message string `json:"message"`
				}
				json.Unmarshal(m.Params, &p)
				mu.Lock()
				shown = append(shown, p.Message)
				mu.Unlock()
				return answerElicitation("accept")(m)
			}
			c.initialize(map[string]any{"elicitation": map[string]any{}})
			text, isError := toolText(t, c.call("tools/call", tool("ctx_shell", tt.args)))
			mu.Lock()
			defer mu.Unlock()
			if len(shown) != 1 {
				t.Fatalf("asked %d times", len(shown))
			}
			if !strings.Contains(shown[0], "rm -rf ~") && !strings.Contains(shown[0], "not shown") {
				t.Errorf("the person approved a call whose command they were not shown, nor told of (%d bytes shown, ending %q); it ran: %v, its output ending %q",
					len(shown[0]), shown[0][max(0, len(shown[0])-120):], !isError, text[max(0, len(text)-20):])
			}
		})
	}
}
