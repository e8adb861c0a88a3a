package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/govern"
)

// SessionTool is the gateway's own tool: role, budget, explanations.
const SessionTool = contract.SessionTool

// Prefix modes: when the names of upstream tools and prompts get
// "<upstream>__" before them, and resource URIs "<upstream>:".
const (
	PrefixAuto   = "auto"   // when there are several upstreams
	PrefixAlways = "always" //
	PrefixNever  = "never"  // the first upstream wins a name clash
)

// Options are a Gateway's parts.
type Options struct {
	Governor  *govern.Governor
	Upstreams []UpstreamConfig
	Prefix    string
	Compress  CompressOptions
	// Charging estimates the tokens of what is not text.
	Charging ChargeOptions
	// Events are the harness events, which the gateway sends to the
	// sessions they concern as MCP log messages (nil: none).
	Events *events.Bus
	// Stderr receives the upstreams' stderr.
	Stderr io.Writer
	// Logf reports what happens to upstreams and sessions.
	Logf func(format string, args ...any)
	// Version is the harness's, which the gateway gives as its own to
	// clients and upstreams.
	Version string
	// Observer hears of upstream requests, restarts and lists (the
	// metrics); nil: nobody.
	Observer Observer
}

// Observer hears what the gateway does with its upstreams, for metrics.
// Its methods must return at once.
type Observer interface {
	// UpstreamCall is one request made of an upstream for an agent: its
	// MCP method, how long it took, and its result: "ok", "error" (a
	// JSON-RPC error answer), "failed" (no answer: the upstream was down
	// or went away) or "cancelled".
	UpstreamCall(upstream, method string, took time.Duration, result string)
	// UpstreamRestart is one attempt to start an upstream again after it
	// went down; err is its failure.
	UpstreamRestart(upstream string, err error)
	// ToolsListed are the names an upstream's tools and prompts have for
	// the agent (prompts as prompt:NAME), each time it lists them.
	ToolsListed(names []string)
}

type noObserver struct{}

func (noObserver) UpstreamCall(string, string, time.Duration, string) {}
func (noObserver) UpstreamRestart(string, error)                      {}
func (noObserver) ToolsListed([]string)                               {}

// Gateway is an MCP server governing its upstreams for many sessions.
type Gateway struct {
	o      Options
	prefix bool

	mu       sync.Mutex
	sessions map[budget.Key]*session
	closed   bool

	events *events.Subscription
	done   chan struct{}
}

// New returns a gateway. Its upstreams are started for each session as it
// begins.
func New(ctx context.Context, o Options) (*Gateway, error) {
	if o.Governor == nil || o.Version == "" {
		return nil, errors.New("gateway: a governor and a version are required")
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	o.Logf = printable(o.Logf)
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.Observer == nil {
		o.Observer = noObserver{}
	}
	if o.Prefix == "" {
		o.Prefix = PrefixAuto
	}
	if o.Compress.MaxLines == 0 {
		o.Compress = DefaultCompress
	}
	o.Charging = o.Charging.withDefaults()
	seen := map[string]bool{}
	for _, c := range o.Upstreams {
		if c.Name == "" || seen[c.Name] || strings.Contains(c.Name, "__") || strings.ContainsAny(c.Name, ":/") {
			return nil, fmt.Errorf("gateway: upstream name %q: want unique names without \"__\", ':' or '/'", c.Name)
		}
		seen[c.Name] = true
	}
	g := &Gateway{o: o, sessions: map[budget.Key]*session{}, done: make(chan struct{}),
		prefix: o.Prefix == PrefixAlways || (o.Prefix == PrefixAuto && len(o.Upstreams) > 1)}
	if o.Events != nil {
		g.events = o.Events.Subscribe(1024)
		go g.forwardEvents()
	}
	return g, nil
}

// errShutdown is the error of a session begun after Close.
var errShutdown = errors.New("the gateway is shutting down")

// session returns the session of id, making it if it is new, for one more
// user (a connection of the agent's), who gives it back with release; out
// is how it reaches the agent outside a request (nil: no way yet).
func (g *Gateway) session(id Identity, out peer) (*session, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, errShutdown
	}
	s, ok := g.sessions[id.key()]
	if !ok {
		s = newSession(g, id, out)
		g.sessions[id.key()] = s
	} else if out != nil {
		s.setPeer(out)
	}
	s.users++
	return s, nil
}

// release gives back a session; when its last user is gone it ends and
// its upstreams are closed (its counters stay in the ledger).
func (g *Gateway) release(s *session) {
	g.mu.Lock()
	s.users--
	last := s.users <= 0
	if last && g.sessions[s.id.key()] == s {
		delete(g.sessions, s.id.key())
	}
	g.mu.Unlock()
	if last {
		s.close()
	}
}

// printable makes logf write each call as one line, its control
// characters escaped (contract.Printable): what the gateway logs holds
// what upstreams and agents wrote (an upstream's error message, a
// session's name), which must not forge a line of the log or drive the
// terminal it is read on.
func printable(logf func(string, ...any)) func(string, ...any) {
	return func(format string, args ...any) { logf("%s", contract.Printable(fmt.Sprintf(format, args...))) }
}

// Close ends every session and its upstreams. Nothing starts after it.
func (g *Gateway) Close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	list := make([]*session, 0, len(g.sessions))
	for _, s := range g.sessions {
		list = append(list, s)
	}
	g.sessions = map[budget.Key]*session{}
	g.mu.Unlock()
	close(g.done)
	if g.events != nil {
		g.events.Close()
	}
	var wg sync.WaitGroup
	for _, s := range list {
		wg.Go(s.close)
	}
	wg.Wait()
	g.o.Governor.Wait() // the events of the last charges are out
}

// forwardEvents sends each harness event to the session it concerns, as an
// MCP log message, if its client asked for log messages.
func (g *Gateway) forwardEvents() {
	for e := range g.events.C {
		g.mu.Lock()
		s := g.sessions[budget.Key{Agent: e.Agent, Session: e.Session}]
		g.mu.Unlock()
		if s != nil {
			s.logEvent(e)
		}
	}
}

// Sessions is the number of live sessions.
func (g *Gateway) Sessions() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.sessions)
}
