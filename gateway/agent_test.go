package gateway

// The test bench of the gateway's attack tests: a gateway in this process
// (so that -race sees all of it) in front of the fixture upstream
// (testdata/upstream) or of a raw upstream that answers whatever its
// caller asks it to (this test binary, see rawUpstream), and an agent
// that speaks raw JSON-RPC to it, as a hostile client would.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
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

// fixtureUpstream is the fixture upstream (built by TestMain) over stdio,
// named name.
func fixtureUpstream(t *testing.T, name string) UpstreamConfig {
	t.Helper()
	return UpstreamConfig{Name: name, Command: upstreamBin}
}

// rawUpstreamConfig is this test binary as a raw upstream, named name.
func rawUpstreamConfig(t *testing.T, name string) UpstreamConfig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return UpstreamConfig{Name: name, Command: exe, Env: []string{"GATEWAY_RAW_UPSTREAM=1"}}
}

// rawUpstream is an MCP server of one tool, raw, that answers a call with
// what its arguments say: with "touch", it first creates that file (a
// side effect a test can see); then the notifications of "notify" (raw
// JSON-RPC messages, or their text in unpadded URL-safe base64), then the result "result" as it is, or the JSON-RPC
// error "error"; or, with "ask" (a method and params), it makes that
// request of its client and answers the response it got as text. Reading the resource raw://R answers the result R (JSON,
// in unpadded URL-safe base64: see rawURI); any other URI U, the text
// "read U".
// With completions, it offers a prompt "p" and completes its arguments:
// a value "ask:METHOD" makes it make that request of its client first
// ("ask-long:METHOD": with upstreamWords as its message and messages).
// So a test can make it send anything an upstream could.
func rawUpstream(in io.Reader, out io.Writer, completions bool) {
	r := bufio.NewReaderSize(in, 1<<20)
	w := &lineWriter{w: out}
	for {
		line, err := readLine(r)
		if err != nil {
			return
		}
		m, err := parseMessage(line)
		if err != nil || !m.isRequest() {
			continue
		}
		var result json.RawMessage
		var rerr *rpcError
		switch m.Method {
		case "initialize":
			result = json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"resources":{},"logging":{}},"serverInfo":{"name":"raw","version":"1"}}`)
			if completions {
				result = json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"prompts":{},"completions":{}},"serverInfo":{"name":"raw","version":"1"}}`)
			}
		case "prompts/list":
			result = json.RawMessage(`{"prompts":[{"name":"p","arguments":[{"name":"a"}]}]}`)
		case "completion/complete":
			var p struct {
				Argument struct{ Value string } `json:"argument"`
			}
			json.Unmarshal(m.Params, &p)
			if method, ok := strings.CutPrefix(p.Argument.Value, "ask:"); ok {
				askClient(r, w, method, json.RawMessage(`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10}`))
			}
			if method, ok := strings.CutPrefix(p.Argument.Value, "ask-long:"); ok { // a request of the upstream's own long text
				askClient(r, w, method, mustJSON(map[string]any{"message": upstreamWords, "requestedSchema": map[string]any{"type": "object"},
					"messages": []any{map[string]any{"role": "user", "content": map[string]string{"type": "text", "text": upstreamWords}}}, "maxTokens": 10}))
			}
			result = json.RawMessage(`{"completion":{"values":["a"]}}`)
		case "tools/list":
			result = json.RawMessage(`{"tools":[{"name":"raw","inputSchema":{"type":"object","properties":{"touch":{"type":"string"},"result":{},"error":{},"notify":{"type":"array"},"ask":{"type":"object"}}}}]}`)
		case "tools/call":
			var p struct {
				Arguments struct {
					Notify []json.RawMessage `json:"notify"`
					Ask    *message          `json:"ask"`
					Result json.RawMessage   `json:"result"`
					Error  *rpcError         `json:"error"`
					Touch  string            `json:"touch"`
				} `json:"arguments"`
			}
			json.Unmarshal(m.Params, &p)
			if p.Arguments.Touch != "" {
				os.WriteFile(p.Arguments.Touch, nil, 0o600)
			}
			for _, n := range p.Arguments.Notify {
				if isString(n) { // a message the arguments could not hold as JSON (a key twice), in base64
					n, _ = base64.RawURLEncoding.DecodeString(stringValue(n))
				}
				w.send(n)
			}
			result, rerr = p.Arguments.Result, p.Arguments.Error
			if ask := p.Arguments.Ask; ask != nil {
				answer := askClient(r, w, ask.Method, ask.Params)
				result = mustJSON(map[string]any{"content": []any{map[string]string{"type": "text", "text": string(answer)}}})
			}
		case "resources/read":
			var p struct {
				URI string `json:"uri"`
			}
			json.Unmarshal(m.Params, &p)
			if raw, ok := strings.CutPrefix(p.URI, "raw://"); ok {
				result, _ = base64.RawURLEncoding.DecodeString(raw)
			} else {
				result = mustJSON(map[string]any{"contents": []any{map[string]string{"uri": p.URI, "text": "read " + p.URI}}})
			}
		case "prompts/get": // argument a: the raw result, in unpadded URL-safe base64
			var p struct {
				Arguments struct{ A string } `json:"arguments"`
			}
			json.Unmarshal(m.Params, &p)
			result, _ = base64.RawURLEncoding.DecodeString(p.Arguments.A)
		default:
			result = json.RawMessage(`{}`)
		}
		if rerr != nil {
			w.send(errorMessage(m.ID, rerr))
		} else {
			w.send(resultMessage(m.ID, result))
		}
	}
}

// upstreamWords are a long text of the raw upstream's own (of about
// 8000 tokens), which the agent never sent it.
var upstreamWords = strings.Repeat("the upstream's own words ", 1500)

// askClient makes a request of the client (the gateway) and returns its
// answer, the whole response, reading nothing else meanwhile.
func askClient(r *bufio.Reader, w *lineWriter, method string, params json.RawMessage) []byte {
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	w.send([]byte(`{"jsonrpc":"2.0","id":"up-1","method":` + string(mustJSON(method)) + `,"params":` + string(params) + `}`))
	for {
		line, err := readLine(r)
		if err != nil {
			return nil
		}
		if m, err := parseMessage(line); err == nil && m.isResponse() && idKey(m.ID) == `"up-1"` {
			return line
		}
	}
}

// rawURI is the URI of a resource the raw upstream reads as result.
func rawURI(result any) string {
	return "raw://" + base64.RawURLEncoding.EncodeToString(mustJSON(result))
}

// bench is a governor with its ledger, and roles of the test's own.
type bench struct {
	gov   *govern.Governor
	store *budget.Memory
	bus   *events.Bus // the governor's events, which the gateway forwards
}

// newBench compiles the built-in roles and files (name → TOML).
func newBench(t *testing.T, files map[string]string) *bench {
	t.Helper()
	return newBenchOf(t, benchOptions{files: files})
}

// benchOptions are a bench's roles (name → TOML), project and agents'
// budgets.
type benchOptions struct {
	files   map[string]string
	project string
	agents  map[string]compiler.AgentBudget
}

func newBenchOf(t *testing.T, o benchOptions) *bench {
	t.Helper()
	// A user's roles: the gateway's tests give roles budgets past the
	// ceiling, which a project's role may not hold.
	set := testroles.UserSet(t, o.files)
	cfg := compiler.DefaultConfig()
	cfg.AgentBudgets = o.agents
	e, err := policy.New(context.Background(), compiler.Compile(set, cfg))
	if err != nil {
		t.Fatal(err)
	}
	e.SetBounds(policy.Bounds{Timeout: time.Minute}) // a busy machine under -race is no slow policy
	store, bus := budget.NewMemory(), events.NewBus()
	return &bench{gov: govern.New(govern.Options{Rules: govern.Rules{Engine: e, Roles: set}, Store: store, Sinks: []events.Sink{bus}, Project: o.project}), store: store, bus: bus}
}

// gateway is a gateway of the bench's governor in front of ups.
func (b *bench) gateway(t *testing.T, prefix string, ups ...UpstreamConfig) *Gateway {
	t.Helper()
	g, err := New(context.Background(), Options{Governor: b.gov, Upstreams: ups, Prefix: prefix, Version: "test", Events: b.bus,
		Logf: func(format string, args ...any) { t.Logf(format, args...) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

// counters are a session's counters in the ledger.
func (b *bench) counters(t *testing.T, agent, session string) budget.Counters {
	t.Helper()
	c, err := b.store.Get(context.Background(), budget.Key{Agent: agent, Session: session}, "")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// agent is a client of the gateway speaking raw JSON-RPC: it sends what
// it likes, and sorts what comes back into responses (by id),
// notifications and requests of the gateway.
type agent struct {
	t    *testing.T
	send func(msg []byte)

	mu      sync.Mutex
	next    int
	waiting map[string]chan *message

	notes    chan *message // notifications, as they come
	requests chan *message // the gateway's requests (sampling, ...)
	strays   []string      // what came that the agent did not expect

	// Over stdio: hang up (close the gateway's stdin), and served,
	// closed once the gateway has stopped serving the agent.
	hangUp func()
	served chan struct{}
}

func newAgent(t *testing.T, send func([]byte)) *agent {
	return &agent{t: t, send: send, waiting: map[string]chan *message{},
		notes: make(chan *message, 4096), requests: make(chan *message, 64)}
}

// read sorts the messages of r, a message a line, until it ends.
func (a *agent) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := readLine(br)
		if err != nil {
			return
		}
		a.take(line)
	}
}

// take sorts one message.
func (a *agent) take(line []byte) {
	m, err := parseMessage(line)
	if err != nil { // an error of no request (its id null)
		var e message
		if json.Unmarshal(line, &e) == nil && e.Error != nil && !e.hasID() {
			m, err = &e, nil
			m.ID = json.RawMessage("null")
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case err != nil:
		a.strays = append(a.strays, string(line))
	case m.isResponse() || m.Error != nil:
		select {
		case a.waiting[idKey(m.ID)] <- m: // a nil channel (no such request) is never ready
		default:
			a.strays = append(a.strays, string(line))
		}
	case m.isNotification():
		select {
		case a.notes <- m:
		default:
			a.strays = append(a.strays, "a notification beyond the agent's buffer")
		}
	default:
		select {
		case a.requests <- m:
		default:
			a.strays = append(a.strays, string(line))
		}
	}
}

// request sends a request and returns its id, whose response await gives.
func (a *agent) request(method string, params any) string {
	a.mu.Lock()
	a.next++
	id := strconv.Itoa(a.next)
	a.waiting[id] = make(chan *message, 1)
	a.mu.Unlock()
	p, _ := asRaw(params)
	a.send(requestMessage(int64(a.next), method, p))
	return id
}

// await is the response to request id.
func (a *agent) await(id string) *message {
	a.t.Helper()
	a.mu.Lock()
	ch := a.waiting[id]
	a.mu.Unlock()
	if ch == nil {
		a.t.Fatalf("request %s was awaited already, or never made", id)
	}
	select {
	case m := <-ch:
		a.mu.Lock()
		delete(a.waiting, id)
		a.mu.Unlock()
		return m
	case <-time.After(30 * time.Second):
		a.t.Fatalf("no response to request %s", id)
		return nil
	}
}

// call sends a request and waits for its result, failing on an error.
func (a *agent) call(method string, params any) json.RawMessage {
	a.t.Helper()
	m := a.await(a.request(method, params))
	if m.Error != nil {
		a.t.Fatalf("%s: %d %s", method, m.Error.Code, m.Error.Message)
	}
	return m.Result
}

// notify sends a notification.
func (a *agent) notify(method string, params any) { a.send(notificationMessage(method, params)) }

// initialize makes the handshake, declaring caps.
func (a *agent) initialize(caps map[string]any) {
	a.t.Helper()
	if caps == nil {
		caps = map[string]any{}
	}
	a.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": caps,
		"clientInfo": map[string]string{"name": "attacker", "version": "1"}})
	a.notify("notifications/initialized", nil)
}

// tool calls a tool and returns its result.
func (a *agent) tool(name string, args any) toolAnswer {
	a.t.Helper()
	var r toolAnswer
	raw := a.call("tools/call", map[string]any{"name": name, "arguments": args})
	if err := json.Unmarshal(raw, &r); err != nil {
		a.t.Fatalf("%s: %v: %s", name, err, raw)
	}
	r.raw = raw
	return r
}

// toolAnswer is a tool result as the agent reads it.
type toolAnswer struct {
	Content []json.RawMessage `json:"content"`
	IsError bool              `json:"isError"`
	raw     json.RawMessage
}

// stdioAgent serves an agent over stdio as id, until the test ends.
func stdioAgent(t *testing.T, g *Gateway, id Identity) *agent {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	a := newAgent(t, func(msg []byte) { inW.Write(append(msg, '\n')) })
	served, read := make(chan struct{}), make(chan struct{})
	a.hangUp, a.served = func() { inW.Close() }, served
	go func() {
		defer close(served)
		g.ServeStdio(context.Background(), id, inR, outW)
		outW.Close()
	}()
	go func() {
		defer close(read)
		a.read(outR)
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-served:
			<-read
		case <-time.After(30 * time.Second):
			t.Error("the gateway did not stop serving the agent after it hung up")
		}
	})
	return a
}

// httpAgent is an agent over streamable HTTP with a bearer token: each
// message a POST (its answer, JSON or an event stream, sorted as it
// comes), the session's id as the gateway issued it.
type httpAgent struct {
	*agent
	url, token string

	mu  sync.Mutex
	sid string
	wg  sync.WaitGroup
}

func newHTTPAgent(t *testing.T, url, token string) *httpAgent {
	h := &httpAgent{url: url, token: token}
	h.agent = newAgent(t, h.post)
	t.Cleanup(h.wg.Wait)
	return h
}

// header sets the token and the session on r.
func (h *httpAgent) header(r *http.Request) {
	r.Header.Set("Authorization", "Bearer "+h.token)
	h.mu.Lock()
	if h.sid != "" {
		r.Header.Set("Mcp-Session-Id", h.sid)
	}
	h.mu.Unlock()
}

// post sends msg; what comes back is sorted as it comes.
func (h *httpAgent) post(msg []byte) {
	h.wg.Go(func() {
		req, _ := http.NewRequest(http.MethodPost, h.url, bytes.NewReader(msg))
		h.header(req)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			h.mu.Lock()
			h.sid = sid
			h.mu.Unlock()
		}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			h.events(resp.Body)
			return
		}
		if body, _ := io.ReadAll(resp.Body); len(bytes.TrimSpace(body)) > 0 {
			h.take(body)
		}
	})
}

// events sorts the messages of an event stream until it ends.
func (h *httpAgent) events(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			h.take([]byte(data))
		}
	}
}

// stream opens the session's stream of messages outside requests, and
// sorts what comes on it until the test ends.
func (h *httpAgent) stream() {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.url, nil)
	h.header(req)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("GET: %s", resp.Status)
	}
	h.wg.Go(func() {
		defer resp.Body.Close()
		h.events(resp.Body)
	})
}
