package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/policy"
	"github.com/agentharness/harness/roles"
)

// The gateway's tests run it in this process, in front of the fixture
// upstream (testdata/upstream, a real MCP server built here), with a
// governor of the built-in roles and the test's own.

var upstreamBin string

func TestMain(m *testing.M) {
	if v := os.Getenv("GATEWAY_RAW_UPSTREAM"); v != "" { // this binary as the attack tests' raw upstream
		rawUpstream(os.Stdin, os.Stdout, v == "completions")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "gateway-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	upstreamBin = filepath.Join(dir, "upstream")
	if out, err := exec.Command("go", "build", "-o", upstreamBin, "../testdata/upstream").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the fixture upstream: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testRoles are roles the tests use beside the built-in ones.
var testRoles = map[string]string{
	"small.toml":   "[role]\ninherits = \"coder\"\n\n[limits]\nmax_context_tokens = 2000\n",
	"tiny.toml":    "[role]\ninherits = \"coder\"\n\n[limits]\nmax_context_tokens = 100\n",
	"noimage.toml": "[role]\ninherits = \"coder\"\n\n[tools]\ndenied = [\"resource:test://static-binary\", \"prompt:test_prompt_with_image\"]\n",
	"shell1.toml":  "[role]\ninherits = \"coder\"\n\n[limits]\nmax_shell_invocations = 1\n",
	"careful.toml": "[role]\ninherits = \"coder\"\n\n[tools]\nask = [\"ctx_shell\"]\n\n[limits]\nmax_shell_invocations = 1\n",
}

// fixture is a gateway, its governor and its ledger.
type fixture struct {
	g     *Gateway
	gov   *govern.Governor
	store budget.Store
	logs  *logSink
}

type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) logf(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

// all is a copy of the lines logged so far.
func (l *logSink) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// newFixture starts a gateway in front of the fixture upstream.
func newFixture(t testing.TB, mod func(*Options)) *fixture {
	t.Helper()
	dir := t.TempDir()
	for name, body := range testRoles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	store := budget.NewMemory()
	f := &fixture{store: store, logs: &logSink{}}
	bus := events.NewBus()
	f.gov = govern.New(govern.Options{Rules: testRules(t, roles.Dirs{Project: []string{dir}}), Store: store, Sinks: []events.Sink{bus}})
	o := Options{Governor: f.gov, Version: "test", Logf: f.logs.logf, Events: bus,
		Upstreams: []UpstreamConfig{{Name: "fixture", Command: upstreamBin}}}
	if mod != nil {
		mod(&o)
	}
	var err error
	f.g, err = New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.g.Close)
	return f
}

// testRules are the rules of the built-in roles and those in dirs, the
// policy's deadline a minute: a busy machine's decisions are not what
// these tests test.
func testRules(t testing.TB, dirs roles.Dirs) govern.Rules {
	t.Helper()
	set, err := roles.Load(dirs)
	if err != nil {
		t.Fatal(err)
	}
	e, err := policy.New(context.Background(), compiler.Compile(set, compiler.DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	e.SetBounds(policy.Bounds{Timeout: time.Minute})
	return govern.Rules{Engine: e, Roles: set}
}

// usage is a session's counters.
func (f *fixture) usage(t testing.TB, k budget.Key) budget.Counters {
	t.Helper()
	c, err := f.store.Get(context.Background(), k, "")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// rpc is an agent's MCP client, speaking raw JSON-RPC to the gateway:
// what it sends is what the test says, and it sees every message.
type rpc struct {
	t    testing.TB
	send func([]byte) error
	next atomic.Int64

	mu      sync.Mutex
	pending map[string]chan *message
	notes   []*message
	noted   chan struct{} // a notification came
	// answer answers the gateway's requests (sampling, elicitation,
	// roots); nil answers none.
	answer func(m *message) (any, *rpcError)
}

func newRPC(t testing.TB, send func([]byte) error) *rpc {
	return &rpc{t: t, send: send, pending: map[string]chan *message{}, noted: make(chan struct{}, 1)}
}

// take handles one message from the gateway.
func (c *rpc) take(line []byte) {
	m, err := parseMessage(line)
	if err != nil {
		c.t.Errorf("the gateway sent what is not a message: %v: %s", err, line)
		return
	}
	switch {
	case m.isResponse():
		c.mu.Lock()
		ch := c.pending[idKey(m.ID)]
		delete(c.pending, idKey(m.ID))
		c.mu.Unlock()
		if ch == nil {
			c.t.Errorf("a response to no request of the client: %s", line)
			return
		}
		ch <- m
	case m.isRequest():
		go func() {
			var out []byte
			if c.answer == nil {
				out = errorMessage(m.ID, &rpcError{Code: codeMethodNotFound, Message: "no"})
			} else if res, rerr := c.answer(m); rerr != nil {
				out = errorMessage(m.ID, rerr)
			} else {
				out = resultMessage(m.ID, mustJSON(res))
			}
			c.send(out)
		}()
	default:
		c.mu.Lock()
		c.notes = append(c.notes, m)
		c.mu.Unlock()
		select {
		case c.noted <- struct{}{}:
		default:
		}
	}
}

// start sends a request and returns a wait for its response.
func (c *rpc) start(method string, params any) (id int64, wait func() *message) {
	id = c.next.Add(1)
	ch := make(chan *message, 1)
	c.mu.Lock()
	c.pending[strconv.FormatInt(id, 10)] = ch
	c.mu.Unlock()
	p, _ := asRaw(params)
	if err := c.send(requestMessage(id, method, p)); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	return id, func() *message {
		select {
		case m := <-ch:
			return m
		case <-time.After(60 * time.Second):
			c.t.Fatalf("%s: no answer in 60 s", method)
			return nil
		}
	}
}

// call sends a request and waits for its response.
func (c *rpc) call(method string, params any) *message {
	_, wait := c.start(method, params)
	return wait()
}

// result is the result of a request that must succeed.
func (c *rpc) result(method string, params any) map[string]json.RawMessage {
	c.t.Helper()
	m := c.call(method, params)
	if m.Error != nil {
		c.t.Fatalf("%s: error %d %s", method, m.Error.Code, m.Error.Message)
	}
	var r map[string]json.RawMessage
	if err := json.Unmarshal(m.Result, &r); err != nil {
		c.t.Fatalf("%s: %v: %s", method, err, m.Result)
	}
	return r
}

func (c *rpc) notify(method string, params any) {
	if err := c.send(notificationMessage(method, params)); err != nil {
		c.t.Fatal(err)
	}
}

// waitNote waits for a notification that ok accepts.
func (c *rpc) waitNote(what string, ok func(*message) bool) *message {
	c.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		c.mu.Lock()
		for _, m := range c.notes {
			if ok(m) {
				c.mu.Unlock()
				return m
			}
		}
		c.mu.Unlock()
		select {
		case <-c.noted:
		case <-deadline:
			c.t.Fatalf("no %s in 30 s", what)
			return nil
		}
	}
}

// initialize makes the handshake, declaring capabilities.
func (c *rpc) initialize(capabilities map[string]any) map[string]json.RawMessage {
	c.t.Helper()
	if capabilities == nil {
		capabilities = map[string]any{}
	}
	r := c.result("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": capabilities,
		"clientInfo": map[string]string{"name": "gateway-test", "version": "1"}})
	c.notify("notifications/initialized", nil)
	return r
}

// stdio connects an agent over stdio as id; the session ends with the
// test.
func (f *fixture) stdio(t testing.TB, id Identity) *rpc {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var wmu sync.Mutex
	c := newRPC(t, func(b []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		_, err := inW.Write(append(b, '\n'))
		return err
	})
	served := make(chan error, 1)
	go func() { served <- f.g.ServeStdio(context.Background(), id, inR, outW); outW.Close() }()
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			c.take(append([]byte(nil), sc.Bytes()...))
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		if err := <-served; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
		<-read
	})
	return c
}

// toolText is the text of a tool result's content, and whether it is an
// error.
func toolText(t testing.TB, m *message) (string, bool) {
	t.Helper()
	if m.Error != nil {
		t.Fatalf("a JSON-RPC error where a tool result was expected: %d %s", m.Error.Code, m.Error.Message)
	}
	var r struct {
		Content []struct {
			Type, Text string
		}
		IsError bool
	}
	if err := json.Unmarshal(m.Result, &r); err != nil {
		t.Fatal(err)
	}
	text := ""
	for _, b := range r.Content {
		text += b.Text
	}
	return text, r.IsError
}

func tool(name string, args any) map[string]any {
	return map[string]any{"name": name, "arguments": args}
}

func agentSession(name string) Identity { return Identity{Agent: "tester", Session: name} }

func key(id Identity) budget.Key { return id.key() }

// tokens counts text as the governor does.
var tokenizer = budget.NewTokenizer()

func tokens(t testing.TB, s string) int64 {
	t.Helper()
	n, err := tokenizer.Count(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// decisionOf reads the decision of a refusal's _meta or error data.
func decisionOf(t testing.TB, raw json.RawMessage) contract.Decision {
	t.Helper()
	var v map[string]json.RawMessage
	json.Unmarshal(raw, &v)
	if meta, ok := v["_meta"]; ok {
		json.Unmarshal(meta, &v)
	}
	var d contract.Decision
	if err := json.Unmarshal(v[DecisionMeta], &d); err != nil {
		t.Fatalf("no decision in %s", raw)
	}
	return d
}

// waitFor polls for a condition, up to 30 s.
func waitFor(t testing.TB, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
	}
}

// inflightCount is the agents' requests under way, in every session;
// upstream counts only those on their way to an upstream.
func (g *Gateway) inflightCount(upstream bool) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, s := range g.sessions {
		s.mu.Lock()
		for _, f := range s.inflight {
			if !upstream || f.up != nil {
				n++
			}
		}
		s.mu.Unlock()
	}
	return n
}
