package ui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/gateway"
	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/internal/testroles"
	"github.com/agentharness/harness/policy"
)

const (
	operatorToken = "operator-token-0123456789"
	aliceToken    = "alice-token-0123456789ab"
	bobToken      = "bob-token-0123456789abcd"
)

// hostile is a session id an agent chose, markup and all.
const hostile = `<img src=x onerror="console.error('xss')">"';--`

// fixture is a governor (a role of 10,000 tokens that warns at 80%) and
// the live view on it, on a loopback test server.
type fixture struct {
	g    *govern.Governor
	feed *Feed
	srv  *httptest.Server
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	set := testroles.Set(t, map[string]string{"small": "[role]\ninherits = \"coder\"\n[tools]\ndenied = [\"ctx_edit\"]\n[limits]\nmax_context_tokens = 10000\nwarn_at_percent = 80\n"})
	e, err := policy.New(context.Background(), compiler.Compile(set, compiler.DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	e.SetBounds(policy.Bounds{Timeout: time.Minute}) // a busy machine's decisions are not what this tests
	f := &fixture{feed: NewFeed()}
	f.g = govern.New(govern.Options{Rules: govern.Rules{Engine: e, Roles: set, DefaultRole: "small"}, Store: budget.NewMemory(),
		Sinks: []events.Sink{f.feed}, Changed: f.feed.Changed})
	h := New(Options{Governor: f.g, Feed: f.feed, CheckOrigin: gateway.HTTPOptions{Loopback: true}.CheckOrigin, Tokens: []gateway.Token{
		{Token: operatorToken, Operator: true},
		{Token: aliceToken, Agent: "alice"},
		{Token: bobToken, Agent: "bob"},
	}})
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)
	return f
}

// charge decides and records a call of session k that brings back text.
func (f *fixture) charge(t *testing.T, k budget.Key, tool, text string) {
	t.Helper()
	ctx := context.Background()
	o, err := f.g.Decide(ctx, govern.Call{Session: k, Tool: tool})
	if err != nil {
		t.Fatal(err)
	}
	if !o.Allowed {
		return
	}
	if _, err := f.g.Record(ctx, govern.Result{Session: k, Tool: tool, Output: text, DecisionID: o.DecisionID}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) request(t *testing.T, method, path string, header map[string]string, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func state(t *testing.T, r io.Reader) State {
	t.Helper()
	var st State
	if err := json.NewDecoder(r).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func agents(st State) []string {
	var out []string
	for _, s := range st.Sessions {
		out = append(out, s.Agent+"/"+s.Session)
	}
	return out
}

// Who sees what: the operator every agent's sessions and refusals, an
// agent only its own; no token, a wrong one, another site's page, a form
// of another site: nothing.
func TestAccess(t *testing.T) {
	f := newFixture(t)
	f.charge(t, budget.Key{Agent: "alice", Session: "a-1"}, "ctx_read", "hello")
	f.charge(t, budget.Key{Agent: "bob", Session: hostile}, "ctx_read", "hello")
	f.charge(t, budget.Key{Agent: "bob", Session: hostile}, "ctx_edit", "") // refused
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	for _, tt := range []struct {
		name     string
		header   map[string]string
		status   int
		sessions string
		refusals int
	}{
		{"operator", bearer(operatorToken), 200, "alice/a-1 bob/" + hostile, 1},
		{"alice", bearer(aliceToken), 200, "alice/a-1", 0},
		{"bob", bearer(bobToken), 200, "bob/" + hostile, 1},
		{"no token", nil, 401, "", 0},
		{"wrong token", bearer("not-a-token-0123456789"), 401, "", 0},
		{"another site's page", map[string]string{"Authorization": "Bearer " + operatorToken, "Origin": "https://evil.example"}, 403, "", 0},
		{"a rebound name", map[string]string{"Authorization": "Bearer " + operatorToken, "Host": "evil.example"}, 403, "", 0},
		{"a cross-site fetch", map[string]string{"Authorization": "Bearer " + operatorToken, "Sec-Fetch-Site": "cross-site"}, 403, "", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", f.srv.URL+"/ui/api/state", nil)
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			if h, ok := tt.header["Host"]; ok {
				req.Host = h
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.status != 200 {
				b, _ := io.ReadAll(resp.Body)
				if strings.Contains(string(b), "token-0123") {
					t.Errorf("the refusal repeats a token: %s", b)
				}
				return
			}
			st := state(t, resp.Body)
			// Who sees which sessions, not their order: that is by the
			// second of their last change, which two charges may straddle.
			seen := agents(st)
			slices.Sort(seen)
			if got := strings.Join(seen, " "); got != tt.sessions {
				t.Errorf("sessions %q, want %q", got, tt.sessions)
			}
			if len(st.Refusals) != tt.refusals {
				t.Errorf("%d refusals, want %d: %+v", len(st.Refusals), tt.refusals, st.Refusals)
			}
		})
	}
}

// The page's sign-in: a JSON POST trades the token for a view cookie
// (HttpOnly, SameSite=Strict, only for /ui); the cookie is the agent's
// view; a form post, a GET, or a wrong token get none; signing out ends
// it.
func TestLogin(t *testing.T) {
	f := newFixture(t)
	f.charge(t, budget.Key{Agent: "alice", Session: "a-1"}, "ctx_read", "hello")
	f.charge(t, budget.Key{Agent: "bob", Session: "b-1"}, "ctx_read", "hello")
	for _, tt := range []struct {
		name, method, ctype, body string
		status                    int
	}{
		{"a form of another site", "POST", "application/x-www-form-urlencoded", "token=" + aliceToken, 415},
		{"a plain text post", "POST", "text/plain", `{"token":"` + aliceToken + `"}`, 415},
		{"a GET", "GET", "", "", 405},
		{"a wrong token", "POST", "application/json", `{"token":"nope-0123456789abcdef"}`, 401},
		{"not JSON", "POST", "application/json", `token`, 400},
	} {
		resp := f.request(t, tt.method, "/ui/login", map[string]string{"Content-Type": tt.ctype}, tt.body)
		if resp.StatusCode != tt.status || len(resp.Cookies()) != 0 {
			t.Errorf("%s: status %d (want %d), cookies %v", tt.name, resp.StatusCode, tt.status, resp.Cookies())
		}
	}
	resp := f.request(t, "POST", "/ui/login", map[string]string{"Content-Type": "application/json"}, `{"token":"`+aliceToken+`"}`)
	if resp.StatusCode != 200 || len(resp.Cookies()) != 1 {
		t.Fatalf("login: %d, %v", resp.StatusCode, resp.Cookies())
	}
	c := resp.Cookies()[0]
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/ui" || strings.Contains(c.Value, aliceToken) {
		t.Errorf("the cookie: %+v", c)
	}
	cookie := map[string]string{"Cookie": c.Name + "=" + c.Value}
	st := state(t, f.request(t, "GET", "/ui/api/state", cookie, "").Body)
	if got := strings.Join(agents(st), " "); got != "alice/a-1" || st.Viewer.Operator {
		t.Errorf("alice's cookie sees %q (%+v)", got, st.Viewer)
	}
	if r := f.request(t, "GET", "/ui/api/state", map[string]string{"Cookie": c.Name + "=forged"}, ""); r.StatusCode != 401 {
		t.Errorf("a forged cookie: %d", r.StatusCode)
	}
	f.request(t, "POST", "/ui/logout", cookie, "")
	if r := f.request(t, "GET", "/ui/api/state", cookie, ""); r.StatusCode != 401 {
		t.Errorf("after signing out: %d", r.StatusCode)
	}
}

// The page and its parts are served with a policy that loads nothing
// from elsewhere and runs no inline script, and may not be framed.
func TestPageHeaders(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct{ path, ctype string }{{"/ui", "text/html"}, {"/ui/app.js", "text/javascript"}, {"/ui/app.css", "text/css"}, {"/ui/favicon.svg", "image/svg+xml"}} {
		resp := f.request(t, "GET", tt.path, nil, "")
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), tt.ctype) ||
			!strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
			resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: %d %q, CSP %q, referrer %q", tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), csp, resp.Header.Get("Referrer-Policy"))
		}
		b, _ := io.ReadAll(resp.Body)
		b = bytes.ReplaceAll(b, []byte(`xmlns="http://www.w3.org/2000/svg"`), nil) // a name, not a load
		for _, out := range []string{"http://", "https://", "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write"} {
			if strings.Contains(string(b), out) {
				t.Errorf("%s holds %q", tt.path, out)
			}
		}
	}
	if r := f.request(t, "GET", "/ui/nothing", nil, ""); r.StatusCode != 404 {
		t.Errorf("/ui/nothing: %d", r.StatusCode)
	}
}

// The event stream sends the state at once, and again after a charge of
// a session the viewer may see, with the counters moved; another agent's
// charge sends alice nothing.
func TestStreamFollowsCharges(t *testing.T) {
	f := newFixture(t)
	k := budget.Key{Agent: "alice", Session: "a-1"}
	f.charge(t, k, "ctx_read", "hello")
	resp := f.request(t, "GET", "/ui/api/events", map[string]string{"Authorization": "Bearer " + aliceToken}, "")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := bufio.NewScanner(resp.Body)
	next := func() State {
		t.Helper()
		for lines.Scan() {
			if data, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				var st State
				if err := json.Unmarshal([]byte(data), &st); err != nil {
					t.Fatal(err)
				}
				return st
			}
		}
		t.Fatalf("the stream ended: %v", lines.Err())
		return State{}
	}
	first := next()
	if len(first.Sessions) != 1 || first.Sessions[0].Bars[0].Limit != 10000 || first.Sessions[0].Bars[0].Warn != 80 {
		t.Fatalf("first state: %+v", first.Sessions)
	}
	f.charge(t, budget.Key{Agent: "bob", Session: "b-1"}, "ctx_read", strings.Repeat("bob's words ", 100))
	f.charge(t, k, "ctx_read", strings.Repeat("hello world ", 300))
	for {
		st := next()
		if len(st.Sessions) != 1 || st.Sessions[0].Agent != "alice" {
			t.Fatalf("alice sees %v", agents(st))
		}
		if st.Sessions[0].Bars[0].Used > first.Sessions[0].Bars[0].Used {
			break // a state per change: the decision, then the charge
		}
	}
}
