package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/events"
)

// fixtureUpstream builds the fixture MCP server once per test run.
var fixtureUpstream = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "harness-app-test")
	if err != nil {
		return "", err
	}
	builtIn = dir
	out := filepath.Join(dir, "upstream")
	if b, err := exec.Command("go", "build", "-o", out, "../testdata/upstream").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, b)
	}
	return out, nil
})

// builtIn is the directory of the fixture's binary, removed at the end.
var builtIn string

func TestMain(m *testing.M) {
	code := m.Run()
	if builtIn != "" {
		os.RemoveAll(builtIn)
	}
	os.Exit(code)
}

// servedHarness is the harness of home and project, its state under
// home, as serve loads it, and a SQLite ledger of its own to serve with.
func servedHarness(t *testing.T, home, project string) (*Harness, string) {
	t.Helper()
	p := params(home, project, map[string]string{"XDG_STATE_HOME": filepath.Join(home, "state")})
	p.Project = project
	h, err := Load(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return h, "sqlite:" + filepath.Join(home, "ledger.db")
}

// lines is an io.Writer that hands each line written to it to a channel
// (and the test's log): what a test waits on instead of a clock.
type lines struct {
	t  *testing.T
	ch chan string
	mu sync.Mutex
	w  *io.PipeWriter
}

func newLines(t *testing.T) *lines {
	r, w := io.Pipe()
	l := &lines{t: t, ch: make(chan string, 1000), w: w}
	go func() {
		s := bufio.NewScanner(r)
		for s.Scan() {
			select {
			case l.ch <- s.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() { w.Close() })
	return l
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	return l.w.Write(p)
}

// await is the first submatch of re in the lines written from now on.
func (l *lines) await(re *regexp.Regexp) string {
	l.t.Helper()
	timeout := time.After(60 * time.Second) // a hang's bound, not a synchronisation
	for {
		select {
		case s := <-l.ch:
			if m := re.FindStringSubmatch(s); m != nil {
				return m[1]
			}
		case <-timeout:
			l.t.Fatalf("no line matching %s", re)
		}
	}
}

func families(t *testing.T, r io.Reader) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// sum adds up the values of family's series that have the given labels.
func sum(fams map[string]*dto.MetricFamily, family string, labels ...string) float64 {
	total := 0.0
next:
	for _, m := range fams[family].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if got[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		}
	}
	return total
}

// A scripted session over serve --http, then /metrics scraped and parsed
// as Prometheus does: the decisions counted are the session's, the tokens
// and cost charged are what the ledger holds, the refusal was sent to the
// alert's webhook; /metrics wants its own token, not an agent's; /healthz
// and /readyz answer at once.
func TestServeMetrics(t *testing.T) {
	t.Parallel()
	upstream, err := fixtureUpstream()
	if err != nil {
		t.Fatal(err)
	}
	alerted := make(chan events.Event, 10)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e events.Event
		json.NewDecoder(r.Body).Decode(&e)
		alerted <- e
	}))
	defer hook.Close()

	home, project := t.TempDir(), t.TempDir()
	const metricsToken = "metrics-token-0123456789"
	files(t, home, map[string]string{".lean-ctx/harness.toml": `
[metrics]
token = "` + metricsToken + `"

[[gateway.tokens]]
agent = "claude-code"
token = "reviewer-token-0123456789"
role = "reviewer"
max_role = "reviewer"

[[gateway.tokens]]
agent = "ci"
token = "coder-token-0123456789ab"

[[alerts]]
name = "ops"
url = "` + hook.URL + `/hook"
events = ["PolicyViolation"]
`})
	// A project role with tool names of its own: they must not become
	// label values.
	files(t, project, map[string]string{".lean-ctx/roles/mine.toml": "[role]\ninherits = \"coder\"\n\n[tools]\nallowed = [\"project_tool_a\", \"project_tool_b\"]\n"})
	h, ledger := servedHarness(t, home, project)
	log := newLines(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- h.Serve(ctx, ServeOptions{HTTP: "127.0.0.1:0", Command: []string{upstream}, Ledger: ledger, Log: log})
	}()
	defer func() {
		cancel()
		<-served
	}()
	addr := log.await(regexp.MustCompile(`listening on http://(\S+)/mcp`))
	base := "http://" + addr

	connect := func(token string) *client.Client {
		c, err := client.NewStreamableHttpClient(base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		req := mcp.InitializeRequest{}
		req.Params.ClientInfo = mcp.Implementation{Name: "metrics-test", Version: "1"}
		if _, err := c.Initialize(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		return c
	}
	call := func(c *client.Client, name string, args map[string]any) *mcp.CallToolResult {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		res, err := c.CallTool(context.Background(), req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	ci, rev := connect("coder-token-0123456789ab"), connect("reviewer-token-0123456789")
	for i := range 3 {
		if res := call(ci, "ctx_read", map[string]any{"path": fmt.Sprint("file", i)}); res.IsError {
			t.Fatalf("ci's read: %+v", res)
		}
	}
	call(ci, "ctx_edit", map[string]any{"path": "x", "content": "y"})
	if res := call(rev, "ctx_edit", map[string]any{"path": "x"}); !res.IsError {
		t.Fatal("the reviewer edited")
	}
	call(rev, "ctx_read", map[string]any{"path": "x"})

	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		path, token string
		want        int
	}{
		{"/metrics", "", 401},
		{"/metrics", "coder-token-0123456789ab", 401},
		{"/healthz", "", 200},
		{"/readyz", "", 200},
		{"/", "", 404},
	} {
		if code, body := get(c.path, c.token); code != c.want {
			t.Errorf("GET %s: %d %s, want %d", c.path, code, body, c.want)
		}
	}
	code, body := get("/metrics", metricsToken)
	if code != 200 {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	fams := families(t, strings.NewReader(body))

	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{nil, 6},
		{[]string{"outcome", "allow", "role", "coder", "tool", "ctx_read", "reason", "none"}, 3},
		{[]string{"outcome", "allow", "role", "coder", "tool", "ctx_edit"}, 1},
		{[]string{"outcome", "deny", "role", "reviewer", "tool", "ctx_edit", "reason", "tool_denied"}, 1},
		{[]string{"outcome", "allow", "role", "reviewer", "tool", "ctx_read"}, 1},
	} {
		if got := sum(fams, "harness_decisions_total", c.labels...); got != c.want {
			t.Errorf("harness_decisions_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
	if got := sum(fams, "harness_decision_duration_seconds"); got != 6 {
		t.Errorf("decision durations observed: %v, want 6", got)
	}
	if got := sum(fams, "harness_upstream_requests_total", "method", "tools/call", "result", "ok"); got != 5 {
		t.Errorf("upstream tools/call ok: %v, want 5 (the refused call never went)", got)
	}
	if got := sum(fams, "harness_live_sessions"); got != 2 {
		t.Errorf("live sessions: %v, want 2", got)
	}
	if got := sum(fams, "harness_events_total", "type", "PolicyViolation"); got != 1 {
		t.Errorf("PolicyViolation events: %v", got)
	}
	if got := sum(fams, "harness_ledger_errors_total"); got != 0 {
		t.Errorf("ledger errors: %v", got)
	}
	for _, m := range fams["harness_decisions_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if strings.HasPrefix(l.GetValue(), "project_tool") {
				t.Errorf("a project role's tool name became a label: %v", m)
			}
		}
	}
	tokens := map[string]float64{"ci": sum(fams, "harness_charged_tokens_total", "agent", "ci"),
		"claude-code": sum(fams, "harness_charged_tokens_total", "agent", "claude-code")}
	cost := map[string]float64{"ci": sum(fams, "harness_charged_cost_dollars_total", "agent", "ci"),
		"claude-code": sum(fams, "harness_charged_cost_dollars_total", "agent", "claude-code")}

	select {
	case e := <-alerted:
		if e.Type != events.PolicyViolation || e.Agent != "claude-code" || e.Tool != "ctx_edit" {
			t.Errorf("alert %+v", e)
		}
	case <-time.After(60 * time.Second): // a hang's bound
		t.Fatal("the refusal was never alerted")
	}

	ci.Close()
	rev.Close()
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	served <- nil // for the deferred wait
	store, err := budget.Open(context.Background(), ledger, budget.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sessions, err := store.Sessions(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	ledgerTokens, ledgerCost := map[string]float64{}, map[string]float64{}
	for _, s := range sessions {
		ledgerTokens[s.Agent] += float64(s.Tokens)
		ledgerCost[s.Agent] += float64(s.CostMicros) / 1e6
	}
	for _, agent := range []string{"ci", "claude-code"} {
		if tokens[agent] == 0 || tokens[agent] != ledgerTokens[agent] {
			t.Errorf("%s: %v tokens charged by the metrics, %v in the ledger", agent, tokens[agent], ledgerTokens[agent])
		}
		if d := cost[agent] - ledgerCost[agent]; cost[agent] == 0 || d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: $%v charged by the metrics, $%v in the ledger", agent, cost[agent], ledgerCost[agent])
		}
	}
}

// A stdio gateway keeps metrics only when they can be read: with
// --metrics (its listener serves them). Without, it keeps none, so its
// decisions, charges and ledger operations pay for no counters.
func TestStdioKeepsMetricsOnlyWhenServed(t *testing.T) {
	upstream, err := fixtureUpstream()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		metrics string
		kept    bool
	}{
		{name: "no --metrics"},
		{name: "--metrics", metrics: "127.0.0.1:0", kept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, ledger := servedHarness(t, t.TempDir(), t.TempDir())
			// The agent hangs up at once: Serve returns when the session ends.
			err := h.Serve(context.Background(), ServeOptions{Command: []string{upstream}, Ledger: ledger, Metrics: tc.metrics,
				Stdin: strings.NewReader(""), Stdout: io.Discard, Log: newLines(t)})
			if err != nil {
				t.Fatal(err)
			}
			if kept := h.Params.Metrics != nil; kept != tc.kept {
				t.Errorf("metrics kept: %v, want %v", kept, tc.kept)
			}
		})
	}
}
