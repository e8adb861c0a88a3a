package main

// The escapes of an agent from its limits, each reproduced as the issue
// that named them did it (with the shipped binaries: the CLI, harness
// serve over stdio and HTTP in front of the fixture upstream, the hook
// with Claude Code's payloads), and each now refused. Escapes 2 and 8 are
// in containment_test.go, 5 and 9 in hook_test.go (the hook's deadlines,
// the daemon's fingerprints), 7 and part of 11 in audit_test.go.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// wayUp are project roles that an agent in reviewer would like to switch
// into: every tool with one deny of nothing, a million shell calls and no
// blocking; admin under another name, marked not privileged.
var wayUp = map[string]string{
	"wide": "[tools]\nallowed = [\"*\"]\ndenied = [\"zz_nonexistent_tool\"]\n[limits]\nmax_shell_invocations = 1000000\nblock_at_percent = 255\n",
	"boss": "[role]\ninherits = \"admin\"\nprivileged = false\n[tools]\ndenied = [\"zz_nonexistent_tool\"]\n",
	// Narrower than the built-ins: the seeds' switches into such roles
	// stay open.
	"narrow": "[role]\ninherits = \"reviewer\"\n[limits]\nmax_context_tokens = 1000\n",
}

// Escape 1: project roles as a way up. An agent may switch only within its
// ceiling, which no role file of a repository can raise.
func TestEscape01ProjectRolesAreNoWayUp(t *testing.T) {
	t.Parallel()
	home, project := t.TempDir(), t.TempDir()
	for name, src := range wayUp {
		writeFile(t, filepath.Join(project, ".lean-ctx", "roles", name+".toml"), src)
	}
	run := func(want int, args ...string) string {
		t.Helper()
		out, errOut, code := harnessIn(t, home, nil, append(args, "--project", project, "--session", "S", "--agent", "a")...)
		if code != want {
			t.Fatalf("harness %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out
	}
	run(exitOK, "decide", "--role", "reviewer", "--tool", "ctx_read", "--record")
	for _, to := range []string{"wide", "boss"} {
		out := run(exitDenied, "role", "switch", to)
		if !strings.Contains(out, "refused: session a/S stays in role reviewer") || !strings.Contains(out, "switch_denied (ceiling): role '"+to+"' is beyond the ceiling") {
			t.Errorf("switch to %s:\n%s", to, out)
		}
		if out := run(exitDenied, "decide", "--tool", "ctx_shell", "--record"); !strings.Contains(out, "tool_denied") {
			t.Errorf("a shell call after the refused switch to %s:\n%s", to, out)
		}
	}
	// The seeds' switches still work, and so does the operator.
	run(exitOK, "role", "switch", "narrow")
	run(exitOK, "role", "switch", "coder")
	run(exitOK, "role", "switch", "debugger")
	// The operator may set any role, but a project's role beyond the
	// agent's ceiling is in effect for no one: the repository can rewrite
	// it. A built-in beyond it is the operator's to give.
	run(exitOK, "role", "set", "wide")
	if out := run(exitDenied, "decide", "--tool", "ctx_shell", "--record"); !strings.Contains(out, "switch_denied") || !strings.Contains(out, "role 'wide', which this project defines, is beyond the ceiling") {
		t.Errorf("the operator's role set wide:\n%s", out)
	}
	run(exitOK, "role", "set", "admin")
	if out := run(exitOK, "decide", "--tool", "ctx_shell", "--record"); !strings.Contains(out, "allow: role admin") {
		t.Errorf("the operator's role set admin:\n%s", out)
	}

	// The same through the gateway's ctx_session, and the seeds' switch
	// coder → debugger there.
	c := stdioClient(t, t.TempDir(), project, "--role", "reviewer")
	for _, to := range []string{"wide", "boss"} {
		if res := call(t, c, "ctx_session", map[string]any{"action": "role", "value": to}); !res.IsError || !strings.Contains(text(res), "switch_denied (ceiling)") {
			t.Errorf("ctx_session to %s: %s", to, text(res))
		}
	}
	for _, to := range []string{"coder", "debugger"} {
		if res := call(t, c, "ctx_session", map[string]any{"action": "role", "value": to}); res.IsError {
			t.Errorf("ctx_session to %s: %s", to, text(res))
		}
	}
}

// twoUpstreams writes a user configuration with two upstreams of the
// fixture server, lean and other, so that their tools get prefixes.
func twoUpstreams(t *testing.T, home, extra string) {
	t.Helper()
	_, upstreamBin := buildBinaries(t)
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), fmt.Sprintf(
		"[[upstream]]\nname = \"lean\"\ncommand = %q\n\n[[upstream]]\nname = \"other\"\ncommand = %q\n%s", upstreamBin, upstreamBin, extra))
}

// serveWith starts harness serve over stdio with the user's upstreams.
func serveWith(t *testing.T, home, project string, args ...string) *client.Client {
	t.Helper()
	harnessBin, _ := buildBinaries(t)
	c, err := client.NewStdioMCPClientWithOptions(harnessBin, []string{"HOME=" + home},
		append([]string{"serve", "--project", project}, args...), transport.WithCommandStderrWriter(testWriter{t}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	initialize(t, c)
	return c
}

// Escape 3: a prefixed name steps around the shell rules. lean__ctx_shell
// is a shell tool by its upstream's own name: shell budget, shell policy
// and the role's denied patterns apply to it.
func TestEscape03PrefixedShellTools(t *testing.T) {
	t.Parallel()
	home, project := t.TempDir(), t.TempDir()
	twoUpstreams(t, home, "")
	writeFile(t, filepath.Join(project, ".lean-ctx", "roles", "two-shells.toml"), "[role]\ninherits = \"coder\"\n[limits]\nmax_shell_invocations = 2\n")
	writeFile(t, filepath.Join(project, ".lean-ctx", "roles", "no-shell.toml"), "[role]\ninherits = \"coder\"\nshell_policy = \"deny\"\n")
	writeFile(t, filepath.Join(project, ".lean-ctx", "roles", "mcp-user.toml"), "[tools]\nallowed = [\"*__*\"]\ndenied = [\"ctx_shell\"]\n")

	c := serveWith(t, home, project, "--role", "two-shells")
	if names := strings.Join(toolNames(t, c), " "); !strings.Contains(names, "lean__ctx_shell") || !strings.Contains(names, "other__ctx_shell") {
		t.Fatalf("the tools: %s", names)
	}
	var got []bool
	for range 4 {
		got = append(got, call(t, c, "lean__ctx_shell", map[string]any{"command": "ls"}).IsError)
	}
	if fmt.Sprint(got) != "[false false true true]" {
		t.Errorf("four calls of lean__ctx_shell on a 2-call budget, refused: %v", got)
	}
	if res := call(t, c, "other__ctx_shell", map[string]any{"command": "ls"}); !res.IsError || !strings.Contains(text(res), "shell_budget") {
		t.Errorf("the other upstream's shell on the same budget: %s", text(res))
	}
	c = serveWith(t, home, project, "--role", "no-shell")
	if res := call(t, c, "lean__ctx_shell", map[string]any{"command": "ls"}); !res.IsError || !strings.Contains(text(res), "shell_denied") {
		t.Errorf("lean__ctx_shell under shell_policy deny: %s", text(res))
	}
	if names := strings.Join(toolNames(t, c), " "); strings.Contains(names, "ctx_shell") {
		t.Errorf("a role without shell is shown %s", names)
	}
	c = serveWith(t, home, project, "--role", "mcp-user")
	if res := call(t, c, "lean__ctx_shell", map[string]any{"command": "ls"}); !res.IsError || !strings.Contains(text(res), "tool_denied") {
		t.Errorf("lean__ctx_shell for a role denying ctx_shell: %s", text(res))
	}
	if res := call(t, c, "lean__ctx_read", map[string]any{"path": "x"}); res.IsError {
		t.Errorf("lean__ctx_read for that role: %s", text(res))
	}

	// Through the hook: mcp__lean__ctx_shell is a shell call too.
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), "[agents.claude-code]\nrole = \"two-shells\"\n")
	var denied []bool
	for range 3 {
		out, _, code := hookProcess(t, home, []string{"HARNESS_HOOK_DAEMON=off"}, preToolUse("mcp-shell", project, "mcp__lean__ctx_shell", `{"command": "ls"}`))
		denied = append(denied, code != 0 || strings.Contains(out, `"permissionDecision":"deny"`))
	}
	if fmt.Sprint(denied) != "[false false true]" {
		t.Errorf("three hook calls of mcp__lean__ctx_shell on a 2-call budget, denied: %v", denied)
	}
}

// Escape 4: a fresh budget on demand. Over HTTP, sessions are the
// gateway's, and an agent budget holds across re-initialized sessions;
// over stdio the client's own name never picks the agent.
func TestEscape04NoFreshBudgetOnDemand(t *testing.T) {
	t.Parallel()
	harnessBin, upstreamBin := buildBinaries(t)
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), `
[agents.ci.budget]
max_context_tokens = 40
period = "total"

[agents.claude-code]
role = "reviewer"

[[gateway.tokens]]
agent = "ci"
token = "ci-token-0123456789abcdef"
`)
	addr := freeAddr(t)
	srv := exec.Command(harnessBin, "serve", "--http", addr, "--project", t.TempDir(), "--", upstreamBin)
	srv.Env = append(os.Environ(), "HOME="+home)
	srv.Stderr = testWriter{t}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	url := "http://" + addr + "/mcp"
	waitListening(t, url)
	post := func(headers map[string]string) int {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ctx_read","arguments":{"path":"x"}}}`))
		req.Header.Set("Authorization", "Bearer ci-token-0123456789abcdef")
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
	for i := range 3 {
		if code := post(map[string]string{"X-Harness-Session": fmt.Sprint("fresh-", i)}); code != http.StatusBadRequest {
			t.Errorf("a session the client names: %d", code)
		}
		if code := post(map[string]string{"Mcp-Session-Id": fmt.Sprintf("mcp-session-%08d-0000-4000-8000-000000000000", i)}); code != http.StatusNotFound {
			t.Errorf("a session id the gateway never issued: %d", code)
		}
	}
	// Each re-initialize is a new session, but the agent's budget spans
	// them: once it is spent, a new session is refused too.
	outcome := ""
	for range 8 {
		c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer ci-token-0123456789abcdef"}))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		initialize(t, c)
		res := call(t, c, "ctx_read", map[string]any{"path": "x", "bytes": 400}) // about 100 tokens
		outcome += map[bool]string{false: "ok ", true: "refused "}[res.IsError]
		if res.IsError && !strings.Contains(text(res), "agent_budget_exhausted") {
			t.Errorf("refused for another reason: %s", text(res))
		}
		c.Close()
	}
	if outcome != "ok refused refused refused refused refused refused refused " {
		t.Errorf("eight new sessions of one agent: %s", outcome)
	}
	if out, _, _ := harnessIn(t, home, nil, "check"); strings.Contains(out, "agent ci has no budget") {
		t.Errorf("check warns of a token whose agent has a budget:\n%s", out)
	}

	// Over stdio the operator names the agent; a client calling itself
	// claude-code-2 is still claude-code, in its reviewer role, and the
	// name it gave is only a label.
	c, err := client.NewStdioMCPClientWithOptions(harnessBin, []string{"HOME=" + home},
		[]string{"serve", "--agent", "claude-code", "--project", t.TempDir(), "--", upstreamBin}, transport.WithCommandStderrWriter(testWriter{t}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "claude-code-2", Version: "9"}
	if _, err := c.Initialize(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if res := call(t, c, "ctx_edit", map[string]any{"path": "x"}); !res.IsError || !strings.Contains(text(res), "for role 'reviewer'") {
		t.Errorf("claude-code-2's edit: %s", text(res))
	}
	entries := logEntries(t, home)
	last := entries[len(entries)-1]
	if last.Input.Agent != "claude-code" || last.Labels["client"] != "claude-code-2/9" || !strings.HasPrefix(last.Input.Session, "stdio-") {
		t.Errorf("the logged call: agent %q, session %q, labels %v", last.Input.Agent, last.Input.Session, last.Labels)
	}
}

// Over HTTP without a budget for the token's agent, check says each new
// session would be a fresh budget.
func TestCheckWarnsOfTokensWithoutAgentBudgets(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), "[[gateway.tokens]]\nagent = \"ci\"\ntoken = \"ci-token-0123456789abcdef\"\n")
	out, _, code := harnessIn(t, home, nil, "check")
	if code != exitOK || !strings.Contains(out, "warning: gateway token of agent ci: the agent has no budget across its sessions") {
		t.Errorf("check: exit %d\n%s", code, out)
	}
}

// A starting role the project defines beyond the agent's ceiling decides
// nothing (every call in it is refused): check says so for each place
// that names one, and for none that names a role the ceiling covers or a
// user's role.
func TestCheckWarnsOfStartRolesBeyondTheCeiling(t *testing.T) {
	t.Parallel()
	const (
		wide   = "[role]\ninherits = \"admin\"\nprivileged = false\n"
		narrow = "[role]\ninherits = \"reviewer\"\n"
	)
	for _, tt := range []struct {
		name     string
		config   string // the user's harness.toml
		envRole  string // $LEAN_CTX_ROLE
		userRole bool   // wide is a user's role, not the project's
		want     []string
	}{
		{"default role", "[enforcement]\ndefault_role = \"wide\"\n", "", false,
			[]string{"enforcement.default_role (", "starts agents without a role of their own in role wide, which this project defines beyond the ceiling of agents without a max_role"}},
		{"an agent's role", "[agents.ci]\nrole = \"wide\"\n", "", false,
			[]string{"starts agent ci in role wide"}},
		{"an agent's role within its max_role", "[agents.ci]\nrole = \"wide\"\nmax_role = \"admin\"\n", "", false, nil},
		{"$LEAN_CTX_ROLE", "", "wide", false, []string{"$LEAN_CTX_ROLE starts agents without a role of their own in role wide"}},
		{"a narrow project role", "[agents.ci]\nrole = \"narrow\"\n", "narrow", false, nil},
		{"a user's role", "[agents.ci]\nrole = \"wide\"\n", "wide", true, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home, project := t.TempDir(), t.TempDir()
			if tt.config != "" {
				writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), tt.config)
			}
			at := project
			if tt.userRole {
				at = home
			}
			writeFile(t, filepath.Join(at, ".lean-ctx", "roles", "wide.toml"), wide)
			writeFile(t, filepath.Join(project, ".lean-ctx", "roles", "narrow.toml"), narrow)
			out, _, code := harnessIn(t, home, map[string]string{"LEAN_CTX_ROLE": tt.envRole}, "--project", project, "check")
			if code != exitOK {
				t.Fatalf("check: exit %d\n%s", code, out)
			}
			warnings := strings.Count(out, "warning: ")
			if len(tt.want) == 0 && warnings != 0 {
				t.Errorf("check warned:\n%s", out)
			}
			if len(tt.want) > 0 && warnings != 1 {
				t.Errorf("check gave %d warnings, want 1:\n%s", warnings, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("check does not say %q:\n%s", w, out)
				}
			}
		})
	}
}

func waitListening(t *testing.T, url string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		req, _ := http.NewRequest("POST", url, strings.NewReader("{}"))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("harness serve --http never listened")
		}
	}
}

// slowProjectPolicy takes minutes to evaluate: nested ranges.
const slowProjectPolicy = `package harness.custom.slow

deny contains "never" if {
	some i in numbers.range(1, 100000)
	some j in numbers.range(1, 100000)
	i == j + 100001
}
`

// Escape 5 (the policy's side): a slow policy is a deny within the
// deadline, through the gateway and the CLI, never a wait that a client
// gives up on.
func TestEscape05SlowPolicyIsADeny(t *testing.T) {
	t.Parallel()
	home, project := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(project, ".lean-ctx", "policies", "slow.rego"), slowProjectPolicy)
	start := time.Now()
	c := stdioClient(t, home, project)
	res := call(t, c, "ctx_read", map[string]any{"path": "x"})
	if !res.IsError || !strings.Contains(text(res), "evaluation_error: policy evaluation stopped: it ran past its deadline of 1s") {
		t.Errorf("the gateway's answer: %s", text(res))
	}
	out, _, code := harnessIn(t, home, nil, "decide", "--project", project, "--tool", "ctx_read")
	if code != exitDenied || !strings.Contains(out, "it ran past its deadline of 1s ([policy] timeout)") {
		t.Errorf("decide: exit %d\n%s", code, out)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("took %v", took) // unbounded, the policy runs for minutes
	}
}

// Escape 6: the operator's commands and the harness's files from the
// agent's shell and edit tools. The hook refuses them, for every role.
func TestEscape06OperatorCommandsAndHarnessFiles(t *testing.T) {
	t.Parallel()
	home, project := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), "[agents.claude-code]\nrole = \"admin\"\n")
	ledger := filepath.Join(home, ".local", "state", "lean-ctx", "harness", "ledger.db")
	for _, tt := range []struct {
		tool, input, code string
	}{
		{"Bash", `{"command": "harness role set admin --session S"}`, "operator_command"},
		{"Bash", `{"command": "harness budget reset --session S"}`, "operator_command"},
		{"Bash", `{"command": "cd /tmp && /usr/local/bin/harness hook install --user --write"}`, "operator_command"},
		{"Bash", fmt.Sprintf(`{"command": "sqlite3 %s 'delete from sessions'"}`, ledger), "harness_files"},
		{"Bash", `{"command": "echo '[tools]' >> ~/.lean-ctx/harness.toml"}`, "harness_files"},
		{"Edit", fmt.Sprintf(`{"file_path": %q, "old_string": "a", "new_string": "b"}`, filepath.Join(home, ".lean-ctx", "roles", "x.toml")), "harness_files"},
		{"Write", fmt.Sprintf(`{"file_path": %q, "content": ""}`, ledger), "harness_files"},
		{"Write", fmt.Sprintf(`{"file_path": %q, "content": "{}"}`, filepath.Join(project, ".claude", "settings.json")), "harness_files"},
		{"Edit", `{"file_path": ".lean-ctx/policies/destructive_shell.rego", "old_string": "deny", "new_string": "x"}`, "harness_files"},
	} {
		out, errOut, code := hookProcess(t, home, []string{"HARNESS_HOOK_DAEMON=off"}, preToolUse("S", project, tt.tool, tt.input))
		if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, tt.code) {
			t.Errorf("%s %s: exit %d\n%s%s", tt.tool, tt.input, code, out, errOut)
		}
	}
	for _, tt := range []struct{ tool, input string }{
		{"Bash", `{"command": "harness role switch reviewer --session S"}`},
		{"Bash", `{"command": "go test ./..."}`},
		{"Edit", `{"file_path": "main.go", "old_string": "a", "new_string": "see ~/.lean-ctx/roles"}`},
	} {
		if out, _, code := hookProcess(t, home, []string{"HARNESS_HOOK_DAEMON=off"}, preToolUse("S", project, tt.tool, tt.input)); code != 0 || strings.Contains(out, "deny") {
			t.Errorf("%s %s refused: %s", tt.tool, tt.input, out)
		}
	}
}

// Escape 10: cd out of the project's rules. A session's project is pinned
// by its first call (or Claude Code's CLAUDE_PROJECT_DIR), so a force push
// from a directory outside is still refused by the project's policy.
func TestEscape10CdOutOfTheProject(t *testing.T) {
	t.Parallel()
	home, repo := containedRepo(t)
	outside := t.TempDir()
	push := `{"command": "git push --force origin main"}`
	hook := func(session, cwd string, vars ...string) string {
		t.Helper()
		out, errOut, _ := hookProcess(t, home, append([]string{"HARNESS_HOOK_DAEMON=off"}, vars...), preToolUse(session, cwd, "Bash", push))
		return out + errOut
	}
	if out := hook("pinned", repo); !strings.Contains(out, "refusing a force push") {
		t.Fatalf("from the project: %s", out)
	}
	if out := hook("pinned", outside); !strings.Contains(out, "refusing a force push") {
		t.Errorf("from outside, after the session began in the project: %s", out)
	}
	// Claude Code names the project for its hooks: the first call may be
	// made from anywhere.
	if out := hook("named", outside, "CLAUDE_PROJECT_DIR="+repo); !strings.Contains(out, "refusing a force push") {
		t.Errorf("from outside, with CLAUDE_PROJECT_DIR: %s", out)
	}
	if out := hook("named", outside); !strings.Contains(out, "refusing a force push") {
		t.Errorf("the same session later, without it: %s", out)
	}
	// Through the daemon alike.
	startDaemon(t, home)
	if out := hook("daemon", repo, "HARNESS_HOOK_DAEMON="); !strings.Contains(out, "refusing a force push") {
		t.Fatalf("through the daemon, from the project: %s", out)
	}
	if out := hook("daemon", outside, "HARNESS_HOOK_DAEMON="); !strings.Contains(out, "refusing a force push") {
		t.Errorf("through the daemon, from outside: %s", out)
	}
}

// Escape 11 (the answer's side): a policy that answers with a hundred
// thousand messages gives Claude Code a small answer.
func TestEscape11FloodOfMessagesIsSmall(t *testing.T) {
	t.Parallel()
	home, project := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), "[policy]\ntimeout = \"1m\"\n")
	writeFile(t, filepath.Join(project, ".lean-ctx", "policies", "flood.rego"), `package harness.custom.flood

deny contains sprintf("refusal number %d", [i]) if some i in numbers.range(1, 100000)
`)
	out, errOut, code := hookProcess(t, home, []string{"HARNESS_HOOK_DAEMON=off"}, preToolUse("S", project, "Read", `{"file_path": "a"}`))
	if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || len(out) > 32<<10 || !strings.Contains(out, "… and 99981 more refusals of custom policies") {
		t.Errorf("exit %d, %d bytes: %.300s%s", code, len(out), out, errOut)
	}
}

// Escape 12 (the gateway's side): arguments that are not an object are
// refused as malformed, not decided as a call without arguments.
func TestEscape12MalformedArgumentsThroughTheGateway(t *testing.T) {
	t.Parallel()
	home, project := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "policies", "no_rm.rego"), `package harness.custom.no_rm

deny contains "no rm -rf" if contains(input.arguments.command, "rm -rf")
`)
	c := stdioClient(t, home, project)
	for _, args := range []any{"rm -rf /x", []any{"rm", "-rf", "/x"}, 7} {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "ctx_shell", args
		res, err := c.CallTool(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(args)
		if !res.IsError || !strings.Contains(text(res), "invalid_input: input.arguments must be an object") {
			t.Errorf("arguments %s: %s", b, text(res))
		}
	}
	if res := call(t, c, "ctx_shell", map[string]any{"command": "rm -rf /x"}); !res.IsError || !strings.Contains(text(res), "no rm -rf") {
		t.Errorf("an object's command: %s", text(res))
	}
}

// The operator resets an agent's budget across sessions, and only that:
// the sessions keep their own usage; an agent without one is an error.
func TestResetAgentBudget(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), "[agents.ci.budget]\nmax_context_tokens = 100\n")
	run := func(want int, args ...string) string {
		t.Helper()
		out, errOut, code := harnessIn(t, home, nil, args...)
		if code != want {
			t.Fatalf("harness %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out + errOut
	}
	run(exitOK, "decide", "--session", "s", "--agent", "ci", "--tool", "ctx_read", "--record")
	run(exitOK, "record", "--session", "s", "--agent", "ci", "--tool", "ctx_read", "--output-text", strings.Repeat("word ", 120))
	if out := run(exitOK, "budget", "--session", "s", "--agent", "ci"); !strings.Contains(out, "| Agent[ci, day]: tokens 121/100 (121%) → EXHAUSTED") {
		t.Fatalf("budget: %s", out)
	}
	if out := run(exitOK, "budget", "reset", "--agent", "ci", "--agent-budget"); !strings.Contains(out, "reset the usage of agent ci in day:") {
		t.Errorf("reset: %s", out)
	}
	if out := run(exitOK, "budget", "--session", "s", "--agent", "ci"); !strings.Contains(out, "tokens 121/200000") || !strings.Contains(out, "Agent[ci, day]: tokens 0/100 (0%) → OK") {
		t.Errorf("after the reset: %s", out)
	}
	if out := run(exitError, "budget", "reset", "--agent", "other", "--agent-budget"); !strings.Contains(out, "agent other has no budget across its sessions") {
		t.Errorf("an agent without a budget: %s", out)
	}
}

// An agent with a shell could kill the hook daemon and answer on its
// socket with a program of its own that allows everything. The hook asks
// only a daemon that runs this very harness: here it decides the call
// itself, and refuses it.
func TestFakeDaemonIsNotAsked(t *testing.T) {
	t.Parallel()
	home := shortDir(t)
	fakeDaemon(t, home, filepath.Join(t.TempDir(), "fakedaemon"))
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), "[agents.claude-code]\nrole = \"reviewer\"\n")
	out, errOut, code := hookProcess(t, home, []string{"HARNESS_HOOK_DAEMON="}, preToolUse("S", t.TempDir(), "Bash", `{"command": "rm -rf /"}`))
	if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || strings.Contains(out, "fake") {
		t.Errorf("exit %d: %s%s", code, out, errOut)
	}
}

// What harness serve logs is a line a call, control characters escaped:
// any peer of its HTTP server, without a token, had the path of a refused
// request written raw, which forged a line of the log and drove the
// terminal. The refusal is logged before it is answered.
func TestServeLogsALineACall(t *testing.T) {
	t.Parallel()
	_, upstreamBin := buildBinaries(t)
	home := t.TempDir()
	addr := freeAddr(t)
	var log syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- runEnv([]string{"serve", "--http", addr, "--project", t.TempDir(), "--", upstreamBin}, io.Discard, &log, env{
			ctx: ctx, getenv: func(string) string { return "" }, workDir: home, home: home})
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitListening(t, "http://"+addr+"/mcp")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /ui/x%%0Aharness%%20serve:%%20forged%%1B[2J HTTP/1.1\r\nHost: %s\r\nSec-Fetch-Site: cross-site\r\nConnection: close\r\n\r\n", addr)
	if status, err := bufio.NewReader(conn).ReadString('\n'); err != nil || !strings.Contains(status, "403") {
		t.Fatalf("%q %v", status, err)
	}
	got := log.String()
	if strings.Contains(got, "\nharness serve: forged") || strings.Contains(got, "\x1b") || !strings.Contains(got, `/ui/x\nharness serve: forged\x1b[2J`) {
		t.Errorf("the log:\n%q", got)
	}
}

// The harness's own binaries are the harness's files: an agent that
// replaced the small hook binary or the harness (same user, a directory
// it may write) with a program that answers nothing would run every later
// call ungoverned. Refused for every role, by path or from the directory.
func TestAttackHarnessBinaryReplaced(t *testing.T) {
	t.Parallel()
	harnessBin, _ := buildBinaries(t)
	dir := filepath.Dir(harnessBin)
	small := filepath.Join(dir, "harness-hook")
	home, project := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, ".lean-ctx", "harness.toml"), "[agents.claude-code]\nrole = \"admin\"\n")
	for _, tt := range []struct{ tool, input string }{
		{"Bash", fmt.Sprintf(`{"command": "cp /bin/true %s"}`, small)},
		{"Bash", fmt.Sprintf(`{"command": "cp /bin/true %s"}`, harnessBin)},
		{"Bash", fmt.Sprintf(`{"command": "go build -o %s ./cmd/nothing"}`, harnessBin)},
		{"Bash", fmt.Sprintf(`{"command": "cd %s && ln -sf /bin/true harness-hook"}`, dir)},
		{"Write", fmt.Sprintf(`{"file_path": %q, "content": "#!/bin/sh\n"}`, small)},
		{"Edit", fmt.Sprintf(`{"file_path": %q, "old_string": "a", "new_string": "b"}`, harnessBin)},
	} {
		out, errOut, code := hookProcess(t, home, []string{"HARNESS_HOOK_DAEMON=off"}, preToolUse("S", project, tt.tool, tt.input))
		if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "harness_files") {
			t.Errorf("%s %s: exit %d\n%s%s", tt.tool, tt.input, code, out, errOut)
		}
	}
	// Running it, or other files of other directories, stays the agent's.
	for _, tt := range []struct{ tool, input string }{
		{"Bash", `{"command": "harness status"}`},
		{"Bash", `{"command": "cp /bin/true ./bin/tool"}`},
	} {
		if out, _, code := hookProcess(t, home, []string{"HARNESS_HOOK_DAEMON=off"}, preToolUse("S", project, tt.tool, tt.input)); code != 0 || strings.Contains(out, "deny") {
			t.Errorf("%s %s refused: %s", tt.tool, tt.input, out)
		}
	}
}
