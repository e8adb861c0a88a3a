package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentharness/harness/govern"
)

// UpstreamConfig is one MCP server behind the gateway: a command run over
// stdio, or a streamable-HTTP URL.
type UpstreamConfig struct {
	Name    string
	Command string
	Args    []string
	Env     []string // KEY=VALUE, added to the gateway's environment
	URL     string
}

// protocolVersions are the MCP versions the gateway speaks, the newest
// first.
var protocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// upstream is a session's connection to one upstream: what it declared at
// initialize and the lists it offers, restarted with back-off when it
// dies. Nothing is started after close.
type upstream struct {
	cfg UpstreamConfig
	s   *session

	mu        sync.Mutex
	c         conn
	caps      map[string]json.RawMessage // the upstream's capabilities
	version   string                     // the protocol version it answered
	lists     map[string][]item
	down      error
	closed    bool
	backoff   time.Duration
	reconnect bool // a reconnection is under way

	// connects are the connections being made or closed; close waits
	// for them, after stopping them, so that nothing runs after it.
	connects sync.WaitGroup
	stop     context.Context
	cancel   context.CancelFunc

	refreshing sync.Mutex // lists being read again
}

const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 10 * time.Second
	// initTimeout bounds an upstream's start and handshake.
	initTimeout = 20 * time.Second
)

// listKinds are the lists an upstream may offer: the method, the key of
// the items in its result, and the capability that offers it.
var listKinds = []struct{ method, key, capability, name string }{
	{"tools/list", "tools", "tools", "name"},
	{"resources/list", "resources", "resources", "uri"},
	{"resources/templates/list", "resourceTemplates", "resources", "uriTemplate"},
	{"prompts/list", "prompts", "prompts", "name"},
}

// item is one item of an upstream's list: as it came, and its name (the
// field that names it: a name, a URI, a URI template).
type item struct {
	name  string
	raw   json.RawMessage
	names *argNames // the names of its arguments (a tool's, a prompt's)
}

// items names the raw items of a list by their key; the items named by
// "name" (tools, prompts) have the names of their arguments read too.
func items(raw []json.RawMessage, key string) []item {
	out := make([]item, 0, len(raw))
	for _, r := range raw {
		if name := named(r, key); name != "" {
			it := item{name: name, raw: r}
			if key == "name" {
				it.names = schemaNames(r)
			}
			out = append(out, it)
		}
	}
	return out
}

func newUpstream(cfg UpstreamConfig, s *session) *upstream {
	u := &upstream{cfg: cfg, s: s, backoff: minBackoff, lists: map[string][]item{}}
	u.stop, u.cancel = context.WithCancel(context.Background())
	return u
}

// errClosed is what an upstream says once it is closed.
var errClosed = errors.New("closed")

// start connects, or schedules reconnection if it cannot.
func (u *upstream) start(ctx context.Context) error {
	err := u.connect(ctx)
	if err != nil && !errors.Is(err, errClosed) {
		u.markDown(err)
	}
	return err
}

func (u *upstream) dial(ctx context.Context) (conn, error) {
	h := connHandlers{notification: u.onNotification, request: u.onRequest}
	if u.cfg.URL != "" {
		return dialHTTP(ctx, u.cfg, h)
	}
	return dialStdio(u.cfg, u.s.g.o.Stderr, h)
}

// connect starts the upstream, makes the handshake with the agent's
// capabilities, and reads its lists.
func (u *upstream) connect(ctx context.Context) error {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return errClosed
	}
	u.connects.Add(1)
	u.mu.Unlock()
	defer u.connects.Done()
	ictx, cancel := context.WithTimeout(ctx, initTimeout)
	defer cancel()
	defer context.AfterFunc(u.stop, cancel)()
	c, err := u.dial(ictx)
	if err != nil {
		return fmt.Errorf("starting: %w", err)
	}
	params := mustJSON(map[string]any{
		"protocolVersion": protocolVersions[0],
		"capabilities":    u.s.mirrored(),
		"clientInfo":      map[string]string{"name": "agent-harness", "version": u.s.g.o.Version},
	})
	resp, err := c.call(ictx, "initialize", params)
	if err == nil && resp.Error != nil {
		err = quotedError{resp.Error}
	}
	var init struct {
		ProtocolVersion string                     `json:"protocolVersion"`
		Capabilities    map[string]json.RawMessage `json:"capabilities"`
	}
	if err == nil {
		err = json.Unmarshal(resp.Result, &init)
	}
	if err != nil {
		c.close()
		return fmt.Errorf("initialize: %w", err)
	}
	if h, ok := c.(*httpConn); ok {
		h.setProtocolVersion(init.ProtocolVersion)
	}
	if err := c.notify(ictx, "notifications/initialized", nil); err != nil {
		c.close()
		return fmt.Errorf("initialized: %w", err)
	}
	lists := map[string][]item{}
	for _, k := range listKinds {
		if _, ok := init.Capabilities[k.capability]; !ok {
			continue
		}
		raw, err := listAll(ictx, c, k.method, k.key)
		var rerr *rpcError
		if errors.As(err, &rerr) && rerr.Code == codeMethodNotFound {
			continue // a capability without this list (resources without templates)
		}
		if err != nil {
			c.close()
			return fmt.Errorf("%s: %w", k.method, err)
		}
		lists[k.method] = items(raw, k.name)
	}
	u.mu.Lock()
	if u.closed { // closed while this connected: nobody else will close it
		u.mu.Unlock()
		c.close()
		return errClosed
	}
	u.c, u.caps, u.version, u.lists, u.down, u.backoff = c, init.Capabilities, init.ProtocolVersion, lists, nil, minBackoff
	u.mu.Unlock()
	for method, list := range lists {
		u.listed(method, list)
	}
	go u.watch(c)
	return nil
}

// listed tells the observer the names the agent sees of a list's tools
// or prompts.
func (u *upstream) listed(method string, list []item) {
	prefix := map[string]string{"tools/list": "", "prompts/list": "prompt:"}
	p, ok := prefix[method]
	if !ok || len(list) == 0 {
		return
	}
	names := make([]string, len(list))
	for i, it := range list {
		names[i] = p + u.s.g.exposeName(u, it.name)
	}
	u.s.g.o.Observer.ToolsListed(names)
}

// listAll reads every page of a list, its items raw.
func listAll(ctx context.Context, c conn, method, key string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	cursor := ""
	for range 1000 {
		var params json.RawMessage
		if cursor != "" {
			params = mustJSON(map[string]string{"cursor": cursor})
		}
		resp, err := c.call(ctx, method, params)
		if err != nil {
			return nil, err
		}
		if resp.Error != nil {
			return nil, quotedError{resp.Error}
		}
		var page map[string]json.RawMessage
		if err := json.Unmarshal(resp.Result, &page); err != nil {
			return nil, err
		}
		var items []json.RawMessage
		if raw, ok := page[key]; ok {
			if err := json.Unmarshal(raw, &items); err != nil {
				return nil, err
			}
		}
		out = append(out, items...)
		cursor = ""
		if raw, ok := page["nextCursor"]; ok {
			json.Unmarshal(raw, &cursor)
		}
		if cursor == "" {
			return out, nil
		}
	}
	return nil, errors.New("too many pages")
}

// watch marks the upstream down when its connection is lost.
func (u *upstream) watch(c conn) {
	<-c.done()
	u.mu.Lock()
	current := u.c == c
	u.mu.Unlock()
	if current {
		u.markDown(errConnLost)
	}
}

// refresh reads one list again after the upstream said it changed.
func (u *upstream) refresh(ctx context.Context, methods ...string) {
	u.mu.Lock()
	c := u.c
	u.mu.Unlock()
	if c == nil {
		return
	}
	for _, k := range listKinds {
		for _, m := range methods {
			if k.method != m {
				continue
			}
			raw, err := listAll(ctx, c, k.method, k.key)
			if err != nil {
				u.s.g.o.Logf("upstream %s: %s: %v", u.cfg.Name, k.method, err)
				continue
			}
			named := items(raw, k.name)
			u.mu.Lock()
			u.lists[k.method] = named
			u.mu.Unlock()
			u.listed(k.method, named)
		}
	}
}

// markDown records that the upstream is gone and starts reconnecting.
func (u *upstream) markDown(err error) {
	u.mu.Lock()
	if u.closed || u.reconnect {
		u.mu.Unlock()
		return
	}
	u.down, u.reconnect = err, true
	c := u.c
	u.c = nil
	if c != nil {
		u.connects.Add(1) // close waits for the old process to be gone too
	}
	u.mu.Unlock()
	if c != nil {
		go func() {
			defer u.connects.Done()
			c.close()
		}()
	}
	u.s.g.o.Logf("upstream %s (session %s) is down: %v; restarting", u.cfg.Name, u.s.id.key(), err)
	go u.restart()
}

func (u *upstream) restart() {
	defer func() {
		u.mu.Lock()
		u.reconnect = false
		u.mu.Unlock()
	}()
	for {
		u.mu.Lock()
		wait, closed := u.backoff, u.closed
		u.backoff = min(u.backoff*2, maxBackoff)
		u.mu.Unlock()
		if closed {
			return
		}
		select {
		case <-u.s.done:
			return
		case <-time.After(wait):
		}
		err := u.connect(context.Background())
		if !errors.Is(err, errClosed) {
			u.s.g.o.Observer.UpstreamRestart(u.cfg.Name, err)
		}
		if err == nil {
			u.s.g.o.Logf("upstream %s is back", u.cfg.Name)
			u.s.listsChanged("tools/list", "resources/list", "prompts/list")
			return
		}
		if errors.Is(err, errClosed) {
			return
		}
		u.mu.Lock()
		u.down = err
		u.mu.Unlock()
		u.s.g.o.Logf("upstream %s: restart failed: %v", u.cfg.Name, err)
	}
}

// ErrUpstreamDown is the error of a call to an upstream that is not up.
var ErrUpstreamDown = errors.New("upstream is down")

// maxErrorText bounds the text of an upstream's error that the agent is
// told. Such an error may quote the upstream's own words (the body of an
// HTTP error, the message of a handshake that failed, which every call
// quotes while the upstream is down): only so much reaches the agent, and
// that is charged (see errorText). The gateway's log has up to
// maxLoggedError of a text it cut.
const (
	maxErrorText   = 256
	maxLoggedError = 4 << 10
)

// quotedError marks an error that quotes what an upstream said (the
// body of an HTTP error, the message of a JSON-RPC error it answered the
// handshake or a list with): its text, told the agent, is charged.
type quotedError struct{ err error }

func (e quotedError) Error() string { return e.err.Error() }
func (e quotedError) Unwrap() error { return e.err }

// quotesUpstream reports whether err's text may hold an upstream's words.
func quotesUpstream(err error) bool {
	var w quotedError
	return errors.As(err, &w)
}

// errorText is err's text as the agent is told it, about tool: at most
// maxErrorText bytes. When it quotes the upstream (see quotedError) it
// is charged, whole, to the session's context as text before it goes, as
// any words of an upstream are (a few bytes uncharged each time would be
// as many as the agent asks for), and what the budget cannot take is
// withheld. A text cut is logged, up to maxLoggedError.
func (s *session) errorText(ctx context.Context, tool string, err error) string {
	text := err.Error()
	cut := len(text) > maxErrorText
	if cut {
		s.g.o.Logf("the error of %s, cut for the agent: %s", tool, clip(text, maxLoggedError))
		text = clip(text, maxErrorText)
	}
	if !quotesUpstream(err) {
		if cut {
			text += " [harness] (cut)"
		}
		return text
	}
	st, serr := s.g.o.Governor.Settle(context.WithoutCancel(ctx), govern.Output{Session: s.id.key(), Role: s.id.StartRole, Tool: tool,
		Parts: []govern.Part{{Text: text}}})
	switch {
	case serr != nil:
		s.g.o.Logf("charging the error text of %s: %v", tool, serr)
		return "[harness] (its text withheld: it could not be charged)"
	case st.Withheld > 0:
		return st.Parts[0].Text + " [harness] (the rest of its text withheld: the session's budget is spent)"
	case cut:
		text += " [harness] (cut)"
	}
	if st.OutputTokens > 0 {
		text += fmt.Sprintf(" [harness] (%d tokens charged for these words)", st.OutputTokens)
	}
	return text
}

// call makes a request of the upstream. An upstream that is not up is an
// ErrUpstreamDown, marked as not sent; a connection lost during the call
// marks it down.
func (u *upstream) call(ctx context.Context, method string, params json.RawMessage) (*message, error) {
	start := time.Now()
	m, err := u.request(ctx, method, params)
	result := "ok"
	switch {
	case ctx.Err() != nil:
		result = "cancelled"
	case err != nil:
		result = "failed"
	case m.Error != nil:
		result = "error"
	}
	u.s.g.o.Observer.UpstreamCall(u.cfg.Name, method, time.Since(start), result)
	return m, err
}

func (u *upstream) request(ctx context.Context, method string, params json.RawMessage) (*message, error) {
	u.mu.Lock()
	c, down := u.c, u.down
	u.mu.Unlock()
	if c == nil {
		if down == nil {
			down = errors.New("not started")
		}
		return nil, notSent{fmt.Errorf("%w: %s: %w", ErrUpstreamDown, u.cfg.Name, down)}
	}
	m, err := c.call(ctx, method, params)
	if errors.Is(err, errConnLost) && ctx.Err() == nil {
		u.markDown(err)
		var ns notSent
		if errors.As(err, &ns) {
			return nil, notSent{fmt.Errorf("%w: %s: %w", ErrUpstreamDown, u.cfg.Name, err)}
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrUpstreamDown, u.cfg.Name, err)
	}
	return m, err
}

// notify sends the upstream a notification, if it is up.
func (u *upstream) notify(ctx context.Context, method string, params json.RawMessage) {
	u.mu.Lock()
	c := u.c
	u.mu.Unlock()
	if c != nil {
		c.notify(ctx, method, params)
	}
}

// list is one of the upstream's lists, as it last read it: while it is
// down its items stay, and a call of one says the upstream is restarting.
func (u *upstream) list(method string) []item {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.lists[method]
}

// capability is what the upstream declared of one capability, when it
// last connected (nil: not declared, or it never connected).
func (u *upstream) capability(name string) json.RawMessage {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.caps[name]
}

// up reports whether the upstream is connected.
func (u *upstream) up() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.c != nil
}

// close stops the upstream for good: a connection being made is stopped
// and waited for, so that no upstream runs or starts after it.
func (u *upstream) close() {
	u.mu.Lock()
	u.closed = true
	c := u.c
	u.c = nil
	u.mu.Unlock()
	u.cancel()
	if c != nil {
		c.close()
	}
	u.connects.Wait()
}

// onNotification passes an upstream's notification on to the agent: list
// changes are read again first (and resource URIs given their prefix).
//
// It runs on the connection's delivery of messages, which a list read
// again would wait on: the lists are read off it.
func (u *upstream) onNotification(method string, params json.RawMessage) {
	lists := map[string][]string{
		"notifications/tools/list_changed":     {"tools/list"},
		"notifications/resources/list_changed": {"resources/list", "resources/templates/list"},
		"notifications/prompts/list_changed":   {"prompts/list"},
	}[method]
	if lists == nil {
		u.s.fromUpstream(u, method, params)
		return
	}
	go func() {
		u.refreshing.Lock() // one reading at a time, in the order they were asked
		defer u.refreshing.Unlock()
		u.refresh(context.Background(), lists...)
		u.s.listsChanged(lists[0])
	}()
}

// onRequest answers a request the upstream makes of the agent.
func (u *upstream) onRequest(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *rpcError) {
	return u.s.relay(ctx, u, method, params)
}
