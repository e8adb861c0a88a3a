package main

// Issue 14, items 2 and 4: many calls of one session at once. However many
// run together, the session's usage never passes its exhaustion threshold
// (a result is cut to what the budget leaves), over stdio and HTTP; 64
// parallel calls of one HTTP session are all answered (this package's
// tests run under -race, and this gateway runs in the test's process), and
// a session's bookkeeping is freed when it is deleted or expires.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// tightRole has a budget a single large result spends many times over.
const tightRole = "[role]\ninherits = \"coder\"\n\n[limits]\nmax_context_tokens = 2000\n"

// Markers of what the gateway did to a result that did not fit
// (gateway/content.go).
const (
	cutMarker     = "\n[harness] the rest of this text withheld: "
	droppedMarker = "[harness] this text withheld: "
)

// budgetUsed is the session's token usage, as ctx_session action=budget
// shows it: "Budget[ROLE]: tokens USED/LIMIT ...".
func budgetUsed(t *testing.T, c *client.Client) (used, limit int64) {
	t.Helper()
	line := text(call(t, c, "ctx_session", map[string]any{"action": "budget"}))
	_, rest, _ := strings.Cut(line, "tokens ")
	if _, err := fmt.Sscanf(rest, "%d/%d", &used, &limit); err != nil {
		t.Fatalf("ctx_session action=budget: %q: %v", line, err)
	}
	return used, limit
}

// parallelLargeReads makes n calls of ctx_read bytes=50000 at once on c, a
// session in tightRole, and checks what each got and what was charged:
// nothing past the limit, every token the agent got of the results counted,
// and every result that did not fit whole saying so.
func parallelLargeReads(t *testing.T, c *client.Client, n int) {
	t.Helper()
	const size = 50000
	full := fixtureText(size)
	tk := newTokenizer()
	fullTokens, _ := tk.Count(full)
	results := make([]*mcp.CallToolResult, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req := mcp.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = "ctx_read", map[string]any{"bytes": size}
			<-start
			results[i], errs[i] = c.CallTool(context.Background(), req)
		})
	}
	close(start)
	wg.Wait()
	var kept int64
	outcomes := map[string]int{}
	for i, res := range results {
		if errs[i] != nil {
			t.Errorf("call %d: %v", i, errs[i])
			continue
		}
		got := text(res)
		switch {
		case res.IsError && strings.Contains(got, "budget_exhausted"):
			outcomes["refused"]++
		case res.IsError:
			t.Errorf("call %d: an error that is not the budget's: %.300s", i, got)
		case got == full:
			outcomes["whole"]++
			kept += fullTokens
		case strings.HasPrefix(got, droppedMarker):
			outcomes["dropped"]++
		case strings.Contains(got, cutMarker):
			outcomes["cut"]++
			prefix, _, _ := strings.Cut(got, cutMarker)
			if !strings.HasPrefix(full, prefix) {
				t.Errorf("call %d: the text kept is not the result's beginning: %.200q", i, prefix)
			}
			k, _ := tk.Count(prefix)
			kept += k
		default:
			t.Errorf("call %d: neither whole, cut, dropped nor refused: %.300s", i, got)
		}
	}
	used, limit := budgetUsed(t, c)
	t.Logf("%d parallel calls of %d tokens each on a budget of %d: %v; %d tokens used", n, fullTokens, limit, outcomes, used)
	if used > limit {
		t.Errorf("usage %d passed the limit %d", used, limit)
	}
	if used != kept {
		t.Errorf("usage %d, but the results that reached the agent kept %d tokens of their text", used, kept)
	}
	if outcomes["cut"] == 0 {
		t.Errorf("no result was cut to fit: %v", outcomes)
	}
}

func TestParallelCallsStayWithinBudgetStdio(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	writeFile(t, filepath.Join(project, ".lean-ctx", "roles", "tight.toml"), tightRole)
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), patientPolicy)
	c := stdioClient(t, home, project, "--role", "tight", "--session", "parallel")
	parallelLargeReads(t, c, 50)
}

func TestParallelCallsStayWithinBudgetHTTP(t *testing.T) {
	t.Parallel()
	harnessBin, upstreamBin := buildBinaries(t)
	home, project := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(project, ".lean-ctx", "roles", "tight.toml"), tightRole)
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), patientPolicy)
	addr := freeAddr(t)
	startHarness(t, harnessBin, home, "serve", "--http", addr, "--project", project, "--role", "tight", "--", upstreamBin)
	url := "http://" + addr + "/mcp"
	waitListening(t, url)
	for _, n := range []int{10, 50} {
		c := httpClient(t, url, nil)
		parallelLargeReads(t, c, n)
	}
}

// startHarness starts the harness binary with home as its home, until the
// test ends.
func startHarness(t *testing.T, bin, home string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = cleanEnv(home)
	cmd.Dir = home
	cmd.Stderr = testWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// httpClient is an initialized MCP client of the gateway at url.
func httpClient(t *testing.T, url string, hc *http.Client) *client.Client {
	t.Helper()
	opts := []transport.StreamableHTTPCOption{}
	if hc != nil {
		opts = append(opts, transport.WithHTTPBasicClient(hc))
	}
	c, err := client.NewStreamableHttpClient(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	initialize(t, c)
	return c
}

// serveInProcess runs harness serve with args in this process (so that
// the race detector watches the gateway), until stop is called or the test
// ends.
func serveInProcess(t *testing.T, home string, args ...string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- runEnv(append([]string{"serve"}, args...), io.Discard, testWriter{t}, env{
			ctx: ctx, getenv: func(string) string { return "" }, workDir: home, home: home,
		})
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case code := <-done:
				if code != exitOK {
					t.Errorf("harness serve: exit %d", code)
				}
			case <-time.After(30 * time.Second):
				t.Error("harness serve did not stop within 30 s of its context's end")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// gatewayGoroutines counts the goroutines of this process that run the
// gateway's code: those of the one gateway a test runs in this process
// (no other test runs one).
func gatewayGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("github.com/agentharness/harness/gateway.")) {
			count++
		}
	}
	return count
}

// waitFor polls cond every tick until it holds or the deadline passes.
func waitFor(t *testing.T, within, tick time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(tick) {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", within, what)
		}
	}
}

// rawPost posts a JSON-RPC message to the gateway, with the session id if
// given; it returns the status, the session id issued and the body.
func rawPost(t *testing.T, hc *http.Client, url, session, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

func rawDelete(t *testing.T, hc *http.Client, url, session string) int {
	t.Helper()
	req, _ := http.NewRequest("DELETE", url, nil)
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

const rawInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"cap","version":"1"}}}`

// The gateways of this test run in the test's process, one at a time, so
// that the race detector watches them and their goroutines can be counted.
func TestParallelCallsOneHTTPSession(t *testing.T) {
	t.Parallel()
	_, upstreamBin := buildBinaries(t)
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), patientPolicy+"[gateway]\nmax_sessions = 3\n")
	addr := freeAddr(t)
	stop := serveInProcess(t, home, "--http", addr, "--project", t.TempDir(), "--", upstreamBin)
	url := "http://" + addr + "/mcp"
	tr := &http.Transport{MaxIdleConnsPerHost: 100}
	hc := &http.Client{Transport: tr}
	t.Cleanup(tr.CloseIdleConnections)
	waitListening(t, url)
	baseline := gatewayGoroutines()

	// 64 calls of one session at once: reads, shell commands, edits and
	// the session tool, each answered, and each token charged once.
	c := httpClient(t, url, hc)
	const n = 64
	type outcome struct {
		tool string
		res  *mcp.CallToolResult
		err  error
	}
	out := make([]outcome, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		tool, args := "ctx_read", map[string]any{"bytes": 2000 + i}
		switch i % 4 {
		case 1:
			tool, args = "ctx_shell", map[string]any{"command": fmt.Sprint("echo ", i)}
		case 2:
			tool, args = "ctx_edit", map[string]any{"path": fmt.Sprint("f", i)}
		case 3:
			tool, args = "ctx_session", map[string]any{"action": "budget"}
		}
		wg.Go(func() {
			req := mcp.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = tool, args
			<-start
			res, err := c.CallTool(context.Background(), req)
			out[i] = outcome{tool, res, err}
		})
	}
	close(start)
	wg.Wait()
	tk := newTokenizer()
	var tokens, shell int64
	for i, o := range out {
		if o.err != nil || o.res == nil || o.res.IsError {
			var meta []byte
			if o.res != nil && o.res.Meta != nil {
				meta, _ = json.Marshal(o.res.Meta.AdditionalFields)
			}
			t.Errorf("call %d (%s): %v %s %s", i, o.tool, o.err, text(o.res), meta)
			continue
		}
		if o.tool == "ctx_session" {
			continue
		}
		k, _ := tk.Count(text(o.res))
		tokens += k
		if o.tool == "ctx_shell" {
			shell++
		}
	}
	line := text(call(t, c, "ctx_session", map[string]any{"action": "budget"}))
	if want := fmt.Sprintf("Budget[coder]: tokens %d/200000", tokens); !strings.HasPrefix(line, want) || !strings.Contains(line, fmt.Sprintf("| shell %d/100", shell)) {
		t.Errorf("after %d parallel calls: %s; the results hold %d tokens and %d shell calls were made", n, line, tokens, shell)
	}
	during := gatewayGoroutines()
	if during <= baseline {
		t.Errorf("the session runs no goroutines of the gateway? %d, %d before it", during, baseline)
	}
	t.Logf("%d parallel calls answered; the gateway's goroutines: %d before the session, %d with it", n, baseline, during)

	// Deleted, the session is gone, and so is what the gateway ran for it.
	c.Close() // DELETE /mcp
	tr.CloseIdleConnections()
	waitFor(t, 20*time.Second, 20*time.Millisecond, "the gateway's goroutines did not go back to what they were before the session", func() bool {
		return gatewayGoroutines() <= baseline
	})

	// The cap of live sessions: 3 initialize, the fourth is refused with
	// 429 until one of them is deleted.
	var sessions []string
	for i := range 3 {
		status, sid, body := rawPost(t, hc, url, "", rawInitialize)
		if status != http.StatusOK || sid == "" {
			t.Fatalf("initialize %d: %d %q %s", i, status, sid, body)
		}
		sessions = append(sessions, sid)
	}
	if status, _, body := rawPost(t, hc, url, "", rawInitialize); status != http.StatusTooManyRequests || !strings.Contains(body, "live sessions") {
		t.Errorf("a fourth session: %d %s", status, body)
	}
	if status := rawDelete(t, hc, url, sessions[0]); status != http.StatusNoContent {
		t.Errorf("DELETE: %d", status)
	}
	if status, _, _ := rawPost(t, hc, url, sessions[0], `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); status != http.StatusNotFound {
		t.Errorf("a deleted session answered %d", status)
	}
	status, sid, body := rawPost(t, hc, url, "", rawInitialize)
	if status != http.StatusOK || sid == "" {
		t.Errorf("a session after one was deleted: %d %s", status, body)
	}
	for _, s := range append(sessions[1:], sid) {
		rawDelete(t, hc, url, s)
	}
	tr.CloseIdleConnections()
	waitFor(t, 20*time.Second, 20*time.Millisecond, "the capped sessions' goroutines did not end", func() bool {
		return gatewayGoroutines() <= baseline
	})
	stop()
	tr.CloseIdleConnections()
	// What was under way when it stopped ends soon after (a connection's
	// goroutine, the last log write): within seconds, none is left.
	for deadline := time.Now().Add(10 * time.Second); gatewayGoroutines() != 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if left := gatewayGoroutines(); left != 0 {
		buf := make([]byte, 1<<22)
		buf = buf[:runtime.Stack(buf, true)]
		for _, g := range bytes.Split(buf, []byte("\n\n")) {
			if bytes.Contains(g, []byte("github.com/agentharness/harness/gateway.")) {
				t.Logf("%s", g)
			}
		}
		t.Errorf("%d goroutines of the gateway are left after it stopped", left)
	}

	// Sessions nobody uses expire, and their places under the cap come
	// back.
	home = t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), "[gateway]\nmax_sessions = 2\nsession_idle = \"1s\"\n")
	addr = freeAddr(t)
	serveInProcess(t, home, "--http", addr, "--project", t.TempDir(), "--", upstreamBin)
	url = "http://" + addr + "/mcp"
	waitListening(t, url)
	var first string
	for i := range 2 {
		status, sid, body := rawPost(t, hc, url, "", rawInitialize)
		if status != http.StatusOK {
			t.Fatalf("initialize %d: %d %s", i, status, body)
		}
		if i == 0 {
			first = sid
		}
	}
	// Once they have been idle for a second, a third is let in (the
	// gateway looks every 250 ms).
	waitFor(t, 20*time.Second, 100*time.Millisecond, "idle sessions never expired", func() bool {
		status, _, _ := rawPost(t, hc, url, "", rawInitialize)
		return status == http.StatusOK
	})
	if status, _, _ := rawPost(t, hc, url, first, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); status != http.StatusNotFound {
		t.Errorf("an expired session answered %d", status)
	}
	waitFor(t, 20*time.Second, 100*time.Millisecond, "the expired sessions' goroutines did not end", func() bool {
		return gatewayGoroutines() <= baseline
	})
}
