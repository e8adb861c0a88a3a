package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

var testTokens = []Token{
	{Token: "token-of-agent-a-0123456789", Agent: "a"},
	{Token: "token-of-agent-b-0123456789", Agent: "b"},
	{Token: "token-of-agent-c-0123456789", Agent: "c", ClientSessions: true},
}

// httpFixture serves a gateway over HTTP on loopback.
func httpFixture(t testing.TB, o HTTPOptions) (*fixture, *httpServer, string) {
	t.Helper()
	f := newFixture(t, nil)
	if o.Tokens == nil {
		o.Tokens = testTokens
	}
	o.Loopback = true
	h := f.g.HTTPHandler(o).(*httpServer)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return f, h, srv.URL + "/mcp"
}

// request is one HTTP request of an agent.
type request struct {
	method, body string
	header       map[string]string
	host         string
}

func do(t testing.TB, url string, r request) (*http.Response, string) {
	t.Helper()
	if r.method == "" {
		r.method = http.MethodPost
	}
	req, err := http.NewRequest(r.method, url, strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range r.header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	if r.host != "" {
		req.Host = r.host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func bearer(i int) string { return "Bearer " + testTokens[i].Token }

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// initHTTP starts a session of token i and returns its id.
func initHTTP(t testing.TB, url string, i int, header map[string]string) string {
	t.Helper()
	h := map[string]string{"Authorization": bearer(i)}
	for k, v := range header {
		h[k] = v
	}
	resp, body := do(t, url, request{body: initBody, header: h})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	return resp.Header.Get("Mcp-Session-Id")
}

// Each request that breaks a rule or a limit gets the HTTP status that
// says so, and is logged.
func TestHTTPRefusals(t *testing.T) {
	t.Parallel()
	f, _, url := httpFixture(t, HTTPOptions{MaxBody: 4096})
	sid := initHTTP(t, url, 0, nil)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	a := map[string]string{"Authorization": bearer(0), "Mcp-Session-Id": sid}
	with := func(extra map[string]string) map[string]string {
		h := map[string]string{}
		for k, v := range a {
			h[k] = v
		}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	for _, tt := range []struct {
		name string
		r    request
		want int
		says string
	}{
		{"the session's call", request{body: list, header: a}, 200, `"ctx_session"`},
		{"no token", request{body: list, header: with(map[string]string{"Authorization": ""})}, 401, "bearer token"},
		{"a wrong token", request{body: list, header: with(map[string]string{"Authorization": "Bearer nope"})}, 401, "bearer token"},
		{"another token's session", request{body: list, header: with(map[string]string{"Authorization": bearer(1)})}, 404, "no such session"},
		{"a session never issued", request{body: list, header: with(map[string]string{"Mcp-Session-Id": "0123"})}, 404, "no such session"},
		{"no session", request{body: list, header: with(map[string]string{"Mcp-Session-Id": ""})}, 400, "Mcp-Session-Id is required"},
		{"a body too large", request{body: `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"` + strings.Repeat("x", 5000) + `"}}`, header: a}, 413, "more than 4096 bytes"},
		{"not JSON", request{body: list, header: with(map[string]string{"Content-Type": "text/plain"})}, 415, "application/json"},
		{"a batch", request{body: "[" + list + "]", header: a}, 400, "batches are not supported"},
		{"garbage", request{body: "{nope", header: a}, 400, "-32700"},
		{"a page of another origin", request{body: list, header: with(map[string]string{"Origin": "http://evil.example"})}, 403, "origin"},
		{"a loopback page", request{body: list, header: with(map[string]string{"Origin": "http://localhost:3000"})}, 200, `"ctx_session"`},
		{"a name rebound to loopback", request{body: list, header: a, host: "evil.example:80"}, 403, "DNS rebinding"},
		{"an unknown protocol version", request{body: list, header: with(map[string]string{"Mcp-Protocol-Version": "1999-01-01"})}, 400, "unsupported MCP-Protocol-Version"},
		{"a session named by a token that may not", request{body: list, header: with(map[string]string{"X-Harness-Session": "mine"})}, 400, "X-Harness-Session is not accepted"},
		{"PUT", request{method: "PUT", body: list, header: a}, 405, "want POST, GET or DELETE"},
		{"a GET that is no stream", request{method: "GET", header: with(map[string]string{"Accept": "application/json"})}, 405, "event stream"},
		{"the stateless protocol's probe", request{body: `{"jsonrpc":"2.0","id":9,"method":"server/discover"}`,
			header: map[string]string{"Authorization": bearer(0), "Mcp-Protocol-Version": "2026-07-28"}}, 200, "-32601"},
		{"a notification", request{body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, header: a}, 202, ""},
		{"a response to nothing", request{body: `{"jsonrpc":"2.0","id":"harness-99","result":{}}`, header: a}, 202, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := do(t, url, tt.r)
			if resp.StatusCode != tt.want || !strings.Contains(body, tt.says) {
				t.Errorf("%d %q, want %d with %q", resp.StatusCode, body, tt.want, tt.says)
			}
		})
	}
	f.logs.mu.Lock()
	defer f.logs.mu.Unlock()
	if !strings.Contains(strings.Join(f.logs.lines, "\n"), "http: 413 POST") {
		t.Errorf("the limits are not logged:\n%s", strings.Join(f.logs.lines, "\n"))
	}
}

// A token has at most MaxSessions live sessions; one that ends (DELETE)
// makes room, and its upstreams stop.
func TestHTTPSessionCap(t *testing.T) {
	t.Parallel()
	f, _, url := httpFixture(t, HTTPOptions{MaxSessions: 2})
	first := initHTTP(t, url, 0, nil)
	initHTTP(t, url, 0, nil)
	if resp, body := do(t, url, request{body: initBody, header: map[string]string{"Authorization": bearer(0)}}); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a third session: %d %s", resp.StatusCode, body)
	}
	initHTTP(t, url, 1, nil) // another token has its own
	if n := f.g.Sessions(); n != 3 {
		t.Errorf("%d live sessions, want 3", n)
	}
	if resp, _ := do(t, url, request{method: "DELETE", header: map[string]string{"Authorization": bearer(1), "Mcp-Session-Id": first}}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another token ended a session: %d", resp.StatusCode)
	}
	if resp, _ := do(t, url, request{method: "DELETE", header: map[string]string{"Authorization": bearer(0), "Mcp-Session-Id": first}}); resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE: %d", resp.StatusCode)
	}
	if n := f.g.Sessions(); n != 2 {
		t.Errorf("%d live sessions after DELETE, want 2", n)
	}
	initHTTP(t, url, 0, nil)
	if resp, _ := do(t, url, request{body: `{"jsonrpc":"2.0","id":2,"method":"ping"}`, header: map[string]string{"Authorization": bearer(0), "Mcp-Session-Id": first}}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("an ended session: %d", resp.StatusCode)
	}
}

// A token has at most MaxRequests POSTs under way, whose bodies hold at
// most MaxPending bytes, counted before a body is read: the next is
// refused (429, Retry-After) without reading it, another token's is not,
// and one that ends makes room.
func TestHTTPRequestCap(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]HTTPOptions{
		"requests": {MaxRequests: 1, BodyTimeout: time.Minute},
		// A body sent without Content-Length may hold MaxBody bytes.
		"bytes": {MaxBody: 1 << 10, MaxPending: 1 << 10, BodyTimeout: time.Minute},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, h, url := httpFixture(t, o)
			id := initHTTP(t, url, 0, nil)
			header := map[string]string{"Authorization": bearer(0), "Mcp-Session-Id": id}
			// A request under way: its body arrives a piece at a time.
			body, send := io.Pipe()
			held := make(chan int, 1)
			go func() {
				req, _ := http.NewRequest(http.MethodPost, url, body)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				for k, v := range header {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					held <- 0
					return
				}
				resp.Body.Close()
				held <- resp.StatusCode
			}()
			if _, err := send.Write([]byte(`{"jsonrpc":"2.0",`)); err != nil {
				t.Fatal(err)
			}
			// The client has sent what it read: the gateway counts the
			// request once its handler starts.
			waitFor(t, "the request under way", func() bool {
				h.mu.Lock()
				defer h.mu.Unlock()
				return h.busy[0].requests == 1
			})
			ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
			resp, got := do(t, url, request{body: ping, header: header})
			if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || !strings.Contains(got, `"error"`) {
				t.Errorf("a second request under way: %d %v %s", resp.StatusCode, resp.Header, got)
			}
			other := initHTTP(t, url, 1, nil) // another token has its own
			if resp, got := do(t, url, request{body: ping, header: map[string]string{"Authorization": bearer(1), "Mcp-Session-Id": other}}); resp.StatusCode != http.StatusOK {
				t.Errorf("another token's request: %d %s", resp.StatusCode, got)
			}
			send.Write([]byte(`"id":3,"method":"ping"}`))
			send.Close()
			if code := <-held; code != http.StatusOK {
				t.Errorf("the request under way: %d", code)
			}
			if resp, got := do(t, url, request{body: ping, header: header}); resp.StatusCode != http.StatusOK {
				t.Errorf("a request once the other ended: %d %s", resp.StatusCode, got)
			}
		})
	}
}

// Sessions nobody used for the idle time end: their bookkeeping and
// upstreams go, and their ids are no longer known.
func TestHTTPSessionsExpire(t *testing.T) {
	t.Parallel()
	f, h, url := httpFixture(t, HTTPOptions{SessionIdle: time.Hour})
	var ids []string
	for range 3 {
		ids = append(ids, initHTTP(t, url, 0, nil))
	}
	if n := h.expire(time.Now()); n != 0 {
		t.Errorf("%d sessions expired at once", n)
	}
	if n := h.expire(time.Now().Add(2 * time.Hour)); n != 3 || f.g.Sessions() != 0 {
		t.Errorf("%d expired, %d left", n, f.g.Sessions())
	}
	for _, id := range ids {
		if resp, _ := do(t, url, request{body: `{"jsonrpc":"2.0","id":2,"method":"ping"}`, header: map[string]string{"Authorization": bearer(0), "Mcp-Session-Id": id}}); resp.StatusCode != http.StatusNotFound {
			t.Errorf("an expired session: %d", resp.StatusCode)
		}
	}
	initHTTP(t, url, 0, nil) // the cap counts only live sessions
}

// A body sent a byte at a time holds nothing: past the body deadline the
// request is answered 408.
func TestHTTPSlowBody(t *testing.T) {
	t.Parallel()
	_, _, url := httpFixture(t, HTTPOptions{BodyTimeout: 300 * time.Millisecond})
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"", addr, bearer(0))
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("a body that never comes: %d", resp.StatusCode)
	}
}

// events reads server-sent events, each the data of one message.
func sse(t testing.TB, r io.Reader) <-chan string {
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				ch <- data
			}
		}
	}()
	return ch
}

func next(t testing.TB, ch <-chan string, what string) string {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatalf("the stream ended before %s", what)
		}
		return e
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s in 30 s", what)
	}
	return ""
}

// Messages about a request go on its response, as an event stream, before
// its answer; a request of the upstream (sampling) too, and the agent's
// answer, POSTed, reaches the upstream.
func TestHTTPRelatedMessagesStream(t *testing.T) {
	t.Parallel()
	_, _, url := httpFixture(t, HTTPOptions{})
	h := map[string]string{"Authorization": bearer(0)}
	resp, _ := do(t, url, request{body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"t","version":"1"}}}`, header: h})
	h["Mcp-Session-Id"] = resp.Header.Get("Mcp-Session-Id")
	do(t, url, request{body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, header: h})

	post := func(body string) *http.Response {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		for k, v := range h {
			req.Header.Set(k, v)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp = post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_tool_with_progress","_meta":{"progressToken":7}}}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("a call with progress answered as %s", ct)
	}
	ev := sse(t, resp.Body)
	for i := range 3 {
		if e := next(t, ev, "progress"); !strings.Contains(e, `"method":"notifications/progress"`) {
			t.Errorf("event %d: %s", i, e)
		}
	}
	if e := next(t, ev, "the result"); !strings.Contains(e, `"id":2`) || !strings.Contains(e, "Tool with progress executed successfully") {
		t.Errorf("the result: %s", e)
	}

	resp = post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_sampling","arguments":{"prompt":"hi"}}}`)
	ev = sse(t, resp.Body)
	var ask message
	json.Unmarshal([]byte(next(t, ev, "the sampling request")), &ask)
	if ask.Method != "sampling/createMessage" {
		t.Fatalf("the first event: %+v", ask)
	}
	answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"hello"},"model":"m"}}`, ask.ID)
	if r := post(answer); r.StatusCode != http.StatusAccepted {
		t.Errorf("the answer: %d", r.StatusCode)
	}
	if e := next(t, ev, "the result"); !strings.Contains(e, "LLM response: hello") {
		t.Errorf("the result: %s", e)
	}
}

// The session's stream (GET) carries what is not about a request, such as
// a change of the tools; a session has one stream at a time.
func TestHTTPSessionStream(t *testing.T) {
	t.Parallel()
	_, _, url := httpFixture(t, HTTPOptions{})
	sid := initHTTP(t, url, 0, nil)
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", bearer(0))
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	ev := sse(t, resp.Body)
	if r, _ := do(t, url, request{method: "GET", header: map[string]string{"Authorization": bearer(0), "Mcp-Session-Id": sid, "Accept": "text/event-stream"}}); r.StatusCode != http.StatusConflict {
		t.Errorf("a second stream: %d", r.StatusCode)
	}
	do(t, url, request{body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add_tool","arguments":{"name":"late"}}}`,
		header: map[string]string{"Authorization": bearer(0), "Mcp-Session-Id": sid}})
	if e := next(t, ev, "the list change"); !strings.Contains(e, "notifications/tools/list_changed") {
		t.Errorf("on the stream: %s", e)
	}
	_, body := do(t, url, request{body: `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, header: map[string]string{"Authorization": bearer(0), "Mcp-Session-Id": sid}})
	if !strings.Contains(body, "extra_late") {
		t.Errorf("the new tool is not listed: %s", body)
	}
}

// Many calls of one session at once, over HTTP: each is answered, and
// none passes the budget (run with -race).
func TestHTTPParallelCallsOfOneSession(t *testing.T) {
	t.Parallel()
	f, _, url := httpFixture(t, HTTPOptions{})
	sid := initHTTP(t, url, 2, map[string]string{"X-Harness-Session": "busy"})
	h := map[string]string{"Authorization": bearer(2), "Mcp-Session-Id": sid, "X-Harness-Session": "busy"}
	const calls = 64
	var wg sync.WaitGroup
	bodies := make([]string, calls)
	for i := range calls {
		wg.Go(func() {
			resp, body := do(t, url, request{body: fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"ctx_read","arguments":{"bytes":4000}}}`, i+10), header: h})
			if resp.StatusCode != http.StatusOK {
				t.Errorf("call %d: %d %s", i, resp.StatusCode, body)
			}
			bodies[i] = body
		})
	}
	wg.Wait()
	for i, b := range bodies {
		if !strings.Contains(b, fmt.Sprintf(`"id":%d`, i+10)) {
			t.Errorf("call %d answered %s", i, b)
		}
	}
	used := f.usage(t, key(Identity{Agent: "c", Session: "busy"})).Tokens
	if used > 200000 { // coder's limit
		t.Errorf("used %d tokens", used)
	}
	if used != calls*tokens(t, text(4000)) {
		t.Errorf("64 calls of %d tokens charged %d", tokens(t, text(4000)), used)
	}
}
