package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentharness/harness/gateway"
	"github.com/agentharness/harness/ui"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// binaries builds the harness and the fixture upstream once per test run.
var binaries struct {
	once              sync.Once
	harness, upstream string
	hook              string // the small hook binary, beside harness
	relay             string // testdata/relay, a process in the middle that governs nothing
	err               error
}

// smallHookBinary is the small hook binary (cmd/harness-hook), built
// beside the harness of buildBinaries.
func smallHookBinary(t *testing.T) string {
	t.Helper()
	buildBinaries(t)
	return binaries.hook
}

func buildBinaries(t *testing.T) (harnessBin, upstreamBin string) {
	t.Helper()
	binaries.once.Do(func() {
		dir, err := os.MkdirTemp("", "harness-bin")
		if err != nil {
			binaries.err = err
			return
		}
		binaries.harness, binaries.upstream, binaries.hook = filepath.Join(dir, "harness"), filepath.Join(dir, "upstream"), filepath.Join(dir, "harness-hook")
		binaries.relay = filepath.Join(dir, "relay")
		for pkg, out := range map[string]string{".": binaries.harness, "../../testdata/upstream": binaries.upstream, "../harness-hook": binaries.hook,
			"../../testdata/relay": binaries.relay} {
			if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
				binaries.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
				return
			}
		}
	})
	if binaries.err != nil {
		t.Fatal(binaries.err)
	}
	return binaries.harness, binaries.upstream
}

// gatewayProject is a project with a small custom role for budget tests.
func gatewayProject(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, ".lean-ctx", "roles", "small.toml"),
		"[role]\ninherits = \"coder\"\n\n[limits]\nmax_context_tokens = 1000\n")
	return root
}

// stdioClient starts `harness serve -- upstream` as an MCP client would.
func stdioClient(t *testing.T, home, project string, args ...string) *client.Client {
	t.Helper()
	harnessBin, upstreamBin := buildBinaries(t)
	full := append([]string{"serve", "--project", project}, args...)
	full = append(full, "--", upstreamBin)
	c, err := client.NewStdioMCPClientWithOptions(harnessBin, []string{"HOME=" + home}, full,
		transport.WithCommandStderrWriter(testWriter{t}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	initialize(t, c)
	return c
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func initialize(t *testing.T, c *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "gateway-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
}

func toolNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func call(t *testing.T, c *client.Client, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func TestGatewayReviewer(t *testing.T) {
	t.Parallel()
	c := stdioClient(t, t.TempDir(), gatewayProject(t), "--role", "reviewer", "--session", "rev")
	if got := strings.Join(toolNames(t, c), " "); got != "ctx_read ctx_session" {
		t.Errorf("reviewer sees %s", got)
	}
	res := call(t, c, "ctx_edit", map[string]any{"path": "main.go"})
	if !res.IsError || !strings.Contains(text(res), "tool_denied: tool 'ctx_edit' is denied for role 'reviewer'") ||
		!strings.Contains(text(res), "ctx_session action=explain tool=ctx_edit") {
		t.Errorf("ctx_edit: %v %s", res.IsError, text(res))
	}
	// The decision is in _meta, never in structuredContent, which a
	// client holds to the tool's output schema.
	var d struct{ Decision string }
	b, _ := json.Marshal(res.Meta.AdditionalFields[gateway.DecisionMeta])
	if json.Unmarshal(b, &d); d.Decision != "deny" || res.StructuredContent != nil {
		t.Errorf("_meta: %s; structured content: %v", b, res.StructuredContent)
	}
	if res := call(t, c, "ctx_read", map[string]any{"path": "main.go"}); res.IsError || text(res) != "contents of main.go\n" {
		t.Errorf("ctx_read: %v %q", res.IsError, text(res))
	}
	if res := call(t, c, "ctx_session", map[string]any{"action": "explain", "tool": "ctx_shell"}); !strings.Contains(text(res), `denied: pattern "ctx_shell" of tools.denied (builtin:reviewer.toml) matches`) {
		t.Errorf("explain: %s", text(res))
	}
}

// The schemas of upstream tools reach the client as the upstream wrote
// them, keywords the client libraries do not model included.
func TestGatewaySchemasPassThrough(t *testing.T) {
	t.Parallel()
	harnessBin, upstreamBin := buildBinaries(t)
	raw := func(cmd string, args ...string) string {
		t.Helper()
		in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
`
		c := exec.Command(cmd, args...)
		c.Env = append(os.Environ(), "HOME="+t.TempDir())
		stdin, _ := c.StdinPipe()
		stdout, _ := c.StdoutPipe()
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { stdin.Close(); c.Process.Kill(); c.Wait() }()
		stdin.Write([]byte(in))
		dec := json.NewDecoder(stdout)
		for {
			var msg struct {
				ID     int `json:"id"`
				Result struct {
					Tools []json.RawMessage `json:"tools"`
				} `json:"result"`
			}
			if err := dec.Decode(&msg); err != nil {
				t.Fatal(err)
			}
			if msg.ID != 2 {
				continue
			}
			for _, tool := range msg.Result.Tools {
				var v struct {
					Name   string          `json:"name"`
					Schema json.RawMessage `json:"inputSchema"`
				}
				json.Unmarshal(tool, &v)
				if v.Name == "ctx_read" {
					return string(v.Schema)
				}
			}
			t.Fatal("no ctx_read")
		}
	}
	direct := raw(upstreamBin)
	through := raw(harnessBin, "serve", "--project", t.TempDir(), "--", upstreamBin)
	if direct != through || !strings.Contains(through, `"oneOf"`) || !strings.Contains(through, `"$defs"`) {
		t.Errorf("schema changed:\ndirect:  %s\nthrough: %s", direct, through)
	}
}

func TestGatewayBudget(t *testing.T) {
	t.Parallel()
	c := stdioClient(t, t.TempDir(), gatewayProject(t), "--role", "small", "--session", "budget")
	// 600 bytes of text is about 130 tokens; the small role has 1000.
	var seen []string
	for range 9 {
		res := call(t, c, "ctx_read", map[string]any{"bytes": 600})
		switch {
		case res.IsError:
			seen = append(seen, "deny")
		case strings.Contains(text(res), "[harness] warning: tokens at"):
			seen = append(seen, "warn")
		default:
			seen = append(seen, "allow")
		}
	}
	got := strings.Join(seen, " ")
	if !strings.Contains(got, "allow warn") || !strings.Contains(got, "warn deny") || !strings.HasSuffix(got, "deny deny") {
		t.Errorf("outcomes as the tokens grow: %s", got)
	}
	res := call(t, c, "ctx_session", map[string]any{"action": "budget"})
	if res.IsError || !strings.HasPrefix(text(res), "Budget[small]: tokens ") || !strings.HasSuffix(text(res), "→ EXHAUSTED") {
		t.Errorf("ctx_session when exhausted: %s", text(res))
	}
	res = call(t, c, "ctx_session", map[string]any{"action": "role", "value": "admin"})
	if !res.IsError || !strings.Contains(text(res), "switch_denied (privileged)") {
		t.Errorf("switch to admin: %s", text(res))
	}
	res = call(t, c, "ctx_session", map[string]any{"action": "role", "value": "reviewer"})
	if res.IsError || !strings.Contains(text(res), "Role switched: small → reviewer") {
		t.Errorf("switch to reviewer: %s", text(res))
	}
	if got := strings.Join(toolNames(t, c), " "); got != "ctx_read ctx_session" {
		t.Errorf("after the switch the tools are %s", got)
	}
}

func TestGatewayUpstreamRestarts(t *testing.T) {
	t.Parallel()
	c := stdioClient(t, t.TempDir(), gatewayProject(t), "--session", "crash")
	res := call(t, c, "ctx_shell", map[string]any{"command": "crash"})
	if !res.IsError || !strings.Contains(text(res), "upstream is down") {
		t.Fatalf("crash: %v %s", res.IsError, text(res))
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		res = call(t, c, "ctx_shell", map[string]any{"command": "echo back"})
		if !res.IsError {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upstream never came back: %s", text(res))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if text(res) != "ran: echo back\n" {
		t.Errorf("after the restart: %q", text(res))
	}
	// Upstream errors pass through as they are: a tool error, and a
	// JSON-RPC error with its code, message and data.
	if res := call(t, c, "ctx_shell", map[string]any{"command": "fail"}); !res.IsError || text(res) != "command failed: exit status 1" {
		t.Errorf("tool error: %v %q", res.IsError, text(res))
	}
	checkRPCErrors(t, c)
	// A tool the upstream adds is offered at once.
	call(t, c, "add_tool", map[string]any{"name": "late"})
	for deadline := time.Now().Add(5 * time.Second); !slices.Contains(toolNames(t, c), "extra_late"); {
		if time.Now().After(deadline) {
			t.Fatalf("extra_late never listed: %v", toolNames(t, c))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if res := call(t, c, "extra_late", nil); text(res) != "hello from extra_late" {
		t.Errorf("extra_late: %q", text(res))
	}
}

// checkRPCErrors calls the fixture's tools that answer with JSON-RPC errors:
// an internal error, and URL elicitation required (-32042, with its
// elicitations as data), which reaches the client only if the gateway passes
// the code and data on.
func checkRPCErrors(t *testing.T, c *client.Client) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "ctx_shell", map[string]any{"command": "rpcfail"}
	if _, err := c.CallTool(context.Background(), req); !errors.Is(err, mcp.ErrInternalError) || !strings.Contains(err.Error(), "the upstream could not run the command") {
		t.Errorf("JSON-RPC error: %v", err)
	}
	req.Params.Arguments = map[string]any{"command": "rpcauth"}
	_, err := c.CallTool(context.Background(), req)
	var auth mcp.URLElicitationRequiredError
	if !errors.As(err, &auth) || len(auth.Elicitations) != 1 || auth.Elicitations[0].ElicitationID != "e-1" || auth.Elicitations[0].URL != "https://example.test/auth" {
		t.Errorf("JSON-RPC error -32042: %v (%+v)", err, auth)
	}
}

// What reaches the agent as an embedded text resource is charged like text.
func TestGatewayChargesTextResources(t *testing.T) {
	t.Parallel()
	c := stdioClient(t, t.TempDir(), gatewayProject(t), "--session", "resources")
	res := call(t, c, "ctx_read", map[string]any{"bytes": 600, "resource": true})
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("resource: %+v", res)
	}
	budget := text(call(t, c, "ctx_session", map[string]any{"action": "budget"}))
	var used int
	if _, err := fmt.Sscanf(budget, "Budget[coder]: tokens %d/", &used); err != nil || used < 100 {
		t.Errorf("after 600 bytes as a resource: %s", budget)
	}
}

func TestGatewayCompress(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	c := stdioClient(t, home, gatewayProject(t), "--role", "ops", "--session", "ops")
	res := call(t, c, "ctx_shell", map[string]any{"command": "big 100000", "reason": "build the release"})
	out := text(res)
	if res.IsError || strings.Contains(out, "\x1b[") || !strings.Contains(out, "warning: unused import: `std::fmt`  [×3]") ||
		!strings.Contains(out, "cut by the harness") || len(out) > 20000 {
		t.Errorf("compressed output (%d bytes):\n%.600s", len(out), out)
	}
}

func TestGatewayHTTP(t *testing.T) {
	t.Parallel()
	harnessBin, upstreamBin := buildBinaries(t)
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), `
[[gateway.tokens]]
agent = "claude-code"
token = "reviewer-token-0123456789"
role = "reviewer"
max_role = "reviewer"

[[gateway.tokens]]
agent = "ci"
token = "coder-token-0123456789ab"

[[gateway.tokens]]
agent = "named"
token = "named-token-0123456789ab"
client_sessions = true

[[gateway.tokens]]
token = "operator-token-0123456789"
operator = true
`)
	addr := freeAddr(t)
	srv := exec.Command(harnessBin, "serve", "--http", addr, "--project", gatewayProject(t), "--", upstreamBin)
	srv.Env = append(os.Environ(), "HOME="+home)
	srv.Stderr = testWriter{t}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	url := "http://" + addr + "/mcp"
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("harness serve --http never listened")
		}
	}
	connect := func(token, session string) *client.Client {
		headers := map[string]string{"Authorization": "Bearer " + token}
		if session != "" {
			headers["X-Harness-Session"] = session
		}
		c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(headers))
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
	rev := connect("reviewer-token-0123456789", "")
	if got := strings.Join(toolNames(t, rev), " "); got != "ctx_read ctx_session" {
		t.Errorf("the reviewer token sees %s", got)
	}
	if res := call(t, rev, "ctx_edit", map[string]any{"path": "x"}); !res.IsError {
		t.Error("the reviewer edited")
	}
	// The reviewer token's agent may hold no role beyond reviewer.
	res := call(t, rev, "ctx_session", map[string]any{"action": "role", "value": "coder"})
	if !res.IsError || !strings.Contains(text(res), "switch_denied (ceiling): role 'coder' is beyond 'reviewer', the most privileged role this agent may hold") {
		t.Errorf("the reviewer token's switch to coder: %s", text(res))
	}
	if res := call(t, rev, "ctx_session", map[string]any{"action": "role"}); !strings.Contains(text(res), "You may switch to: (none)") {
		t.Errorf("the reviewer token's roles: %s", text(res))
	}
	ci := connect("coder-token-0123456789ab", "")
	if res := call(t, ci, "ctx_edit", map[string]any{"path": "x"}); res.IsError || text(res) != "edited x" {
		t.Errorf("the coder token: %s", text(res))
	}
	checkRPCErrors(t, ci)
	// Two agents, same session name: separate sessions.
	if res := call(t, ci, "ctx_session", map[string]any{"action": "budget"}); !strings.HasPrefix(text(res), "Budget[coder]") {
		t.Errorf("ci: %s", text(res))
	}
	post := func(token string, headers map[string]string) int {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("wrong-token-000000000000", nil); code != http.StatusUnauthorized {
		t.Errorf("a wrong token got %d", code)
	}
	// Sessions are the gateway's: an id it did not issue is refused, and
	// a client may not name its own unless its token allows it.
	if code := post("coder-token-0123456789ab", map[string]string{"Mcp-Session-Id": "mcp-session-00000000-0000-0000-0000-000000000000"}); code != http.StatusNotFound {
		t.Errorf("a session id the gateway did not issue got %d", code)
	}
	if code := post("coder-token-0123456789ab", map[string]string{"X-Harness-Session": "fresh-1"}); code != http.StatusBadRequest {
		t.Errorf("a client-named session without client_sessions got %d", code)
	}
	// With client_sessions, two connections of one name share the session.
	a, b := connect("named-token-0123456789ab", "shared"), connect("named-token-0123456789ab", "shared")
	call(t, a, "ctx_read", map[string]any{"path": "x"})
	budgetA := text(call(t, a, "ctx_session", map[string]any{"action": "budget"}))
	if budgetB := text(call(t, b, "ctx_session", map[string]any{"action": "budget"})); budgetA != budgetB || strings.HasPrefix(budgetA, "Budget[coder]: tokens 0/") {
		t.Errorf("one named session seen from two connections: %s / %s", budgetA, budgetB)
	}
	if res := call(t, a, "ctx_session", map[string]any{"action": "role"}); !strings.Contains(text(res), "Session shared of agent named") {
		t.Errorf("the session's name: %s", text(res))
	}
	// The live view beside the gateway: the operator token sees every
	// agent, an agent's token its own; the operator token is no agent's.
	if code := post("operator-token-0123456789", nil); code != http.StatusUnauthorized {
		t.Errorf("the operator token on /mcp got %d", code)
	}
	for _, tt := range []struct{ token, agents string }{
		{"operator-token-0123456789", "ci claude-code named"},
		{"coder-token-0123456789ab", "ci"},
		{"named-token-0123456789ab", "named"},
	} {
		req, _ := http.NewRequest("GET", "http://"+addr+"/ui/api/state", nil)
		req.Header.Set("Authorization", "Bearer "+tt.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var st ui.State
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("/ui/api/state: %d: %v", resp.StatusCode, err)
		}
		var seen []string
		for _, s := range st.Sessions {
			if !slices.Contains(seen, s.Agent) {
				seen = append(seen, s.Agent)
			}
		}
		slices.Sort(seen)
		if got := strings.Join(seen, " "); got != tt.agents {
			t.Errorf("the live view of %s shows agents %q, want %q", tt.token[:8], got, tt.agents)
		}
	}
}

func TestServeAddressChecks(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--http", "0.0.0.0:8765"}, "is not a loopback address: add --allow-remote"},
		{[]string{"--http", "10.1.2.3:8765", "--allow-remote"}, "serving other machines needs bearer tokens"},
		{[]string{"--http", "nonsense"}, "want host:port"},
		{[]string{"--metrics", "0.0.0.0:9464"}, "--metrics 0.0.0.0:9464 is not a loopback address: add --allow-remote"},
		{[]string{"--metrics", "10.1.2.3:9464", "--allow-remote"}, "serving other machines needs a token ([metrics] token_sha256"},
		{[]string{"--metrics", "9464"}, "want host:port"},
		{nil, "no upstream: give one after --"},
	} {
		_, errOut, code := harness(t, nil, append([]string{"serve"}, tt.args...)...)
		if code != exitError || !strings.Contains(errOut, tt.want) {
			t.Errorf("serve %v: exit %d: %s", tt.args, code, errOut)
		}
	}
}

// stdio serve with --metrics serves the session's decisions and charges
// on loopback: the decisions counted are the calls made, and the tokens
// charged are what the session's budget says.
func TestServeStdioMetrics(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	c := stdioClient(t, t.TempDir(), gatewayProject(t), "--role", "small", "--session", "m", "--agent", "bot", "--metrics", addr)
	denied := 0
	for range 9 {
		if res := call(t, c, "ctx_read", map[string]any{"bytes": 600}); res.IsError {
			denied++
		}
	}
	status := text(call(t, c, "ctx_session", map[string]any{"action": "budget"}))
	var used int
	if _, err := fmt.Sscanf(status, "Budget[small]: tokens %d/", &used); err != nil {
		t.Fatalf("budget %q: %v", status, err)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	byOutcome := map[string]float64{}
	for _, m := range fams["harness_decisions_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["role"] != "small" || labels["tool"] != "ctx_read" {
			t.Errorf("a decision labelled %v", labels)
		}
		byOutcome[labels["outcome"]] += m.GetCounter().GetValue()
	}
	if byOutcome["deny"] != float64(denied) || byOutcome["allow"]+byOutcome["warn"]+byOutcome["deny"] != 9 {
		t.Errorf("decisions by outcome %v; %d of 9 calls were denied", byOutcome, denied)
	}
	var tokens float64
	for _, m := range fams["harness_charged_tokens_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "agent" && l.GetValue() != "bot" {
				t.Errorf("tokens charged to agent %s", l.GetValue())
			}
		}
		tokens += m.GetCounter().GetValue()
	}
	if tokens != float64(used) || used == 0 {
		t.Errorf("%v tokens charged by the metrics, %d in the session's budget", tokens, used)
	}
}
