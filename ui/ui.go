// Package ui is the live view of a gateway served over HTTP: a read-only
// page at /ui listing the live sessions with their role, their budget as
// bars with the marks where their role warns and blocks, and the last
// refusals, kept up to date by server-sent events.
//
// The page and its script and style are embedded in the binary; nothing
// is fetched from elsewhere. Who may look is who holds one of the
// gateway's bearer tokens: an operator token ([[gateway.tokens]] with
// operator = true) sees every agent's sessions, an agent's token only its
// agent's. A browser's EventSource cannot send an Authorization header,
// so the page trades the token once, in the body of a same-origin POST to
// /ui/login, for a random view id in a cookie (HttpOnly, SameSite=Strict,
// Path=/ui, Secure over TLS): the token is never in a URL, so never in an
// access log, a history or a Referer. The page may also be opened as
// /ui#token=T: a fragment is not sent to the server, and the page clears
// it before it loads anything. Cross-site use is refused as the gateway
// refuses it (Origin and Host against its allow-lists), and besides:
// Sec-Fetch-Site cross-site is refused, the login takes only JSON (no
// form of another site can send it), and the page may not be framed.
// Scripts (curl) may send Authorization: Bearer T instead.
package ui

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/gateway"
	"github.com/agentharness/harness/govern"
)

//go:embed static
var static embed.FS

// Options configure the live view.
type Options struct {
	Governor *govern.Governor
	Feed     *Feed
	// Tokens are the gateway's. With none, every viewer is the agent
	// Anonymous names (its sessions only), as the gateway admits it.
	Tokens    []gateway.Token
	Anonymous string
	// CheckOrigin refuses a cross-site request ("" passes): the gateway's
	// (gateway.HTTPOptions.CheckOrigin).
	CheckOrigin func(*http.Request) string
	// Secure marks the cookie Secure (the gateway serves TLS).
	Secure bool
	// Live is how recently a session's counters changed for it to be
	// listed (default gateway.DefaultSessionIdle, when the gateway ends an
	// idle session).
	Live time.Duration
	// ViewTTL is how long a login lasts (default 12 hours).
	ViewTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logf reports refused requests (never a token).
	Logf func(format string, args ...any)
}

// Limits of the view.
const (
	maxViews     = 1024 // logins kept; the oldest goes
	maxSessions  = 200  // sessions in a snapshot, the latest first
	maxRefusals  = 20   // refusals in a snapshot
	keptRefusals = 200  // refusals the feed keeps
	cookieName   = "harness_ui"
	maxLogin     = 4 << 10
	// minInterval is the least time between two states of one stream.
	minInterval = 250 * time.Millisecond
)

// Handler serves /ui and below.
type Handler struct {
	o Options

	mu    sync.Mutex
	views map[string]view // by cookie value
}

// view is who looks: an operator sees every agent.
type view struct {
	Operator bool   `json:"operator"`
	Agent    string `json:"agent"`
	// Anonymous: no tokens are configured, and nobody signs in.
	Anonymous bool `json:"anonymous,omitempty"`
	expires   time.Time
}

// New returns the live view's handler.
func New(o Options) *Handler {
	if o.Live <= 0 {
		o.Live = gateway.DefaultSessionIdle
	}
	if o.ViewTTL <= 0 {
		o.ViewTTL = 12 * time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.CheckOrigin == nil {
		o.CheckOrigin = func(*http.Request) string { return "" }
	}
	return &Handler{o: o, views: map[string]view{}}
}

func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, status int, why string) {
	h.o.Logf("ui: %d %s %s from %s: %s", status, r.Method, r.URL.Path, r.RemoteAddr, why)
	http.Error(w, why, status)
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-store")
	if why := h.o.CheckOrigin(r); why != "" {
		h.refuse(w, r, http.StatusForbidden, why)
		return
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		h.refuse(w, r, http.StatusForbidden, "a cross-site request")
		return
	}
	switch path := strings.TrimPrefix(r.URL.Path, "/ui"); path {
	case "", "/", "/index.html", "/app.js", "/app.css", "/favicon.svg":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			hd.Set("Allow", "GET, HEAD")
			h.refuse(w, r, http.StatusMethodNotAllowed, "want GET")
			return
		}
		if path == "" || path == "/" {
			path = "/index.html"
		}
		b, err := static.ReadFile("static" + path)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		ct := mime.TypeByExtension(path[strings.LastIndexByte(path, '.'):])
		if strings.HasSuffix(path, ".js") {
			ct = "text/javascript; charset=utf-8"
		}
		hd.Set("Content-Type", ct)
		w.Write(b)
	case "/login":
		h.login(w, r)
	case "/logout":
		if r.Method != http.MethodPost {
			h.refuse(w, r, http.StatusMethodNotAllowed, "want POST")
			return
		}
		if c, err := r.Cookie(cookieName); err == nil {
			h.mu.Lock()
			delete(h.views, c.Value)
			h.mu.Unlock()
		}
		http.SetCookie(w, h.cookie("", -1))
		w.WriteHeader(http.StatusNoContent)
	case "/api/state":
		v, ok := h.viewer(w, r)
		if !ok {
			return
		}
		st, err := h.snapshot(r.Context(), v)
		if err != nil {
			h.refuse(w, r, http.StatusServiceUnavailable, err.Error())
			return
		}
		hd.Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(st)
	case "/api/events":
		v, ok := h.viewer(w, r)
		if ok {
			h.stream(w, r, v)
		}
	default:
		http.NotFound(w, r)
	}
}

// byToken is the view a presented token gives, if it is one.
func (h *Handler) byToken(presented string) (view, bool) {
	presented = strings.TrimSpace(presented)
	for _, t := range h.o.Tokens {
		if t.Matches(presented) {
			return view{Operator: t.Operator, Agent: t.Agent}, true
		}
	}
	return view{}, false
}

// viewer is who asks: by bearer token, by the cookie of a login, or,
// without tokens, the anonymous agent; else it answers 401.
func (h *Handler) viewer(w http.ResponseWriter, r *http.Request) (view, bool) {
	if len(h.o.Tokens) == 0 && h.o.Anonymous != "" {
		return view{Agent: h.o.Anonymous, Anonymous: true}, true
	}
	if presented, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if v, ok := h.byToken(presented); ok {
			return v, true
		}
	} else if c, err := r.Cookie(cookieName); err == nil {
		h.mu.Lock()
		v, ok := h.views[c.Value]
		if ok && !h.o.Now().Before(v.expires) {
			delete(h.views, c.Value)
			ok = false
		}
		h.mu.Unlock()
		if ok {
			return v, true
		}
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="agent-harness"`)
	h.refuse(w, r, http.StatusUnauthorized, "sign in with a gateway token ([[gateway.tokens]] in harness.toml)")
	return view{}, false
}

func (h *Handler) cookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: cookieName, Value: value, Path: "/ui", MaxAge: maxAge, HttpOnly: true,
		Secure: h.o.Secure, SameSite: http.SameSiteStrictMode}
}

// login trades a token (JSON {"token": T}) for a view cookie.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		h.refuse(w, r, http.StatusMethodNotAllowed, "want POST")
		return
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		h.refuse(w, r, http.StatusUnsupportedMediaType, "want a JSON body")
		return
	}
	var body struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxLogin)).Decode(&body); err != nil {
		h.refuse(w, r, http.StatusBadRequest, "want {\"token\": \"...\"}")
		return
	}
	v, ok := h.byToken(body.Token)
	if !ok {
		h.refuse(w, r, http.StatusUnauthorized, "not a gateway token")
		return
	}
	var raw [32]byte
	rand.Read(raw[:])
	id := hex.EncodeToString(raw[:])
	now := h.o.Now()
	v.expires = now.Add(h.o.ViewTTL)
	h.mu.Lock()
	for k, old := range h.views {
		if !now.Before(old.expires) {
			delete(h.views, k)
		}
	}
	for len(h.views) >= maxViews { // the one that ends first goes
		var first string
		for k, old := range h.views {
			if first == "" || old.expires.Before(h.views[first].expires) {
				first = k
			}
		}
		delete(h.views, first)
	}
	h.views[id] = v
	h.mu.Unlock()
	http.SetCookie(w, h.cookie(id, int(h.o.ViewTTL/time.Second)))
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// State is what the page shows.
type State struct {
	Viewer   view      `json:"viewer"`
	At       time.Time `json:"at"`
	Live     string    `json:"live"`
	Sessions []Session `json:"sessions"`
	Refusals []Refusal `json:"refusals"`
}

// Session is a live session and its budget.
type Session struct {
	Agent   string    `json:"agent"`
	Session string    `json:"session"`
	Role    string    `json:"role"`
	Signal  string    `json:"signal"`
	Updated time.Time `json:"updated"`
	Bars    []Bar     `json:"bars"`
}

// Bar is one dimension of a session's budget: its usage, its limit (0:
// none) and the percentages where its role warns and blocks.
type Bar struct {
	Dim     string `json:"dim"`
	Used    int64  `json:"used"`
	Limit   int64  `json:"limit"`
	Percent int64  `json:"percent"`
	Level   string `json:"level"`
	Warn    int64  `json:"warn"`
	Block   int64  `json:"block"`
	Text    string `json:"text"`
}

// snapshot is what v may see now.
func (h *Handler) snapshot(ctx context.Context, v view) (State, error) {
	st := State{Viewer: v, At: h.o.Now().UTC(), Live: h.o.Live.String(), Sessions: []Session{}, Refusals: h.o.Feed.refusals(v)}
	list, err := h.o.Governor.Sessions(ctx, "")
	if err != nil {
		return st, err
	}
	since := h.o.Now().Add(-h.o.Live)
	for _, s := range list { // the latest change first
		if !v.Operator && s.Agent != v.Agent {
			continue
		}
		if s.Updated.Before(since) || len(st.Sessions) == maxSessions {
			continue
		}
		lim, _ := h.o.Governor.Limits(s.Counters.Role)
		b := s.Status.Budget
		st.Sessions = append(st.Sessions, Session{Agent: s.Agent, Session: s.Session.Session, Role: s.Counters.Role, Signal: s.Status.Signal,
			Updated: s.Updated.UTC(), Bars: []Bar{
				bar("tokens", b.Tokens, lim.WarnPercent, lim.BlockPercent, fmt.Sprint),
				bar("shell", b.Shell, lim.WarnPercent, lim.BlockPercent, fmt.Sprint),
				bar("cost", b.Cost, lim.WarnPercent, lim.BlockPercent, func(a ...any) string { return contract.FormatUSD(a[0].(int64)) }),
			}})
	}
	return st, nil
}

func bar(dim string, d contract.Dimension, warn, block int64, format func(...any) string) Bar {
	text := format(d.Used)
	if d.Limit > 0 {
		text += " of " + format(d.Limit)
	} else {
		text += " (no limit)"
	}
	return Bar{Dim: dim, Used: d.Used, Limit: d.Limit, Percent: d.Percent, Level: d.Level, Warn: warn, Block: block, Text: text}
}

// stream sends v's state at once and again whenever a session it may see
// changes, until the client goes; a comment now and then keeps proxies
// from closing a quiet stream.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, v view) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	sub := h.o.Feed.subscribe(v)
	defer h.o.Feed.unsubscribe(sub)
	keep := time.NewTicker(25 * time.Second)
	defer keep.Stop()
	send := func() bool {
		st, err := h.snapshot(r.Context(), v)
		if err != nil {
			h.o.Logf("ui: %v", err)
			return true
		}
		b, _ := json.Marshal(st)
		if _, err := fmt.Fprintf(w, "event: state\ndata: %s\n\n", b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send() {
		return
	}
	last := time.Now()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-sub.c:
			// A busy gateway changes counters many times a second: a
			// state at most every minInterval, the changes meanwhile in
			// it (the pending signal coalesces them).
			if wait := minInterval - time.Since(last); wait > 0 {
				select {
				case <-r.Context().Done():
					return
				case <-time.After(wait):
				}
			}
			if !send() {
				return
			}
			last = time.Now()
		case <-keep.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		}
	}
}

// Feed follows the governor for the live view: the sessions whose
// counters changed (Changed, for govern.Options.Changed) and the refusals
// (Emit: it is an events.Sink, of PolicyViolation events, masked as the
// events log is). Neither blocks the call that made them.
type Feed struct {
	mu      sync.Mutex
	subs    map[*subscriber]struct{}
	refused []Refusal // the last keptRefusals, oldest first
}

// Refusal is a refused call, as its PolicyViolation event tells it.
type Refusal struct {
	At      time.Time `json:"at"`
	Agent   string    `json:"agent"`
	Session string    `json:"session"`
	Role    string    `json:"role"`
	Tool    string    `json:"tool"`
	Codes   []string  `json:"codes"`
	Reason  string    `json:"reason"`
	Shadow  bool      `json:"shadow,omitempty"`
}

type subscriber struct {
	v view
	c chan struct{} // room for one: changes coalesce
}

// NewFeed returns a feed without subscribers.
func NewFeed() *Feed {
	return &Feed{subs: map[*subscriber]struct{}{}}
}

// Changed tells the viewers who may see session k that it changed.
func (f *Feed) Changed(k budget.Key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs {
		if s.v.Operator || s.v.Agent == k.Agent {
			select {
			case s.c <- struct{}{}:
			default: // a change is already pending
			}
		}
	}
}

// Emit keeps the refusals (PolicyViolation events).
func (f *Feed) Emit(e events.Event) error {
	if e.Type != events.PolicyViolation || e.Violation == nil {
		return nil
	}
	r := Refusal{At: e.Time, Agent: e.Agent, Session: e.Session, Role: e.Role, Tool: e.Tool, Reason: e.Reason, Shadow: e.Shadow, Codes: []string{}}
	for _, x := range e.Reasons {
		if !slices.Contains(r.Codes, x.Code) {
			r.Codes = append(r.Codes, x.Code)
		}
	}
	f.mu.Lock()
	f.refused = append(f.refused, r)
	if len(f.refused) > keptRefusals {
		f.refused = slices.Delete(f.refused, 0, len(f.refused)-keptRefusals)
	}
	f.mu.Unlock()
	f.Changed(budget.Key{Agent: e.Agent, Session: e.Session})
	return nil
}

// refusals are the last refusals v may see, the latest first.
func (f *Feed) refusals(v view) []Refusal {
	out := []Refusal{}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.refused) - 1; i >= 0 && len(out) < maxRefusals; i-- {
		if r := f.refused[i]; v.Operator || r.Agent == v.Agent {
			out = append(out, r)
		}
	}
	return out
}

func (f *Feed) subscribe(v view) *subscriber {
	s := &subscriber{v: v, c: make(chan struct{}, 1)}
	f.mu.Lock()
	f.subs[s] = struct{}{}
	f.mu.Unlock()
	return s
}

func (f *Feed) unsubscribe(s *subscriber) {
	f.mu.Lock()
	delete(f.subs, s)
	f.mu.Unlock()
}
