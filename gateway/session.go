package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/govern"
)

// peer is how a message reaches the agent: over stdio the client's
// stdout, over HTTP a response's event stream or the session's stream of
// messages outside a request.
type peer interface {
	send(msg []byte) error
}

// session is one agent session: its identity, what its client declared,
// and its own connections to the upstreams.
type session struct {
	g    *Gateway
	id   Identity
	done chan struct{}
	// hungUp is closed once the agent's client can answer no request of
	// the gateway's (it closed the gateway's stdin).
	hungUp     chan struct{}
	hangUpOnce sync.Once

	mu        sync.Mutex
	out       peer
	startOnce sync.Once
	ready     chan struct{} // closed once the upstreams' first starts have ended
	ups       []*upstream
	client    clientState
	logLevel  string
	inflight  map[string]*inflight // the agent's requests under way, by id
	relays    map[string]chan *message
	nextRelay int64
	closed    bool
	lastSeen  time.Time
	// listCharged are the listed items charged to the session, by their
	// SHA-256 as the agent was given them (see chargeListed).
	listCharged map[[sha256.Size]byte]bool
	users       int // the connections using it (the gateway's lock)
}

// clientState is what the agent's client said at initialize.
type clientState struct {
	name        string // its clientInfo name/version, only recorded
	initialized bool
	version     string
	caps        map[string]json.RawMessage
}

// inflight is a request of the agent under way: its cancellation, and the
// stream of messages about it.
type inflight struct {
	cancel    context.CancelFunc
	cancelled atomic.Bool // by the agent: it wants no answer
	related   peer
	up        *upstream // the upstream it went to, when it went to one
}

func newSession(g *Gateway, id Identity, out peer) *session {
	return &session{g: g, id: id, out: out, done: make(chan struct{}), hungUp: make(chan struct{}), ready: make(chan struct{}),
		inflight: map[string]*inflight{}, relays: map[string]chan *message{}, lastSeen: time.Now(),
		listCharged: map[[sha256.Size]byte]bool{}}
}

func (s *session) setPeer(out peer) {
	s.mu.Lock()
	s.out = out
	s.mu.Unlock()
}

// dropPeer forgets out, if it is the session's way to the agent.
func (s *session) dropPeer(out peer) {
	s.mu.Lock()
	if s.out == out {
		s.out = nil
	}
	s.mu.Unlock()
}

// send delivers a message outside any request; dropped when the agent has
// no channel open for it.
func (s *session) send(msg []byte) {
	s.mu.Lock()
	out := s.out
	s.mu.Unlock()
	if out != nil {
		out.send(msg)
	}
}

// start connects the session's upstreams, once, waiting for their first
// attempts (an upstream that cannot start is reported and retried). A
// session that has ended starts none: nobody would stop them.
func (s *session) start(ctx context.Context) {
	s.startOnce.Do(func() {
		s.mu.Lock()
		for _, c := range s.g.o.Upstreams {
			if !s.closed {
				s.ups = append(s.ups, newUpstream(c, s))
			}
		}
		ups := slices.Clone(s.ups)
		s.mu.Unlock()
		var wg sync.WaitGroup
		for _, u := range ups {
			wg.Go(func() {
				if err := u.start(ctx); err != nil && !errors.Is(err, errClosed) {
					s.g.o.Logf("upstream %s: %v (retrying)", u.cfg.Name, err)
				}
			})
		}
		wg.Wait()
		close(s.ready)
	})
	<-s.ready
}

func (s *session) upstreams() []*upstream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ups)
}

func (s *session) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	ups := s.ups
	s.ups = nil
	for _, f := range s.inflight {
		f.cancel()
	}
	s.mu.Unlock()
	close(s.done)
	for _, u := range ups {
		u.close()
	}
}

// hangUp notes that the agent's client answers nothing more.
func (s *session) hangUp() { s.hangUpOnce.Do(func() { close(s.hungUp) }) }

// touch notes that the session was used now.
func (s *session) touch() {
	s.mu.Lock()
	s.lastSeen = time.Now()
	s.mu.Unlock()
}

// idle is how long the session has not been used.
func (s *session) idle() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.inflight) > 0 {
		return 0
	}
	return time.Since(s.lastSeen)
}

// mirrored are the client capabilities the upstreams are told of: what the
// agent's client can answer (sampling, elicitation, roots), as it declared
// them.
func (s *session) mirrored() map[string]json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]json.RawMessage{}
	for _, k := range []string{"sampling", "elicitation", "roots"} {
		if v, ok := s.client.caps[k]; ok {
			out[k] = v
		}
	}
	return out
}

// can reports whether the agent's client declared a capability.
func (s *session) can(capability string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.client.caps[capability]
	return ok
}

// handle answers one message of the agent: the response to a request (nil
// for a notification or a response). Messages about the request go to
// related, as they come.
func (s *session) handle(ctx context.Context, m *message, related peer) []byte {
	if r := s.respond(ctx, m, related); r != nil {
		return r.message()
	}
	return nil
}

// response is the response to a request of the agent: its result (raw
// JSON), or its error.
type response struct {
	id, result json.RawMessage
	err        *rpcError
}

// message is the response as one message, in a buffer of its own with a
// byte to spare (see resultMessage).
func (r *response) message() []byte {
	if r.err != nil {
		return errorMessage(r.id, r.err)
	}
	return resultMessage(r.id, r.result)
}

// respond is handle, with the response in its parts: a stdio session
// writes a result from where it is, rather than copied into a message
// (lineWriter.sendResponse).
func (s *session) respond(ctx context.Context, m *message, related peer) *response {
	s.touch()
	switch {
	case m.isResponse():
		s.mu.Lock()
		ch := s.relays[idKey(m.ID)]
		delete(s.relays, idKey(m.ID))
		s.mu.Unlock()
		if ch != nil {
			ch <- m
		}
		return nil
	case m.isNotification():
		s.notification(m)
		return nil
	}
	if m.Method != "initialize" && m.Method != "ping" {
		s.start(ctx) // a client that never said initialize still gets its upstreams
	}
	ctx, cancel := context.WithCancel(ctx)
	f := &inflight{cancel: cancel, related: related}
	key := idKey(m.ID)
	s.mu.Lock()
	s.inflight[key] = f
	s.mu.Unlock()
	defer func() {
		cancel()
		s.mu.Lock()
		delete(s.inflight, key)
		s.mu.Unlock()
	}()
	ctx = withInflight(ctx, f)
	result, rerr := s.request(ctx, m)
	if f.cancelled.Load() {
		return nil // a request the agent cancelled is not answered (MCP's cancellation)
	}
	if rerr != nil {
		return &response{id: m.ID, err: rerr}
	}
	return &response{id: m.ID, result: result}
}

// request answers one request of the agent.
func (s *session) request(ctx context.Context, m *message) (json.RawMessage, *rpcError) {
	switch m.Method {
	case "initialize":
		return s.initialize(ctx, m.Params)
	case "ping":
		return json.RawMessage(`{}`), nil
	case "tools/list":
		return s.listTools(ctx)
	case "tools/call":
		return s.callTool(ctx, m.Params)
	case "resources/list":
		return s.listResources(ctx)
	case "resources/templates/list":
		return s.listTemplates(ctx)
	case "resources/read":
		return s.readResource(ctx, m.Params)
	case "resources/subscribe", "resources/unsubscribe":
		return s.subscribe(ctx, m.Method, m.Params)
	case "prompts/list":
		return s.listPrompts(ctx)
	case "prompts/get":
		return s.getPrompt(ctx, m.Params)
	case "logging/setLevel":
		return s.setLevel(ctx, m.Params)
	case "completion/complete":
		return s.complete(ctx, m.Params)
	}
	return nil, &rpcError{Code: codeMethodNotFound, Message: "method not found: " + m.Method}
}

// notification takes a notification of the agent.
func (s *session) notification(m *message) {
	switch m.Method {
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		json.Unmarshal(m.Params, &p)
		s.mu.Lock()
		f := s.inflight[idKey(p.RequestID)]
		s.mu.Unlock()
		if f != nil {
			f.cancelled.Store(true)
			f.cancel() // the upstream is told through the call's context
		}
	case "notifications/roots/list_changed":
		for _, u := range s.upstreams() {
			u.notify(context.Background(), m.Method, m.Params)
		}
	case "notifications/initialized":
		s.mu.Lock()
		s.client.initialized = true
		s.mu.Unlock()
	}
}

// initialize answers the agent's handshake: its capabilities are what the
// upstreams are told, and what the gateway declares is what they declared.
func (s *session) initialize(ctx context.Context, params json.RawMessage) (json.RawMessage, *rpcError) {
	var p struct {
		ProtocolVersion string                     `json:"protocolVersion"`
		Capabilities    map[string]json.RawMessage `json:"capabilities"`
		ClientInfo      struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"clientInfo"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: "initialize: " + err.Error()}
	}
	version := protocolVersions[0]
	if slices.Contains(protocolVersions, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	s.mu.Lock()
	s.client.version, s.client.caps, s.client.name = version, p.Capabilities, clip(strings.TrimSuffix(p.ClientInfo.Name+"/"+p.ClientInfo.Version, "/"), 128)
	s.mu.Unlock()
	s.start(ctx)
	return mustJSON(map[string]any{
		"protocolVersion": version,
		"capabilities":    s.capabilities(),
		"serverInfo":      map[string]string{"name": "agent-harness", "version": s.g.o.Version},
		"instructions": "Tool calls pass through the Agent Harness, which governs them by your role and budget. " +
			"Use ctx_session to see your role (action=role), budget (action=budget), and why a tool is denied (action=explain tool=NAME).",
	}), nil
}

// capabilities are what the gateway declares: tools (its own ctx_session
// among them) and logging (the harness's events) always; resources,
// prompts and completions when an upstream declares them.
func (s *session) capabilities() map[string]any {
	caps := map[string]any{"tools": map[string]bool{"listChanged": true}, "logging": map[string]any{}}
	for _, u := range s.upstreams() {
		if u.capability("resources") != nil {
			caps["resources"] = map[string]bool{"subscribe": true, "listChanged": true}
		}
		if u.capability("prompts") != nil {
			caps["prompts"] = map[string]bool{"listChanged": true}
		}
		if u.capability("completions") != nil {
			caps["completions"] = map[string]any{}
		}
	}
	return caps
}

// listsChanged tells the agent that lists changed (an upstream's, or the
// upstream came back).
func (s *session) listsChanged(methods ...string) {
	for _, m := range methods {
		s.send(notificationMessage("notifications/"+strings.TrimSuffix(m, "/list")+"/list_changed", nil))
	}
}

// fromUpstream passes an upstream's notification on to the agent: a
// resource's URI is given the upstream's prefix, what it holds is charged
// (a log or progress message's text cut to what the budget leaves; see
// chargeNotification), and they go with the request they are about when
// one is under way. (An upstream's cancellation of a request it made of
// the agent ends that request's context in the connection, and so the
// gateway's own request of the agent, which it cancels in turn.)
func (s *session) fromUpstream(u *upstream, method string, params json.RawMessage) {
	switch method {
	case "notifications/resources/updated":
		var p map[string]json.RawMessage
		if json.Unmarshal(params, &p) == nil && p != nil {
			var uri string
			json.Unmarshal(p["uri"], &uri)
			exposed := s.g.exposeURI(u, uri)
			// The URI of a resource the role may not read is not the
			// agent's to see, nor how it changes (fail closed: an error
			// shows nothing).
			name := ResourcePrefix + exposed
			if !s.visible(context.Background(), []contract.Tool{{Name: name, Upstream: u.cfg.Name, UpstreamTool: ResourcePrefix + uri}})[name] {
				return
			}
			p["uri"] = mustJSON(exposed)
			params = mustJSON(p)
		}
	}
	if params = s.chargeNotification(method, params); params == nil {
		return
	}
	msg := notificationMessage(method, params)
	if f := s.underway(u); f != nil && (method == "notifications/progress" || method == "notifications/message") {
		f.related.send(msg)
		return
	}
	s.send(msg)
}

// goingTo notes that the request of ctx goes to u, so that what u sends
// about it goes with it.
func (s *session) goingTo(ctx context.Context, u *upstream) {
	if f := inflightOf(ctx); f != nil {
		s.mu.Lock()
		f.up = u
		s.mu.Unlock()
	}
}

// underway is the agent's latest request that went to u and is under
// way, nil when none is.
func (s *session) underway(u *upstream) *inflight {
	s.mu.Lock()
	defer s.mu.Unlock()
	var found *inflight
	for _, f := range s.inflight {
		if f.up == u {
			found = f
		}
	}
	return found
}

// relay makes a request of the agent for an upstream (sampling,
// elicitation, roots), if its client declared that it can answer it, and
// returns the agent's answer. What it asks is charged to the context as
// it goes (chargeAsked); sampling is charged besides as the cost it
// causes.
func (s *session) relay(ctx context.Context, u *upstream, method string, params json.RawMessage) (json.RawMessage, *rpcError) {
	capability := map[string]string{"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}[method]
	switch {
	case method == "ping":
		return json.RawMessage(`{}`), nil
	case capability == "":
		return nil, &rpcError{Code: codeMethodNotFound, Message: "method not found: " + method}
	case !s.can(capability):
		return nil, &rpcError{Code: codeMethodNotFound, Message: fmt.Sprintf("the agent's client does not support %s", capability)}
	}
	if method == "sampling/createMessage" {
		if why := s.mayCost(ctx); why != "" {
			return nil, &rpcError{Code: codeRefused, Message: "[harness] sampling refused: " + why}
		}
	}
	if why := s.chargeAsked(ctx, method, params); why != "" {
		return nil, &rpcError{Code: codeRefused, Message: "[harness] " + method + " refused: " + why}
	}
	result, rerr := s.ask(ctx, s.underway(u), method, params)
	if rerr == nil && method == "sampling/createMessage" {
		s.chargeSampling(ctx, params, result)
	}
	if rerr == nil && method == "roots/list" {
		result = s.projectRoots(result)
	}
	return result, rerr
}

// chargeAsked charges the params of an upstream's request of the agent
// to the session's context before they go, and says why they may not go
// ("" when they may): a sampling request's messages and an elicitation's
// message are text the agent's client receives, and the client is the
// agent's, whatever it answers (an error costs no model, and reads all
// the same). What the budget cannot take whole is not sent.
func (s *session) chargeAsked(ctx context.Context, method string, params json.RawMessage) string {
	if len(bytes.TrimSpace(params)) == 0 {
		return ""
	}
	st, err := s.g.o.Governor.Settle(ctx, govern.Output{Session: s.id.key(), Role: s.id.StartRole, Tool: method, Parts: []govern.Part{{Text: string(params)}}})
	switch {
	case err != nil:
		return "it could not be charged: " + err.Error()
	case st.Withheld > 0:
		return fmt.Sprintf("its %d tokens are more than the session's budget has left", st.Wanted)
	}
	return ""
}

// projectRoots keeps of the roots the agent's client answered those
// within the project (when the gateway has one): an upstream may take its
// roots as the directories it may touch, over those it was started with,
// and what the agent's client says is the agent's. What the upstream gets
// is made of what was checked alone, each root its uri and name (strings)
// and nothing else: a root passed on as the client wrote it could hold a
// second uri that another reader takes instead (a "URI", which Go's
// encoding/json reads as uri; a key given twice).
func (s *session) projectRoots(result json.RawMessage) json.RawMessage {
	project := s.g.o.Governor.Project()
	if project == "" {
		return result
	}
	var roots []json.RawMessage
	r, err := objectMembers(result)
	if err != nil || r == nil || json.Unmarshal(r["roots"], &roots) != nil {
		return json.RawMessage(`{"roots":[]}`)
	}
	type root struct {
		URI  string `json:"uri"`
		Name string `json:"name,omitempty"`
	}
	kept := []root{}
	for _, raw := range roots {
		m, err := objectMembers(raw)
		if err != nil || m == nil {
			continue
		}
		var uri, name string
		if json.Unmarshal(m["uri"], &uri) != nil || !within(uri, project) {
			continue
		}
		if n, ok := m["name"]; ok && json.Unmarshal(n, &name) != nil {
			name = ""
		}
		kept = append(kept, root{URI: uri, Name: name})
	}
	return mustJSON(map[string]any{"roots": kept})
}

// within reports whether a file URI names the directory dir or one below
// it, its links followed.
func within(uri, dir string) bool {
	u, err := url.Parse(uri)
	// A query or a fragment is no part of a directory's URI: an upstream
	// that cuts "file://" off and cleans what is left (?/../../etc) would
	// read one, and go where the path checked here does not.
	if err != nil || u.Scheme != "file" || u.Host != "" && u.Host != "localhost" || climbs(uri) ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(uri, "#") || u.Opaque != "" || u.User != nil {
		return false
	}
	path, err := filepath.EvalSymlinks(u.Path)
	if err != nil {
		return false
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// ask sends the agent a request and waits for its answer: on the stream
// of the request it is about, if one is under way, else on the session's.
func (s *session) ask(ctx context.Context, about *inflight, method string, params json.RawMessage) (json.RawMessage, *rpcError) {
	ch := make(chan *message, 1)
	s.mu.Lock()
	s.nextRelay++
	id := "\"harness-" + strconv.FormatInt(s.nextRelay, 10) + "\""
	s.relays[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.relays, id)
		s.mu.Unlock()
	}()
	msg, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}{"2.0", json.RawMessage(id), method, params})
	if about != nil {
		about.related.send(msg)
	} else {
		s.send(msg)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	case <-ctx.Done():
		s.send(notificationMessage("notifications/cancelled", map[string]any{"requestId": json.RawMessage(id), "reason": "the upstream gave up"}))
		return nil, &rpcError{Code: codeInternal, Message: "the request was cancelled"}
	case <-s.done:
		return nil, &rpcError{Code: codeInternal, Message: "the agent's session ended"}
	case <-s.hungUp:
		return nil, &rpcError{Code: codeInternal, Message: "the agent's client hung up"}
	}
}

// setLevel takes the agent's log level: the upstreams are told, and the
// harness's own events of the session are sent from then on at that level
// and above.
func (s *session) setLevel(ctx context.Context, params json.RawMessage) (json.RawMessage, *rpcError) {
	var p struct {
		Level string `json:"level"`
	}
	if err := json.Unmarshal(params, &p); err != nil || logLevels[p.Level] == 0 {
		return nil, &rpcError{Code: codeInvalidParams, Message: "logging/setLevel: want a level: debug, info, notice, warning, error, critical, alert, emergency"}
	}
	s.mu.Lock()
	s.logLevel = p.Level
	s.mu.Unlock()
	for _, u := range s.upstreams() {
		if u.capability("logging") != nil {
			u.call(ctx, "logging/setLevel", params)
		}
	}
	return json.RawMessage(`{}`), nil
}

// logLevels order the MCP log levels (syslog's), from the least severe.
var logLevels = map[string]int{"debug": 1, "info": 2, "notice": 3, "warning": 4, "error": 5, "critical": 6, "alert": 7, "emergency": 8}

// eventLevels are the log levels of the harness's events.
var eventLevels = map[events.Type]string{
	events.BudgetWarning: "warning", events.BudgetExhausted: "error", events.PolicyViolation: "warning", events.RoleChanged: "info",
}

// logEvent sends a harness event of the session to its client as an MCP
// log message, if the client set a level the event reaches.
func (s *session) logEvent(e events.Event) {
	level := eventLevels[e.Type]
	if level == "" {
		level = "info"
	}
	s.mu.Lock()
	set := s.logLevel
	s.mu.Unlock()
	if set == "" || logLevels[level] < logLevels[set] {
		return
	}
	s.send(notificationMessage("notifications/message", map[string]any{"level": level, "logger": "agent-harness", "data": e}))
}

// ctxKey carries the request under way in a context.
type ctxKey struct{}

func withInflight(ctx context.Context, f *inflight) context.Context {
	return context.WithValue(ctx, ctxKey{}, f)
}

func inflightOf(ctx context.Context) *inflight {
	f, _ := ctx.Value(ctxKey{}).(*inflight)
	return f
}

// clip is s cut to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
