package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HTTPOptions configure HTTPHandler: who may call, and its limits.
type HTTPOptions struct {
	// Tokens admit agents. With none, every request is the agent
	// Anonymous names, if it is set (only on loopback: the caller
	// checks).
	Tokens []Token
	// Anonymous is the agent of requests without a token when no tokens
	// are configured ("": none are admitted).
	Anonymous string
	// StartRole is the role of an anonymous agent's new sessions.
	StartRole string

	// MaxBody bounds a request's body (default 8 MiB; 413 beyond).
	MaxBody int64
	// BodyTimeout bounds the reading of a request's body (default 30 s;
	// 408 beyond), so that a body sent a byte at a time holds nothing.
	BodyTimeout time.Duration
	// SessionIdle ends a session nobody used for this long (default 30
	// min): its upstreams stop; its counters stay in the ledger.
	SessionIdle time.Duration
	// MaxSessions caps the live sessions of one token, or of the
	// anonymous agent (default 64; 429 beyond).
	MaxSessions int
	// MaxRequests and MaxPending cap the requests under way of one token,
	// or of the anonymous agent, over all its sessions: their number
	// (default 256) and the bytes of their bodies (default 64 MiB, and
	// never less than MaxBody; a body's Content-Length, or MaxBody for one
	// sent without). Beyond either, a POST is refused with 429 before its
	// body is read: each request holds its body, and what was decoded of
	// it, for as long as its call lasts, which the agent may make long (a
	// slow tool, an approval it never gives).
	MaxRequests int
	MaxPending  int64
	// Origins are the Origin headers accepted (a browser's page): scheme
	// and host, with "*" for any port, such as "https://app.example:*".
	// Default: loopback origins. A request without Origin is not a
	// browser's and is not checked.
	Origins []string
	// Hosts are the Host headers accepted (with any port), against DNS
	// rebinding. Default: the loopback names when Loopback, else any.
	Hosts    []string
	Loopback bool
	// Logf reports each limit a request met.
	Logf func(format string, args ...any)
	// Routes are served beside /mcp, by path (the metrics, health and
	// readiness): behind the Origin and Host checks, not behind the
	// agents' tokens (each does its own).
	Routes map[string]http.Handler
}

// HTTP defaults.
const (
	DefaultMaxBody     = 8 << 20
	DefaultBodyTimeout = 30 * time.Second
	DefaultSessionIdle = 30 * time.Minute
	DefaultMaxSessions = 64
	DefaultMaxRequests = 256
	DefaultMaxPending  = 64 << 20
)

// loopbackHosts are the names of this machine that a DNS rebinding
// cannot take.
var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// LoopbackOrigins are the default Origins.
var LoopbackOrigins = []string{"http://localhost:*", "https://localhost:*", "http://127.0.0.1:*", "https://127.0.0.1:*", "http://[::1]:*", "https://[::1]:*"}

// httpServer is MCP's streamable HTTP transport on /mcp: a POST carries
// one message and is answered with JSON, or with an event stream when
// messages about the request come before its answer; a GET opens the
// session's stream of messages outside requests; a DELETE ends the
// session. The gateway issues the sessions (Mcp-Session-Id) and checks
// every later request's against the token it was issued to.
type httpServer struct {
	g *Gateway
	o HTTPOptions

	mu       sync.Mutex
	sessions map[string]*httpSession // by Mcp-Session-Id
	owned    map[int]int             // live sessions by owner (token index; -1: anonymous)
	busy     map[int]pending         // POSTs under way by owner
}

// pending are the POSTs of an owner under way: how many, and the bytes
// their bodies may hold.
type pending struct {
	requests int
	bytes    int64
}

// httpSession is one issued Mcp-Session-Id.
type httpSession struct {
	id    string
	owner int
	s     *session

	mu       sync.Mutex
	stream   *eventStream // the open GET stream, if any
	active   int          // requests under way
	lastSeen time.Time
	ended    bool
}

// HTTPHandler serves streamable HTTP on /mcp. Agents present a bearer
// token (Authorization: Bearer T) naming them. A client may name its own
// session (X-Harness-Session) only when its token allows it: otherwise a
// new name per request would be a fresh budget each time.
func (g *Gateway) HTTPHandler(o HTTPOptions) http.Handler {
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = DefaultSessionIdle
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxRequests <= 0 {
		o.MaxRequests = DefaultMaxRequests
	}
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	o.MaxPending = max(o.MaxPending, o.MaxBody)
	o = o.guarded()
	if o.Logf == nil {
		o.Logf = g.o.Logf
	} else {
		o.Logf = printable(o.Logf)
	}
	h := &httpServer{g: g, o: o, sessions: map[string]*httpSession{}, owned: map[int]int{}, busy: map[int]pending{}}
	go h.expireLoop()
	return h
}

// refuse answers a request with an HTTP error, and logs it.
func (h *httpServer) refuse(w http.ResponseWriter, r *http.Request, status int, why string) {
	h.o.Logf("http: %d %s %s from %s: %s", status, r.Method, r.URL.Path, r.RemoteAddr, why)
	http.Error(w, why, status)
}

// rpcRefuse answers with an HTTP error whose body is a JSON-RPC error.
func (h *httpServer) rpcRefuse(w http.ResponseWriter, r *http.Request, status int, id json.RawMessage, e *rpcError) {
	if status >= 400 {
		h.o.Logf("http: %d %s from %s: %s", status, r.Method, r.RemoteAddr, e.Message)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(errorMessage(id, e))
}

func (h *httpServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/mcp" {
		route, ok := h.o.Routes[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if why := h.checkOrigin(r); why != "" {
			h.refuse(w, r, http.StatusForbidden, why)
			return
		}
		route.ServeHTTP(w, r)
		return
	}
	if why := h.checkOrigin(r); why != "" {
		h.refuse(w, r, http.StatusForbidden, why)
		return
	}
	id, owner, clientSessions, ok := h.authenticate(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="agent-harness"`)
		h.refuse(w, r, http.StatusUnauthorized, "a valid bearer token is required (see [[gateway.tokens]] in harness.toml)")
		return
	}
	named := r.Header.Get("X-Harness-Session")
	if named != "" && !clientSessions {
		h.refuse(w, r, http.StatusBadRequest, "X-Harness-Session is not accepted for this token: the gateway issues sessions (Mcp-Session-Id); "+
			"client_sessions = true on the token in harness.toml lets its client name them")
		return
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !slices.Contains(protocolVersions, v) && r.Method != http.MethodPost {
		h.refuse(w, r, http.StatusBadRequest, unsupportedVersion(v))
		return
	}
	switch r.Method {
	case http.MethodPost:
		size := r.ContentLength
		if size < 0 || size > h.o.MaxBody {
			size = h.o.MaxBody
		}
		if why := h.enter(owner, size); why != "" {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Connection", "close") // the body is not read
			h.rpcRefuse(w, r, http.StatusTooManyRequests, nil, &rpcError{Code: codeInternal, Message: why})
			return
		}
		defer h.leave(owner, size)
		h.post(w, r, id, owner, named)
	case http.MethodGet:
		h.get(w, r, owner)
	case http.MethodDelete:
		hs, ok := h.lookup(w, r, owner)
		if ok {
			h.end(hs)
			w.WriteHeader(http.StatusNoContent)
		}
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		h.refuse(w, r, http.StatusMethodNotAllowed, "want POST, GET or DELETE")
	}
}

// enter counts a POST of owner under way, whose body may hold size
// bytes, unless that would take owner past HTTPOptions.MaxRequests or
// MaxPending: then it says why, and the request is refused before its body
// is read. Every message counts (an answer to the gateway's question too),
// since its body is read before what it is is known.
func (h *httpServer) enter(owner int, size int64) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.busy[owner]
	switch {
	case p.requests >= h.o.MaxRequests:
		return fmt.Sprintf("this agent has %d requests under way, the most it may have: wait for one to end", p.requests)
	case p.bytes+size > h.o.MaxPending:
		return fmt.Sprintf("this agent's requests under way hold %d bytes, and this one would take them past %d: wait for one to end", p.bytes, h.o.MaxPending)
	}
	h.busy[owner] = pending{p.requests + 1, p.bytes + size}
	return ""
}

// leave ends a POST that enter counted.
func (h *httpServer) leave(owner int, size int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.busy[owner]
	if p.requests--; p.requests == 0 {
		delete(h.busy, owner)
		return
	}
	p.bytes -= size
	h.busy[owner] = p
}

// guarded are o with the default Origins and Hosts.
func (o HTTPOptions) guarded() HTTPOptions {
	if o.Origins == nil {
		o.Origins = LoopbackOrigins
	}
	if o.Hosts == nil && o.Loopback {
		o.Hosts = loopbackHosts
	}
	return o
}

// CheckOrigin is the gateway's refusal of a request a browser's page of
// another site, or a name rebound to this machine, sends (an Origin off
// the allow-list, a Host off it), under o's defaults; "" when it passes.
// Other handlers beside the gateway's (the live view) hold their requests
// to it.
func (o HTTPOptions) CheckOrigin(r *http.Request) string {
	return (&httpServer{o: o.guarded()}).checkOrigin(r)
}

// checkOrigin refuses what a browser's page, or a name rebound to this
// machine, sends: an Origin off the allow-list, a Host off it.
func (h *httpServer) checkOrigin(r *http.Request) string {
	if origin := r.Header.Get("Origin"); origin != "" && !originAllowed(origin, h.o.Origins) {
		return fmt.Sprintf("origin %q is not allowed (gateway origins in harness.toml)", origin)
	}
	if h.o.Hosts != nil {
		host := r.Host
		if hp, _, err := net.SplitHostPort(host); err == nil {
			host = hp
		}
		host = strings.Trim(host, "[]")
		if !slices.ContainsFunc(h.o.Hosts, func(a string) bool { return strings.EqualFold(strings.Trim(a, "[]"), host) }) {
			return fmt.Sprintf("host %q is not this gateway's (a DNS rebinding?)", r.Host)
		}
	}
	return ""
}

// originAllowed matches an Origin against patterns of scheme://host[:port],
// the port "*" for any.
func originAllowed(origin string, allowed []string) bool {
	o, err := url.Parse(origin)
	if err != nil || o.Host == "" {
		return false
	}
	for _, a := range allowed {
		if a == "*" {
			return true
		}
		p, err := url.Parse(strings.Replace(a, ":*", "", 1))
		if err != nil || !strings.EqualFold(p.Scheme, o.Scheme) || !strings.EqualFold(p.Hostname(), o.Hostname()) {
			continue
		}
		if strings.HasSuffix(a, ":*") || p.Port() == o.Port() {
			return true
		}
	}
	return false
}

// authenticate is the request's agent by its bearer token: its identity,
// the token's index (-1: the anonymous agent), and whether it may name its
// sessions.
func (h *httpServer) authenticate(r *http.Request) (Identity, int, bool, bool) {
	if len(h.o.Tokens) == 0 {
		if h.o.Anonymous == "" {
			return Identity{}, 0, false, false
		}
		return Identity{Agent: h.o.Anonymous, StartRole: h.o.StartRole}, -1, false, true
	}
	presented, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return Identity{}, 0, false, false
	}
	for i, t := range h.o.Tokens {
		if t.Agent != "" && t.matches(strings.TrimSpace(presented)) {
			return Identity{Agent: t.Agent, StartRole: t.Role}, i, t.ClientSessions, true
		}
	}
	return Identity{}, 0, false, false
}

// readBody reads a request's body within its size and time. A body
// that could not be read keeps its deadline and ends its connection
// after the answer: the server would otherwise read on for the rest of
// it (to keep the connection), without a deadline.
func (h *httpServer) readBody(w http.ResponseWriter, r *http.Request) ([]byte, int, error) {
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(h.o.BodyTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.o.MaxBody))
	if err != nil {
		// The rest of the body is not read (the server would, to keep
		// the connection): the connection closes after the answer.
		w.Header().Set("Connection", "close")
	} else {
		rc.SetReadDeadline(time.Time{})
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("a body of more than %d bytes", h.o.MaxBody)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, http.StatusRequestTimeout, fmt.Errorf("the body took more than %s to arrive", h.o.BodyTimeout)
	case err != nil:
		return nil, http.StatusBadRequest, err
	}
	return body, 0, nil
}

func (h *httpServer) post(w http.ResponseWriter, r *http.Request, id Identity, owner int, named string) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		h.refuse(w, r, http.StatusUnsupportedMediaType, "want Content-Type: application/json")
		return
	}
	body, status, err := h.readBody(w, r)
	if err != nil {
		h.refuse(w, r, status, err.Error())
		return
	}
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		h.rpcRefuse(w, r, http.StatusBadRequest, nil, &rpcError{Code: codeInvalidRequest, Message: "JSON-RPC batches are not supported: send one message a request"})
		return
	}
	m, err := parseMessage(body)
	if err != nil {
		code := codeInvalidRequest
		if !json.Valid(body) {
			code = codeParse
		}
		h.rpcRefuse(w, r, http.StatusBadRequest, nil, &rpcError{Code: code, Message: "not a JSON-RPC message: " + err.Error()})
		return
	}
	if m.Method == "server/discover" && m.isRequest() {
		// The stateless protocol's probe (2026-07-28): it is not spoken
		// here, and its client falls back to initialize.
		h.rpcRefuse(w, r, http.StatusOK, m.ID, &rpcError{Code: codeMethodNotFound,
			Message: "method not found: server/discover (this gateway speaks MCP " + protocolVersions[len(protocolVersions)-1] + " to " + protocolVersions[0] + ": initialize)"})
		return
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !slices.Contains(protocolVersions, v) {
		h.refuse(w, r, http.StatusBadRequest, unsupportedVersion(v))
		return
	}
	var hs *httpSession
	if m.Method == "initialize" && m.isRequest() {
		if hs, err = h.begin(id, owner, named); err != nil {
			status := http.StatusTooManyRequests
			if errors.Is(err, errShutdown) {
				status = http.StatusServiceUnavailable
			}
			h.rpcRefuse(w, r, status, m.ID, &rpcError{Code: codeInvalidRequest, Message: err.Error()})
			return
		}
		w.Header().Set("Mcp-Session-Id", hs.id)
	} else {
		var ok bool
		if hs, ok = h.lookup(w, r, owner); !ok {
			return
		}
	}
	hs.use(1)
	defer hs.use(-1)
	if !m.isRequest() {
		hs.s.handle(r.Context(), m, nil)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	out := &responseStream{w: w, rc: http.NewResponseController(w), s: hs.s}
	resp := hs.s.handle(r.Context(), m, out)
	out.finish(resp)
}

// begin issues a session for an initialize, within its owner's cap.
func (h *httpServer) begin(id Identity, owner int, named string) (*httpSession, error) {
	var raw [16]byte
	rand.Read(raw[:])
	sid := hex.EncodeToString(raw[:])
	id.Session = "mcp-" + sid
	if named != "" {
		id.Session = named
	}
	h.mu.Lock()
	if h.owned[owner] >= h.o.MaxSessions {
		h.mu.Unlock()
		return nil, fmt.Errorf("this agent has %d live sessions, the most it may have: end one (DELETE /mcp) or let one expire", h.o.MaxSessions)
	}
	h.owned[owner]++
	h.mu.Unlock()
	s, err := h.g.session(id, nil)
	if err != nil {
		h.mu.Lock()
		h.owned[owner]--
		h.mu.Unlock()
		return nil, err
	}
	hs := &httpSession{id: sid, owner: owner, s: s, lastSeen: time.Now()}
	h.mu.Lock()
	h.sessions[sid] = hs
	h.mu.Unlock()
	return hs, nil
}

// lookup is the request's session: one the gateway issued to this
// token, else an answer (400 without an id, 404 for one it does not
// know: the client then starts a new session).
func (h *httpServer) lookup(w http.ResponseWriter, r *http.Request, owner int) (*httpSession, bool) {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		h.refuse(w, r, http.StatusBadRequest, "Mcp-Session-Id is required (initialize first)")
		return nil, false
	}
	h.mu.Lock()
	hs := h.sessions[sid]
	h.mu.Unlock()
	if hs == nil || hs.owner != owner {
		h.refuse(w, r, http.StatusNotFound, "no such session (it ended or expired): initialize again")
		return nil, false
	}
	return hs, true
}

// end ends an issued session.
func (h *httpServer) end(hs *httpSession) {
	h.mu.Lock()
	if h.sessions[hs.id] != hs {
		h.mu.Unlock()
		return
	}
	delete(h.sessions, hs.id)
	h.owned[hs.owner]--
	h.mu.Unlock()
	hs.mu.Lock()
	hs.ended = true
	stream := hs.stream
	hs.mu.Unlock()
	if stream != nil {
		stream.end()
	}
	h.g.release(hs.s)
}

func (hs *httpSession) use(n int) {
	hs.mu.Lock()
	hs.active += n
	hs.lastSeen = time.Now()
	hs.mu.Unlock()
}

// idleSince is when the session was last used; zero while it is in use.
func (hs *httpSession) idleSince() time.Time {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.active > 0 || hs.stream != nil {
		return time.Time{}
	}
	return hs.lastSeen
}

// expire ends the sessions idle since before now less the idle time.
func (h *httpServer) expire(now time.Time) int {
	h.mu.Lock()
	var idle []*httpSession
	for _, hs := range h.sessions {
		if t := hs.idleSince(); !t.IsZero() && now.Sub(t) >= h.o.SessionIdle {
			idle = append(idle, hs)
		}
	}
	h.mu.Unlock()
	for _, hs := range idle {
		h.o.Logf("http: session %s of agent %s expired after %s idle", hs.s.id.Session, hs.s.id.Agent, h.o.SessionIdle)
		h.end(hs)
	}
	return len(idle)
}

func (h *httpServer) expireLoop() {
	t := time.NewTicker(min(h.o.SessionIdle/4, time.Minute))
	defer t.Stop()
	for {
		select {
		case <-h.g.done:
			return
		case now := <-t.C:
			h.expire(now)
		}
	}
}

// get opens the session's stream of messages outside requests, one at a
// time.
func (h *httpServer) get(w http.ResponseWriter, r *http.Request, owner int) {
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		w.Header().Set("Allow", "POST, DELETE")
		h.refuse(w, r, http.StatusMethodNotAllowed, "GET opens an event stream: want Accept: text/event-stream")
		return
	}
	hs, ok := h.lookup(w, r, owner)
	if !ok {
		return
	}
	stream := &eventStream{w: w, rc: http.NewResponseController(w), ended: make(chan struct{}), queue: make(chan []byte, streamQueue)}
	hs.mu.Lock()
	switch {
	case hs.ended:
		hs.mu.Unlock()
		h.refuse(w, r, http.StatusNotFound, "no such session (it ended or expired): initialize again")
		return
	case hs.stream != nil:
		hs.mu.Unlock()
		h.refuse(w, r, http.StatusConflict, "this session's stream is open already")
		return
	}
	hs.stream = stream
	hs.mu.Unlock()
	// The session sends on the stream before its client sees it open: a
	// message sent in between is queued, not dropped.
	hs.s.setPeer(stream)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	stream.rc.Flush()
	stream.write(r.Context(), hs.s.done)
	stream.end()
	hs.s.dropPeer(stream)
	hs.mu.Lock()
	if hs.stream == stream {
		hs.stream = nil
	}
	hs.lastSeen = time.Now()
	hs.mu.Unlock()
}

// eventStream writes messages as server-sent events. Its GET's handler
// writes them, so that a client that does not read its stream holds up
// nobody who sends on it (the harness's events of every session go out
// one at a time): past streamQueue messages not yet written, or a write
// that takes longer than streamWriteTimeout, the stream ends.
type eventStream struct {
	mu    sync.Mutex
	w     http.ResponseWriter
	rc    *http.ResponseController
	n     int
	queue chan []byte
	ended chan struct{}
	gone  bool
}

// The bounds of a client that does not keep up with its stream.
const (
	streamQueue        = 256
	streamWriteTimeout = 30 * time.Second
)

func (e *eventStream) send(msg []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gone {
		return errors.New("the stream is closed")
	}
	select {
	case e.queue <- msg:
		return nil
	default:
		e.gone = true
		close(e.ended)
		return errors.New("the stream's client does not keep up: the stream is closed")
	}
}

// write writes the queued messages until the stream ends, its request is
// done or the session ends.
func (e *eventStream) write(ctx context.Context, sessionDone <-chan struct{}) {
	for {
		select {
		case msg := <-e.queue:
			e.n++
			e.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
			_, err := fmt.Fprintf(e.w, "id: %d\nevent: message\ndata: %s\n\n", e.n, oneLine(msg))
			if err == nil {
				err = e.rc.Flush()
			}
			if err != nil {
				return
			}
		case <-ctx.Done():
			return
		case <-e.ended:
			return
		case <-sessionDone:
			return
		}
	}
}

// end closes the stream: nothing more is written on it.
func (e *eventStream) end() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.gone {
		e.gone = true
		close(e.ended)
	}
}

// responseStream is a POST's answer: JSON when the response is all there
// is, an event stream once a message about the request comes before it.
// After the response, messages go on the session's stream.
type responseStream struct {
	mu   sync.Mutex
	w    http.ResponseWriter
	rc   *http.ResponseController
	s    *session
	sse  bool
	done bool
	n    int
}

func (r *responseStream) send(msg []byte) error {
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		r.s.send(msg)
		return nil
	}
	defer r.mu.Unlock()
	if !r.sse {
		r.sse = true
		r.w.Header().Set("Content-Type", "text/event-stream")
		r.w.Header().Set("Cache-Control", "no-cache")
		r.w.WriteHeader(http.StatusOK)
	}
	return r.event(msg)
}

func (r *responseStream) event(msg []byte) error {
	r.n++
	if _, err := fmt.Fprintf(r.w, "id: %d\nevent: message\ndata: %s\n\n", r.n, oneLine(msg)); err != nil {
		return err
	}
	return r.rc.Flush()
}

// finish writes the response.
func (r *responseStream) finish(resp []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
	switch {
	case resp == nil && r.sse: // a request the agent cancelled: no answer
		return
	case resp == nil:
		r.w.WriteHeader(http.StatusAccepted)
		return
	case r.sse:
		r.event(resp)
		return
	}
	r.w.Header().Set("Content-Type", "application/json")
	r.w.Header().Set("Content-Length", strconv.Itoa(len(resp)))
	r.w.WriteHeader(http.StatusOK)
	r.w.Write(resp)
}

func unsupportedVersion(v string) string {
	return fmt.Sprintf("unsupported MCP-Protocol-Version %q (supported: %s)", v, strings.Join(protocolVersions, ", "))
}
